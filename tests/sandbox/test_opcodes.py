"""The ``opcodes`` recorder: the bytecode operations of the program's frames, counted on the
first run of a fresh program on every supported Python (3.12 reports none to settrace on a
code object's first run), beside the same lines as ``lines``; and a program that meddles
with ``sys.monitoring`` ends its own count, never the runner."""

from __future__ import annotations

import sys

import pytest

from execbench.sandbox.pool import Job, Sandbox
from execbench.sandbox.trace import RESULT_ONLY, TraceOptions

COUNTING = TraceOptions(recorder="opcodes", max_events=0, max_branch_seq=0)
LOOP = "def f(n):\n    t = 0\n    for k in range(n):\n        t += k\n    return t\n"


def test_operations_grow_with_the_work_and_lines_stay_those_of_lines() -> None:
    with Sandbox(workers=1) as sandbox:
        one, hundred = (sandbox.run(Job(LOOP, "f", n, COUNTING)) for n in ("1", "100"))
        plain = sandbox.run(Job(LOOP, "f", "100", RESULT_ONLY))
    # four to eight operations a turn of the loop, whatever the version's bytecode
    assert 99 * 4 < hundred.extra["opcodes"] - one.extra["opcodes"] < 99 * 8
    assert one.extra["opcodes"] > 0  # a fresh program's first run counts
    assert (hundred.lines, hundred.steps, hundred.value) == (plain.lines, plain.steps,
                                                             plain.value)
    assert "opcodes" not in plain.extra


def test_library_code_is_not_counted() -> None:
    """``sorted`` of a long list is one call's worth of operations of the program."""
    code = "def f(n):\n    return sorted(range(n, 0, -1))[0]\n"
    with Sandbox(workers=1) as sandbox:
        small, large = (sandbox.run(Job(code, "f", n, COUNTING)) for n in ("3", "30000"))
    assert small.extra["opcodes"] == large.extra["opcodes"]


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is 3.12's")
def test_a_program_that_frees_the_tool_ends_only_its_own_count() -> None:
    meddling = ("import sys\ndef f():\n    for tool in (3, 4):\n"
                "        if sys.monitoring.get_tool(tool):\n"
                "            sys.monitoring.free_tool_id(tool)\n    return 1\n")
    with Sandbox(workers=1) as sandbox:
        first = sandbox.run(Job(meddling, "f", "", COUNTING))
        after = sandbox.run(Job(LOOP, "f", "10", COUNTING))
    assert first.status in ("ok", "exception")
    assert after.status == "ok" and after.extra["opcodes"] > 10 * 4
