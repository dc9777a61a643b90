"""Ground truth comfortably inside the step limit: what the build keeps, and how it decides.

A check re-runs the program under the sandbox's step limit, so a ground truth that took
most of it would give verdicts that hinge on a few steps. The build keeps a call only if
its traced run took at most a quarter of the limit. Steps are counted line events, so the
outcome is the same on any machine; CPU time is only a safety net, and a call stopped by it
is dropped with its own reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from execbench.manifest import Skip
from execbench.runner import RunConfig, run
from execbench.sandbox.pool import Job, Limits, Sandbox
from execbench.sandbox.trace import Trace
from execbench.suite import BuildOptions, SuiteError, SuiteFile, build_suite, load_suite
from execbench.suite.budget import refused
from execbench.tasks import get_task
from execbench.tasks.base import Instance
from tests.helpers.cli import execbench
from tests.helpers.corpus import Corpus
from tests.helpers.data import shared_data

SPIN = """\
def spin(n):
    for _ in range(n):
        pass
    return n
"""

LIMITS = Limits(max_steps=40_000, cpu_seconds=0.4, wall_seconds=60)
"""A quarter of this limit is 10,000 steps: spinning 7,000 times (about 14,000 line events)
is over it, 30,000 times hits the limit. The wall clock is 150 times the CPU limit, so the
CPU limit ends work in C however busy the machine (at 5 s it once did not)."""

OVER_BUDGET = "took more than 25% of the step limit (40,000 lines)"


def spin_source(tmp_path: Path) -> Path:
    record = {"id": "spin", "code": SPIN, "entry_point": "spin",
              "calls": ["0", "7000", "30000", "100"]}
    path = tmp_path / "spin.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return path


def test_a_call_over_a_quarter_of_the_step_limit_is_dropped_with_its_reason(
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
    # Neither steps nor CPU time are written anywhere, and the choice is counted: the
    # files are the same in every build.
    again = build_suite([str(source)], tmp_path / "again", options)
    assert again == manifest
    for name in ("instances.jsonl", "manifest.json"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "suite" / name).read_bytes()
    text = (tmp_path / "suite" / "instances.jsonl").read_text()
    assert "cpu_time" not in text and "steps" not in text


def test_a_call_the_cpu_net_stops_is_dropped_saying_so(tmp_path: Path) -> None:
    """Work the count does not see (one line of C-level work) is stopped by the CPU limit,
    the safety net, and the skip says which limit it hit."""
    record = {"id": "burn", "entry_point": "f", "calls": ["10 ** 10"],
              "code": "def f(n):\n    return sum(range(n))\n"}
    source = tmp_path / "burn.jsonl"
    source.write_text(json.dumps(record) + "\n")
    manifest = build_suite([str(source)], tmp_path / "suite",
                           BuildOptions(tasks=["output"], limits=LIMITS))
    assert [(s.where, s.reason) for s in manifest.skipped] == \
        [("burn/burn#0", "the ground-truth run hit the CPU time limit")]


def test_the_oracle_passes_calls_kept_under_a_small_limit(tmp_path: Path) -> None:
    options = BuildOptions(tasks=["output", "input"], limits=LIMITS)
    build_suite([str(spin_source(tmp_path))], tmp_path / "suite", options)
    results = run(RunConfig(suite=str(tmp_path / "suite"), model="reference/oracle", n=2),
                  tmp_path / "run")
    assert results["metrics"]["input"]["all"]["pass@1"] == 1.0
    assert results["metrics"]["output"]["all"]["pass@1"] == 1.0


def test_mutants_over_the_budget_are_dropped_too(tmp_path: Path) -> None:
    """With --mutate the mutant's own run is the ground truth, and the rule applies to it.

    The mutant closest to the original in executed lines is ``n * 2``: it spins twice as
    long, past the budget."""
    code = SPIN.replace("    for _", "    n = n * 1\n    for _")
    record = {"id": "spin", "code": code, "entry_point": "spin", "calls": ["3000"]}
    source = tmp_path / "spin.jsonl"
    source.write_text(json.dumps(record) + "\n")
    options = BuildOptions(tasks=["output"], limits=LIMITS, mutate=True)
    manifest = build_suite([str(source)], tmp_path / "suite", options)
    assert [(s.where, OVER_BUDGET in s.reason) for s in manifest.skipped] == \
        [("spin/spin@mutant#0", True)]
    assert manifest.counts.instances == 0


def test_the_budget_reads_steps_and_leaves_uncounted_work_to_the_cpu_net() -> None:
    """Steps decide; CPU time drops only a call that spent half the CPU limit in work the
    steps do not see (C code), and a timeout is dropped with the limit it hit."""
    traces = [Trace(status="ok", steps=10_000, cpu_time=0.19),
              Trace(status="ok", steps=10_001, cpu_time=0.0),
              Trace(status="timeout", detail="step limit (40,000 lines)", steps=40_001),
              Trace(status="timeout", detail="CPU time limit", steps=12),
              Trace(status="ok", steps=12, cpu_time=0.21)]
    with Sandbox(workers=1, limits=LIMITS) as box:  # no worker starts: no job is sent
        reasons = [refused(trace, box) for trace in traces]
    assert reasons[0] is None
    assert [OVER_BUDGET in (reason or "") for reason in reasons] == [False, True, True, False,
                                                                      False]
    assert reasons[3] == "the ground-truth run hit the CPU time limit"
    assert (reasons[4] or "").startswith("the ground-truth run took more than 50% of the CPU "
                                         "limit (0.4 s) in work the steps do not count")


PRIMES = """\
def largest_prime_factor(n):
    def is_prime(k):
        if k < 2:
            return False
        for i in range(2, k - 1):
            if k % i == 0:
                return False
        return True
    largest = 1
    for j in range(2, n + 1):
        if n % j == 0 and is_prime(j):
            largest = max(largest, j)
    return largest
"""

RECORDED = "__eb_test__"
"""A name the properties recorder puts in the program's globals: how a program can tell
that it is recorded."""

COSTLY = Limits(max_steps=400_000, cpu_seconds=0.15, wall_seconds=60)
"""Recording ``largest_prime_factor(13195)``'s conditions takes 0.45 s to 1.2 s here (3 to
8 times this CPU limit, within 20 times), its plain run about 0.02 s (a seventh of the
share a kept call may take); its 26,631 steps are a quarter of the budget. The wall-clock
limit is 400 times the CPU limit, so the CPU limit is what ends a loop however busy the
machine (at 5 s, a loop in C was once cut by the wall clock first, under load)."""


def _build_primes(tmp_path: Path, code: str) -> tuple[list[Skip], list[Instance]]:
    record = {"id": "primes", "code": code, "entry_point": "largest_prime_factor",
              "calls": ["63", "13195"]}
    source = tmp_path / "primes.jsonl"
    source.write_text(json.dumps(record) + "\n")
    manifest = build_suite([str(source)], tmp_path / "suite",
                           BuildOptions(tasks=["simulation", "output"], limits=COSTLY))
    return manifest.skipped, load_suite(tmp_path / "suite")[1]


def test_what_recording_costs_does_not_decide_which_calls_are_kept(tmp_path: Path) -> None:
    """Recording every condition's values (the simulation task) costs many times the plain
    run: here the recording overruns the CPU limit and the check's run takes a few
    hundredths of it. The call is kept, recorded again with more time, as on any machine;
    before, it was dropped, or not, depending on the machine's load."""
    job = Job(PRIMES, "largest_prime_factor", "13195",
              get_task("simulation").building.trace_options)
    with Sandbox(workers=1, limits=COSTLY) as box:
        first = box.submit(job).result()
    assert (first.status, first.detail) == ("timeout", "CPU time limit")  # as it was dropped
    skipped, instances = _build_primes(tmp_path, PRIMES)
    assert skipped == []
    assert {(i.task, i.call_index) for i in instances} >= {("simulation", 1), ("output", 1)}
    assert [i.data["truth"]["repr"] for i in instances
            if i.task == "output" and i.call_index == 1] == ["29"]


def test_a_program_that_works_only_while_recorded_is_dropped(tmp_path: Path) -> None:
    """Recorded, it works in C for minutes; run as a check runs it, it returns at once. Its
    second recording, with twenty times the time, is cut too, and the call is dropped
    saying why."""
    code = PRIMES.replace("    largest = 1\n", f"    if {RECORDED!r} in globals():\n"
                          "        sum(range(10 ** 12))\n    largest = 1\n")
    skipped, instances = _build_primes(tmp_path, code)
    assert [(s.where, s.reason) for s in skipped] == [
        (f"primes/primes#{index}", "recording the ground-truth run hit the CPU time limit, "
         "though a plain run of it stays within the limits") for index in (0, 1)]
    assert instances == []


def test_a_program_that_answers_otherwise_while_recorded_is_dropped(tmp_path: Path) -> None:
    """Its recording is costly, so it is checked against a plain run: same status, same
    steps, another result. Its ground truth would be one no check reproduces."""
    code = PRIMES.replace("    return largest\n",
                          f"    return largest + ({RECORDED!r} in globals())\n")
    skipped, instances = _build_primes(tmp_path, code)
    differ = "the recorded run and a plain run of the call differ"
    assert [(s.where, s.reason.startswith(differ)) for s in skipped] == \
        [("primes/primes#1", True)]
    assert {i.call_index for i in instances} == {0}


class _Recording:
    """A sandbox that records the jobs a scorer sends before running them."""

    def __init__(self, box: Sandbox) -> None:
        self.box = box
        self.jobs: list[Job] = []

    def run(self, job: Job) -> Trace:
        self.jobs.append(job)
        return self.box.run(job)


def test_answer_checks_run_under_the_whole_limit(tmp_path: Path) -> None:
    """The ground truth had the sandbox's whole limits; no check may have less."""
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
            right = task.asking.reference_response(instance)
            assert task.judging.score(instance, right, recording).correct
    assert recording.jobs and all(job.cpu_seconds is None and job.max_steps is None
                                  for job in recording.jobs)


def verdicts(run_dir: Path) -> dict[str, tuple[str, str | None]]:
    """Each sample's verdict, with the scorer's detail (which says why it is not correct)."""
    lines = (run_dir / "samples.jsonl").read_text().splitlines()
    return {f"{r['instance_id']}#{r['sample']}": (r["verdict"], r["detail"])
            for r in map(json.loads, lines)}


TIMING_PROGRAMS = ("HumanEval/24", "HumanEval/36", "HumanEval/59", "HumanEval/130")
"""HumanEval+ programs whose plus inputs hold calls near the 2 s limit or the CPU net."""


@pytest.mark.slow
def test_humaneval_plus_verdicts_do_not_depend_on_timing(tmp_path: Path) -> None:
    """HumanEval+ with its plus inputs has calls that take about the whole 2 s limit
    (HumanEval/59, /36, /130): once kept, their checks passed or failed with machine load.
    20 calls per program keep some of them, and calls just around the budget (HumanEval/36
    and /24 at about 0.5 s). Those programs and eight others (the whole file took four
    minutes with five re-scorings)."""
    suite, run_dir = tmp_path / "suite", tmp_path / "run"
    source = Corpus(full=False).source(str(shared_data("HumanEvalPlus.jsonl.gz")), 8, tmp_path,
                                       keep=TIMING_PROGRAMS)
    done = execbench("build", source, "--plus-inputs",
                     "--tasks", "output,input", "--max-calls", 20, "--out", suite)
    assert done.exit_code == 0, done.stderr
    manifest = json.loads((suite / "manifest.json").read_text())
    dropped = [s["where"] for s in manifest["skipped"] if "step limit" in s["reason"]]
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


def test_a_suite_is_read_as_a_stream_checked_against_its_sha256(tmp_path: Path) -> None:
    """Instances come one at a time; each can be read again where its line starts; a file
    changed after it was opened (no longer the suite a run pinned) stops the reading."""
    build_suite([str(_small_source(tmp_path))], tmp_path / "suite",
                BuildOptions(tasks=["output", "input"]))
    suite = SuiteFile.open(tmp_path / "suite")
    _, whole, sha = load_suite(tmp_path / "suite")
    assert suite.sha256 == sha and list(suite.instances()) == whole
    where = suite.offsets()
    assert [suite.instance_at(where[instance.id], instance.id) for instance in whole] == whole
    path = tmp_path / "suite" / "instances.jsonl"
    path.write_bytes(path.read_bytes().replace(b"2 * x", b"3 * x"))
    with pytest.raises(SuiteError, match="changed while it was read"):
        list(suite.instances())
    with pytest.raises(SuiteError, match="changed while it was read"):
        suite.check_unchanged()
    first, second = whole[0].id, whole[1].id
    with pytest.raises(SuiteError, match="changed while it was read"):
        suite.instance_at(where[second], first)  # a line that holds another instance
    path.write_bytes(path.read_bytes() + b"{not json\n")
    with pytest.raises(SuiteError, match=r"instances.jsonl:5: "):
        list(SuiteFile.open(tmp_path / "suite").instances())
