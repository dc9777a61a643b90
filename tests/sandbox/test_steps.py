"""Counted work decides how a call ends: the step limit, not the machine's speed or load."""

from __future__ import annotations

from execbench.sandbox.pool import Job, Limits, Sandbox
from execbench.sandbox.values import decode

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
