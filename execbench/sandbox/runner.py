"""A sandbox runner: the process that runs one unit's program code, and nothing else.

Forked from the warm zygote (``worker``) for one unit (the calls of one program, or one
candidate), it confines itself for good (Landlock, an unprivileged user, seccomp:
``confine.apply``; then the audit hook), says it is ready, answers each job of its one
batch (read by the zygote before the fork, so found in the memory it inherits) in turn
on a pipe of its own, and is then
killed by the zygote, which confirms its death before the next unit's runner starts. It
never holds the parent's pipes: the zygote relays its answers after checking them, so
nothing a program writes, leaves running or patches here can reach another unit's result.

Each call gets a fresh module namespace, an empty working folder, a reseeded ``random``, a
fresh ``decimal`` context, a capped stdout, and a CPU-time budget. At the budget
(``ITIMER_PROF``) the call's record ends where the program is and ``tracer.CpuLimit`` is
raised into it, so the lines it ran are kept (whether a call that never ends reached a line
must not depend on which limit, steps or CPU, a machine hits first); the call's status is
``timeout`` however it then ends. A call that goes on catching it is answered for, its
record as cut, by the handler itself, and the runner dies (``_PATIENCE``); one still running
a while later (a long C call, which no signal handler interrupts) kills the runner
(``ITIMER_VIRTUAL``). After the call
the runner checks that the call left no trace in the process (``hygiene``); if it did, or
the call ran out of time, it answers and stops, and the rest of the unit goes to a fresh
runner.

The audit hook refuses process creation, signals, sockets, ctypes, changing limits, and
writes outside the sandbox's temp root, with a clear ``SandboxViolation``; the kernel
layers under it hold when Python code gets around it.
"""

from __future__ import annotations

import io
import json
import os
import signal
import stat
import sys
import time
from collections.abc import Callable
from typing import Any

from execbench.sandbox import confine, frames, hygiene, phases, recording, tracer

ANSWERS_FD = 3
"""Where a runner finds its own pipe, for its answers."""
EXIT_UNCONFINED = 76
"""A runner's exit code, before it said it was ready, when a kernel layer the probe found
working failed: the zygote then stops rather than fork runners that would serve with fewer
layers than reported. The same code from a runner that was ready is a program's exit."""

_BLOCKED_EVENTS = frozenset({
    "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
    "subprocess.Popen", "pty.spawn", "os.kill", "os.killpg", "signal.pthread_kill",
    "socket.__new__", "socket.connect", "socket.bind", "socket.sendto", "socket.getaddrinfo",
    "socket.gethostbyname", "socket.gethostbyaddr", "resource.setrlimit", "resource.prlimit",
    "os.setuid", "os.setgid", "os.chroot", "os.startfile", "webbrowser.open", "sys.addaudithook",
    "winreg.OpenKey", "mmap.__new__",
})
_PATH_EVENTS = frozenset({
    "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.truncate", "os.chmod", "os.chown",
    "os.symlink", "os.link", "os.utime", "os.chflags", "os.lchflags", "shutil.rmtree",
    "shutil.copyfile", "shutil.copymode", "shutil.copystat", "shutil.move", "shutil.chown",
    "os.removexattr", "os.setxattr",
})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC

class SandboxViolation(PermissionError):
    """Raised inside a runner when the program attempts something the sandbox forbids."""


class _OutputLimit(BaseException):
    """Not an Exception subclass, so ``except Exception`` in the program does not hide it."""


class _CappedText(io.TextIOBase):
    """A stdout that keeps the first ``limit`` characters and then fails every write."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.size = 0
        self.exceeded = False

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if self.exceeded:
            raise _OutputLimit
        room = self.limit - self.size
        if len(text) > room:
            self.parts.append(text[:room])
            self.size = self.limit
            self.exceeded = True
            raise _OutputLimit
        self.parts.append(text)
        self.size += len(text)
        return len(text)

    def getvalue(self) -> str:
        return "".join(self.parts)


def _audit_hook(root: str):
    prefix = root.rstrip(os.sep) + os.sep

    def inside(path: Any) -> bool:
        if isinstance(path, int):
            return False
        try:
            real = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return False
        return real == root or real.startswith(prefix)

    def hook(event: str, args: tuple) -> None:
        if event in _BLOCKED_EVENTS or event.startswith("ctypes."):
            raise SandboxViolation(f"blocked by the execbench sandbox: {event}")
        if event == "open":
            path, mode, flags = args
            writing = any(c in mode for c in "wax+") if isinstance(mode, str) else \
                bool((flags or 0) & _WRITE_FLAGS)
            if writing and not inside(path):
                raise SandboxViolation(f"blocked by the execbench sandbox: write to {path!r}")
        elif event in _PATH_EVENTS:
            for path in args[:2]:
                if isinstance(path, str | bytes | os.PathLike) and not inside(path):
                    raise SandboxViolation(f"blocked by the execbench sandbox: {event} {path!r}")

    return hook


_WORKDIR_MODE = stat.S_IFDIR | 0o700
WORKDIR = "work"
"""The working folder the zygote makes for each unit's first call, under the root."""
_ENCODER = json.JSONEncoder(ensure_ascii=False)
"""One encoder for results: ``json.dumps`` with options builds a new one per call."""
_OTHER_TIMERS = (signal.ITIMER_REAL,)
_TIMER_SLACK = 0.05
"""CPU seconds past its budget a call may end before its timer's signal lands (the timer
counts in scheduler ticks); more than that means the program stopped the timer."""
_RETRY_SECONDS = 0.01
"""How soon ``_over_budget`` tries again when the signal lands outside the program's code
(in a recorder's callback, in the runner), and again after raising (a program may catch
``CpuLimit``)."""
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_PATIENCE = 5
"""Times ``CpuLimit`` is raised into a call that goes on catching it (a loop around
``except: pass``, which an honest program may have) before the runner answers for it and
dies (``Runner._give_up``). Left to the backstop, such a call would lose its record, so
its lines would not be kept as the step limit's or a caught-once limit's are."""
_give_up: list[Callable[[], None]] = []
"""How to answer for the call running now without it: set for each call by ``Runner``."""
_raised = [0]
"""How many times ``CpuLimit`` was raised into the call running now."""


def _grace(budget: float) -> float:
    """CPU seconds past its budget before a call that did not end is killed."""
    return max(0.5, budget / 4)


def _over_budget(signum: int, frame: Any) -> None:
    """``SIGPROF``: the running call used its CPU budget. Its record ends here, and
    ``CpuLimit`` is raised where the program runs, never in execbench's own code (a
    recorder's callback, the runner), where the handler tries again shortly instead. A
    program that still runs after ``_PATIENCE`` of them is answered for (``_give_up``)."""
    signal.setitimer(signal.ITIMER_PROF, _RETRY_SECONDS)
    if tracer.cut(tracer.CPU_LIMIT) and frame is not None \
            and not frame.f_code.co_filename.startswith(_PACKAGE):
        _raised[0] += 1
        if _raised[0] > _PATIENCE and _give_up:
            _give_up[0]()  # returns only if it could not answer: the backstop then will
        raise tracer.CpuLimit


class Runner:
    """Serves the calls of one unit; see the module docstring."""

    def __init__(self, limits: dict[str, Any], root: str, snapshot: hygiene.Snapshot,
                 workdir: str | None = None) -> None:
        """``workdir``: the first call's working folder, made by the zygote (``WORKDIR``
        under ``root``, the runner's own); None: the runner makes one."""
        self.limits = limits
        self.root = root
        self.programs: dict[tuple[str, str], recording.CompiledProgram] = {}
        self.arguments: dict[str, Any] = {}
        self.counter = 0
        self.workdir = workdir or ""
        if workdir is None:
            self._new_workdir()
        self.snapshot = snapshot
        self.checking = False
        """Whether the after-call check is armed: only once a call that is not its unit's
        last is about to run (a one-call unit, most of them, never walks the snapshot)."""
        self.clock: phases.Clock | None = None
        """Set when the steps are measured (``phases``)."""

    def _new_workdir(self) -> None:
        self.counter += 1
        self.workdir = os.path.join(self.root, f"{os.getpid()}-{self.counter}")
        umask = os.umask(0o077)  # whatever umask a program left (chmod is refused)
        try:
            os.mkdir(self.workdir, _WORKDIR_MODE & 0o777)
        finally:
            os.umask(umask)

    def _empty_workdir(self) -> bool:
        """Every call starts in an empty working folder, and nothing a call wrote anywhere
        in the temporary root (``HOME`` and ``TMPDIR`` point there) is left for the next.
        The folder is kept while calls leave the root holding just it, empty (the common
        case: two listings and no mkdir, rmdir or path checks per call); otherwise the
        root is emptied and a new folder made. False when the call left files the runner
        cannot remove (a tree deeper than its recursion limit): it then recycles, and the
        zygote, which may recurse deeper, removes them."""
        try:
            if os.listdir(self.root) == [os.path.basename(self.workdir)] \
                    and os.lstat(self.workdir).st_mode == _WORKDIR_MODE \
                    and not os.listdir(self.workdir):
                return True
        except OSError:
            pass
        if not hygiene.wipe(self.root):
            return False
        self._new_workdir()
        return True

    def serve(self, batch: tuple[str, ...]) -> None:
        """Say ready, then answer the unit's one batch (its jobs' JSON texts), each job as
        soon as it is done, until the batch is answered or a call leaves the process
        changed. A job is parsed just before it runs."""
        frames.send(ANSWERS_FD, {"kind": "ready"})
        for index, text in enumerate(batch):
            job = json.loads(text)
            payload, dirt = self.call(job, last=index == len(batch) - 1)
            message = {"kind": "result", "seq": job.get("seq"), "recycle": dirt}
            if self.clock is not None:
                self.clock.mark("encode")
                message["phases"] = self.clock.take()
            frames.send_result(ANSWERS_FD, message, payload)
            if dirt is not None:
                return

    def _compiled(self, job: dict[str, Any]) -> tuple[recording.CompiledProgram, Any]:
        key = (job["code"], job["options"]["recorder"])
        if key not in self.programs:
            self.programs[key] = tracer.compile_program(*key)
        if job["args"] not in self.arguments:
            self.arguments[job["args"]] = tracer.compile_args(job["args"])
        return self.programs[key], self.arguments[job["args"]]

    def call(self, job: dict[str, Any], last: bool = False) -> tuple[bytes, str | None]:
        """Run one job; returns the JSON payload and why the runner must recycle, if so.
        After the ``last`` job of its batch the runner dies, so whether the call left the
        process changed no longer matters (its builtins are still put back, for the
        answer's sake): the check is skipped."""
        try:
            program, args = self._compiled(job)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            phase = "compile" if (job["code"], job["options"]["recorder"]) not in self.programs \
                else "arguments"
            exception = {"type": type(exc).__name__, "message": str(exc)[:500], "phase": phase}
            return json.dumps({"status": "exception", "exception": exception}).encode(), None
        if self.clock is not None:
            self.clock.mark("compile")
        if not last:
            if not self.checking:
                self.snapshot.refresh()  # before any of the unit's code has run
                self.checking = True
            self.snapshot.watch(program.imports)
        os.chdir(self.workdir)
        limits = self.limits
        if "random" in sys.modules:
            sys.modules["random"].seed(0)
        if "decimal" in sys.modules:
            sys.modules["decimal"].setcontext(sys.modules["decimal"].Context())
        stdout = _CappedText(int(limits["stdout_bytes"]))
        sys.stdout = sys.stderr = stdout
        start = time.process_time()
        budget = min(float(job.get("cpu_seconds") or limits["cpu_seconds"]),
                     float(limits["cpu_seconds"]))
        steps = min(int(job.get("max_steps") or limits["max_steps"]), int(limits["max_steps"]))
        _raised[0] = 0
        _give_up[:] = [lambda: self._give_up(job, program, stdout, start, budget, last)]
        signal.setitimer(signal.ITIMER_VIRTUAL, budget + _grace(budget))
        signal.setitimer(signal.ITIMER_PROF, budget)
        try:
            result = tracer.run(program, job["entry_point"], args,
                                {**job["options"], "max_steps": steps})
        except _OutputLimit:
            result = {"status": "output_limit"}
        finally:
            elapsed, builtins_changed = self._end_call(start)
        if self.clock is not None:
            self.clock.mark("run")
        return self._answer(result, program, stdout, elapsed, budget, builtins_changed, last)

    def _end_call(self, start: float) -> tuple[float, bool]:
        """Stop the call's timers and put back what the runner needs; the CPU seconds it
        used, and whether it changed the builtins."""
        _give_up.clear()
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        elapsed = time.process_time() - start
        for timer in _OTHER_TIMERS:  # a program's alarm must not kill a later call
            signal.setitimer(timer, 0)
        sys.settrace(None)
        builtins_changed = self.snapshot.restore_builtins()
        sys.stdout, sys.stderr = self.snapshot.streams
        sys.setrecursionlimit(self.snapshot.recursion)
        return elapsed, builtins_changed

    def _give_up(self, job: dict[str, Any], program: recording.CompiledProgram,
                 stdout: _CappedText, start: float, budget: float, last: bool) -> None:
        """Answer the running call with its record as the CPU limit cut it, and die: its
        program goes on catching ``CpuLimit``, and will not return before the backstop kills
        the runner, losing the record. Called in the signal handler, in the program's frame;
        returns (to let the backstop end the call) only if nothing was sent."""
        room = self.snapshot.recursion + 200  # the program's frames are still below these
        try:
            sys.setrecursionlimit(room)
            result = tracer.abandon()
            if result is None:
                return
            elapsed, builtins_changed = self._end_call(start)
            sys.setrecursionlimit(room)
            payload, dirt = self._answer(result, program, stdout, elapsed, budget,
                                         builtins_changed, last)
            if not last:  # the runner dies: the unit's next job is for a fresh one
                dirt = dirt or "ran out of CPU time"
            message = {"kind": "result", "seq": job.get("seq"), "recycle": dirt}
        except BaseException:  # noqa: BLE001 - a program may have broken anything here
            return
        try:
            frames.send_result(ANSWERS_FD, message, payload)
        finally:
            os._exit(0)

    def _answer(self, result: dict[str, Any], program: recording.CompiledProgram,
                stdout: _CappedText, elapsed: float, budget: float, builtins_changed: bool,
                last: bool) -> tuple[bytes, str | None]:
        """The call's JSON payload, and why the runner must recycle, if so."""
        result["cpu_time"] = elapsed
        timed_out = result.get("detail") == tracer.CPU_LIMIT
        if elapsed > budget + _TIMER_SLACK and not timed_out:
            # The program stopped its own timer (setitimer, a blocked SIGPROF) and ran past
            # its budget: the verdict is the one the timer would have given.
            result.update(status="timeout", detail=tracer.CPU_LIMIT, value=None,
                          value_repr=None, exception=None)
            timed_out = True
        if stdout.exceeded:
            result["status"] = "output_limit"
        result["stdout"] = stdout.getvalue()
        os.chdir(self.root)
        dirt = None if last else "out of memory" if result["status"] == "memory" else \
            "ran out of CPU time" if timed_out else \
            "builtins changed" if builtins_changed else \
            "files left that could not be removed" if not self._empty_workdir() else \
            self.snapshot.dirt(program.imports)
        try:
            payload = _ENCODER.encode(result).encode("utf-8", "surrogatepass")
        except (ValueError, TypeError, RecursionError, MemoryError) as exc:
            detail = f"result not serialisable: {type(exc).__name__}"
            payload = json.dumps({"status": "crashed", "detail": detail}).encode()
        return payload, dirt


_WARM_UP = (
    ("def f(xs, key):\n"
     "    seen = {}\n"
     "    for i, x in enumerate(xs):\n"
     "        if x % 2 == 0 and x not in seen:\n"
     "            seen[x] = i\n"
     "        elif x > key:\n"
     "            seen.setdefault(-x, [])\n"
     "    words = ' '.join(str(x) for x in sorted(seen)).split()\n"
     "    while words and len(words) > 2:\n"
     "        words.pop()\n"
     "    return [w.upper() + '!' for w in words], len(seen), key / 2\n",
     "f", "[4, 1, 4, 7, 2], 3"),
    ("def g(text):\n"
     "    try:\n"
     "        return int(text)\n"
     "    except ValueError:\n"
     "        pass\n"
     "    print(text)\n"
     "    return {'n': text.count('a'), 'r': text[::-1]}['q']\n", "g", "'banana'"),
)
"""Trusted programs the zygote runs through a runner's whole path before it forks any
(``warm_up``): one ends normally, one with an exception, and they use the statements and
values benchmark programs use most."""


def warm_up(limits: dict[str, Any], root: str) -> None:
    """Run ``_WARM_UP`` through ``Runner.call`` in the zygote, with each recorder, with and
    without states, so that the code every runner runs has been run before the fork: on
    Python 3.11+ the interpreter rewrites a function's bytecode in place as it warms up
    (specialisation) and fills its type caches, and a runner that inherits them warm
    writes fewer pages, each write a copy-on-write fault, than one that warms them up
    itself. No program code runs here, and the zygote's snapshot is taken after this. The
    caller wipes ``root``."""
    from execbench.sandbox.tracer import DEFAULT_OPTIONS, RECORDERS

    warm = Runner(limits, root, hygiene.Snapshot())
    for recorder in RECORDERS.names():
        for states in (False, True):
            options = {**DEFAULT_OPTIONS, "recorder": recorder, "states": states}
            for code, entry_point, args in _WARM_UP:
                job = {"code": code, "entry_point": entry_point, "args": args,
                       "options": options, "seq": "warm-up"}
                warm.call(job)
                warm.call(job, last=True)
    json.loads(json.dumps(job))  # a job's text, as the zygote writes it and a runner reads it
    os.chdir(root)


def run(plan: confine.Plan, serving: Runner, batch: tuple[str, ...],
        measured: bool = False, layer: int | None = None) -> None:
    """The runner's whole life, in the forked child; it never returns into the zygote's
    code. Its pipe is already at ``ANSWERS_FD``; ``serving`` (its working folder made), its
    ``batch`` (its jobs' JSON texts) and its Landlock ``layer`` (``confine.next_layer``)
    come from the zygote. ``measured``: its steps are measured (``phases``)."""
    code = 1
    clock = phases.Clock() if measured else None
    try:
        if clock is not None:
            clock.mark("after fork")
        signal.signal(signal.SIGPROF, _over_budget)
        signal.signal(signal.SIGVTALRM, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)  # the zygote keeps the parent's stderr (a terminal?), a program not
        os.close(null)
        try:
            confine.apply(plan, layer)
        except (OSError, confine.ConfinementError):
            code = EXIT_UNCONFINED
            return
        sys.addaudithook(_audit_hook(plan.root))
        if clock is not None:
            clock.mark("confine")
            serving.clock = clock
        serving.serve(batch)
        code = 0
    except BaseException:  # noqa: BLE001 - the zygote reports how the runner ended
        pass
    finally:
        os._exit(code)
