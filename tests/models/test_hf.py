"""hf/<model>: a tiny random GPT-2 written to a temp folder, loaded and run for real.

Its answers are noise, so these tests check what the provider owes any model: batching
that does not change greedy text, reproducible seeded sampling, token counts, limits, clear
errors, and a whole ``execbench run`` with it. They need the ``hf`` extra (CI installs it).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the hf extra is not installed")
transformers = pytest.importorskip("transformers", reason="the hf extra is not installed")

from execbench.models import get_model  # noqa: E402
from execbench.models.base import GenerateConfig, Generation, ModelError, Request  # noqa: E402
from tests.helpers.cli import execbench  # noqa: E402
from tests.test_runner import make_suite  # noqa: E402

TEMPLATE = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
            "{% if add_generation_prompt %}<assistant>{% endif %}")


def _write_model(folder: Path, chat_template: str | None, positions: int = 4096,
                 samples_by_default: bool = False) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    vocab = {char: index for index, char in enumerate(bytes_to_unicode().values())}
    vocab["<|end|>"] = end = len(vocab)
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|end|>")
    fast.chat_template = chat_template
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=len(vocab), n_positions=positions, n_embd=32,
                                     n_layer=2, n_head=2, bos_token_id=end, eos_token_id=end)
    model = transformers.GPT2LMHeadModel(config)
    if samples_by_default:  # as many instruct models ship
        model.generation_config.do_sample = True
        model.generation_config.temperature = 0.7
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write_model(tmp_path_factory.mktemp("tiny"), TEMPLATE)


def _request(text: str, seed: int | None = None) -> Request:
    return Request(messages=[{"role": "user", "content": text}], instance={}, sample=0,
                   seed=seed)


def _generate(path: Path, requests: list[Request], config: GenerateConfig,
              **args: str) -> list[Generation]:
    async def go() -> list[Generation]:
        model = get_model(f"hf/{path}", model_args=args)
        try:
            return await asyncio.gather(*(model.generate(r, config) for r in requests))
        finally:
            await model.aclose()

    return asyncio.run(go())


PROMPTS = ["def f(x):\n    return x", "a", "[PYTHON] longer prompt here [/PYTHON]" * 3,
           "ünïcode ✓", "", "assert f(1) == ??"]
GREEDY = GenerateConfig(temperature=0, max_tokens=12)


def test_greedy_text_is_the_same_batched_or_alone(tiny: Path) -> None:
    batched = _generate(tiny, [_request(p) for p in PROMPTS], GREEDY)
    alone = _generate(tiny, [_request(p) for p in PROMPTS], GREEDY, batch_size="1")
    assert [g.error for g in batched] == [None] * len(PROMPTS)
    assert [g.text for g in batched] == [g.text for g in alone]
    assert len({g.text for g in batched}) > 1  # the prompts matter
    for prompt, generation in zip(PROMPTS, batched, strict=True):
        assert generation.input_tokens == len(f"<user>{prompt}\n<assistant>".encode())
        assert 1 <= generation.output_tokens <= 12
        reason = generation.extra["finish_reason"]
        assert reason == ("length" if generation.output_tokens == 12 else "stop")


def test_seeded_sampling_is_reproducible(tiny: Path) -> None:
    config = GenerateConfig(temperature=1.0, max_tokens=10)
    requests = [_request("same prompt", seed=seed) for seed in (1, 2, 3, 1)]
    first = [g.text for g in _generate(tiny, requests, config)]
    again = [g.text for g in _generate(tiny, list(reversed(requests)), config)]
    assert first == list(reversed(again))
    assert first[0] == first[3]
    assert len(set(first[:3])) > 1


def test_without_a_chat_template_the_turns_are_joined(tmp_path: Path) -> None:
    plain = _write_model(tmp_path / "plain", None)
    [generation] = _generate(plain, [_request("hello")], GREEDY)
    assert generation.error is None
    assert generation.input_tokens == len(b"hello\n\n")


def test_no_temperature_means_greedy_whatever_the_model_prefers(tmp_path: Path) -> None:
    sampler = _write_model(tmp_path / "sampler", TEMPLATE, samples_by_default=True)
    requests = [_request(p) for p in PROMPTS]
    default = [g.text for g in _generate(sampler, requests, GenerateConfig(max_tokens=12))]
    assert default == [g.text for g in _generate(sampler, requests, GREEDY)]
    assert default == [g.text for g in _generate(sampler, requests, GenerateConfig(max_tokens=12))]


def test_prompts_too_long_for_the_context_fail_alone(tmp_path: Path) -> None:
    small = _write_model(tmp_path / "small", TEMPLATE, positions=64)
    long, short = _request("x" * 60), _request("hi")  # 73 and 15 tokens with the template
    results = _generate(small, [long, short], GenerateConfig(temperature=0))
    assert results[0].text is None and "leaves no room" in results[0].error
    assert results[1].error is None
    assert results[1].output_tokens <= 64 - 15
    assert results[1].text == _generate(small, [short], GenerateConfig(temperature=0))[0].text


@pytest.mark.parametrize(("args", "message"), [
    ({"temperature": "1"}, "unknown: temperature"),
    ({"batch_size": "0"}, "batch_size must be a positive integer"),
    ({"batch_size": "many"}, "batch_size must be a positive integer"),
    ({"dtype": "int3"}, "dtype must be one of"),
])
def test_bad_model_args_are_refused(tiny: Path, args: dict[str, str], message: str) -> None:
    with pytest.raises(ModelError, match=message):
        get_model(f"hf/{tiny}", model_args=args)


def test_a_missing_model_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"^cannot load hf/.*missing") as caught:
        get_model(f"hf/{tmp_path / 'missing'}")
    assert "\n" not in str(caught.value)
    with pytest.raises(ModelError, match="no --model-base-url"):
        get_model(f"hf/{tmp_path}", base_url="http://127.0.0.1:1")


def test_weights_that_fail_to_load_are_errors_not_a_crash(tmp_path: Path, tiny: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_bytes((tiny / "config.json").read_bytes())
    results = _generate(broken, [_request("a"), _request("b")], GREEDY)
    assert [g.text for g in results] == [None, None]
    assert all(g.error and g.error.startswith(f"cannot load hf/{broken}") for g in results)


def test_execbench_run_with_an_hf_model(tiny: Path, tmp_path: Path) -> None:
    suite, instances = make_suite(tmp_path, {
        "add": ("def add(a, b):\n    return a + b\n", "2, 3"),
        "rev": ("def rev(s):\n    return s[::-1]\n", "'abc'"),
    })
    out = tmp_path / "run"
    done = execbench("run", "--suite", suite, "--model", f"hf/{tiny}", "--out", out, "-n", 2,
                     "--temperature", 0.8, "--seed", 7, "--max-tokens", 16, "-M", "batch_size=4")
    assert done.exit_code == 0, done.stderr
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 2 * len(instances)
    assert all(s["verdict"] != "error" and 1 <= s["output_tokens"] <= 16 for s in samples)
    assert {s["seed"] for s in samples} == {7, 8}
    results = json.loads((out / "results.json").read_text())
    assert results["run"]["model_args"] == {"batch_size": "4"}
    # A second run of the same command finds everything done and asks the model nothing.
    again = execbench("run", "--suite", suite, "--model", f"hf/{tiny}", "--out", out, "-n", 2,
                      "--temperature", 0.8, "--seed", 7, "--max-tokens", 16, "-M", "batch_size=4")
    assert again.exit_code == 0, again.stderr
    assert len((out / "samples.jsonl").read_text().splitlines()) == len(samples)
