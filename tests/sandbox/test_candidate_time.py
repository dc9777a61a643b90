"""A candidate's time is bounded as a whole: its calls share one wall-clock budget (one
wall-clock limit plus each call's CPU limit), and once one of them runs out of time the rest
are judged ``timeout`` without being run.

Before, a repair that slept or spun at import held a worker for calls x the limit: each
call left after its runner was killed went to a fresh runner that did the same again.
Each test counts, from outside the sandbox, the batches the pool sent (one runner each)
and the statuses; times are compared only against bounds the old behaviour overruns
several times over. Ground truth (a dataset program's own calls, no unit) keeps the
per-call limit, so suites are unchanged.
"""

from __future__ import annotations

from execbench.sandbox.pool import BATCH, Job, Limits, Sandbox, Trace, new_unit
from execbench.sandbox.trace import RESULT_ONLY
from execbench.tasks import get_task
from execbench.tasks.base import Instance
from execbench.tasks.bugs_payload import BugNote, RepairCall, RepairQuestion
from execbench.values import decode

WALL = 1.0
CALLS = 7
LIMITS = Limits(cpu_seconds=0.3, wall_seconds=WALL, max_steps=10 ** 9)
"""A step limit out of reach, so that a loop in Python runs to the CPU limit."""

AT_IMPORT = {
    "sleep": "import time\n\ntime.sleep(60)\n",
    "python loop": "while True:\n    pass\n",
    "C loop": "import itertools\n\nsum(itertools.repeat(1))\n",
    "loop catching the limit": "while True:\n    try:\n        while True:\n            pass\n"
                               "    except BaseException:\n        pass\n",
}
ECHO = "\n\ndef f(x):\n    return x\n"


def _unit(sandbox: Sandbox, code: str, calls: int = CALLS,
          unit: str | None = "new") -> tuple[list[Trace], int]:
    """Run ``f(0) .. f(calls - 1)`` of ``code`` as one unit: the traces and the batches
    sent (runners used; a count, where seconds would depend on the machine's load)."""
    unit = new_unit() if unit == "new" else unit
    before = sandbox.batches
    traces = sandbox.map(Job(code, "f", str(i), RESULT_ONLY, unit=unit) for i in range(calls))
    return traces, sandbox.batches - before


def _pool(limits: Limits = LIMITS) -> Sandbox:
    sandbox = Sandbox(workers=1, limits=limits)
    assert sandbox.run(Job(ECHO, "f", "1")).status == "ok"  # started before any timing
    return sandbox


def test_a_candidate_that_stalls_at_import_is_judged_once() -> None:
    with _pool() as sandbox:
        for name, stall in AT_IMPORT.items():
            traces, batches = _unit(sandbox, stall + ECHO)
            assert [t.status for t in traces] == ["timeout"] * CALLS, (name, traces)
            assert batches == 1, (name, batches)  # the old way: 7 runners, 7 limits
            assert all("not run" in t.detail for t in traces[1:]), (name, traces[1].detail)


def test_a_candidate_slow_on_every_call_has_one_wall_budget_in_all() -> None:
    """Each call alone is within the wall-clock limit; all of them together are past the
    unit's budget (the limit plus 7 x 0.1 s of CPU limits)."""
    slow = f"import time\n\n\ndef f(x):\n    time.sleep({WALL * 0.8})\n    return x\n"
    with _pool(Limits(cpu_seconds=0.1, wall_seconds=WALL)) as sandbox:
        traces, batches = _unit(sandbox, slow)
    statuses = [t.status for t in traces]
    assert set(statuses) <= {"ok", "timeout"} and statuses.count("timeout") >= CALLS - 2
    assert statuses == sorted(statuses)  # every ok before the first timeout
    assert batches == 1  # the old way: every call run, 7 x 0.8 s


def test_an_honest_candidate_slow_on_every_call_passes() -> None:
    """30 calls of 0.02 s of CPU each, 0.6 s in all, more than the 0.5 s wall-clock limit:
    the unit's budget (0.5 s plus 30 x 1 s of CPU limits) has room for every one of them,
    fifty times over, and each call has 25 times the time it needs under its own wall
    limit, so a machine busy enough to give a runner a tenth of a core passes too."""
    busy = ("import time\n\n\ndef f(x):\n    end = time.process_time() + 0.02\n"
            "    while time.process_time() < end:\n        pass\n    return x\n")
    with _pool(Limits(cpu_seconds=1.0, wall_seconds=0.5, max_steps=10 ** 9)) as sandbox:
        traces, batches = _unit(sandbox, busy, calls=30)
    assert [t.status for t in traces] == ["ok"] * 30
    assert batches == -(-30 // BATCH)  # no call sent twice: BATCH calls to a message


def test_ground_truth_keeps_a_limit_per_call() -> None:
    """A dataset program's calls (no unit): one that stalls costs its own call, and the
    rest run, as before, in a fresh runner."""
    code = "import time\n\n\ndef f(x):\n    if x == 0:\n        time.sleep(60)\n    return x\n"
    with _pool() as sandbox:
        traces, batches = _unit(sandbox, code, calls=4, unit=None)
    assert [t.status for t in traces] == ["timeout", "ok", "ok", "ok"]
    assert [decode(t.value) for t in traces[1:]] == [1, 2, 3]
    assert batches == 2


def test_a_step_limit_costs_a_candidate_only_that_call() -> None:
    """The step limit is counted work, not time: the call ends the same way on every
    machine and the runner goes on, so the candidate's other calls still count."""
    code = "def f(x):\n    while x == 1:\n        pass\n    return x\n"
    with Sandbox(workers=1, limits=Limits(cpu_seconds=1, wall_seconds=10)) as sandbox:
        traces, batches = _unit(sandbox, code, calls=4)
    assert [t.status for t in traces] == ["ok", "timeout", "ok", "ok"]
    assert traces[1].detail.startswith("step limit")
    assert batches == 1


def _instance(sandbox: Sandbox) -> Instance:
    code = "def add_one(x):\n    return x\n"
    calls: list[RepairCall] = []
    for x in range(CALLS):
        trace = sandbox.run(Job("def add_one(x):\n    return x + 1\n", "add_one", str(x),
                                RESULT_ONLY))
        assert trace.value is not None and trace.value_repr is not None
        calls.append(RepairCall(str(x), trace.value, trace.value_repr))
    question = RepairQuestion("assert add_one(0) == 1",
                              BugNote("missing logic", "incorrect output", "wrong value", "0"),
                              tuple(calls), "def add_one(x):\n    return x + 1\n")
    return Instance(id="toy/bug-repair", task="bug-repair", source="toy", program_id="toy/0",
                    call_index=0, code=code, entry_point="add_one", args="0",
                    data=question.to_record())


def test_a_repair_that_sleeps_at_import_is_scored_in_one_runner() -> None:
    repair = get_task("bug-repair")
    answer = ("[ANSWER]\n```python\nimport time\n\ntime.sleep(60)\n\n\n"
              "def add_one(x):\n    return x + 1\n```\n[/ANSWER]")
    with _pool() as sandbox:
        instance = _instance(sandbox)
        right = repair.asking.reference_response(instance)
        assert repair.judging.score(instance, right, sandbox).correct
        before = sandbox.batches
        score = repair.judging.score(instance, answer, sandbox)
        assert sandbox.batches - before == 1  # one runner, one limit: not one per call
    assert score.verdict == "incorrect" and score.extra == {"passed": 0, "calls": CALLS}
