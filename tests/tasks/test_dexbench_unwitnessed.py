"""``-T unwitnessed=keep``: counterfactual targets that no input was found to reach are kept,
as DexBench keeps them; answers are judged by running them, the oracle abstains, and the
build and the dexbench report say how many. The default still drops them, and CRUXEval
gives the paper's 298."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from execbench.runner import RunConfig, read_samples, run
from execbench.sandbox.pool import Sandbox
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks import get_task
from execbench.tasks.dexbench_payload import CounterfactualQuestion
from tests.helpers.cli import execbench
from tests.helpers.data import shared_data

COUNTERFACTUAL = get_task("counterfactual")

# f(1) skips the `if`; only n == 370372 enters it, a number neither the program's constants
# nor the search's edits of 1 come near, so no witness is found.
HIDDEN = "def f(n):\n    label = 'plain'\n    if n == 123457 * 3 + 1:\n" \
         "        label = 'found'\n    return label\n"
# f(1) skips the `if`, and its other call, f(60), enters it: a witness.
FOUND = "def g(n):\n    size = 'small'\n    if n > 50:\n        size = 'big'\n    return size\n"


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "programs.jsonl"
    path.write_text(
        json.dumps({"id": "hidden", "code": HIDDEN, "entry_point": "f", "calls": ["1"]}) + "\n"
        + json.dumps({"id": "found", "code": FOUND, "entry_point": "g",
                      "calls": ["1", "60"]}) + "\n")
    return path


def _suite(source: Path, out: Path, **options: str) -> tuple[dict, list]:
    manifest = build_suite([str(source)], out, BuildOptions(
        tasks=["counterfactual"], workers=1, task_options=options, seed=0))
    return manifest.to_record(), load_suite(out)[1]


def test_the_default_drops_an_unwitnessed_target(source: Path, tmp_path: Path) -> None:
    manifest, instances = _suite(source, tmp_path / "suite")
    assert [i.program_id for i in instances] == ["programs/found"]
    assert "task_counts" not in manifest
    [skip] = [s for s in manifest["skipped"] if s.get("task") == "counterfactual"]
    assert skip["where"] == "programs/hidden#0"


def test_keep_holds_it_judged_by_running_the_answer(source: Path, tmp_path: Path) -> None:
    manifest, instances = _suite(source, tmp_path / "suite", unwitnessed="keep")
    by_program = {i.program_id: i for i in instances}
    assert sorted(by_program) == ["programs/found", "programs/hidden"]
    assert manifest["task_counts"] == {"counterfactual": {"unwitnessed": 1}}
    hidden = by_program["programs/hidden"]
    assert CounterfactualQuestion.from_record(hidden.data).witness is None
    assert hidden.data["truth"]["witness"] is None
    assert CounterfactualQuestion.from_record(by_program["programs/found"].data).witness \
        == "60"
    with Sandbox(workers=1) as sandbox:
        right = COUNTERFACTUAL.judging.score(hidden, "[ANSWER]\n370372\n[/ANSWER]", sandbox)
        wrong = COUNTERFACTUAL.judging.score(hidden, "[ANSWER]\n370371\n[/ANSWER]", sandbox)
    assert (right.verdict, wrong.verdict) == ("correct", "incorrect")
    assert wrong.detail == "target not reached"


def test_the_oracle_abstains_on_it_and_the_run_counts_it(source: Path, tmp_path: Path) -> None:
    _suite(source, tmp_path / "suite", unwitnessed="keep")
    run(RunConfig(suite=str(tmp_path / "suite"), model="reference/oracle"), tmp_path / "run")
    verdicts = {s.instance_id: (s.verdict, s.error)
                for s in read_samples(tmp_path / "run" / "samples.jsonl").values()}
    assert verdicts["counterfactual/programs/found/0"] == ("correct", None)
    verdict, error = verdicts["counterfactual/programs/hidden/0"]
    assert verdict == "error"
    assert error == "reference/oracle abstains: no input reaching the target was found " \
                    "when the suite was built"


def test_the_report_says_how_many(source: Path, tmp_path: Path) -> None:
    """The dexbench layout's table: one target without a witness, the oracle's sample on it
    without an answer; a suite without such targets has no such table."""
    _suite(source, tmp_path / "kept", unwitnessed="keep")
    _suite(source, tmp_path / "dropped")
    for name in ("kept", "dropped"):
        run(RunConfig(suite=str(tmp_path / name), model="reference/oracle"),
            tmp_path / f"run-{name}")
    done = execbench("report", tmp_path / "run-kept", "--layout", "dexbench", "--format",
                     "json")
    assert done.exit_code == 0, done.stderr
    [table] = [t for t in json.loads(done.stdout)["tables"]
               if t["title"] == "Counterfactual targets kept without a witness"]
    assert table["rows"] == [{"run": "reference/oracle", "targets without witness": 1,
                              "samples": 1, "correct": 0, "not correct": 0, "no answer": 1}]
    done = execbench("report", tmp_path / "run-dropped", "--layout", "dexbench", "--format",
                     "json")
    assert "without a witness" not in done.stdout


def test_the_build_says_how_many(source: Path, tmp_path: Path) -> None:
    done = execbench("build", source, "--out", tmp_path / "suite", "--tasks", "counterfactual",
                     "-T", "unwitnessed=keep")
    assert done.exit_code == 0, done.stderr
    assert "counterfactual: unwitnessed 1" in done.stdout
    listed = execbench("ls", "tasks")
    assert "unwitnessed=drop|keep" in listed.stdout


@pytest.mark.slow
def test_cruxeval_keeps_the_papers_298(tmp_path: Path) -> None:
    """DexBench pairs 298 CRUXEval programs; 14 of their targets have no witness the search
    finds, which the default drops (284) and ``keep`` keeps."""
    manifest = build_suite([str(shared_data("cruxeval.jsonl"))], tmp_path, BuildOptions(
        tasks=["coverage", "counterfactual"], task_options={"unwitnessed": "keep"}))
    assert manifest.counts.by_task == {"coverage": 298, "counterfactual": 298}
    assert manifest.task_counts == {"counterfactual": {"unwitnessed": 14}}
