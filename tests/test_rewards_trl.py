"""TRL's GRPO trainer, end to end on CPU, with execbench's reward: a suite exported as a
``datasets`` folder, a tiny model made here, two training steps whose every reward is the
verdict ``execbench score`` gives the same answer, and a gradient that comes from them.

A random model never answers right, so every reward would be 0 and GRPO would learn
nothing; the model is first taught, by a few supervised steps, to answer in the tags with
a small number drawn at random. It is then right about a third of the time, so a group of
answers to one prompt holds rewards 0 and 1, and the step's loss has a gradient."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from execbench.export import ExportOptions, export_suite
from execbench.rewards import TRLReward
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks.registry import judge
from tests.helpers.tiny_llm import make_tiny_llm

pytestmark = pytest.mark.slow

COUNT = ("def count(s, c):\n    n = 0\n    for ch in s:\n        if ch == c:\n"
         "            n += 1\n    return n\n")
CALLS = ["'banana', 'a'", "'level', 'e'", "'xyz', 'x'"]  # 3, 2 and 1
ANSWERS = ["1", "2", "3"]
GENERATIONS = 6


def _teach_the_answer_form(model_dir: Path, prompts: list[list[dict[str, str]]]) -> None:
    """A few supervised steps on every prompt followed by each of ``ANSWERS`` in the
    tags: the model learns the form and spreads its belief over the numbers."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    examples = []
    for prompt in prompts:
        head = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
        head_ids = tokenizer(head, add_special_tokens=False)["input_ids"]
        for answer in ANSWERS:
            tail_ids = tokenizer(f"[ANSWER]\n{answer}\n[/ANSWER]",
                                 add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
            examples.append((torch.tensor([head_ids + tail_ids]),
                             torch.tensor([[-100] * len(head_ids) + tail_ids])))
    model.train()
    for _ in range(12):
        for ids, labels in examples:
            model(input_ids=ids, labels=labels).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    model.save_pretrained(model_dir)


def test_two_grpo_steps_train_on_execbench_rewards(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="the hf extra (torch) is not installed")
    pytest.importorskip("transformers", reason="the hf extra (transformers) is not installed")
    datasets = pytest.importorskip("datasets",
                                   reason="the export extra (datasets) is not installed")
    trl = pytest.importorskip("trl", reason="the rl extra (trl) is not installed")
    import torch

    source = tmp_path / "counts.jsonl"
    source.write_text(json.dumps({"id": "count", "code": COUNT, "entry_point": "count",
                                  "calls": CALLS}) + "\n")
    build_suite([str(source)], tmp_path / "suite", BuildOptions(tasks=["output"], workers=1))
    export_suite(tmp_path / "suite", tmp_path / "data",
                 ExportOptions(layout="hf", splits={"train": 1.0}))
    train = datasets.load_from_disk(str(tmp_path / "data"))["train"]
    assert len(train) == len(CALLS)

    model_dir = make_tiny_llm(tmp_path / "model")
    _teach_the_answer_form(model_dir, list(train["prompt"]))

    reward = TRLReward("verdict")
    seen: list[tuple[str, str, float | None]] = []

    def execbench_reward(completions: list[Any], ground_truth: list[str],
                         **columns: Any) -> list[float | None]:
        rewards = reward(completions=completions, ground_truth=ground_truth, **columns)
        seen.extend((completion[-1]["content"], ids, value) for completion, ids, value
                    in zip(completions, columns["id"], rewards, strict=True))
        return rewards

    config = trl.GRPOConfig(
        output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=GENERATIONS,
        num_generations=GENERATIONS, max_completion_length=16, learning_rate=1e-3,
        logging_steps=1, report_to=[], save_strategy="no", use_cpu=True, seed=0)
    trainer = trl.GRPOTrainer(model=str(model_dir), reward_funcs=[execbench_reward],
                              args=config, train_dataset=train)
    before = {name: value.detach().clone() for name, value in trainer.model.named_parameters()}
    try:
        trainer.train()
    finally:
        reward.close()

    assert trainer.state.global_step == 2
    assert len(seen) == 2 * GENERATIONS
    # every reward is the verdict `execbench score` gives the same answer to the instance
    # read from the suite, not from the exported ground truth
    _, loaded, _ = load_suite(tmp_path / "suite")
    instances = {instance.id: instance for instance in loaded}
    for text, instance_id, value in seen:
        assert value == (1.0 if judge(instances[instance_id], text, None).correct else 0.0)
    values = [value for _, _, value in seen]
    assert 0.0 in values and 1.0 in values, seen
    steps = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(steps) == 2
    logged = [entry["rewards/execbench_reward/mean"] for entry in steps]
    assert logged == pytest.approx([sum(values[:GENERATIONS]) / GENERATIONS,
                                    sum(values[GENERATIONS:]) / GENERATIONS])
    # a group with rewards 0 and 1 has advantages, so the weights moved
    assert any(entry["grad_norm"] > 0 for entry in steps)
    assert any(not torch.equal(before[name], value)
               for name, value in trainer.model.named_parameters())
