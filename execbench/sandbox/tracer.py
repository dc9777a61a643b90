"""The one tracer: runs a program and one call to it, recording what happened.

It runs inside a sandbox child process (see ``worker``), never in the caller's process.
Only frames whose code comes from the program file are traced, so library code costs
nothing. What is recorded, all as plain JSON:

* ``lines``: every line of the program that ran, while the module body ran and during the
  call (module-level ``def``/``import`` lines count, as a coverage tool would report).
* ``events``: the ordered ``[line, frame]`` sequence, bounded by ``max_events``; ``frames``
  names each traced frame (``frame`` indexes it; 0 is the module body), as long as an
  event or a state may still name it (none, in runs that keep neither).
* ``states``: encoded local variables at each line event, bounded, only when asked for;
  a frame's ``return`` and ``exception`` events add a state marked with ``"event"``, so that
  the state after a frame's last line is known, and so is a line that raised.
* ``branches``: per ``if``/``while``/``for`` header line, how often the body was entered
  (``true``) and skipped or left (``false``), plus the first outcomes in order (``seq``).
  ``loops`` is the per-header iteration count (the ``true`` count of a loop header).
* ``value``/``exception``: the call's return value (typed JSON) or what it raised.
* ``steps``: how many line events of the program ran. It is the work a call does as the
  interpreter counts it, the same on any machine and under any load, so every decision a
  build or a verdict takes about a call's cost reads it (``max_steps`` ends a call past it
  with status ``timeout``), and CPU time is only the sandbox's safety net.

Line events are what ``sys.settrace`` reports, the same signal coverage.py's line mode
uses, which is why their executed-line sets agree (checked by the test suite). Since Python
3.12, runs that keep no event list and no states take the same events from
``sys.monitoring`` instead (``monitor``), which costs less and records the same.

Python 3.11, 3.12 and 3.13 are supported alike. Since 3.12, list, set and dict
comprehensions run inline (PEP 709): their line events belong to the enclosing frame, not
to a ``<listcomp>`` frame of their own, and the statement holding one reports its line
once less. Everything read from a trace is the same on each version: lines, branch
outcomes and loop counts (only frames of module, class and function bodies decide a
header's outcome), a frame's sequence of statements, the states where statements start
(the tests check each). Where an interpreter reports events that no other version reports
for the same run, they are dropped: a line reported twice in a row on 3.12
(``recording.REPEATS_LINES``), a StopIteration that was never raised on 3.13.0.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import io
import os
import sys
from typing import TYPE_CHECKING

from execbench.registry import Registry
from execbench.sandbox.monitor import MonitorRecorder
from execbench.sandbox.recording import PROGRAM_FILE, CompiledProgram, Recorder
from execbench.sandbox.script import STDIN
from execbench.values import encode, is_exact, to_literal, view_name

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

CALL_FILE = "<call>"
_POSTPONED = __future__.annotations.compiler_flag


DEFAULT_OPTIONS = {
    "recorder": "lines",
    "max_events": 10_000,
    "states": False,
    "max_states": 2_000,
    "max_value_nodes": 200,
    "max_branch_seq": 1_000,
    "max_steps": None,
    "objects": False,
}
"""What to record beyond lines and the result; bounds keep records small. Kept as a plain
dict (not a dataclass) so the warm worker imports as little as possible: every module it
holds makes each ``fork()`` slower. ``objects`` (set by the harvest, whose recorded
values are shown, never compared with a re-run) records an object's attributes rather
than its ``repr`` (``values.Encoder``)."""


CPU_LIMIT = "CPU time limit"
"""The ``detail`` of a call the CPU limit ended, however it ended (a cut record, a killed
runner, a program that stopped its timer): the runner decides by it that the call ran out
of time, so every place that reports one says it in these words."""


class CpuLimit(BaseException):
    """Raised into the program when its call used up its CPU budget (``runner``), so that
    the record of what ran until then is kept, as at the step limit. A program that catches
    it has still run out of time (``Recorder.cut``)."""


MONITORING = sys.version_info >= (3, 12)
"""Whether ``run`` takes the line events of runs that keep no event list and no states
(``trace.RESULT_ONLY``) from ``sys.monitoring`` (``monitor.MonitorRecorder``): the same
record as ``Recorder``'s, in a fraction of the time (``bench/tracing.py``)."""


def _statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """Every statement, nested ones included, without visiting expressions: the facts
    below are all about statements, and a runner compiles every program it meets."""
    stack: list[list[Any]] = [tree.body]
    while stack:
        for node in stack.pop():
            if isinstance(node, ast.stmt):
                yield node
            for name in _BLOCK_FIELDS:
                block = getattr(node, name, None)
                if block:
                    stack.append(block)


_BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")
"""Fields that hold statements (``handlers`` and ``cases`` hold nodes that have a body)."""


def compile_program(source: str, recorder: str = "lines") -> CompiledProgram:
    """Parse once, walk the statements once, let the recorder prepare the tree, compile:
    the one way a program is made runnable. The facts come from the tree as written, so
    instrumentation that keeps line numbers leaves them unchanged."""
    tree = ast.parse(source)
    heads: dict[int, tuple[frozenset[int], range]] = {}
    loops: set[int] = set()
    imports: set[str] = set()
    for node in _statements(tree):
        if isinstance(node, ast.If | ast.While):
            test_end = node.test.end_lineno or node.lineno
        elif isinstance(node, ast.For | ast.AsyncFor):
            test_end = node.iter.end_lineno or node.lineno
        else:
            if isinstance(node, ast.Import):
                imports.update(a.name.partition(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imports.add(node.module.partition(".")[0])
            continue
        if not isinstance(node, ast.If):
            loops.add(node.lineno)
        first = node.body[0]
        if first.lineno > test_end:
            heads[node.lineno] = (frozenset(range(node.lineno, test_end + 1)),
                                  range(first.lineno, (first.end_lineno or first.lineno) + 1))
    prepared = RECORDERS.get(recorder).prepare(tree)
    # Annotations are postponed (PEP 563), chosen here rather than inherited from this
    # module's own future statement: a function lifted out of its module (CodeSense's
    # published snippets) often annotates with names the snippet does not define, and
    # evaluating them would fail its definition; they are kept as strings instead.
    return CompiledProgram(compile(prepared, PROGRAM_FILE, "exec", flags=_POSTPONED,
                                   dont_inherit=True),
                           heads, frozenset(loops), frozenset(imports), recorder)



RECORDERS: Registry[type[Recorder]] = Registry("recorder")
RECORDERS.register(Recorder.name, Recorder)


def register_recorder(recorder: type[Recorder]) -> type[Recorder]:
    """Make a recorder available by its ``name`` (use as a class decorator)."""
    return RECORDERS.register(recorder.name, recorder)


def describe_exception(exc: BaseException) -> dict[str, Any]:
    try:
        message = str(exc)
    except BaseException:  # noqa: BLE001 - a user __str__ may raise anything
        message = "<unprintable>"
    return {"type": type(exc).__qualname__, "message": message[:500]}


def result_value(value: Any, objects: bool = False) -> dict[str, Any]:
    """The ``value`` and ``value_repr`` fields of a trace for a returned value."""
    enc = encode(value, objects=objects)
    text = to_literal(enc) if is_exact(enc) else enc[-1] if enc[0] == "object" else None
    view = view_name(value)
    if view is not None and text is not None:  # as Python prints it: dict_keys([1, 2])
        text = f"{view}({text})"
    return {"value": enc, "value_repr": text}


def compile_args(args: str) -> Any:
    """Compile an argument-list text into an expression giving ``(args, kwargs)``."""
    return compile(f"(lambda *a, **k: (a, k))({args}\n)", CALL_FILE, "eval", dont_inherit=True)


def run(program: CompiledProgram, entry_point: str, args: Any,
        options: dict[str, Any]) -> dict[str, Any]:
    """Run the module, then ``entry_point(<args>)``, tracing both. Returns a JSON-able dict.

    ``program`` comes from ``compile_program`` and ``args`` from ``compile_args``. Statuses
    set here: ``ok``, ``exception``, ``memory``, and ``timeout`` for a call past its step
    budget however it ended (the worker adds the process-level ones).
    """
    options = {**DEFAULT_OPTIONS, **options}
    recorder_type = RECORDERS.get(program.recorder)
    if MONITORING and recorder_type is Recorder and options["max_events"] == 0 \
            and not options["states"]:
        recorder_type = MonitorRecorder
    return record(recorder_type(program, options), entry_point, args)


_running: list[tuple[Recorder, dict[str, Any]]] = []
"""The recorder of the call running now, if any, and its result so far: what ``cut`` ends
and ``abandon`` answers."""


def cut(reason: str) -> bool:
    """End the running call's record where the program is now, for ``reason`` (a limit the
    sandbox enforces outside the recorder); False if no call is running. The call itself is
    the caller's to end (``CpuLimit``); however it ends, its status is ``timeout``."""
    if not _running:
        return False
    recorder = _running[0][0]
    if recorder.cut is None:
        recorder.cut = reason
        recorder.halt()
    return True


def abandon() -> dict[str, Any] | None:
    """The result of the running call, which ``cut`` ended, as ``record`` would give it,
    for a caller that gives up on the call because the program goes on (catching
    ``CpuLimit`` each time it is raised) and will never return into ``record``; None if
    no call is running or its record was not cut."""
    if not _running or _running[0][0].cut is None:
        return None
    recorder, out = _running.pop()
    recorder.stop()
    sys.setprofile(None)
    return _ended(recorder, out)


def _ended(recorder: Recorder, out: dict[str, Any]) -> dict[str, Any]:
    """``out`` with the record of its stopped ``recorder``, and how a limit ended the call."""
    if recorder.exhausted:
        out.update(status="timeout", detail=f"step limit ({recorder.max_steps:,} lines)",
                   value=None, value_repr=None, exception=None)
    elif recorder.cut is not None:
        out.update(status="timeout", detail=recorder.cut, value=None, value_repr=None,
                   exception=None)
    out.update(recorder.result())
    return out


def record(recorder: Recorder, entry_point: str, args: Any) -> dict[str, Any]:
    """``run`` with a recorder already made for its program and options, for callers that
    choose the recorder themselves (the tests and ``bench/tracing.py`` compare two). A
    program whose entry point is ``STDIN`` is run as a script instead (``_script``)."""
    if entry_point == STDIN:
        return _script(recorder, args)
    namespace: dict[str, Any] = {"__name__": "__program__", "__builtins__": builtins,
                                 **recorder.namespace()}
    out: dict[str, Any] = {"status": "ok", "value": None, "value_repr": None, "exception": None,
                           "args": None}
    phase = "module"
    recorder.start()
    _running.append((recorder, out))
    try:
        exec(recorder.program.code, namespace)  # noqa: S102 - benchmark program, in the sandbox
        phase = "arguments"
        fn = namespace[entry_point]
        call_args, call_kwargs = eval(args, namespace)  # noqa: S307 - dataset or our literal
        out["args"] = [encode(a) for a in call_args]
        out["kwargs"] = {k: encode(v) for k, v in call_kwargs.items()}
        phase = "call"
        value = fn(*call_args, **call_kwargs)
        recorder.stop()
        out.update(result_value(value))
    except BaseException as exc:  # noqa: BLE001 - everything the program does is data
        _failed(recorder, out, exc, phase)
    finally:
        _closed(recorder)
    return _ended(recorder, out)


def _failed(recorder: Recorder, out: dict[str, Any], exc: BaseException, phase: str) -> None:
    """``out`` as a run that raised ``exc`` in ``phase`` ends (its record stopped there)."""
    recorder.stop()
    out["status"] = "memory" if isinstance(exc, MemoryError) else "exception"
    out["exception"] = {**describe_exception(exc), "phase": phase}


def _closed(recorder: Recorder) -> None:
    """Whatever way a run ended: nothing is recorded any more, and no hook the program set
    sees (or could change) the result."""
    _running.clear()
    recorder.stop()
    sys.setprofile(None)


def _script(recorder: Recorder, args: Any) -> dict[str, Any]:
    """Run a program that reads standard input and prints, as a judge runs it: the module
    as ``__main__``, its stdin the text the call's one string argument holds, its result
    what it printed on stdout (stderr is dropped). ``sys.exit()`` or ``exit(0)`` end it as
    a normal run; any other exit status is an exception. The text is on descriptor 0 for
    the run (``_stdin_file``) and ``sys.stdin`` reads it there, so ``open(0)``,
    ``os.read(0, ...)`` and ``sys.stdin.fileno()`` read it as under a judge. The printed text
    is read from the stream the sandbox gave it, so a program that replaces ``sys.stdout``
    prints nothing that counts."""
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins,
                                 **recorder.namespace()}
    out: dict[str, Any] = {"status": "ok", "value": None, "value_repr": None, "exception": None,
                           "args": None}
    printed, given = sys.stdout, sys.stdin
    kept: int | None = None
    phase = "arguments"
    _running.append((recorder, out))
    try:
        call_args, call_kwargs = eval(args, {"__builtins__": {}})  # noqa: S307 - a literal
        if call_kwargs or len(call_args) != 1 or not isinstance(call_args[0], str):
            raise TypeError("a stdin program's call is one string: the text on stdin")
        out["args"] = [encode(call_args[0])]
        fed = _stdin_file(call_args[0].encode("utf-8", "surrogatepass"))
        kept = os.dup(0)
        os.dup2(fed, 0)
        os.close(fed)
        sys.stdin = open(0, encoding="utf-8", errors="surrogateescape",  # noqa: SIM115
                         closefd=False)  # the call's stdin: fd 0 stays open, restored
        sys.stderr = io.StringIO()
        phase = "module"
        recorder.start()
        try:
            exec(recorder.program.code, namespace)  # noqa: S102 - benchmark program, in the sandbox
        except SystemExit as ended:
            if ended.code not in (None, 0):
                raise
        recorder.stop()
        text = printed.getvalue() if hasattr(printed, "getvalue") else ""
        out.update(result_value(text))
    except BaseException as exc:  # noqa: BLE001 - everything the program does is data
        _failed(recorder, out, exc, phase)
    finally:
        _closed(recorder)
        sys.stdin = given
        if kept is not None:
            os.dup2(kept, 0)
            os.close(kept)
    return _ended(recorder, out)


STDIN_FILE = ".execbench-stdin"
"""The name, in the call's empty working folder, of the file that holds a stdin program's
text while it is written; unlinked before the program runs."""


def _stdin_file(data: bytes) -> int:
    """A read-only descriptor of a file holding ``data`` and no longer named anywhere, so
    the program can neither find it by name nor write to it. A file rather than a pipe:
    a pipe holds 64 KiB, and an input may be larger."""
    writer = os.open(STDIN_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        reader = os.open(STDIN_FILE, os.O_RDONLY)
        view = memoryview(data)
        while view:
            view = view[os.write(writer, view):]
    finally:
        os.unlink(STDIN_FILE)
        os.close(writer)
    return reader
