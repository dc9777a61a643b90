"""Counted work decides how a call ends: the step limit, not the machine's speed or load."""

from __future__ import annotations

import time

import pytest

from execbench.sandbox.pool import Job, Limits, Sandbox
from execbench.sandbox.trace import RESULT_ONLY, TraceOptions
from execbench.values import decode

LOOP = "def f(n):\n    t = 0\n    for i in range(n):\n        t += i\n    return t\n"
STUBBORN = """\
def f(n):
    caught = 0
    while True:
        try:
            for i in range(n):
                pass
            return caught
        except BaseException:
            caught += 1
"""


def test_a_call_past_its_steps_times_out_the_same_way_every_time() -> None:
    limits = Limits(max_steps=10_000)
    with Sandbox(workers=1, limits=limits) as box:
        under, over, *again = box.map([Job(LOOP, "f", "100"), Job(LOOP, "f", "10000"),
                                       Job(LOOP, "f", "10000"), Job(LOOP, "f", "10000")])
    assert under.status == "ok" and decode(under.value) == 4950
    assert under.steps == 1 + 1 + 101 + 100 + 1  # def, t = 0, the header 101 times, body, return
    assert (over.status, over.detail, over.value) == ("timeout", "step limit (10,000 lines)",
                                                      None)
    assert [(t.status, t.steps) for t in again] == [("timeout", over.steps)] * 2


def test_catching_the_limit_does_not_make_a_call_finish() -> None:
    """The limit is raised into the program, which may catch it; the call still ran out of
    steps, and says so (tracing stops there, so the CPU net ends a program that goes on)."""
    with Sandbox(workers=1, limits=Limits(max_steps=5_000, cpu_seconds=0.5)) as box:
        [trace] = box.map([Job(STUBBORN, "f", "100000")])
    assert trace.status == "timeout" and trace.value is None


def test_a_job_may_have_fewer_steps_than_the_sandbox() -> None:
    with Sandbox(workers=1) as box:
        tight, whole = box.map([Job(LOOP, "f", "1000", max_steps=500), Job(LOOP, "f", "1000")])
    assert tight.status == "timeout" and whole.status == "ok"


ENDLESS = "def f(s):\n    i = -1\n    while s.find('/', i) != -1:\n        i = s.find('/', i + 1)\n"
"""Enters its loop body and never ends for ``'/'`` (a CRUXEval mutant's witness)."""
CAUGHT = """\
def f(n):
    try:
        while True:
            n += 1
    except BaseException:
        return n
"""


@pytest.mark.parametrize("options", [RESULT_ONLY, TraceOptions()], ids=["result", "events"])
def test_whichever_limit_ends_a_call_it_keeps_the_lines_it_ran(options: TraceOptions) -> None:
    """Whether an answer reached a line must not depend on whether the steps or the CPU
    time (which differs by machine and interpreter) ran out first."""
    by_steps = Limits(max_steps=20_000)
    by_cpu = Limits(max_steps=10**9, cpu_seconds=0.3, wall_seconds=5)
    ends = []
    for limits in (by_steps, by_cpu):
        with Sandbox(workers=1, limits=limits) as box:
            ends.append(box.run(Job(ENDLESS, "f", "'/'", options)))
    steps, cpu = ends
    assert (steps.status, steps.detail) == ("timeout", "step limit (20,000 lines)")
    assert (cpu.status, cpu.detail) == ("timeout", "CPU time limit")
    assert set(steps.lines) == set(cpu.lines) == {1, 2, 3, 4}
    assert cpu.steps > 20_000


def test_a_program_that_catches_the_cpu_limit_still_ran_out_of_time() -> None:
    """The record ends at the limit (the handler's lines are not in it), and the value the
    program returns after catching it is not its result; the unit's next call runs in a
    fresh runner, unharmed."""
    limits = Limits(max_steps=10**9, cpu_seconds=0.3, wall_seconds=5)
    with Sandbox(workers=1, limits=limits) as box:
        caught, after = box.map([Job(CAUGHT, "f", "0"), Job(LOOP, "f", "10")])
    assert (caught.status, caught.detail, caught.value) == ("timeout", "CPU time limit", None)
    assert set(caught.lines) == {1, 2, 3, 4}
    assert after.status == "ok" and decode(after.value) == 45


def test_a_long_c_call_is_still_ended_soon_after_its_budget() -> None:
    """No signal handler runs inside one long C call: the runner is killed a grace after
    the budget, as before."""
    limits = Limits(max_steps=10**9, cpu_seconds=0.3, wall_seconds=20)
    with Sandbox(workers=1, limits=limits) as box:
        start = time.monotonic()
        trace = box.run(Job("def f():\n    return sum(range(10**12))\n", "f", ""))
        took = time.monotonic() - start
    assert (trace.status, trace.detail) == ("timeout", "CPU time limit")
    assert took < 10
