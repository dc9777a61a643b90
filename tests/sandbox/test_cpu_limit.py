"""The CPU limit against programs that fight it (``runner._over_budget``, ``tracer.cut``).

At its CPU budget a call's record ends where the program is and ``CpuLimit`` is raised into
it. Whatever the program then does (catch it once or forever, swallow it in a ``finally``,
a ``with`` or a ``__del__``, turn the timers or their signals off, free the recorder's
tool, run code that poses as the sandbox's own) the call is a ``timeout`` with no value,
its record holds no line run after the cut, it ends within a bounded time, and no later
call sees any of it; a candidate unit's later calls are judged ``timeout`` without being run
(``pool.UnitTime``).
"""

from __future__ import annotations

import sys

import pytest

from execbench.sandbox import recording, tracer
from execbench.sandbox.pool import Job, Limits, Sandbox, new_unit
from execbench.sandbox.trace import RESULT_ONLY, Trace, TraceOptions
from execbench.values import decode

LIMITS = Limits(max_steps=10**9, cpu_seconds=0.3, wall_seconds=60)
"""A CPU budget the step limit never reaches first, and a wall limit so far above it that
only a broken CPU limit (never a busy machine) lets the wall limit end a call."""
WALL_ENDS = Limits(max_steps=10**9, cpu_seconds=0.3, wall_seconds=3)
"""For programs that turn both CPU timers off: the wall limit is what ends them."""
LOOP = "def f(n):\n    t = 0\n    for i in range(n):\n        t += i\n    return t\n"
RECORDERS = pytest.mark.parametrize("options", [RESULT_ONLY, TraceOptions()],
                                    ids=["result", "events"])

CATCHERS = {
    "bare except": ("""\
def f(n):
    try:
        while True:
            n += 1
    except:
        pass
    after = 1
    return after
""", {1, 2, 3, 4}),
    "finally returns": ("""\
def f(n):
    try:
        while True:
            n += 1
    finally:
        return 'swallowed'
""", {1, 2, 3, 4}),
    "with swallows": ("""\
class Swallow:
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return True
def f(n):
    with Swallow():
        while True:
            n += 1
    return 'swallowed'
""", {1, 2, 3, 4, 6, 7, 8, 9}),  # line 5, __exit__'s body, runs after the cut
    "generator closed": ("""\
def g():
    try:
        while True:
            yield 1
    except BaseException:
        return
def f(n):
    for v in g():
        n += v
    return n
""", {1, 2, 3, 4, 7, 8, 9}),
    "__del__ loops": ("""\
class Forever:
    def __del__(self):
        while True:
            pass
def f(n):
    Forever()
    return 'deleted'
""", {1, 2, 3, 4, 5, 6}),
    "catches it forever": ("""\
def f(n):
    while True:
        try:
            while True:
                n += 1
        except BaseException:
            n = 0
""", {1, 2, 3, 4, 5}),
}


def _assert_cut(trace: Trace, lines: set[int]) -> None:
    assert (trace.status, trace.detail, trace.value) == ("timeout", "CPU time limit", None)
    assert set(trace.lines) == lines


def _assert_unharmed(*traces: Trace) -> None:
    for trace in traces:
        assert trace.status == "ok" and decode(trace.value) == 45


def _assert_not_run(trace: Trace) -> None:
    """The call of a candidate unit after one that ran out of time: judged, never run."""
    assert (trace.status, trace.value) == ("timeout", None)
    assert trace.detail.startswith("not run"), trace.detail


@RECORDERS
def test_a_program_that_catches_the_limit_keeps_no_line_past_it(options: TraceOptions) -> None:
    """However the program swallows ``CpuLimit``, and however often, the lines it runs
    after it are not recorded and the value it returns is not its result; one that catches
    it every time is answered for a few retries later, its record kept (the backstop would
    have killed the runner and lost it)."""
    jobs = []
    for code, _ in CATCHERS.values():
        unit = new_unit()
        jobs += [Job(code, "f", "0", options, unit=unit),
                 Job(LOOP, "f", "10", options, unit=unit), Job(LOOP, "f", "10", options)]
    with Sandbox(workers=1, limits=LIMITS) as box:
        traces = box.map(jobs)
    for (name, (_, lines)), cut, unit_next, after in zip(
            CATCHERS.items(), traces[::3], traces[1::3], traces[2::3], strict=True):
        assert (cut.status, cut.detail, cut.value, set(cut.lines)) == \
            ("timeout", "CPU time limit", None, lines), name
        _assert_not_run(unit_next)
        _assert_unharmed(after)


def test_a_caught_step_limit_keeps_its_lines_when_the_cpu_limit_ends_the_call() -> None:
    """A loop around ``except BaseException`` catches the step limit, then the CPU limit:
    the call is still answered with the record the step limit ended."""
    code, lines = CATCHERS["catches it forever"]
    limits = Limits(max_steps=5_000, cpu_seconds=0.3, wall_seconds=60)
    with Sandbox(workers=1, limits=limits) as box:
        trace = box.run(Job(code, "f", "0"))
    assert trace.status == "timeout" and trace.value is None
    assert set(trace.lines) == lines and trace.steps == 5_001


FIGHTERS = {
    "ignores SIGPROF": "signal.signal(signal.SIGPROF, signal.SIG_IGN)",
    "handles SIGPROF": "signal.signal(signal.SIGPROF, lambda *a: None)",
    "blocks both signals": "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPROF, "
                           "signal.SIGVTALRM})",
    "stops both timers": "signal.setitimer(signal.ITIMER_PROF, 0); "
                         "signal.setitimer(signal.ITIMER_VIRTUAL, 0)",
    "ignores SIGVTALRM": "signal.signal(signal.SIGVTALRM, signal.SIG_IGN)",
    "untraces itself": "sys.settrace(None)",
}


@pytest.mark.parametrize("fight", list(FIGHTERS))
def test_a_program_that_fights_the_timers_still_times_out(fight: str) -> None:
    """Within the CPU backstop or, where the program turned both timers off, the wall
    limit; the unit's next call is judged unrun, the next runner's call is unharmed."""
    code = f"""\
import signal, sys
def f(n):
    {FIGHTERS[fight]}
    while True:
        try:
            while True:
                n += 1
        except BaseException:
            pass
"""
    unit = new_unit()
    with Sandbox(workers=1, limits=WALL_ENDS) as box:
        fought, after, other = box.map([Job(code, "f", "0", unit=unit),
                                        Job(LOOP, "f", "10", unit=unit), Job(LOOP, "f", "10")])
    assert (fought.status, fought.value) == ("timeout", None)
    _assert_not_run(after)
    _assert_unharmed(other)


@pytest.mark.skipif(not tracer.MONITORING, reason="sys.monitoring is new in Python 3.12")
def test_a_program_that_frees_the_recorders_tool_keeps_no_line_past_the_cut() -> None:
    """Before 3.14 a freed tool id keeps its events and callbacks: the cut takes it back to
    turn them off, as the recorder's stop does."""
    code = """\
import sys
def f(n):
    for tool in range(6):
        if sys.monitoring.get_tool(tool) == 'execbench':
            sys.monitoring.free_tool_id(tool)
    try:
        while True:
            n += 1
    except BaseException:
        pass
    after = 1
    return after
"""
    with Sandbox(workers=1, limits=LIMITS) as box:
        freed, other = box.map([Job(code, "f", "0", RESULT_ONLY), Job(LOOP, "f", "10")])
    _assert_cut(freed, {1, 2, 3, 4, 5, 6, 7, 8})
    _assert_unharmed(other)


@pytest.mark.skipif(not tracer.MONITORING, reason="sys.monitoring is new in Python 3.12")
def test_code_that_starts_after_the_cut_is_not_counted() -> None:
    """The cut may land inside the recorder's ``PY_START`` callback, between its finding a
    new code object of the program and turning that code's events on: they stay off."""
    from execbench.sandbox.monitor import MonitorRecorder

    events = sys.monitoring.events
    program = tracer.compile_program("def f():\n    return 1\n")
    recorder = MonitorRecorder(program, {**tracer.DEFAULT_OPTIONS, **RESULT_ONLY.__dict__,
                                         "max_steps": 100})
    code = compile("x = 1\n", recording.PROGRAM_FILE, "exec")
    recorder.start()
    try:
        tool = recorder.tool
        assert tool is not None
        start = sys.monitoring.register_callback(tool, events.PY_START, None)
        recorder.halt()  # as the signal handler would, once the callback has begun
        start(code, 0)
        assert sys.monitoring.get_local_events(tool, code) == 0
    finally:
        recorder.stop()


def test_code_posing_as_the_sandbox_is_ended_by_the_backstop() -> None:
    """``CpuLimit`` is never raised in the sandbox's own code, and code a program compiles
    under its file names is not told apart: such a loop runs to the backstop, which kills
    the runner a grace after the budget."""
    code = """\
import sys
source = "def spin(n):\\n    while True:\\n        n += 1\\n"
posing = sys.modules['execbench.sandbox.tracer'].__file__
space = {}
exec(compile(source, posing, 'exec'), space)
def f(n):
    return space['spin'](n)
"""
    unit = new_unit()
    with Sandbox(workers=1, limits=LIMITS) as box:
        posed, unit_next, after = box.map([Job(code, "f", "0", unit=unit),
                                           Job(LOOP, "f", "10", unit=unit), Job(LOOP, "f", "10")])
    assert (posed.status, posed.detail, posed.value) == ("timeout", "CPU time limit", None)
    _assert_not_run(unit_next)
    _assert_unharmed(after)


@RECORDERS
def test_the_limit_landing_in_the_sandboxs_own_work_is_still_a_timeout(
        options: TraceOptions) -> None:
    """Encoding a result calls the program's ``__repr__``, and a huge value takes long to
    encode: the limit lands there, and the call is a timeout, not a crash or an ``ok``."""
    endless_repr = """\
class Endless:
    def __repr__(self):
        while True:
            pass
def f(n):
    return Endless()
"""
    huge = "def f(n):\n    return [[i] * 50 for i in range(n)]\n"
    with Sandbox(workers=1, limits=LIMITS) as box:
        shown, encoded, other = box.map([Job(endless_repr, "f", "0", options),
                                         Job(huge, "f", "10**6", options),
                                         Job(LOOP, "f", "10", options)])
    _assert_cut(shown, {1, 2, 5, 6})
    assert (encoded.status, encoded.detail, encoded.value) == ("timeout", "CPU time limit", None)
    _assert_unharmed(other)


def test_a_thread_that_runs_on_does_not_reach_the_units_next_call() -> None:
    """The main thread waits on a spinning thread: the call times out (the signal may reach
    the spinning thread, so the backstop may end it), the unit's next call is judged unrun,
    and the next call runs in a fresh runner."""
    code = """\
import threading
def spin():
    n = 0
    while True:
        n += 1
def f(n):
    threading.Thread(target=spin, daemon=True).start()
    while True:
        n += 1
"""
    unit = new_unit()
    with Sandbox(workers=1, limits=LIMITS) as box:
        spun, unit_next, after = box.map([Job(code, "f", "0", unit=unit),
                                          Job(LOOP, "f", "10", unit=unit), Job(LOOP, "f", "10")])
    assert (spun.status, spun.value) == ("timeout", None)
    _assert_not_run(unit_next)
    _assert_unharmed(after)


@RECORDERS
def test_a_call_just_under_its_budget_is_ok(options: TraceOptions) -> None:
    """The handler changes nothing for a call that ends before the budget: its value and
    record are the ones it would have anywhere."""
    with Sandbox(workers=1, limits=Limits(cpu_seconds=2.0)) as box:
        done = box.run(Job(LOOP, "f", "10**5", options))
    assert done.status == "ok" and decode(done.value) == sum(range(10**5))
    assert set(done.lines) == {1, 2, 3, 4, 5}
