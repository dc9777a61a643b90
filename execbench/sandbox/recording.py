"""What every recorder shares, apart from how a run is chosen and started (``tracer``).

A recorder gets a compiled program and records one run of it: the base ``Recorder`` here
takes line events from ``sys.settrace`` and keeps lines, events, states, branch outcomes,
loop counts and the step count; ``monitor.MonitorRecorder`` takes the same events from
``sys.monitoring``, ``properties.PropertiesRecorder`` adds the values of chosen
expressions, and the harvest child records one frame per call. They all subclass
``Recorder`` and use its bookkeeping, so lines, branches and loops are recorded one way;
``tracer`` picks one per run. Keeping the base here lets each recorder depend on what
they share and never on the module that chooses among them, as coverage.py keeps its
tracers apart from its collector.
"""

from __future__ import annotations

import dis
import sys
from types import CodeType, ModuleType
from typing import TYPE_CHECKING, NamedTuple

from execbench.values import encode

if TYPE_CHECKING:
    import ast
    from typing import Any

PROGRAM_FILE = "<program>"
"""The file name a program is compiled under: how a recorder tells its frames from
library code's."""


class StepLimit(BaseException):
    """Raised into the program at the line past its step budget. Not an ``Exception``, so
    ``except Exception`` does not catch it; a program that catches it anyway has still run
    out of steps (``Recorder.exhausted``), and its recording stops there (``sys.settrace``
    stops tracing a program once its trace function raises; ``monitor`` does the same)."""


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
