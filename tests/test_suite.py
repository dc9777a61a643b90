"""Ground truth comfortably inside the CPU limit: what the build keeps, and how it decides.

A check re-runs the program under the sandbox's CPU limit, so a ground truth that took most
of that limit would give verdicts that depend on machine load. The build keeps a call only
if its traced run took at most a quarter of the limit. The programs here burn a set amount
of CPU time (``time.process_time``), so the outcome does not depend on the machine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from execbench.manifest import Skip
from execbench.program import Call, Program
from execbench.runner import RunConfig, run
from execbench.sandbox.pool import Job, Limits, Sandbox
from execbench.sandbox.trace import Trace, TraceOptions
from execbench.suite import (
    REMEASURE_RUNS,
    BuildOptions,
    SuiteError,
    _within_budget,
    build_suite,
    load_suite,
)
from execbench.tasks import get_task
from tests.helpers.cli import execbench
from tests.helpers.data import shared_data

SPIN = """\
import time

def spin(seconds):
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass
    return seconds
"""

LIMITS = Limits(cpu_seconds=0.4, wall_seconds=5)
"""A quarter of this limit is 0.1 s: a call spinning 0.3 s is over it, 0.5 s hits the limit."""

OVER_BUDGET = "took more than 25% of the CPU limit (0.4 s)"


def spin_source(tmp_path: Path) -> Path:
    record = {"id": "spin", "code": SPIN, "entry_point": "spin",
              "calls": ["0.0", "0.3", "0.5", "0.01"]}
    path = tmp_path / "spin.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return path


def test_a_call_over_a_quarter_of_the_cpu_limit_is_dropped_with_its_reason(
        tmp_path: Path) -> None:
    source = spin_source(tmp_path)
    options = BuildOptions(tasks=["output", "input"], limits=LIMITS)
    manifest = build_suite([str(source)], tmp_path / "suite", options)
    _, instances, _ = load_suite(tmp_path / "suite")
    assert sorted({(i.task, i.call_index) for i in instances}) == \
        [("input", 0), ("input", 3), ("output", 0), ("output", 3)]
    dropped = {s.where: s.reason for s in manifest.skipped}
    assert set(dropped) == {"spin/spin#1", "spin/spin#2"}  # over a quarter; over the limit
    assert all(OVER_BUDGET in reason for reason in dropped.values()), dropped
    assert manifest.counts.calls == 2
    # No CPU time is written anywhere, so the files are the same when times vary.
    again = build_suite([str(source)], tmp_path / "again", options)
    assert again == manifest
    for name in ("instances.jsonl", "manifest.json"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "suite" / name).read_bytes()
    assert "cpu_time" not in (tmp_path / "suite" / "instances.jsonl").read_text()


def test_the_oracle_passes_calls_kept_under_a_small_limit(tmp_path: Path) -> None:
    options = BuildOptions(tasks=["output", "input"], limits=LIMITS)
    build_suite([str(spin_source(tmp_path))], tmp_path / "suite", options)
    results = run(RunConfig(suite=str(tmp_path / "suite"), model="reference/oracle", n=2),
                  tmp_path / "run")
    assert results["metrics"]["input"]["all"]["pass@1"] == 1.0
    assert results["metrics"]["output"]["all"]["pass@1"] == 1.0


def test_mutants_over_the_budget_are_dropped_too(tmp_path: Path) -> None:
    """With --mutate the mutant's own run is the ground truth, and the rule applies to it.

    The mutant closest to the original in executed lines is ``seconds * 2``: it spins twice
    as long, past the budget."""
    code = SPIN.replace("    start =", "    seconds = seconds * 1\n    start =")
    record = {"id": "spin", "code": code, "entry_point": "spin", "calls": ["0.07"]}
    source = tmp_path / "spin.jsonl"
    source.write_text(json.dumps(record) + "\n")
    options = BuildOptions(tasks=["output"], limits=LIMITS, mutate=True)
    manifest = build_suite([str(source)], tmp_path / "suite", options)
    assert [(s.where, OVER_BUDGET in s.reason) for s in manifest.skipped] == \
        [("spin/spin@mutant#0", True)]
    assert manifest.counts.instances == 0


class _Timings:
    """A stand-in sandbox whose re-runs report preset CPU times, in the order asked."""

    def __init__(self, reruns: list[Trace]) -> None:
        self.limits = LIMITS
        self.reruns = reruns
        self.jobs: list[Job] = []

    def map(self, jobs) -> list[Trace]:
        self.jobs = list(jobs)
        assert len(self.jobs) == len(self.reruns)
        return self.reruns


def test_a_run_just_over_the_budget_is_measured_again_and_the_smallest_time_decides() -> None:
    program = Program(id="p/f", source="p", code="def f(x):\n    return x\n", entry_point="f",
                      calls=tuple(Call(str(n)) for n in range(5)))
    calls = [(program, n) for n in range(5)]
    traces = [Trace(status="ok", cpu_time=0.09),      # under 0.1 s: kept, not re-run
              Trace(status="ok", cpu_time=0.15),      # just over: one re-run comes in under
              Trace(status="ok", cpu_time=0.15),      # just over: the re-runs are no faster
              Trace(status="ok", cpu_time=0.25),      # over twice the budget: not re-run
              Trace(status="timeout", cpu_time=0.0)]  # hit the limit: dropped
    fast = [Trace(status="ok", cpu_time=0.12), Trace(status="ok", cpu_time=0.08)]
    # A killed re-run's time (0.0) measures nothing and must not count.
    slow = [Trace(status="timeout", cpu_time=0.0), Trace(status="ok", cpu_time=0.14)]
    box = _Timings(fast + slow)
    skipped: list[Skip] = []
    recording = TraceOptions(recorder="properties")
    kept, kept_traces = _within_budget(box, calls, traces, recording, skipped)
    assert len(box.jobs) == 2 * REMEASURE_RUNS
    assert {job.options for job in box.jobs} == {recording}  # measured as it was traced
    assert [job.args for job in box.jobs] == ["1"] * REMEASURE_RUNS + ["2"] * REMEASURE_RUNS
    assert [index for _, index in kept] == [0, 1]
    assert kept_traces == traces[:2]  # the first run's trace is the ground truth
    assert [s.where for s in skipped] == ["p/f#2", "p/f#3", "p/f#4"]


class _Recording:
    """A sandbox that records the jobs a scorer sends before running them."""

    def __init__(self, box: Sandbox) -> None:
        self.box = box
        self.jobs: list[Job] = []

    def run(self, job: Job) -> Trace:
        self.jobs.append(job)
        return self.box.run(job)


def test_answer_checks_run_under_the_whole_limit(tmp_path: Path) -> None:
    """The ground truth had the sandbox's whole CPU limit; no check may have less."""
    record = {"id": "sign", "entry_point": "f", "calls": ["-2", "0"],
              "code": "def f(x):\n    y = 0\n    if x > 0:\n        y = 1\n    return y\n"}
    source = tmp_path / "sign.jsonl"
    source.write_text(json.dumps(record) + "\n")
    build_suite([str(source)], tmp_path / "suite",
                BuildOptions(tasks=["input", "counterfactual"], limits=LIMITS))
    _, instances, _ = load_suite(tmp_path / "suite")
    assert {i.task for i in instances} == {"input", "counterfactual"}
    with Sandbox(workers=1, limits=LIMITS) as box:
        recording = _Recording(box)
        for instance in instances:
            task = get_task(instance.task)
            assert task.score(instance, task.reference_response(instance), recording).correct
    assert recording.jobs and all(job.cpu_seconds is None for job in recording.jobs)


def verdicts(run_dir: Path) -> dict[str, tuple[str, str | None]]:
    """Each sample's verdict, with the scorer's detail (which says why it is not correct)."""
    lines = (run_dir / "samples.jsonl").read_text().splitlines()
    return {f"{r['instance_id']}#{r['sample']}": (r["verdict"], r["detail"])
            for r in map(json.loads, lines)}


@pytest.mark.slow
def test_humaneval_plus_verdicts_do_not_depend_on_timing(tmp_path: Path) -> None:
    """HumanEval+ with its plus inputs has calls that take about the whole 2 s limit
    (HumanEval/59, /36, /130): once kept, their checks passed or failed with machine load.
    20 calls per program (3,272 calls, about two minutes with five re-scorings) keep some of
    them, and calls just around the budget (HumanEval/36 and /24 at about 0.5 s)."""
    suite, run_dir = tmp_path / "suite", tmp_path / "run"
    done = execbench("build", shared_data("HumanEvalPlus.jsonl.gz"), "--plus-inputs",
                     "--tasks", "output,input", "--max-calls", 20, "--out", suite)
    assert done.exit_code == 0, done.stderr
    manifest = json.loads((suite / "manifest.json").read_text())
    dropped = [s["where"] for s in manifest["skipped"] if "CPU limit" in s["reason"]]
    assert any(where.startswith("humanevalplus/HumanEval/59#") for where in dropped), dropped
    done = execbench("run", "--suite", suite, "--model", "reference/oracle", "--out", run_dir)
    assert done.exit_code == 0, done.stderr
    first = verdicts(run_dir)
    assert len(first) == manifest["counts"]["instances"]
    assert {key: v for key, v in first.items() if v[0] != "correct"} == {}
    for _ in range(5):
        done = execbench("score", run_dir)
        assert done.exit_code == 0, done.stderr
        again = verdicts(run_dir)
        assert {key: v for key, v in again.items() if v[0] != first[key][0]} == {}


def _small_source(tmp_path: Path) -> Path:
    record = {"id": "twice", "code": "def f(x):\n    return 2 * x\n", "entry_point": "f",
              "calls": ["1", "2"]}
    path = tmp_path / "small.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return path


@pytest.mark.parametrize(("change", "field"), [
    ({"buggy": True}, "buggy"), ({"max_calls": 1}, "max_calls"), ({"seed": 3}, "seed"),
    ({"limits": Limits(cpu_seconds=1.0)}, "limits")])
def test_a_rebuild_with_another_recipe_is_refused_naming_the_field(
        tmp_path: Path, change: dict, field: str) -> None:
    source, out = str(_small_source(tmp_path)), tmp_path / "suite"
    build_suite([source], out, BuildOptions(tasks=["output"]))
    before = {name: (out / name).read_bytes() for name in ("instances.jsonl", "manifest.json")}
    with pytest.raises(SuiteError, match=rf"holds a different suite \({field} differ\)"):
        build_suite([source], out, BuildOptions(tasks=["output"], **change))
    assert {name: (out / name).read_bytes() for name in before} == before
    build_suite([source], out, BuildOptions(tasks=["output"]))  # the same recipe: allowed
