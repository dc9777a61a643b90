"""CodeSense's Python block task and Python input prediction from files of the published
shape: hand-made statement and input/output records built into suites (the instances and
the skips by reason stated by hand), answered by the oracle and by other answers; then,
under ``--run-slow``, the published files themselves, with the counts docs/sources.md
states."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import pytest

from execbench.manifest import Manifest
from execbench.runner import RunConfig, run
from execbench.sandbox.pool import Sandbox
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks import get_task
from execbench.tasks.asking import ask
from execbench.tasks.base import CORRECT, INCORRECT, Instance
from execbench.tasks.protocol import Protocol
from tests.helpers.data import shared_data
from tests.sources.test_codesense_block import RECORDS, SKIPPED, write


def _build(tmp_path: Path, source: Path, tasks: list[str] | None
           ) -> tuple[Manifest, list[Instance], Path]:
    suite = tmp_path / "suite"
    manifest = build_suite([str(source)], suite, BuildOptions(tasks=tasks, workers=1))
    return manifest, load_suite(suite)[1], suite


def _skips(manifest: Manifest, task: str) -> collections.Counter[str]:
    return collections.Counter(s.reason for s in manifest.skipped if s.task == task)


def _oracle(tmp_path: Path, suite: Path) -> dict[str, Any]:
    return run(RunConfig(suite=str(suite), model="reference/oracle"), tmp_path / "run")


# --------------------------------------------------------------------------- block


def test_statement_records_give_python_block_instances_and_skips_by_reason(
        tmp_path: Path) -> None:
    source = write(tmp_path / "statement_prediction_dataset.jsonl", RECORDS)
    manifest, instances, suite = _build(tmp_path, source, None)
    # the file holds both questions, so a build without --tasks asks both
    assert manifest.recipe.tasks == ["block", "statement"]
    assert manifest.counts.by_task == {"block": 3, "statement": 8}
    blocks = {i.program_id.rsplit("/", 1)[1]: i for i in instances if i.task == "block"}
    assert {idx: (i.data["fact"]["size"], i.data["truth"]["value"])
            for idx, i in blocks.items()} == {
        "1": (1, ["list", []]), "2": (5, ["int", 2]), "6": (10, ["int", 10])}
    assert all(i.recorded for i in blocks.values())
    assert manifest.task_counts["block"] == {"block-1": 1, "block-5": 1, "block-10": 1}
    assert _skips(manifest, "block") == {
        f"the record holds no block question: {reason}": 1 for reason in SKIPPED.values()}
    results = _oracle(tmp_path, suite)
    assert results["metrics"]["block"]["all"]["pass@1"] == 1.0
    assert results["metrics"]["statement"]["all"]["pass@1"] == 1.0


def test_a_python_block_question_is_asked_from_the_call_and_read_as_a_value(
        tmp_path: Path) -> None:
    source = write(tmp_path / "statement_prediction_dataset.jsonl", RECORDS[1:2])
    _, instances, _ = _build(tmp_path, source, ["block"])
    [instance] = instances
    task = get_task("block")
    prompt = ask(task, instance, Protocol(shots=0))[-1]["content"]
    assert ("Call: tally(words=['ox', 'cat', 'bird'], limit=2)\n\n"
            "Statement (line 9):\ncount = len(seen)\n\n"
            "What value does the statement give?") in prompt
    assert task.judging.score(instance, "<ans>2</ans>", None).verdict == CORRECT
    wrong = task.judging.score(instance, "[ANSWER]\n'2'\n[/ANSWER]", None)
    assert (wrong.verdict, wrong.extra["string_match"]) == (INCORRECT, True)


# --------------------------------------------------------------------------- input


def _io(idx: int, code: str, given: str, output: str) -> dict[str, Any]:
    """A record of CodeSense's Python input/output file."""
    return {"index": idx, "idx": idx, "code": code, "input": given, "output": output,
            "cyclomatic_complexity": 1, "code_length": code.count("\n") + 1,
            "category": "Easy"}


CLIP = ("def clip(values, low, high):\n"
        "    return [min(max(v, low), high) for v in values][:len(values)]")
IO_RECORDS = [
    _io(0, CLIP, "[1, 5, 9], 2, 6", "[2, 5, 6]"),
    _io(1, "def join_base(name):\n    return os.path.join(BASE, name)", "'a'", "'/base/a'"),
    _io(2, "def double(x):\n    return x * 2", "3", "7"),
    _io(3, "def first(items):\n    return items[0]", "[1], [2]", "1"),
    _io(4, "def make(x):\n    return Thing(x)", "1", "<Thing object at 0x7f01>"),
    _io(5, "def sign(x):\n    if x < 0:\n        return -1\n    return 1", "-4", "-1"),
]
IO_SKIPS = {
    "the recorded call needs its project: run alone, it raises NameError": 1,
    "the recorded call, run alone, does not return the recorded value": 1,
    "the recorded call, run alone, raises TypeError": 1,
    "the return value has no literal form": 1,
}


def test_input_instances_only_where_the_function_runs_alone(tmp_path: Path) -> None:
    source = write(tmp_path / "input_output_dataset_python.jsonl", IO_RECORDS)
    manifest, instances, suite = _build(tmp_path, source, None)
    assert manifest.recipe.tasks == ["input", "output"]
    assert manifest.counts.by_task == {"input": 2, "output": 6}
    asked = {i.program_id.rsplit("/", 1)[1]: i for i in instances if i.task == "input"}
    assert sorted(asked) == ["0", "5"]
    assert asked["0"].data["truth"]["output"] == [
        "list", [["int", 2], ["int", 5], ["int", 6]]]
    assert asked["0"].recorded and asked["0"].call == "clip([1, 5, 9], 2, 6)"
    assert _skips(manifest, "input") == IO_SKIPS
    results = _oracle(tmp_path, suite)
    assert results["metrics"]["input"]["all"]["pass@1"] == 1.0


def test_an_input_answer_is_judged_by_running_it_with_codesense_string_match_beside(
        tmp_path: Path, sandbox: Sandbox) -> None:
    """Any input that gives the output is right (the run decides); ``string_match`` says
    whether CodeSense's comparison with the recorded input would have accepted it."""
    source = write(tmp_path / "input_output_dataset_python.jsonl", IO_RECORDS[5:])
    _, instances, _ = _build(tmp_path, source, ["input"])
    [instance] = instances
    task = get_task("input")

    def scored(args: str) -> tuple[str, bool]:
        score = task.judging.score(instance, f"[ANSWER]\nassert sign({args}) == -1\n[/ANSWER]",
                           sandbox)
        return score.verdict, score.extra["string_match"]

    assert scored("-4") == (CORRECT, True)
    assert scored("-100") == (CORRECT, False)  # another input, same output: right
    assert scored("4") == (INCORRECT, False)


def test_a_hostile_published_function_runs_confined_and_is_skipped(tmp_path: Path) -> None:
    """Published code runs at build time only in the sandbox, one program per runner: a
    function that never ends is cut by the step budget and skipped with that reason; one
    that rewrites ``len`` in its own runner returns its recorded value, so it is asked,
    and the next program's check (which calls ``len``) is untouched."""
    spin = _io(7, "def spin(n):\n    while True:\n        n += 1\n    return n", "1", "1")
    poison = _io(8, "def poison(x):\n    import builtins\n    builtins.len = lambda o: 0\n"
                    "    return x", "3", "3")
    records = [spin, poison, IO_RECORDS[0]]
    source = write(tmp_path / "input_output_dataset_python.jsonl", records)
    manifest, instances, suite = _build(tmp_path, source, ["input"])
    assert sorted(i.program_id.rsplit("/", 1)[1] for i in instances) == ["0", "8"]
    [reason] = _skips(manifest, "input")
    assert reason.startswith("the recorded call, run alone, ends in ")
    assert _oracle(tmp_path, suite)["metrics"]["input"]["all"]["pass@1"] == 1.0


# --------------------------------------------------------------------------- published


PUBLISHED_BLOCK_SKIPS = {"a condition": 90, "past code line 10": 71, "no Python syntax": 37,
                         "object's recorded attributes": 16, "several lines": 6}


@pytest.mark.slow
def test_the_published_python_files_give_block_and_input_instances(tmp_path: Path) -> None:
    """The counts docs/sources.md states: 325 block instances from the 545 statement
    records, 56 input instances from the 266 kept input/output records, the oracle right
    on all."""
    statements = shared_data("codesense/statement_prediction_dataset.jsonl.gz")
    manifest, _, suite = _build(tmp_path / "block", statements, ["block"])
    assert manifest.counts.by_task == {"block": 325}
    skips = _skips(manifest, "block")
    assert sum(skips.values()) == 220
    assert {key: sum(n for reason, n in skips.items() if key in reason)
            for key in PUBLISHED_BLOCK_SKIPS} == PUBLISHED_BLOCK_SKIPS
    _, instances, _ = load_suite(suite)
    assert collections.Counter(i.data["fact"]["size"] for i in instances) == {
        1: 91, 2: 65, 3: 38, 4: 41, 5: 19, 6: 23, 7: 16, 8: 11, 9: 9, 10: 12}
    assert _oracle(tmp_path / "block", suite)["metrics"]["block"]["all"]["pass@1"] == 1.0
    pairs = shared_data("codesense/input_output_dataset_python.jsonl.gz")
    manifest, _, suite = _build(tmp_path / "input", pairs, ["input"])
    assert manifest.counts.by_task == {"input": 56}
    skips = _skips(manifest, "input")
    assert sum(skips.values()) == 210
    assert skips["the recorded call needs its project: run alone, it raises NameError"] == 138
    assert skips["the return value has no literal form"] == 45
    assert skips["the recorded call, run alone, raises TypeError"] == 17
    assert skips["the recorded call, run alone, does not return the recorded value"] == 4
    assert _oracle(tmp_path / "input", suite)["metrics"]["input"]["all"]["pass@1"] == 1.0
