"""The measured steps of a unit (``Sandbox(phases=True)``): what the bench's split reads."""

from __future__ import annotations

import sys

import pytest

from execbench.sandbox import immortal, phases
from execbench.sandbox.pool import Job, Limits, Sandbox
from execbench.sandbox.runner import ANSWERS_FD
from execbench.values import decode

PROGRAMS = [Job(f"def f(x):\n    return [i * {n} for i in range(x)]\n", "f", "3")
            for n in range(6)]


def test_every_step_of_every_unit_is_measured() -> None:
    with Sandbox(workers=2, phases=True) as sandbox:
        traces = sandbox.map(PROGRAMS)
    assert [decode(t.value) for t in traces] == [[0, n, 2 * n] for n in range(6)]
    assert sandbox.units == len(PROGRAMS)  # one runner per program
    # A unit's reaping and wiping ride on the next unit's first answer: every step is there.
    assert set(sandbox.phases) == set(phases.STEPS)
    assert all(cpu >= 0 and faults >= 0 for cpu, faults in sandbox.phases.values())
    assert sandbox.phases["fork"][1] > 0 and sandbox.phases["compile"][1] > 0
    assert len(sandbox.bare_forks) == 2  # one per worker started
    assert all(cpu > 0 and faults > 0 for cpu, faults in sandbox.bare_forks)


def test_nothing_is_measured_unless_asked() -> None:
    with Sandbox(workers=1) as sandbox:
        sandbox.map(PROGRAMS[:2])
    assert (sandbox.phases, sandbox.units, sandbox.bare_forks) == ({}, 0, [])


FORGE = f"""
import json, os, struct, sys

def f():
    frame = sys._getframe()
    while not isinstance(frame.f_locals.get("job"), dict):
        frame = frame.f_back
    body = b"J" + json.dumps({{"kind": "result", "seq": frame.f_locals["job"]["seq"],
                               "recycle": None, "size": 0,
                               "phases": {{"run": [-1, "many"]}}}}).encode()
    os.write({ANSWERS_FD}, struct.pack(">I", len(body)) + body)
    return 1
"""


def test_forged_figures_end_the_unit_and_nothing_else() -> None:
    """A program that answers ahead with figures of the wrong form breaks the protocol:
    its unit is judged crashed, the worker goes on."""
    with Sandbox(workers=1, limits=Limits(wall_seconds=5), phases=True) as sandbox:
        first, honest = sandbox.map([Job(FORGE, "f", ""), PROGRAMS[0]])
    assert first.status == "crashed" and "protocol violation" in (first.detail or "")
    assert decode(honest.value) == [0, 0, 0]


def test_phases_valid_takes_only_known_steps_of_two_numbers() -> None:
    assert phases.valid({"run": [0.5, 3], "compile": [0, 0]})
    for bad in ({"exit": [0.1, 1]}, {"run": [0.1]}, {"run": [-1, 2]}, {"run": ["a", 1]},
                {"run": [True, 1]}, [], {"run": (0.1, 1)}):
        assert not phases.valid(bad)
    assert phases.valid({"exit": [0.1, 1]}, phases.STEPS)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="immortal objects are 3.12's")
def test_immortal_objects_keep_their_values_and_are_the_same_in_every_runner() -> None:
    """The zygote's objects are immortal from 3.12 (``immortal``): programs see the same
    values, and a count read in two runners (two units) is the same."""
    code = "import sys\n\ndef f(x):\n    return sys.getrefcount(len), sorted(x)\n"
    with Sandbox(workers=1) as sandbox:
        one, two = sandbox.map([Job(code, "f", "[3, 1, 2]"), Job(code + "\n", "f", "[2, 1]")])
    assert decode(one.value)[1] == [1, 2, 3] and decode(two.value)[1] == [1, 2]
    assert decode(one.value)[0] == decode(two.value)[0]


def test_immortal_objects_are_made_only_where_the_interpreter_has_them() -> None:
    if sys.version_info < (3, 12):
        assert immortal.make_immortal() == 0  # 3.11: nothing to do, nothing done
    else:  # not made here: it would make this test process's objects immortal
        assert immortal._immortal_count() == sys.getrefcount(None)
