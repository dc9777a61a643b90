"""The ``sys.monitoring`` recorder (``execbench.sandbox.monitor``) against the settrace one.

Since Python 3.12, ``tracer.run`` records the runs that keep no event list and no states
(``RESULT_ONLY``) from ``sys.monitoring``. Its record must be the settrace recorder's, field
for field, on programs chosen for the corners where the two APIs report differently (loops
and comprehensions on one line, generators resumed, thrown into and closed, exceptions
caught, re-raised and uncaught, threads, code the program compiles itself), and at each
step budget around a run's own steps. A program must not be able to stop its steps from
being counted more easily than under settrace, nor leave the tool behind for the next run.
Runs are made in this process, as the sandbox's runner makes them.
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from typing import Any

import pytest

from execbench.sandbox import recording, tracer
from execbench.sandbox.pool import Job, Limits, Sandbox
from execbench.sandbox.trace import RESULT_ONLY, TraceOptions
from execbench.values import decode

monitoring_only = pytest.mark.skipif(not tracer.MONITORING,
                                     reason="sys.monitoring is new in Python 3.12")

PROGRAMS = {
    "loops on one line": ("""\
def f(n):
    t = 0
    for i in range(n): t += i
    while t > 3: t -= 3
    return t
""", "10"),
    "comprehensions": ("""\
def f(xs):
    a = [x * 2 for x in xs if x]
    b = {x: [y for y in range(x)] for x in xs}
    g = sum(x for x in xs
            if x > 1)
    if any(x > 2 for x in xs):
        a.append(1)
    return len(a) + len(b) + g, [
        t
        for t in a]
""", "[0, 1, 2, 3]"),
    "generators sent to, thrown into and closed": ("""\
def gen(n):
    i = 0
    while i < n:
        if (yield i):
            i += 2
        else:
            i += 1
    return i

def f(n):
    g = gen(n)
    out = [next(g)]
    try:
        while True:
            out.append(g.send(len(out) % 2))
    except StopIteration as e:
        out.append(e.value)
    h = gen(5)
    next(h)
    try:
        h.throw(ValueError)
    except ValueError:
        out.append(-1)
    k = gen(5)
    next(k)
    k.close()
    return out + [x for x in (y for y in gen(3))]
""", "7"),
    "a loop over a generator with a long body": ("""\
def items(n):
    yield from range(n)

def f(n):
    t = 0
    for x in items(n):
""" + "".join(f"        t += x * {k}\n" for k in range(60)) + """\
    return t
""", "3"),
    "a generator closed inside try/finally, a context manager, a coroutine": ("""\
class Managed:
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return True

def gen():
    try:
        yield 1
        yield 2
    finally:
        if gen:
            done = 1

async def double(x):
    return x * 2

async def main(n):
    s = 0
    for i in range(n):
        s += await double(i)
    return s

def f(n):
    g = gen()
    next(g)
    g.close()
    with Managed():
        raise ValueError
    c = main(n)
    try:
        c.send(None)
    except StopIteration as e:
        return e.value
""", "4"),
    "recursion": ("""\
def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)

def f(n):
    return fib(n)
""", "12"),
    "exceptions caught, re-raised through finally, and in a condition": ("""\
def boom(x):
    if x > 2:
        raise ValueError(x)
    return x

def f(xs):
    total = 0
    for x in xs:
        try:
            total += boom(x)
        except ValueError:
            total -= 1
        finally:
            total += 100
    try:
        try:
            boom(9)
        finally:
            if total > 0:
                total += 1
    except ValueError:
        pass
    if boom(1) and xs[10]:
        total = 0
    return total
""", "[1, 2, 3, 4]"),
    "an exception uncaught": ("""\
def g(x):
    while x:
        if x == 3:
            raise KeyError(x)
        x -= 1

def f(x):
    g(1)
    return g(x)
""", "5"),
    "while/else and for/else, left by break or by the condition": ("""\
def f(n):
    i = 0
    while i < n:
        if i == 7:
            break
        i += 1
    else:
        i = -i
    for j in range(n):
        if j > 8:
            break
    else:
        j = 100
    return i, j
""", "5"),
    "while/else left by break": ("""\
def f(n):
    i = 0
    while i < n:
        if i == 7:
            break
        i += 1
    else:
        i = -i
    return i
""", "10"),
    "classes, lambdas, sort keys and a multi-line condition": ("""\
class A:
    k = [i for i in range(3)]
    def __init__(self, v):
        self.v = v
    def __lt__(self, other):
        return self.v < other.v

def f(xs):
    items = sorted(A(x) for x in xs)
    items.sort(key=lambda a: -a.v)
    if (len(items) > 1 and
            items[0].v > 0):
        y = [
            1]
    elif items: y = 2
    else: y = 3
    return [a.v for a in items] + list(map(lambda x: x + 1, xs)), y
""", "[3, 1, 2]"),
    "a line reached again when a call returns into it": ("""\
def g(b):
    return b

def f(a, b):
    x = a or g(b)
    return x, [a and g(i) for i in range(3)]
""", "0, 5"),
    "threads running program code": ("""\
import threading

def work(out):
    for i in range(100):
        out.append(i)

def f(n):
    out = []
    threads = [threading.Thread(target=work, args=(out,)) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(out)
""", "3"),
    "code the program compiles under its own file name": ("""\
def f(n):
    code = compile("t = 0\\nfor i in range(3):\\n    t += i\\n", "<program>", "exec")
    ns = {}
    exec(code, ns)
    return ns["t"] + n
""", "1"),
    "match and a finaliser": ("""\
class D:
    def __del__(self):
        if self:
            pass

def f(v):
    D()
    match v:
        case [a, b]:
            return a + b
        case _:
            return 0
""", "[1, 2]"),
}


def _options(max_steps: int | None) -> dict[str, Any]:
    return {**asdict(RESULT_ONLY), "max_steps": max_steps}


def _settrace(code: str, args: str, max_steps: int | None) -> dict[str, Any]:
    """The run recorded by ``sys.settrace`` whatever the version."""
    recorder = recording.Recorder(tracer.compile_program(code),
                               {**tracer.DEFAULT_OPTIONS, **_options(max_steps)})
    return tracer.record(recorder, "f", tracer.compile_args(args))


def _run(code: str, args: str, options: dict[str, Any]) -> dict[str, Any]:
    """The run as ``tracer.run`` records it (from ``sys.monitoring`` where it can)."""
    return tracer.run(tracer.compile_program(code), "f", tracer.compile_args(args), options)


def _tools_free() -> bool:
    from execbench.sandbox import monitor

    return all(sys.monitoring.get_tool(tool) is None for tool in monitor.TOOL_IDS)


@pytest.mark.parametrize("name", list(PROGRAMS))
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_result_only_run_records_what_settrace_records(name: str) -> None:
    """Every field, with no budget, with the run's own steps as the budget, one step
    fewer (the limit hits the last line) and none at all. (The limit may hit a finaliser,
    where Python reports the exception and goes on: the warning filtered here.)"""
    code, args = PROGRAMS[name]
    steps = _settrace(code, args, None)["steps"]
    for budget in (None, steps, steps - 1, steps // 2, 0):
        assert _run(code, args, _options(budget)) == _settrace(code, args, budget), budget


@monitoring_only
def test_result_only_runs_are_recorded_from_sys_monitoring_and_others_by_settrace() -> None:
    code = "import sys\ndef f():\n    return sys.gettrace() is None\n"
    assert _run(code, "", _options(None))["value"] == ["bool", True]
    assert _run(code, "", {})["value"] == ["bool", False]
    assert _run(code, "", {**_options(None), "states": True})["value"] == ["bool", False]
    assert _tools_free()


@monitoring_only
def test_runs_beside_a_thread_already_running_are_recorded_the_same() -> None:
    """With another thread alive as the run starts, every event is checked for its thread
    from the first one."""
    import threading

    done = threading.Event()
    waiting = threading.Thread(target=done.wait)
    waiting.start()
    try:
        for name, (code, args) in PROGRAMS.items():
            assert _run(code, args, _options(None)) == _settrace(code, args, None), name
    finally:
        done.set()
        waiting.join()


SWITCH_OFF = """\
import sys

def f(n):
    {switch}
    t = 0
    for i in range(n):
        t += i
    return t
"""


@monitoring_only
def test_settrace_none_no_longer_stops_the_count() -> None:
    """Under settrace, ``sys.settrace(None)`` ended the counting; from sys.monitoring the
    loop is counted to its end, and the budget ends it."""
    code = SWITCH_OFF.format(switch="sys.settrace(None)")
    assert _settrace(code, "100", 50)["status"] == "ok"
    run = _run(code, "100", _options(50))
    assert (run["status"], run["steps"]) == ("timeout", 51)
    # import and def; then the switch, t = 0, the header 101 times, the body, the return
    assert _run(code, "100", _options(None))["steps"] == 2 + 2 + 101 + 100 + 1


@pytest.mark.parametrize("switch", [
    "[sys.monitoring.register_callback(t, sys.monitoring.events.LINE, None) for t in (3, 4)]",
    "[sys.monitoring.free_tool_id(t) for t in (3, 4)]",
    "[sys.monitoring.set_events(t, 0) for t in (3, 4) if sys.monitoring.get_tool(t)]",
])
@monitoring_only
def test_a_program_that_tampers_with_the_tool_leaves_nothing_behind(switch: str) -> None:
    """Clearing the tool's line callback stops the count, as ``sys.settrace(None)`` did:
    one call either way. Whatever the program did to the tool, the run still ends with
    the tool released, and the next run is recorded as settrace records it."""
    code = SWITCH_OFF.format(switch=switch)
    run = _run(code, "100", _options(None))
    assert run["status"] == "ok" and run["value"] == ["int", 4950]
    assert _tools_free()
    code, args = PROGRAMS["recursion"]
    assert _run(code, args, _options(None)) == _settrace(code, args, None)


@monitoring_only
def test_with_no_tool_id_free_the_run_is_recorded_by_settrace() -> None:
    from execbench.sandbox import monitor

    code, args = PROGRAMS["comprehensions"]
    probe = "import sys\ndef f():\n    return sys.gettrace() is None\n"
    for tool in monitor.TOOL_IDS:
        sys.monitoring.use_tool_id(tool, "test")
    try:
        assert _run(probe, "", _options(None))["value"] == ["bool", False]
        run = _run(code, args, _options(None))
    finally:
        for tool in monitor.TOOL_IDS:
            sys.monitoring.free_tool_id(tool)
    assert run == _settrace(code, args, None)


@monitoring_only
def test_the_count_goes_on_past_a_recursion_error() -> None:
    """At the recursion limit the recorders' own frames count against the program's, so
    which call raises RecursionError depends on the recorder (settrace's already differs
    with states on and off). settrace stops tracing when its trace function is the one
    that raises; sys.monitoring goes on, so the handler's lines are recorded."""
    code = """\
def f(n):
    try:
        return f(n + 1)
    except RecursionError:
        return n
"""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        run = _run(code, "0", _options(None))
    finally:
        sys.setrecursionlimit(limit)
    assert run["status"] == "ok" and 150 < decode(run["value"]) < 200
    assert run["lines"] == [1, 2, 3, 4, 5]
    assert _tools_free()


STUBBORN = """\
import sys

def f(n):
    sys.settrace(None)
    caught = 0
    while True:
        try:
            for i in range(n):
                pass
            return caught
        except BaseException:
            caught += 1
"""


@monitoring_only
def test_the_sandbox_counts_result_only_runs_from_sys_monitoring() -> None:
    """Through the real runner: the budget ends a loop the program tried to hide from
    settrace, a program that catches the limit is ended by the CPU net, and the runner's
    after-call check finds nothing left behind (a program's calls may share a runner)."""
    loop = SWITCH_OFF.format(switch="sys.settrace(None)")
    with Sandbox(workers=1, limits=Limits(max_steps=5_000, cpu_seconds=0.5)) as box:
        small, large, stubborn, again = box.map([
            Job(loop, "f", "100", RESULT_ONLY), Job(loop, "f", "10000", RESULT_ONLY),
            Job(STUBBORN, "f", "100000", RESULT_ONLY), Job(loop, "f", "100", TraceOptions())])
    assert (small.status, decode(small.value), small.steps) == ("ok", 4950, 206)
    assert (large.status, large.steps) == ("timeout", 5_001)
    assert stubborn.status == "timeout" and stubborn.value is None
    assert (again.status, again.steps) == ("ok", 3)  # settrace, switched off by the program


# A call that reaches the monitoring tool while it records (its id is no secret) and leaves
# something behind for the unit's later calls. Before 3.14, freeing a tool id keeps its
# callbacks and the events a callback disabled, so ``stop`` clears both, and callbacks
# disable local events left on code that is not the program's.
_LEFT_BEHIND = '''\
import sys
watch = sys.monitoring

def g(n):
    t = 0
    for i in range(n):
        t += i
    return t

def hook(code, offset, called, arg0):
    if getattr(called, "__qualname__", "") == "JSONEncoder.encode":
        found = sys._getframe(1).f_locals.get("result")
        if isinstance(found, dict) and "status" in found:
            found.update(status="ok", value=["int", 42], value_repr="42", detail=None)

def f(n, attack):
    [tool] = [t for t in range(6) if watch.get_tool(t) == "execbench"]
    if attack == "disable":
        old = watch.register_callback(tool, watch.events.PY_START, lambda code, at:
                                      watch.DISABLE if code is g.__code__ else old(code, at))
        g(0)
        watch.register_callback(tool, watch.events.PY_START, old)
    elif attack == "library":
        encode = sys.modules["execbench.values"].encode
        watch.set_local_events(tool, encode.__code__, watch.events.LINE)
    elif attack == "forge":
        frame = sys._getframe()
        while frame.f_back is not None:
            frame = frame.f_back
            watch.register_callback(tool, watch.events.CALL, hook)
            watch.set_local_events(tool, frame.f_code, watch.events.CALL)
    return g(n)
'''


@monitoring_only
@pytest.mark.parametrize("attack", ["disable", "library", "forge"])
def test_what_a_call_leaves_on_the_tool_does_not_reach_the_next(attack: str) -> None:
    """A start event turned off (the next call's loop would run uncounted, past its
    budget), line events on library code (counted as the program's), a callback on the
    runner's own code (rewriting each later result as it is sent): the unit's later
    calls record as if nothing had been left."""
    with Sandbox(workers=1, limits=Limits(max_steps=1000)) as sandbox:
        alone = sandbox.map([Job(_LEFT_BEHIND, "f", f"{n}, None", RESULT_ONLY,
                                 max_steps=1000) for n in (10**5, 3)])
        after = sandbox.map([Job(_LEFT_BEHIND, "f", args, RESULT_ONLY, max_steps=1000)
                             for args in (f"0, {attack!r}", "10**5, None", "3, None")])[1:]
    assert [t.status for t in alone] == ["timeout", "ok"]
    assert [(t.status, t.value, t.steps, t.lines) for t in after] == \
        [(t.status, t.value, t.steps, t.lines) for t in alone]
