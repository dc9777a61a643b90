"""A prompt that cannot fit the model's context with ``--max-tokens`` is refused before any
request, where the server tells its context and counts prompts (vLLM's ``max_model_len``
and ``/tokenize``, llama.cpp's ``/props``, ``/apply-template`` and ``/tokenize``), played by
the scripted server; ``hf/`` models by their config and tokenizer."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import time
from pathlib import Path
from typing import Any

import pytest

from execbench.models.base import ContextWindow, GenerateConfig
from execbench.models.openai import OpenAIModel
from execbench.tasks import get_task
from execbench.tasks.asking import ask
from execbench.tasks.protocol import Protocol
from tests.fakeserver import LLAMA, VLLM, Context, FakeServer, Reply, prompt_tokens
from tests.helpers.cli import execbench
from tests.test_runner import PROGRAMS, flat, make_suite, raw_lines

MODEL = "test-model"
LONG = "long"
MAX_TOKENS = 16


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    """Five short programs and one whose comments make its prompts long: the suite, and
    each instance's prompt tokens as the scripted server counts them."""
    programs = {name: (code, call) for name, (code, call, _) in PROGRAMS.items()}
    padding = "".join(f"    # step {n}: trace the value of x through the loop\n"
                      for n in range(40))
    programs[LONG] = (f"def {LONG}(x):\n{padding}    return x\n", "1")
    folder, instances = make_suite(tmp_path_factory.mktemp("context"), programs)
    tokens = {inst.id: prompt_tokens(ask(get_task(inst.task), inst, Protocol(shots=0)))
              for inst in instances}
    return folder, tokens


def context_between(tokens: dict[str, int]) -> int:
    """A context the short prompts fit with ``MAX_TOKENS`` and the long ones do not."""
    longest_short = max(n for iid, n in tokens.items() if f"/{LONG}/" not in iid)
    shortest_long = min(n for iid, n in tokens.items() if f"/{LONG}/" in iid)
    assert longest_short + MAX_TOKENS < shortest_long
    return longest_short + MAX_TOKENS


def run(suite: Path, server: FakeServer, out: Path, *extra: object) -> Any:
    return execbench("run", "--suite", suite, "--model", f"openai-api/fake/{MODEL}",
                     "--model-base-url", server.base_url, "--out", out, "-n", 2,
                     "--temperature", 0.8, "--max-connections", 4, *extra)


def discovered(server: FakeServer) -> tuple[ContextWindow | None, int | None]:
    """What the model learns of the server's context, and its count of one prompt."""
    async def ask() -> tuple[ContextWindow | None, int | None]:
        model = OpenAIModel("openai-api/fake/m", MODEL, server.base_url, None)
        try:
            await model.start(GenerateConfig(), Path("."))
            window = await model.context()
            counted = None
            if window is not None and window.counter is not None:
                counted = await model.prompt_tokens([{"role": "user", "content": "a b c"}])
            return window, counted
        finally:
            await model.aclose()

    return asyncio.run(ask())


@pytest.mark.parametrize(("context", "source", "counter"), [
    (Context(MODEL, max_model_len=512, tokenizer=VLLM), "the server's max_model_len",
     "the server's /tokenize"),
    (Context(MODEL, n_ctx=512, tokenizer=LLAMA), "the server's n_ctx (/props)",
     "the server's /apply-template and /tokenize"),
    (Context(MODEL, max_model_len=512), "the server's max_model_len", None),
], ids=["vllm", "llama.cpp", "no-tokenizer"])
def test_the_context_and_the_counter_are_found(context: Context, source: str,
                                               counter: str | None) -> None:
    with FakeServer(lambda body, attempt: Reply(), context=context) as server:
        window, counted = discovered(server)
    assert window == ContextWindow(512, source, counter)
    assert counted == (None if counter is None else 5)  # <|user|> a b c <|assistant|>


def test_a_server_that_tells_nothing_costs_two_requests_and_is_not_checked() -> None:
    with FakeServer(lambda body, attempt: Reply(), context=Context(MODEL)) as server:
        window, _ = discovered(server)
        assert window is None
        assert server.probes == 3  # the health probe, the model list, /props
        assert server.tokenize_requests == []


def test_a_tokenize_without_content_is_no_count() -> None:
    """llama.cpp answers ``/tokenize`` without ``content`` with no tokens, not an error:
    a vLLM-style count sent there must not read as a prompt of 0 tokens."""
    with FakeServer(lambda body, attempt: Reply(),
                    context=Context(MODEL, n_ctx=512, tokenizer=LLAMA)) as server:
        discovered(server)
        asked = server.tokenize_requests
    assert asked[0][0] == "/tokenize" and "messages" in asked[0][1]  # vLLM's way, tried first
    assert [path for path, _ in asked[1:3]] == ["/apply-template", "/tokenize"]


@pytest.mark.parametrize(("tokenizer", "batch"), [(VLLM, None), (LLAMA, None), (VLLM, 3)])
def test_prompts_over_the_context_are_not_sent(suite: tuple[Path, dict[str, int]],
                                               tmp_path: Path, tokenizer: str,
                                               batch: int | None,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The long program's two instances (four samples) are logged as errors that give the
    counts, with no request spent; the run says how many; each distinct prompt is counted
    once however many samples it has; the others are answered. The same when the work is
    checked three samples at a time, so that an instance's two samples fall into two
    batches (the check reads the run's work as a stream)."""
    from execbench import context_check

    if batch is not None:
        monkeypatch.setattr(context_check, "CHECK_BATCH", batch)
    folder, tokens = suite
    length = context_between(tokens)
    context = (Context(MODEL, max_model_len=length, tokenizer=VLLM) if tokenizer == VLLM
               else Context(MODEL, n_ctx=length, tokenizer=LLAMA))
    source = ("the server's max_model_len" if tokenizer == VLLM
              else "the server's n_ctx (/props)")
    with FakeServer(lambda body, attempt: Reply(), context=context) as server:
        done = run(folder, server, tmp_path / "run", "--max-tokens", MAX_TOKENS)
        sent = {r.prompt for r in server.requests}
        counted = [body for path, body in server.tokenize_requests
                   if path == ("/tokenize" if tokenizer == VLLM else "/apply-template")]
    assert done.exit_code == 0, done.stderr
    records = raw_lines(tmp_path / "run")
    assert len(records) == 24
    refused = [rec for rec in records if f"/{LONG}/" in rec["instance_id"]]
    assert len(refused) == 4
    for rec in refused:
        n = tokens[rec["instance_id"]]
        assert rec["error"] == (f"prompt {n} tokens + --max-tokens {MAX_TOKENS} > context "
                                f"{length} tokens ({source}); not sent")
        assert rec["verdict"] == "error" and rec["attempts"] == 0
        assert rec["input_tokens"] == n and rec["response"] is None
    assert all(rec["error"] is None for rec in records if rec not in refused)
    assert not any("def long(x)" in prompt for prompt in sent)
    assert len(server.requests) == 20
    assert len(counted) == 1 + len(tokens), "one count per distinct prompt (+ the probe's)"
    assert "2 instances (4 samples) not sent" in flat(done.stderr), done.stderr
    assert f"over the context of {length} tokens ({source})" in flat(done.stderr)


def test_without_max_tokens_only_a_prompt_that_leaves_no_room_is_refused(
        suite: tuple[Path, dict[str, int]], tmp_path: Path) -> None:
    """With no ``--max-tokens`` the server chooses the answer's length (vLLM and
    llama.cpp cap it to the room left): a prompt one token short of the context is sent,
    one that fills it is not."""
    folder, tokens = suite
    longs = sorted(n for iid, n in tokens.items() if f"/{LONG}/" in iid)
    context = Context(MODEL, max_model_len=longs[1], tokenizer=VLLM)
    assert longs[0] < longs[1]
    with FakeServer(lambda body, attempt: Reply(), context=context) as server:
        done = run(folder, server, tmp_path / "run")
    assert done.exit_code == 0, done.stderr
    refused = [rec for rec in raw_lines(tmp_path / "run") if rec["attempts"] == 0]
    assert {tokens[rec["instance_id"]] for rec in refused} == {longs[1]}
    assert refused[0]["error"] == (
        f"prompt {longs[1]} tokens leaves no room for an answer in the context of "
        f"{longs[1]} tokens (the server's max_model_len); not sent")
    assert "1 instance (2 samples) not sent: their prompt alone" in flat(done.stderr)


def test_a_context_without_a_counter_sends_everything_and_says_so(
        suite: tuple[Path, dict[str, int]], tmp_path: Path) -> None:
    folder, tokens = suite
    context = Context(MODEL, max_model_len=context_between(tokens))
    with FakeServer(lambda body, attempt: Reply(), context=context) as server:
        done = run(folder, server, tmp_path / "run", "--max-tokens", MAX_TOKENS)
        assert len(server.requests) == 24
    assert done.exit_code == 0, done.stderr
    assert "prompt tokens cannot be counted here: prompts are sent unchecked" in \
        flat(done.stderr)


def test_refused_samples_are_checked_again_on_resume(suite: tuple[Path, dict[str, int]],
                                                     tmp_path: Path) -> None:
    """Resumed against the same server, the refused samples are refused again, and not
    logged twice; against a server restarted on the same URL with a larger context (the
    pinned settings unchanged), they are sent and answered."""
    folder, tokens = suite
    length = context_between(tokens)
    out = tmp_path / "run"
    with FakeServer(lambda body, attempt: Reply(),
                    context=Context(MODEL, max_model_len=length, tokenizer=VLLM)) as server:
        assert run(folder, server, out, "--max-tokens", MAX_TOKENS).exit_code == 0
        again = run(folder, server, out, "--max-tokens", MAX_TOKENS)
        assert server.requests and not any("def long(x)" in r.prompt for r in server.requests)
        port = server.port
    assert again.exit_code == 0, again.stderr
    assert "resuming: 20 of 24 samples already" in flat(again.stderr)
    assert "2 instances (4 samples) not sent" in flat(again.stderr)
    assert len(raw_lines(out)) == 24, "refused again for the same reason: not logged twice"

    with FakeServer(lambda body, attempt: Reply(), port=port,
                    context=Context(MODEL, max_model_len=10 * length, tokenizer=VLLM)) as bigger:
        done = run(folder, bigger, out, "--max-tokens", MAX_TOKENS)
        assert len(bigger.requests) == 4
    assert done.exit_code == 0, done.stderr
    assert "not sent" not in flat(done.stderr)
    records = raw_lines(out)
    assert len(records) == 28
    assert all(rec["error"] is None for rec in records[-4:])
    results = json.loads((out / "results.json").read_text())
    assert results["counts"]["verdicts"].get("error", 0) == 0


def test_counting_a_thousand_prompts_costs_little(tmp_path: Path) -> None:
    """One count per distinct prompt, ``max_connections`` at a time: 1,000 prompts take
    well under the time of the requests they save (printed for the report)."""
    from execbench import context_check

    async def count() -> tuple[context_check.Fit, float]:
        model = OpenAIModel("openai-api/fake/m", MODEL, server.base_url, None)
        try:
            await model.start(GenerateConfig(max_connections=16), tmp_path)
            work = [(f"instance {i}", s) for i in range(1000) for s in range(2)]
            started = time.perf_counter()
            fit = await context_check.check(
                model, work,  # type: ignore[arg-type]
                lambda inst: ([{"role": "user", "content": inst}], inst), MAX_TOKENS, 16,
                refused.append)
            return fit, time.perf_counter() - started
        finally:
            await model.aclose()

    refused: list[context_check.Refused] = []
    with FakeServer(lambda body, attempt: Reply(),
                    context=Context(MODEL, max_model_len=512, tokenizer=VLLM)) as server:
        fit, seconds = asyncio.run(count())
        assert len(server.tokenize_requests) == 1 + 1000
    assert not fit.refused and not refused and not fit.uncounted
    print(f"counted 1,000 distinct prompts in {seconds:.2f} s")
    assert seconds < 30


def test_a_prompt_that_cannot_be_counted_is_asked_and_reported_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check reads its work in batches; a prompt whose count fails and whose samples
    straddle a batch's end is asked for once and is one uncounted prompt, not two."""
    from execbench import context_check

    monkeypatch.setattr(context_check, "CHECK_BATCH", 3)

    async def count() -> context_check.Fit:
        model = OpenAIModel("openai-api/fake/m", MODEL, server.base_url, None)
        try:
            await model.start(GenerateConfig(max_connections=4), tmp_path)
            work = [(name, s) for name in ("first", "broken", "last") for s in range(2)]
            return await context_check.check(
                model, work,  # type: ignore[arg-type]
                lambda inst: ([{"role": "user", "content": inst}], inst), MAX_TOKENS, 4,
                refused.append)
        finally:
            await model.aclose()

    refused: list[context_check.Refused] = []
    with FakeServer(lambda body, attempt: Reply(),
                    context=Context(MODEL, max_model_len=512, tokenizer=VLLM,
                                    untokenizable="broken")) as server:
        fit = asyncio.run(count())
        asked = [body for _, body in server.tokenize_requests if "broken" in json.dumps(body)]
    assert len(asked) == 1 and fit.uncounted == 1 and not fit.refused and not refused
    assert fit.notices(MAX_TOKENS) == [f"1 prompts could not be counted ({fit.count_error})"
                                       ": sent unchecked"]


needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("transformers")
    is None, reason="hf/ models need torch and transformers (the hf extra)")


@needs_torch
def test_an_hf_model_knows_its_context_and_counts_with_its_template(tmp_path: Path) -> None:
    from execbench.models.hf import HFModel
    from tests.models.test_hf import TEMPLATE, _write_model

    folder = _write_model(tmp_path / "small", TEMPLATE, positions=64)
    model = HFModel("hf/small", str(folder), {"device": "cpu"})

    async def ask() -> tuple[ContextWindow | None, int]:
        return await model.context(), await model.prompt_tokens(
            [{"role": "user", "content": "x" * 60}])

    window, counted = asyncio.run(ask())
    assert window == ContextWindow(64, "max_position_embeddings in the model's config",
                                   "the model's tokenizer and chat template")
    assert counted == len("<user>") + 60 + len("\n<assistant>")  # a token per character
    assert model._loaded is None, "counting loads the tokenizer, not the weights"
