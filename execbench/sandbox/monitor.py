"""The base recorder fed by ``sys.monitoring`` (PEP 669, Python 3.12 and later) instead of
``sys.settrace``, for runs that keep no event list and no states.

Those runs (``trace.RESULT_ONLY``: answer checks, witness searches, mutation testing) are
most of the calls a build traces, and all they read is the lines, the step count, the
branch outcomes and the loop counts. ``sys.settrace`` calls the global trace function at
every call of every frame, library code included, and builds a frame object for each event;
``sys.monitoring`` calls back with the code object only, and stops calling for code that
says it is not interested (``DISABLE``), so library code costs almost nothing after its
first call.

The record must be exactly the settrace recorder's, on every version, so the events are
mapped onto the ones ``sys.settrace`` itself derives from the same instrumentation
(CPython's ``legacy_tracing.c``) and fed to the same bookkeeping:

* ``call``: ``PY_START``, ``PY_RESUME``, ``PY_THROW``; each starts a new frame record, as
  settrace's global function is called again each time a generator resumes;
* ``line``: ``LINE``, and a backward ``JUMP`` that lands on the line it leaves (a loop on one
  line, an inlined comprehension), which settrace reports as a line and ``LINE`` does not;
* ``return``: ``PY_RETURN``, ``PY_YIELD``, ``PY_UNWIND``;
* ``exception``: ``RAISE`` and ``STOP_ITERATION``.

Only ``PY_START`` (and the events that cannot be asked for per code object: ``PY_THROW``,
``PY_UNWIND``, ``RAISE``) are on for all code; a code object of the program file gets the
others as it first starts, and any other code object answers its first ``PY_START`` with
``DISABLE``, which CPython keeps until ``sys.monitoring.restart_events()``.

What differs is what a program can see and do about its tracer, not its events:

* ``sys.gettrace()`` is None, and the tool is in ``sys.monitoring``'s list: a program that
  looks for a tracer finds a different one;
* ``sys.settrace(None)`` no longer stops the count; clearing the tool's ``LINE`` callback
  does, one call as before, and the CPU-time limit still ends the run either way;
* settrace stops tracing for good once its trace function raises; a callback here that
  fails at the recursion limit fails that one event and the count goes on. At that
  limit the recorders' own frames count against the program's, so which call raises
  ``RecursionError`` depends on the recorder (settrace's own differs with states on and
  off).
"""

from __future__ import annotations

import sys
from _thread import _count, get_ident
from typing import TYPE_CHECKING, Any

from execbench.sandbox.recording import PROGRAM_FILE, REPEATS_LINES, Recorder, StepLimit

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from types import CodeType, FrameType

_monitoring: Any = getattr(sys, "monitoring", None)
"""``sys.monitoring``, typed loosely: the project type-checks as Python 3.11, which lacks it."""

TOOL_NAME = "execbench"
TOOL_IDS = (4, 3)
"""Tool ids tried in turn. Neither has a role CPython names (0 is the debugger's, 1
coverage's, 2 a profiler's, 5 an optimizer's), so a coverage run of the tests, which takes
id 1, neither blocks the recorder nor finds its events disabled by it."""


def _line_of(code: CodeType, offset: int) -> int | None:
    """The line of the instruction at ``offset``, as the interpreter reports it."""
    for start, end, line in code.co_lines():
        if start <= offset < end:
            return line
    return None


class MonitorRecorder(Recorder):
    """The ``lines`` recorder's record, from ``sys.monitoring`` events (see the module
    docstring). Falls back to ``sys.settrace`` when no tool id is free."""

    def __init__(self, program: Any, options: dict[str, Any]) -> None:
        super().__init__(program, options)
        self.tool: int | None = None
        """The tool id held while the run records, None before and after."""
        self.traced = False
        """Whether the run fell back to ``sys.settrace``."""
        self.codes: dict[int, CodeType] = {}
        """The program's code objects whose local events are on in this run, by ``id``: a
        code object's own hash walks its whole bytecode and constants."""
        self.counted: Callable[[], int] | None = None
        """The callbacks' step count, read into ``steps`` when the run stops."""
        self.halted = False
        """Whether ``halt`` ran: the CPU limit's may run inside ``call`` (a signal handler),
        between its finding a new code object and turning on that code's events."""

    def start(self) -> None:
        monitoring = _monitoring
        tool = next((t for t in TOOL_IDS if monitoring.get_tool(t) is None), None)
        if tool is None:
            self.traced = True
            super().start()
            return
        monitoring.use_tool_id(tool, TOOL_NAME)
        self.tool = tool
        callbacks = self._callbacks(tool)
        # Threads already running may run program code without starting a frame first.
        _register(tool, callbacks if _count() == 0 else _this_thread_only(callbacks, get_ident()))
        events = monitoring.events
        monitoring.set_events(tool, events.PY_START | events.PY_THROW | events.PY_UNWIND
                              | events.RAISE)

    def stop(self) -> None:
        tool = self.tool
        if tool is None:
            if self.traced:
                super().stop()
            return
        self.tool = None
        monitoring = _monitoring
        if monitoring.get_tool(tool) is None:  # the program freed it: take it back to clear it
            monitoring.use_tool_id(tool, TOOL_NAME)
        monitoring.set_events(tool, 0)
        for code in self.codes.values():
            monitoring.set_local_events(tool, code, 0)
        monitoring.free_tool_id(tool)
        # Before 3.14, freeing a tool id keeps its callbacks (they still fire) and the
        # events a callback disabled: a program could leave either for the unit's later
        # calls (a callback on the runner's own code, a start event turned off so that a
        # function runs uncounted). Every callback of every free id goes, and disabled
        # events come back; local events left on other code reach callbacks that disable
        # them (``_callbacks``).
        for free in (t for t in range(6) if monitoring.get_tool(t) is None):
            for event in _ALL_EVENTS:
                monitoring.register_callback(free, event, None)
        monitoring.restart_events()
        if self.counted is not None:
            self.steps[0] = self.counted()

    def halt(self) -> None:
        """Stop counting (at the step past the budget, as settrace stops tracing when its
        trace function raises): the rest of the run records nothing."""
        if self.traced:
            super().halt()
            return
        self.halted = True
        tool = self.tool
        if tool is None:
            return
        monitoring = _monitoring
        if monitoring.get_tool(tool) is None:
            # The program freed the id (its events and callbacks stay on before 3.14): take
            # it back to turn them off, or the count would go on past a CPU-limit cut.
            monitoring.use_tool_id(tool, TOOL_NAME)
        monitoring.set_events(tool, 0)
        for code in self.codes.values():
            monitoring.set_local_events(tool, code, 0)

    def _callbacks(self, tool: int) -> dict[str, Callable[..., Any]]:
        """The callback of each event, closures over this run's state, kept in cells for
        speed: the step count, and for the frame running now its pending header (the
        settrace recorder's ``pending``), the line of its last line event (``last``, read
        on Python 3.12 only) and the headers whose outcome it decides (none for the frames
        of expressions). A frame that starts saves its caller's three; one that returns or
        yields puts them back.

        ``sys.settrace`` traces only the thread that set it, ``sys.monitoring`` reports
        every thread. Any thread's program code starts (or resumes) a frame before it runs
        a line, so ``call`` alone checks the thread: the first time another thread gets
        there, every callback is replaced by one that ignores other threads.

        Where a callback calls Python code (and may so fail at the recursion limit, before
        that code's first line), it does so before it changes the state, so that a frame's
        state stays paired with the frame."""
        monitoring = _monitoring
        disable = monitoring.DISABLE
        events = monitoring.events
        local = (events.LINE | events.JUMP | events.PY_RESUME | events.PY_RETURN
                 | events.PY_YIELD | events.STOP_ITERATION)
        set_local_events = monitoring.set_local_events
        codes = self.codes
        jumps: dict[int, dict[int, int | None]] = {}  # per code, a jump's line if it repeats
        saved: list[tuple[int | None, int, dict[int, Any]]] = []
        save, restore = saved.append, saved.pop
        heads = self.heads
        lines_add = self.lines.add
        outcome = self._outcome
        max_steps = self.max_steps if self.max_steps is not None else sys.maxsize
        halt = self.halt
        get_frame = sys._getframe
        loop_starts = self._loop_starts
        thread = get_ident()
        count = 0
        pending: int | None = None
        last = 0
        frame_heads: dict[int, Any] = {}
        # The code object of the last event found in ``codes``, and its jumps. Events come
        # mostly from the code of the event before, and ``id()`` raises an audit event,
        # which the sandbox's audit hook (Python code) then handles: looking a code object
        # up only when it changes made a step cost a third of what it did in the sandbox.
        current: CodeType | None = None
        current_jumps: dict[int, int | None] = {}

        def ours(code: CodeType) -> bool:
            """Whether this run turned on ``code``'s local events; it becomes ``current``."""
            nonlocal current, current_jumps
            known = jumps.get(id(code))
            if known is None:
                return False
            current, current_jumps = code, known
            return True

        def call(code: CodeType, offset: int, *_: Any) -> Any:
            nonlocal pending, last, frame_heads
            if code is not current and not ours(code):
                if code.co_filename != PROGRAM_FILE:
                    return disable
                key = id(code)
                codes[key] = code
                jumps[key] = {}
                set_local_events(tool, code, local)
                if self.halted:  # halted while this ran: the code's events stay off
                    set_local_events(tool, code, 0)
                    return None
            if get_ident() != thread:
                _register(tool, _this_thread_only(callbacks, thread))
                return None
            name = code.co_name
            save((pending, last, frame_heads))
            pending, last = None, 0
            frame_heads = {} if name[0] == "<" and name != "<module>" else heads
            return None

        def throw(code: CodeType, offset: int, exc: BaseException) -> None:
            if code is current or ours(code):
                call(code, offset)

        def leave(code: CodeType, offset: int, value: Any) -> Any:
            nonlocal pending, last, frame_heads
            if code is not current and not ours(code):  # local events left on other code
                return disable
            if pending is not None:
                outcome(pending, False)
            pending, last, frame_heads = restore()
            return None

        def unwind(code: CodeType, offset: int, exc: BaseException) -> None:
            if code is current or ours(code):
                leave(code, offset, exc)

        def raised(code: CodeType, offset: int, exc: BaseException) -> None:
            nonlocal pending, last
            if code is current or ours(code):
                last = 0
                if type(exc) is StopIteration and exc.__traceback__ is None:
                    return  # never raised: see the settrace recorder
                pending = None

        def line(code: CodeType, number: int) -> Any:
            nonlocal count, pending
            if code is not current and not ours(code):  # local events left on other code
                return disable
            count += 1
            if count > max_steps:
                halt()
                raise StepLimit
            lines_add(number)
            if pending is not None:
                span, body = heads[pending]
                if number not in span:
                    outcome(pending, number in body)
                    pending = None
            if number in frame_heads:
                pending = number
            return None

        def repeated_line(code: CodeType, number: int) -> Any:
            nonlocal last
            if code is not current and not ours(code):  # local events left on other code
                return disable
            if number == last:
                frame: FrameType | None = get_frame(1)
                while frame is not None and frame.f_code is not code:  # past a thread check
                    frame = frame.f_back
                if frame is not None and frame.f_lasti not in loop_starts(code):
                    return  # still the line reported last: see recording.REPEATS_LINES
            line(code, number)
            last = number
            return None

        def jump(code: CodeType, source: int, target: int) -> Any:
            nonlocal last
            if code is not current and not ours(code):
                return disable
            known = current_jumps
            number = known.get(source, 0)
            if number == 0:  # the first time this jump is taken in this run
                number = _line_of(code, source) if target < source else None
                if number is not None and _line_of(code, target) != number:
                    number = None
                known[source] = number
            if number is None:
                return disable  # settrace reports nothing here either: see the docstring
            line(code, number)
            last = number
            return None

        callbacks: dict[str, Callable[..., Any]] = {
            "PY_START": call, "PY_RESUME": call, "PY_THROW": throw, "PY_RETURN": leave,
            "PY_YIELD": leave, "PY_UNWIND": unwind, "RAISE": raised, "STOP_ITERATION": raised,
            "LINE": repeated_line if REPEATS_LINES else line, "JUMP": jump}
        self.counted = lambda: count
        return callbacks

    def result(self) -> dict[str, Any]:
        record = super().result()
        # The settrace recorder marks its (empty) event list cut at every line it records.
        record["events_truncated"] = bool(self.lines)
        return record


_EVENTS = ("PY_START", "PY_RESUME", "PY_THROW", "PY_RETURN", "PY_YIELD", "PY_UNWIND", "RAISE",
           "STOP_ITERATION", "LINE", "JUMP")


_ALL_EVENTS = tuple(value for name in dir(_monitoring.events) if name.isupper()
                    and (value := getattr(_monitoring.events, name)) > 0
                    and value & (value - 1) == 0) if _monitoring is not None else ()
"""Every single event, for clearing the callbacks a program may have left."""


def _register(tool: int, callbacks: Mapping[str, Callable[..., Any] | None]) -> None:
    for event, callback in callbacks.items():
        _monitoring.register_callback(tool, getattr(_monitoring.events, event), callback)


def _this_thread_only(callbacks: dict[str, Callable[..., Any]],
                      thread: int) -> dict[str, Callable[..., Any]]:
    """``callbacks``, each made to ignore the events of threads other than ``thread``."""

    def only(callback: Callable[..., Any]) -> Callable[..., Any]:
        def checked(*args: Any) -> Any:
            return callback(*args) if get_ident() == thread else None
        return checked

    return {event: only(callback) for event, callback in callbacks.items()}
