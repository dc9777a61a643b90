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
(``REPEATS_LINES``), a StopIteration that was never raised on 3.13.0.
"""

from __future__ import annotations

import ast
import builtins
import dis
import sys
from types import CodeType, ModuleType
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

from execbench.registry import Registry
from execbench.sandbox.values import encode, is_exact, to_literal

PROGRAM_FILE = "<program>"
CALL_FILE = "<call>"


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


class StepLimit(BaseException):
    """Raised into the program at the line past its step budget. Not an ``Exception``, so
    ``except Exception`` does not catch it; a program that catches it anyway has still run
    out of steps (``Recorder.exhausted``), and its recording stops there (``sys.settrace``
    stops tracing a program once its trace function raises; ``monitor`` does the same)."""


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

REPEATS_LINES = sys.version_info[:2] == (3, 12)
"""Whether the interpreter may report a line again while it is still on it. Python 3.12
(CPython issue 109333) can give a second event for a line after a call returns, when a
jump forward lands within the same line: ``x = a or g(b)`` with ``g`` a Python function,
and every condition the ``properties`` recorder instruments, whose clauses it passes
through Python calls. 3.11 and 3.13 report a line again only when a jump goes back to it
(a loop on one line, an inlined comprehension), so on 3.12 a frame's line event on the
line of its last one, with no other event of the frame between, is dropped unless it is
at the target of a backward jump (``loop_starts``): events stay those of the other
versions, and recording properties leaves them unchanged."""


def loop_starts(code: CodeType) -> frozenset[int]:
    """The offsets of ``code``'s instructions that a backward jump goes to: where a line
    event on the line just reported is a new pass through a loop (see REPEATS_LINES)."""
    return frozenset(i.argval for i in dis.get_instructions(code)
                     if i.opname.startswith("JUMP_BACKWARD"))


class CompiledProgram(NamedTuple):
    """A program ready to run many times (a runner caches these by source text)."""

    code: CodeType
    heads: dict[int, tuple[frozenset[int], range]]
    """Each if/while/for header line -> (lines of its header, lines of its body's first
    statement). The header may span several lines (a long condition); the outcome is
    decided by the first line event after the header that falls outside those lines: the
    body was entered if that event is on any line of the body's first statement, since a
    statement spanning lines may report a later line first (``y = [\n a]`` reports the
    line of ``a`` before its own). Headers whose body starts on the header's own line
    cannot be observed by line events and are left out."""
    loops: frozenset[int]
    """Header lines of while/for loops."""
    imports: frozenset[str]
    """Top-level names of the modules the program imports (absolute imports only)."""
    recorder: str
    """The name of the recorder (``RECORDERS``) the code was prepared for."""


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
    return CompiledProgram(compile(prepared, PROGRAM_FILE, "exec"), heads, frozenset(loops),
                           frozenset(imports), recorder)


class Recorder:
    """What a run records: the base recorder, ``lines``, and the seam for others.

    One recorder object per run. It sees line events of program frames through
    ``sys.settrace`` and gives the JSON fields of the trace (``result``). A recorder that
    needs more than line events (the values of chosen expressions, say) subclasses this
    one, so lines, branches and loops are always recorded the same way, and may
    instrument the program: ``prepare`` rewrites the tree before it is compiled, and
    ``namespace`` gives the names the instrumented code calls back into. Recorders are
    looked up by name in ``RECORDERS``; ``TraceOptions.recorder`` names one.
    """

    name = "lines"

    @classmethod
    def prepare(cls, tree: ast.Module) -> ast.Module:
        return tree

    def __init__(self, program: CompiledProgram, options: dict[str, Any]) -> None:
        self.program = program
        self.heads = program.heads
        self.options = options
        self.lines: set[int] = set()
        self.events: list[list[int]] = []
        self.events_truncated = False
        self.frames: list[dict[str, Any]] = []
        self.states: list[dict[str, Any]] = []
        self.outcomes: dict[int, list[int]] = {}  # line -> [true, false]
        self.seq: dict[int, list[bool]] = {}
        self.steps = [0]
        """Line events so far, in a cell every frame's tracer shares."""
        self.max_steps: int | None = options["max_steps"]
        self.starts: dict[CodeType, frozenset[int]] = {}
        self.cut: str | None = None
        """Why the record ended before the call did (``cut``), None while it has not."""

    @property
    def exhausted(self) -> bool:
        """Whether the run went past its step budget."""
        return self.max_steps is not None and self.steps[0] > self.max_steps

    def start(self) -> None:
        """Begin receiving the line events of every frame that starts from now on."""
        sys.settrace(self.global_trace)

    def stop(self) -> None:
        """Stop receiving events; called again where it may already have been."""
        sys.settrace(None)

    def halt(self) -> None:
        """Record nothing more of this run, in whatever frame it is (``sys.settrace(None)``
        ends the line events of frames already traced too)."""
        sys.settrace(None)

    def global_trace(self, frame, event, arg):
        code = frame.f_code
        if code.co_filename != PROGRAM_FILE:
            return None
        return self.enter(code)

    def enter(self, code: CodeType):
        """Start recording a new frame of ``code``: the local trace function for it. The
        sandbox enters every frame of the program; ``harvest`` enters one frame per call."""
        index = len(self.frames)
        if self.frames_wanted():
            self.frames.append({"function": code.co_name, "line": code.co_firstlineno})
        return self._frame_tracer(index, code)

    def frames_wanted(self) -> bool:
        """Whether a frame starting now is recorded: only while an event or a state, which
        name frames by index, may still be recorded. Once both are full no record refers to
        a later frame (frames, events and states all come in time order), and a call that
        makes a frame per element of its input (400,000 on a HumanEval+ input) would hold
        one record each: 100 MB for one call, gigabytes for a build's chunk."""
        options = self.options
        return len(self.events) < options["max_events"] \
            or (options["states"] and len(self.states) < options["max_states"])

    def _frame_tracer(self, index: int, code: CodeType):
        lines_add = self.lines.add
        events = self.events
        max_events = self.options["max_events"]
        # Only a module, class or function body holds statements. The code of a
        # comprehension, generator expression or lambda runs on the lines of the statement
        # that holds it, which may be a branch header: its frame must not decide the
        # header's outcome (a list comprehension has such a frame only before Python 3.12,
        # a generator expression's returns to its consumer at every item).
        expression = code.co_name.startswith("<") and code.co_name != "<module>"
        heads = {} if expression else self.heads
        pending: list[Any] = [None]  # the branch header whose outcome is still open
        record_states = self.options["states"]
        leave = self.leave
        steps = self.steps
        max_steps = self.max_steps if self.max_steps is not None else float("inf")
        repeats = REPEATS_LINES
        last = [0]  # the line of this frame's last event, 0 after any other event
        starts = self._loop_starts(code) if repeats else frozenset()

        def trace(frame, event, arg):
            if event != "line":
                last[0] = 0
                if event == "exception" and arg[2] is None and arg[0] is StopIteration:
                    # Python 3.13.0 reports a loop over a generator whose body is long
                    # (its jump needs EXTENDED_ARG) as raising StopIteration when the
                    # generator ends. Nothing raised: no exception passes through a
                    # frame without the frame in its traceback. Left in, it would end
                    # the loop header's outcome and add a state, unlike other versions.
                    return trace
                if record_states and event in ("return", "exception"):
                    self._snapshot(frame, frame.f_lineno, index, event)
                head = pending[0]
                if head is not None:
                    # Leaving the frame right after a header means its body was skipped;
                    # an exception there means the test itself raised: no outcome.
                    if event == "return":
                        self._outcome(head, False)
                    if event in ("return", "exception"):
                        pending[0] = None
                leave(frame, event, arg)
                return trace
            line = frame.f_lineno
            if repeats:
                if line == last[0] and frame.f_lasti not in starts:
                    return trace  # still the line reported last: see REPEATS_LINES
                last[0] = line
            steps[0] += 1
            if steps[0] > max_steps:
                raise StepLimit
            lines_add(line)
            if len(events) < max_events:
                events.append([line, index])
            else:
                self.events_truncated = True
            head = pending[0]
            if head is not None:
                span, body = heads[head]
                if line not in span:
                    self._outcome(head, line in body)
                    pending[0] = None
            if line in heads:
                pending[0] = line
            if record_states:
                self._snapshot(frame, line, index)
            return trace

        return trace

    def _loop_starts(self, code: CodeType) -> frozenset[int]:
        """``loop_starts`` of ``code``, worked out once per run (recursion enters a
        function's code many times)."""
        found = self.starts.get(code)
        if found is None:
            found = self.starts[code] = loop_starts(code)
        return found

    def _outcome(self, head: int, taken: bool) -> None:
        counts = self.outcomes.get(head)
        if counts is None:
            counts = self.outcomes[head] = [0, 0]
            self.seq[head] = []
        counts[0 if taken else 1] += 1
        seq = self.seq[head]
        if len(seq) < self.options["max_branch_seq"]:
            seq.append(taken)

    def _snapshot(self, frame, line: int, index: int, event: str | None = None) -> None:
        """The frame's locals before ``line`` runs, or, with ``event``, as the frame
        returns or as an exception passes through it at ``line`` (the line did not finish)."""
        if len(self.states) >= self.options["max_states"]:
            return
        names = {k: encode(v, max_nodes=self.options["max_value_nodes"],
                           objects=self.options["objects"])
                 for k, v in frame.f_locals.items()
                 if not (k.startswith("__") and k.endswith("__")) and type(v) is not ModuleType}
        state = {"line": line, "frame": index, "locals": names}
        if event is not None:
            state["event"] = event
        self.states.append(state)

    def leave(self, frame, event: str, arg: Any) -> None:
        """A ``return`` or ``exception`` event of a traced frame. The sandbox learns a
        call's result from the call itself; a recorder that watches calls it did not make
        (``harvest``) takes it from here."""

    def namespace(self) -> dict[str, Any]:
        """Names added to the program's module namespace before it runs."""
        return {}

    def result(self) -> dict[str, Any]:
        loops = self.program.loops
        branches = {str(h): {"true": c[0], "false": c[1], "seq": "".join(
            "T" if t else "F" for t in self.seq[h])} for h, c in sorted(self.outcomes.items())}
        return {
            "lines": sorted(self.lines),
            "events": self.events,
            "events_truncated": self.events_truncated,
            "frames": self.frames,
            "states": self.states,
            "branches": branches,
            "loops": {str(h): c[0] for h, c in sorted(self.outcomes.items()) if h in loops},
            "steps": self.steps[0],
        }


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
    return {"value": enc, "value_repr": text}


def compile_args(args: str) -> Any:
    """Compile an argument-list text into an expression giving ``(args, kwargs)``."""
    return compile(f"(lambda *a, **k: (a, k))({args}\n)", CALL_FILE, "eval")


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
        from execbench.sandbox.monitor import MonitorRecorder  # imports this module

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
    choose the recorder themselves (the tests and ``bench/tracing.py`` compare two)."""
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
        recorder.stop()
        out["status"] = "memory" if isinstance(exc, MemoryError) else "exception"
        out["exception"] = {**describe_exception(exc), "phase": phase}
    finally:
        _running.clear()
        recorder.stop()
        sys.setprofile(None)  # a hook the program set would see (and could change) the result
    return _ended(recorder, out)
