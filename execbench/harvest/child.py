"""The child side of ``execbench harvest``: run a project's pytest suite, recording calls.

Started as ``python -m execbench.harvest.child CONFIG`` with the user's
interpreter, in a scratch copy of the project, by ``jail`` once the jail's layers
are on (it is the jail's last ``exec``). It must not need execbench's dependencies: it
imports only the standard library and execbench modules that do too (``tracer`` and its
recorders, ``values``, ``safe_read``), which the parent copies beside it; pytest comes
from the user's environment.

Every Python frame passes through ``_Harvest.global_trace`` once, at its ``call`` event
(a generator's frame at each resumption). A frame of a function the parent listed
(defined in the project's own source files, not its tests) is counted; if the function
passed the parent's filters and its arguments are of builtin types (a shallow check),
the call is sampled: reservoir sampling, seeded, decided when the call starts, so only
about ``K * (1 + ln(n / K))`` of a function's ``n`` such calls are looked at further.
Only then are the arguments encoded in full: a call whose arguments hold a value that
is not a builtin one or is over the value bound, or that repeats arguments already
sampled for the function, is dropped without taking the slot. A sampled call gets its
own ``recording.Recorder`` (states on) for its frame only: a project function it calls is
a call of its own. When the frame
returns, its trace, renumbered to the function's source (line 1 is the ``def`` line), is
written to the parent's records pipe in one ``write``; a later call that takes the same
reservoir slot carries a higher ``ordinal`` and the parent keeps that one. So the parent
holds the records however the run ends; the counters (with each function's sampling
candidates, against which the parent checks ordinals) are written as a snapshot now and
then, and last at the end or on ``SIGTERM`` with ``end`` set: the parent takes nothing
after that.

The tests run in this process and can write on the pipe too; the parent refuses records
that cannot have come from this recorder, but one that could is taken as it is.

A process the tests fork (``multiprocessing``'s workers) is not traced: at the fork it
drops the trace function and closes its copy of the records pipe (which is also closed on
``exec``), so only this process ever writes records and no fork outlives the run holding
the pipe. Each test has a time limit of its own (``test_timeout``): past it, ``TestTimeout``
is raised where the test's own code runs (never into the recorder's work, which would cut
a record or drop the trace function, nor into pytest's between a test's phases, which
would end the session), pytest reports the test failed and goes on, and the counts name
it. A test that keeps catching it is answered for by stopping the run, records kept.
"""

from __future__ import annotations

import contextlib
import dis
import json
import keyword
import os
import random
import signal
import sys
import time
from typing import Any

from execbench.safe_read import Tree
from execbench.sandbox import recording, tracer
from execbench.values import Encoder, opaque_reason, tags, to_literal

_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08
_RETURNS = frozenset(dis.opmap[name] for name in ("RETURN_VALUE", "RETURN_CONST")
                     if name in dis.opmap)
_BUILTIN = frozenset({type(None), bool, int, float, complex, str, bytes, list, tuple, set,
                      frozenset, dict})
"""Types ``values.encode`` writes as values; with the classes ``opaque_reason`` lets
through (kept per class in ``_Harvest.shown``), a first, shallow check of every call's
arguments (the sampled calls' arguments are then encoded in full)."""
_COUNTS_EVERY = 0.5
_OWN_FILES = frozenset(
    os.path.realpath(path) for name, module in list(sys.modules.items())
    if (name in (__name__, "execbench") or name.startswith("execbench."))
    and isinstance(path := getattr(module, "__file__", None), str))
"""The recorder's source files: this module's and those of the execbench modules it
imported, which the parent shipped (the encoder alone spans several)."""
_RETRY_SECONDS = 0.01
"""How soon the limit is tried again when it came due outside the test's own code."""
_PATIENCE = 5
"""Raises of ``TestTimeout`` one test may catch before the run is stopped."""
_MAX_MODULE_BYTES = 4 << 20
"""Bytes of a module read to record its calls: the parent lists none longer."""


class TestTimeout(BaseException):
    """Raised into a test past its time limit. Not an ``Exception``, so that the usual
    ``except Exception`` of a retry loop does not swallow it; pytest still reports it as
    the test's failure."""


class _Function:
    """One function the parent listed: where its source starts, and why it is skipped."""

    __slots__ = ("id", "offset", "skip", "program", "parameters", "seen", "calls",
                 "opaque", "candidates")

    def __init__(self, spec: dict[str, Any], program: recording.CompiledProgram,
                 code: Any) -> None:
        self.id: str = spec["id"]
        self.offset: int = spec["def_line"] - 1
        self.skip: str | None = spec["skip"]
        self.program = program
        flags = code.co_flags
        self.parameters = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount
                                           + bool(flags & _CO_VARARGS)
                                           + bool(flags & _CO_VARKEYWORDS)]
        self.seen: set[int] = set()
        self.calls = 0
        self.opaque: dict[str, int] = {}
        """Calls with an argument of a class that cannot be shown, by reason."""
        self.candidates = 0
        """Calls that could be sampled: ``calls`` less the ``opaque`` ones, for a function
        not filtered."""


class _CallRecorder(recording.Recorder):
    """The sandbox's recorder for one call's frame, plus what the sandbox learns from
    making the call itself: the result, taken from the frame's ``return`` event."""

    def __init__(self, harvest: _Harvest, function: _Function, slot: int, ordinal: int,
                 call: dict[str, Any]) -> None:
        super().__init__(function.program, harvest.options)
        self.harvest = harvest
        self.function = function
        self.slot = slot
        self.ordinal = ordinal
        self.call = call
        self.raised: BaseException | None = None

    def leave(self, frame, event: str, arg: Any) -> None:
        if event == "exception":
            self.raised = arg[1]
        elif event == "return":
            code = frame.f_code.co_code
            returned = frame.f_lasti < len(code) and code[frame.f_lasti] in _RETURNS
            self.harvest.finish(self, None if returned else self.raised or RuntimeError(
                "the frame ended without returning"), arg)


class _Harvest:
    def __init__(self, config: dict[str, Any]) -> None:
        self.out: int = config["records_fd"]
        self.pid = os.getpid()
        """A process a test forks inherits the tracer and this pipe; it writes nothing."""
        self.max_calls: int = config["max_calls"]
        self.max_chars: int = config["max_trace_chars"]
        self.options = {**tracer.DEFAULT_OPTIONS, "states": True,
                        "objects": config["objects"],
                        "max_events": config["max_events"], "max_states": config["max_events"],
                        "max_value_nodes": config["max_value_nodes"]}
        self.rng = random.Random(config["seed"])
        self.specs: dict[str, dict[str, Any]] = {
            os.path.realpath(os.path.join(config["root"], rel)): functions
            for rel, functions in config["files"].items()}
        self.by_file: dict[str, tuple[recording.CompiledProgram, dict[int, Any]] | None] = {}
        self.by_code: dict[int, tuple[Any, _Function | None]] = {}
        """Keyed by ``id``: hashing a code object hashes its bytecode and constants. The
        code object is kept with its entry, so its id cannot be reused."""
        self.functions: list[_Function] = []
        self.shown: dict[type, str | None] = {}
        """``opaque_reason`` of each class met as an argument's (the class kept alive)."""
        self.dropped: dict[str, int] = {}
        self.open = 0
        self.late_samples = 0
        """Calls sampled after the first ``max_calls`` of their function (into a taken slot)."""
        self.tests = [0, 0]
        self.last_counts = 0.0
        self.root = os.path.realpath(config["root"]) + os.sep
        self.tree = Tree(self.root)
        self.runner_dirs: tuple[str, ...] = ()
        """pytest's and pluggy's installed folders (``main`` sets them once imported)."""
        self.writing = False
        """A record is being written on the pipe (``_stop`` must not join it mid-line)."""
        self.test_seconds: float = config["test_timeout"]
        self.current: str | None = None
        """The test running now (between its ``logstart`` and ``logfinish``)."""
        self.raised = 0
        """``TestTimeout`` raises into the current test."""
        self.hung: list[str] = []
        """Tests stopped at their time limit, in the order they ran."""

    # ------------------------------------------------------------------ tracing

    def global_trace(self):
        """The ``sys.settrace`` function. It runs at the start of every frame in the test
        run, so the common paths (not a project function; a filtered one; arguments that
        are not builtin values; not sampled) touch only local names and counters."""
        by_code, classify, max_calls = self.by_code, self._classify, self.max_calls
        randrange, builtin, shown = self.rng.randrange, _BUILTIN, self.shown
        objects = self.options["objects"]

        def trace(frame, event, arg):
            code = frame.f_code
            known = by_code.get(id(code))
            if known is None or known[0] is not code:
                known = by_code[id(code)] = (code, classify(code))
            function = known[1]
            if function is None:
                return None
            function.calls += 1
            if function.skip is not None:
                return None
            frame_locals = frame.f_locals
            for name in function.parameters:
                kind = type(frame_locals[name])
                if kind not in builtin:
                    why = shown.get(kind, False)
                    if why is False:
                        why = shown[kind] = opaque_reason(kind) if objects else "an object"
                    if why is not None:
                        function.opaque[why] = function.opaque.get(why, 0) + 1
                        return None
            function.candidates += 1
            ordinal = function.candidates
            slot = ordinal - 1 if ordinal <= max_calls else randrange(ordinal)
            if slot >= max_calls:
                return None
            return self._sampled(function, code, frame_locals, slot, ordinal)

        return trace

    def _sampled(self, function: _Function, code, frame_locals: dict[str, Any], slot: int,
                 ordinal: int):
        """Encode a sampled call's arguments and start its recorder. A call that cannot be
        kept gives its ordinal back, so the next candidate takes its place in the sample."""
        call = self._arguments(code, frame_locals)
        if isinstance(call, str) or hash(call["text"]) in function.seen:
            function.candidates -= 1
            return self._drop("repeated arguments" if isinstance(call, dict) else call)
        function.seen.add(hash(call["text"]))
        if ordinal > self.max_calls:
            self.late_samples += 1
        self.open += 1
        return _CallRecorder(self, function, slot, ordinal, call).enter(code)

    def _drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1

    def _classify(self, code) -> _Function | None:
        filename = code.co_filename
        if filename not in self.by_file:
            self.by_file[filename] = self._load(filename)
        loaded = self.by_file[filename]
        if loaded is None:
            return None
        program, specs = loaded
        spec = specs.get(code.co_firstlineno)
        if spec is None or spec["name"] != code.co_name:
            return None
        function = spec.get("function")
        if function is None:  # one per function, whatever its code objects (a reload)
            function = spec["function"] = _Function(spec, program, code)
            self.functions.append(function)
        return function

    def _load(self, filename: str) -> tuple[recording.CompiledProgram, dict[int, Any]] | None:
        """The listed file's program and specs, its text read without following a link
        (a test may have put one where the module was); None for a file not listed or
        not readable so."""
        real = os.path.realpath(filename)
        specs = self.specs.get(real)
        if specs is None:
            return None
        try:
            text = self.tree.read(os.path.relpath(real, self.root), _MAX_MODULE_BYTES)
            program = tracer.compile_program(text.decode("utf-8"))
        except (OSError, ValueError, SyntaxError):
            return None
        return program, {int(first): spec for first, spec in specs.items()}

    def _arguments(self, code, frame_locals: dict[str, Any]) -> dict[str, Any] | str:
        """The call's arguments as encoded values and argument text, or why they cannot be
        written as text."""
        names = code.co_varnames
        count, kwonly = code.co_argcount, code.co_kwonlyargcount
        positional = [frame_locals[name] for name in names[:count]]
        keywords = {name: frame_locals[name] for name in names[count:count + kwonly]}
        rest = count + kwonly
        if code.co_flags & _CO_VARARGS:
            positional.extend(frame_locals[names[rest]])
            rest += 1
        if code.co_flags & _CO_VARKEYWORDS:
            keywords.update(frame_locals[names[rest]])
        encoder = Encoder(max_nodes=self.options["max_value_nodes"], max_chars=self.max_chars,
                          objects=self.options["objects"])
        args = [encoder.encode(value) for value in positional]
        kwargs = {name: encoder.encode(value) for name, value in keywords.items()}
        every = [*args, *kwargs.values()]
        if encoder.opaque:
            return f"an argument holds {encoder.opaque[0]}"
        held = set().union(*map(tags, every))
        if "truncated" in held:
            return "an argument is larger than the value bound"
        if "ref" in held:
            return "an argument holds an object twice (a cycle or a shared reference)"
        if "object" in held:  # objects are not kept (``objects`` off)
            return "an argument holds an object"
        if not all(name.isidentifier() and not keyword.iskeyword(name) for name in kwargs):
            return "a keyword argument's name is not an identifier"
        text = ", ".join([*map(to_literal, args),
                          *(f"{name}={to_literal(value)}" for name, value in kwargs.items())])
        return {"text": text, "args": args, "kwargs": kwargs}

    def finish(self, recorder: _CallRecorder, raised: BaseException | None, value: Any) -> None:
        """Write a sampled call's record (its frame has just returned or raised)."""
        self.open -= 1
        if os.getpid() != self.pid:
            return
        if isinstance(raised, TestTimeout):
            self._drop("its test ran past its time limit during the call")
            return
        if recorder.events_truncated:
            self._drop(f"more than {self.options['max_events']} line events")
            return
        trace: dict[str, Any] = {"status": "ok", "value": None, "value_repr": None,
                                 "args": recorder.call["args"],
                                 "kwargs": recorder.call["kwargs"], "exception": None}
        if raised is None:
            trace.update(tracer.result_value(value, objects=self.options["objects"]))
        else:
            trace["status"] = "exception"
            trace["exception"] = {**tracer.describe_exception(raised), "phase": "call"}
        trace.update(_renumbered(recorder.result(), recorder.function.offset))
        line = json.dumps({"kind": "call", "function": recorder.function.id,
                           "slot": recorder.slot, "ordinal": recorder.ordinal,
                           "args": recorder.call["text"], "trace": trace}) + "\n"
        if len(line) > self.max_chars:
            self._drop(f"trace longer than {self.max_chars} characters")
            return
        _write(self.out, line)

    # ------------------------------------------------------------------ progress

    def write_counts(self, final: bool = False, **extra: Any) -> None:
        now = time.monotonic()
        if os.getpid() != self.pid or not final and now - self.last_counts < _COUNTS_EVERY:
            return
        self.last_counts = now
        calls = {function.id: function.calls for function in self.functions}
        candidates = {function.id: function.candidates for function in self.functions}
        dropped = dict(self.dropped)
        dropped["its function was filtered out"] = sum(
            f.calls for f in self.functions if f.skip is not None)
        for function in self.functions:
            for why, n in function.opaque.items():
                reason = f"an argument holds {why}"
                dropped[reason] = dropped.get(reason, 0) + n
        dropped["not sampled"] = sum(max(f.candidates - self.max_calls, 0)
                                     for f in self.functions) - self.late_samples
        if final and self.open:
            dropped["the run ended during the call"] = self.open
        _write(self.out, json.dumps({"kind": "counts", "calls": calls, "dropped": dropped,
                                     "candidates": candidates, "tests": self.tests,
                                     "hung": self.hung, **extra}) + "\n")

    def pytest_collection_finish(self, session) -> None:
        self.tests[1] = len(session.items)
        self.write_counts()

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self.current, self.raised = nodeid, 0
        signal.signal(signal.SIGALRM, self.deadline)  # a test may have set its own
        signal.setitimer(signal.ITIMER_REAL, self.test_seconds)

    def pytest_runtest_logfinish(self, nodeid, location) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        self.current = None
        self.tests[0] += 1
        self.write_counts()

    # ------------------------------------------------------------------ limits and forks

    def deadline(self, signum, frame) -> None:
        """``SIGALRM``: the current test is past its limit. Raised only where the test's
        own code runs (``_in_the_test``); elsewhere tried again a moment later."""
        if self.current is None or os.getpid() != self.pid:
            return
        if not self._in_the_test(frame):
            signal.setitimer(signal.ITIMER_REAL, _RETRY_SECONDS)
            return
        if not self.raised:
            self.hung.append(self.current)
        self.raised += 1
        if self.raised > _PATIENCE:
            sys.settrace(None)
            self.write_counts(final=True, stopped=f"{self.current} went on past its time "
                              "limit", end=True)
            os._exit(124)
        signal.setitimer(signal.ITIMER_REAL, max(1.0, self.test_seconds / 10))
        raise TestTimeout(f"the test ran past its {self.test_seconds:g} s limit")

    def _in_the_test(self, frame) -> bool:
        """Whether ``frame`` runs for the test: between it and pytest's nearest frame down
        the stack there is a frame of the project's files (its tests, fixtures or code),
        and no frame of the recorder (whose work, in the standard library too, must not be
        cut: a trace function that raises is dropped for good, a record cut is lost).
        Between a test's phases only pytest's own code and helpers run: raising there
        would end the session."""
        project = False
        while frame is not None:
            named = frame.f_code.co_filename
            if named.startswith("<"):  # <frozen abc>, <string>: no file, never the project's
                frame = frame.f_back   # (realpath would put it under the working folder)
                continue
            filename = os.path.realpath(named)
            if filename in _OWN_FILES:  # the recorder at work, or the bottom of the stack
                return False
            if filename.startswith(self.runner_dirs):
                return project
            project = project or filename.startswith(self.root)
            frame = frame.f_back
        return False

    def forked(self) -> None:
        """In a process the tests fork: untraced, without the records pipe."""
        sys.settrace(None)
        with contextlib.suppress(OSError):
            os.close(self.out)
        for signum, handler in ((signal.SIGALRM, self.deadline), (signal.SIGTERM, _stop)):
            if signal.getsignal(signum) == handler:
                signal.signal(signum, signal.SIG_DFL)


def _renumbered(result: dict[str, Any], offset: int) -> dict[str, Any]:
    """The recorder's fields with file lines turned into lines of the function's source;
    the one frame is the function's, starting at its ``def`` line."""
    return {
        **result,
        "lines": [line - offset for line in result["lines"]],
        "events": [[line - offset, 0] for line, _ in result["events"]],
        "frames": [{"function": frame["function"], "line": 1} for frame in result["frames"]],
        "states": [{**state, "line": state["line"] - offset, "frame": 0}
                   for state in result["states"]],
        "branches": {str(int(line) - offset): outcome
                     for line, outcome in result["branches"].items()},
        "loops": {str(int(line) - offset): count for line, count in result["loops"].items()},
    }


def _write(fd: int, text: str) -> None:
    data = text.encode()
    if _harvest is not None:
        _harvest.writing = True
    while data:
        data = data[os.write(fd, data):]
    if _harvest is not None:
        _harvest.writing = False


_harvest: _Harvest | None = None


def _stop(signum, frame) -> None:
    """``SIGTERM`` (the parent's stop): the last counts, then out."""
    sys.settrace(None)
    if _harvest is not None:
        if _harvest.writing:  # the record cut here is refused; the counts stay readable
            _write(_harvest.out, "\n")
        _harvest.write_counts(final=True, stopped="the run was stopped", end=True)
    os._exit(124)


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        config = json.load(handle)
    for path in reversed(config["paths"]):
        sys.path.insert(0, path)
    global _harvest
    harvest = _harvest = _Harvest(config)
    os.set_inheritable(harvest.out, False)  # the jail passed it on exec; the tests' won't
    harvest.write_counts(final=True)
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGALRM, harvest.deadline)
    os.register_at_fork(after_in_child=harvest.forked)
    try:
        import _pytest
        import pluggy
        import pytest
    except ImportError as exc:
        harvest.write_counts(final=True, error=f"pytest cannot be imported: {exc}", end=True)
        sys.exit(3)
    harvest.runner_dirs = tuple(os.path.realpath(os.path.dirname(module.__file__ or "")) + os.sep
                                for module in (_pytest, pluggy))
    random.seed(config["seed"])  # tests drawing unseeded random inputs repeat run to run
    sys.settrace(harvest.global_trace())
    ending: dict[str, Any] = {"stopped": "pytest raised an error instead of ending (a hook "
                                          "it does not guard, such as pytest_sessionfinish)"}
    try:
        ending = {"exit": int(pytest.main(config["pytest_args"], plugins=[harvest]))}
    finally:  # the counts of the tests that finished, however pytest ended
        sys.settrace(None)
        harvest.write_counts(final=True, end=True, **ending)


if __name__ == "__main__":
    main()
