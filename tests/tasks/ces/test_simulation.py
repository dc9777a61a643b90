"""The simulation task: the prompt, the worked examples (their answers come from the
tracer), the choice of calls, and the construct categories a build reports (all of
HumanEval against the paper's Table 1: slow)."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from execbench.analysis.shape import shape_of
from execbench.cli import app
from execbench.sandbox.pool import Sandbox
from execbench.suite import BuildOptions, SuiteError, build_suite, load_suite
from execbench.tasks.asking import ask
from execbench.tasks.ces import examples
from execbench.tasks.ces.payload import ProgramFacts
from execbench.tasks.protocol import Protocol
from execbench.tasks.roles import Task
from tests.helpers.data import shared_data
from tests.tasks.ces.test_rules import COUNT, TASK, asked, instance

PAPER_TABLE_1 = {"CO": 24, "LO": 12, "LC": 75, "Others": 53}
"""Programs per construct category of HumanEval's 164 in the CES paper's Table 1."""


def test_the_prompt_shows_every_placeholder_the_call_and_the_example(sandbox: Sandbox) -> None:
    made = instance(sandbox, COUNT, "g", "0")  # the loop body never runs: still annotated
    text = ask(Task.of(TASK), made, Protocol(shots=1))[0]["content"]
    assert "if i > 0 and i % 2 == 0:  # [4a] i > 0 and i % 2 == 0 = ??  [4b] i > 0 = ??" in text
    assert "Call: `g(0)`" in text and "[output] = VALUE" in text
    example = asked(made).example
    assert example.name == "if inside for"
    assert example.answer in text and example.annotated in text
    assert example.answer not in ask(Task.of(TASK), made, Protocol(shots=0))[0]["content"]


@pytest.mark.parametrize("example", examples.POOL, ids=lambda e: e.name)
def test_each_worked_example_is_the_tracers_answer(sandbox: Sandbox,
                                                   example: examples.Example) -> None:
    """The example shown with a program of the same mix is the example itself, and its
    answer is exactly the oracle's answer to it, which scores coherent and correct."""
    assert examples.pick(example.code) is example
    made = instance(sandbox, example.code, example.entry_point, example.args)
    question = asked(made)
    assert question.example.answer == TASK.reference_response(made)
    assert question.example.annotated == question.annotated
    score = TASK.score(made, question.example.answer, sandbox)
    assert score.extra["class"] == "coherent_correct"
    assert question.truth.properties  # every example asks something
    assert question.to_record() == made.data  # the typed question holds every field


def test_calls_with_different_prime_paths_are_taken_first(tmp_path: Path) -> None:
    record = {"task_id": "T/0", "prompt": "", "canonical_solution": COUNT, "entry_point": "g",
              "test": "def check(candidate):\n" + "".join(
                  f"    assert candidate({n}) == 0\n" for n in (5, 6, 7, 8, 0, 9))}
    source = tmp_path / "he.jsonl"
    source.write_text(json.dumps(record) + "\n")
    # Three coverages: g(0) never enters the loop; the others leave it after an even
    # `i` (g(5), g(7), g(9)) or after an odd one (g(6), g(8)), touring different paths.
    for tests, expected, different in (("2", 2, 2), ("3", 3, 3), ("9", 6, 3)):
        out = tmp_path / f"suite{tests}"
        build_suite([str(source)], out, BuildOptions(tasks=["simulation"], workers=1,
                                                     task_options={"tests": tests}))
        made = load_suite(out)[1]
        assert len(made) == expected
        assert len({ProgramFacts.from_record(m.data).coverage.digest for m in made}) \
            == different
    with pytest.raises(SuiteError, match="-T tests"):
        build_suite([str(source)], tmp_path / "bad", BuildOptions(
            tasks=["simulation"], workers=1, task_options={"tests": "0"}))


def test_a_simulation_suite_is_the_same_bytes_every_time(tmp_path: Path) -> None:
    options = BuildOptions(tasks=["simulation"], limit=8, workers=2)
    for name in ("one", "two"):
        build_suite(["humaneval"], tmp_path / name, options)
    for name in ("instances.jsonl", "manifest.json"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


def test_a_suite_of_other_tasks_is_traced_and_written_as_before(tmp_path: Path) -> None:
    build_suite(["humaneval"], tmp_path / "plain", BuildOptions(tasks=["output"], limit=3,
                                                                  workers=1))
    manifest, made, _ = load_suite(tmp_path / "plain")
    assert "task_counts" not in manifest.to_record() and made


def test_build_reports_the_construct_categories(tmp_path: Path) -> None:
    done = execbench("build", "humaneval", "--tasks", "simulation", "--limit", "12",
                     "--workers", "2", "--out", str(tmp_path / "suite"))
    assert done.exit_code == 0, done.output
    assert "simulation: CO 1, LO 1, LC 7, Others 3" in done.output
    manifest, made, _ = load_suite(tmp_path / "suite")
    assert manifest.task_counts == {"simulation": {"CO": 1, "LO": 1, "LC": 7, "Others": 3}}
    assert {ProgramFacts.from_record(m.data).category for m in made} == {
        "CO", "LO", "LC", "Others"}


def execbench(*args: str) -> Any:
    """The CLI, in this process (so the code under test is this checkout's)."""
    return CliRunner().invoke(app, list(args))


def _humaneval_records() -> list[dict]:
    with gzip.open(shared_data("HumanEval.jsonl.gz"), "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


@pytest.mark.slow
def test_humaneval_categories_are_the_papers(tmp_path: Path) -> None:
    """The build reports the categories of all 164 HumanEval programs (the three whose
    tests draw every input at random, HumanEval/32, 38 and 50, get the calls recorded by
    running their tests), and they are the paper's Table 1."""
    done = execbench("build", "humaneval", "--tasks", "simulation", "--workers", "2",
                     "--out", str(tmp_path / "suite"))
    assert done.exit_code == 0, done.output
    reported = load_suite(tmp_path / "suite")[0].task_counts["simulation"]
    built = {m.program_id for m in load_suite(tmp_path / "suite")[1]}
    records = _humaneval_records()
    assert built == {f"humaneval/{r['task_id']}" for r in records}
    assert reported == PAPER_TABLE_1
    assert Counter(shape_of(r["prompt"] + r["canonical_solution"]).category
                   for r in records) == PAPER_TABLE_1


RAISES = """\
def f(n):
    total = 0
    for i in range(n):
        total += i
    if n == 3:
        raise ValueError(total)
    return total
"""


def test_a_call_the_simulation_cannot_use_is_listed_with_its_reason(tmp_path: Path) -> None:
    """f(3) loops, then raises: no output to simulate to. The simulation task lists it in the
    manifest's skips, in the output task's words, instead of dropping it unsaid."""
    source = tmp_path / "raises.jsonl"
    source.write_text(json.dumps({"id": "raises", "code": RAISES, "entry_point": "f",
                                  "calls": ["2", "3"]}) + "\n")
    build_suite([str(source)], tmp_path / "suite", BuildOptions(
        tasks=["simulation", "output"], workers=1))
    manifest, made, _ = load_suite(tmp_path / "suite")
    assert sorted((m.task, m.call_index) for m in made) == [("output", 0), ("simulation", 0)]
    skips = {entry.task: entry for entry in manifest.skipped if entry.kind == "instance"}
    assert sorted(skips) == ["output", "simulation"]
    assert skips["simulation"].where == skips["output"].where == "raises/raises#1"
    assert skips["simulation"].reason == skips["output"].reason == \
        "the call did not return normally (exception: ValueError)"
    assert manifest.counts.skipped.instances == {"simulation": 1, "output": 1}
