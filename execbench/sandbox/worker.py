"""A sandbox worker: ``python -m execbench.sandbox.worker``.

Two processes per worker:

* the **zygote** starts once, imports the tracer and the standard modules benchmark
  programs use, sets the resource limits (address space, file size), moves into an empty
  network namespace where permitted, probes which kernel layers the machine offers
  (``confine.probe``) and then only forks runners and reaps them; it never runs program
  code, so it holds no audit hook;
* a **runner**, forked from the warm zygote, first confines itself for good (Landlock, an
  unprivileged user, seccomp: ``confine.apply``; then the audit hook), and then serves
  calls one at a time. Each call gets a
  fresh module namespace, a fresh temp working directory, a reseeded ``random``, a fresh
  ``decimal`` context, a capped stdout, and a CPU-time budget (``ITIMER_PROF``: the runner
  is killed by ``SIGPROF`` when it overruns). After the call the runner checks that the
  call left no trace in the process (builtins, imported modules, environment, signal
  handlers, threads, file descriptors, recursion limit); if it did, the runner answers and
  exits, and the zygote forks a clean one. A runner that dies mid-call (crash,
  ``os._exit``, CPU overrun, or killed by the parent at the wall-clock limit) is reaped by
  the zygote, which reports how it died, and replaced.

Forking once per runner rather than once per call is what makes tracing fast: a fork of
a Python process costs about a millisecond of copy-on-write page faults on each side.

The audit hook refuses process creation, signals, sockets, ctypes, changing limits, and
writes outside the sandbox's temp root, with a clear ``SandboxViolation``; the kernel
layers under it hold when Python code gets around it.

Protocol on the inherited stdin/stdout pipes (moved to private descriptors at start-up so
no print can corrupt it). The parent sends a 4-byte big-endian length and a JSON body: the
limits once, then batches of jobs (``{"jobs": [...]}``: one message for several calls, so
the pipe costs are shared); a runner answers each job of a batch in turn. The worker
answers in frames of a 4-byte length, a one-byte tag and a body: tag ``J`` is a JSON
message with a ``kind``: ``hello`` (zygote ready; the confinement layers), ``ready`` (a
runner started; its pid), ``result`` (the job's ``seq``, whether the runner recycles, and
the ``size`` of its payload), ``died`` (the runner ended: how); tag ``C`` is the next chunk
of the payload announced by the last ``result``.

Every frame fits in ``PIPE_BUF`` bytes and is written by one ``write``, which the kernel
makes atomic, so frames never interleave or tear. A runner killed while it sends a big
payload leaves whole chunks followed by the zygote's ``died`` frame; the parent sees the
payload is short and discards it.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import resource
import select
import signal
import stat
import struct
import sys
import time
from collections import OrderedDict
from operator import is_
from typing import TYPE_CHECKING

from execbench.sandbox import confine, tracer

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

# Standard modules the zygote imports once, so that runners find them in sys.modules;
# a program importing anything else makes its runner recycle after the call.
PRELOAD = (
    "re", "math", "string", "collections", "itertools", "functools", "heapq", "bisect", "copy",
    "json", "random", "typing", "operator", "statistics", "datetime", "hashlib", "fractions",
    "decimal", "textwrap", "unicodedata", "array", "enum", "dataclasses", "numbers",
    "calendar", "cmath", "difflib", "abc", "contextlib", "sys", "os",
)

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
EXIT_PARENT_GONE = 75
"""A runner's exit code when the parent closed the job pipe: the zygote then stops too. A
program calling ``os._exit(75)`` makes the whole worker stop; the parent then reports the
call as crashed and starts a new worker, so nothing is misclassified."""
EXIT_UNCONFINED = 76
"""A runner's exit code when a kernel layer the probe found working failed: the zygote stops
rather than fork runners that would serve with fewer layers than reported."""
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_WATCHED_SIGNALS = (signal.SIGPROF, signal.SIGALRM, signal.SIGTERM, signal.SIGINT,
                    signal.SIGXFSZ, signal.SIGCHLD, signal.SIGPIPE)


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


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


_WORKDIR_MODE = stat.S_IFDIR | 0o700
_ENCODER = json.JSONEncoder(ensure_ascii=False)
"""One encoder for results: ``json.dumps`` with options builds a new one per call."""
JSON, CHUNK = b"J", b"C"
FRAME_BYTES = select.PIPE_BUF
"""The most a frame may hold: one ``write`` of up to ``PIPE_BUF`` bytes to a pipe is atomic."""
_CHUNK_BYTES = FRAME_BYTES - 5


def _frame(tag: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body) + 1) + tag + body


def _send(fd: int, message: dict[str, Any]) -> None:
    _write_all(fd, _frame(JSON, json.dumps(message).encode()))


def _send_result(fd: int, message: dict[str, Any], payload: bytes) -> None:
    """A ``result`` frame and the payload in chunks, several frames per write where they fit."""
    frames = [_frame(JSON, json.dumps({**message, "size": len(payload)}).encode())]
    frames += [_frame(CHUNK, payload[i:i + _CHUNK_BYTES])
               for i in range(0, len(payload), _CHUNK_BYTES)]
    batch = b""
    for frame in frames:
        if len(batch) + len(frame) > FRAME_BYTES:
            _write_all(fd, batch)
            batch = b""
        batch += frame
    _write_all(fd, batch)


def _read_exact(fd: int, size: int) -> bytes | None:
    parts = []
    while size:
        try:
            chunk = os.read(fd, size)
        except BlockingIOError:  # a program made the shared job pipe non-blocking
            os.set_blocking(fd, True)
            continue
        if not chunk:
            return None
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


def _receive(fd: int) -> dict[str, Any] | None:
    header = _read_exact(fd, 4)
    body = _read_exact(fd, struct.unpack(">I", header)[0]) if header else None
    return None if body is None else json.loads(body)


class _Snapshot:
    """Process state a call must leave as it found it, or the runner is recycled."""

    def __init__(self) -> None:
        import builtins

        self.builtins = _Frozen(builtins.__dict__)
        self.modules = set(sys.modules)
        self.module_dicts = {name: _Frozen(vars(sys.modules[name])) for name in PRELOAD
                             if name in sys.modules}
        self.own = [(name, _Frozen(vars(sys.modules[name]))) for name in _RUNNER_MODULES
                    if name in sys.modules]
        self.calls = [(name, names, tuple(map(vars(sys.modules[name]).get, names)))
                      for name, names in _RUNNER_CALLS.items() if name in sys.modules]
        self.streams = (sys.stdout, sys.stderr)
        self.mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())
        self.environ = dict(os.environ._data)  # bytes to bytes: compared in C
        self.signals = [signal.getsignal(s) for s in _WATCHED_SIGNALS]
        self.recursion = sys.getrecursionlimit()
        self.fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None

    def restore_builtins(self) -> bool:
        """Put the builtins back at once (the runner's own code uses them); True if changed."""
        import builtins

        current = builtins.__dict__
        if self.builtins.same(current):
            return False
        saved = dict(zip(self.builtins.keys, self.builtins.values, strict=True))
        update = current.update  # looked up before the builtins are emptied
        current.clear()
        update(saved)
        return True

    def dirt(self, modules: frozenset[str]) -> str | None:
        """What the last call changed, or None. Cheap enough to run after every call."""
        if len(sys.modules) != len(self.modules) or not self.modules.issuperset(sys.modules):
            new = sys.modules.keys() - self.modules
            if len(self.modules) + len(new) != len(sys.modules) \
                    or not all(map(_is_codec_module, new)):
                return "new modules imported"
            self.modules |= new  # codecs loaded on first use: tables, no state
        for name in modules:
            saved = self.module_dicts.get(name)
            if saved is not None and not saved.same(vars(sys.modules[name])):
                return f"module {name} changed"
        for name, saved in self.own:  # reached by __import__ or sys.modules, not by imports
            if not saved.same(vars(sys.modules[name])):
                return f"module {name} changed"
        for name, names, values in self.calls:
            if not all(map(is_, map(vars(sys.modules[name]).get, names), values)):
                return f"module {name} changed"
        environ = os.environ
        if type(environ) is not os._Environ or type(environ._data) is not dict \
                or environ._data != self.environ:
            return "environment changed"
        if [signal.getsignal(s) for s in _WATCHED_SIGNALS] != self.signals:
            return "signal handlers changed"
        if signal.pthread_sigmask(signal.SIG_BLOCK, ()) != self.mask:
            return "signal mask changed"
        if _threads() > 1:
            return "threads left running"
        if sys.getrecursionlimit() != self.recursion:
            return "recursion limit changed"
        if self.fds is not None and len(os.listdir("/proc/self/fd")) != self.fds:
            return "file descriptors left open"
        return None


_OTHER_TIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL)
_TIMER_SLACK = 0.05
"""CPU seconds past its budget a call may end before its timer's signal lands (the timer
counts in scheduler ticks); more than that means the program stopped the timer."""
_RUNNER_MODULES = ("__main__", "execbench.sandbox.tracer", "execbench.sandbox.properties",
                   "execbench.sandbox.values", "execbench.sandbox.confine")
"""Modules of the runner itself, checked whole after every call, whatever the program
imports: a program reaches them through ``__import__`` or ``sys.modules`` as easily as
through ``import``."""
_RUNNER_CALLS = {
    "os": ("write", "read", "listdir", "lstat", "chdir", "mkdir", "umask", "getpid",
           "set_blocking", "path", "environ", "_exit"),
    "sys": ("settrace", "setrecursionlimit", "getrecursionlimit", "modules"),
    "signal": ("setitimer", "getsignal", "pthread_sigmask", "signal"),
    "time": ("process_time",),
    "json": ("dumps", "loads", "JSONEncoder"),
    "json.encoder": ("c_make_encoder", "encode_basestring", "encode_basestring_ascii"),
    "json.decoder": ("scanstring", "JSONDecoder"),
    "struct": ("pack", "unpack"),
}
"""The standard-library functions the runner calls to run, record and answer a call,
checked one by one after every call (a whole-dict check of ``os`` and ``posix`` alone
would cost more than tracing a typical call)."""


def _threads() -> int:
    """Threads of this process, as the kernel counts them (``threading`` does not see
    threads started with ``_thread``)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return sys.modules["threading"].active_count() if "threading" in sys.modules else 1


def _is_codec_module(name: str) -> bool:
    """Modules the codec registry imports the first time a program names an encoding
    (``text.encode('shift_jis')``): code tables with no state a program could leave
    changed, kept rather than costing a new runner (and its compile cache) each time."""
    return name.startswith(("encodings.", "_codecs_")) or name == "_multibytecodec"


class _Frozen:
    """A namespace's keys and values as they were, compared by identity only, so no
    user-defined ``__eq__`` ever runs here, and in C (``map`` over ``operator.is_``): this
    check runs after every call, on about 160 builtins."""

    def __init__(self, namespace: dict) -> None:
        self.keys = tuple(namespace)
        self.values = tuple(namespace.values())

    def same(self, namespace: dict) -> bool:
        """True if ``namespace`` holds the same key objects, in the same order, bound to the
        same value objects (a key deleted and added back counts as a change)."""
        return len(namespace) == len(self.keys) and all(map(is_, namespace, self.keys)) \
            and all(map(is_, namespace.values(), self.values))


def _compile(key: tuple[str, str]) -> tracer.CompiledProgram:
    return tracer.compile_program(*key)


class Runner:
    """Serves calls until one leaves the process dirty; forked from the zygote."""

    def __init__(self, proto_in: int, proto_out: int, limits: dict[str, Any], root: str,
                 programs: OrderedDict, arguments: OrderedDict) -> None:
        self.proto_in = proto_in
        self.proto_out = proto_out
        self.limits = limits
        self.root = root
        self.programs = programs
        self.arguments = arguments
        self.counter = 0
        self.workdir = ""
        self._new_workdir()
        self.snapshot = _Snapshot()

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
        if not _wipe(self.root):
            return False
        self._new_workdir()
        return True

    def _cached(self, cache: OrderedDict, key: Any, make) -> Any:
        hit = cache.get(key)
        if hit is not None:
            cache.move_to_end(key)
            return hit
        value = cache[key] = make(key)
        if len(cache) > 1024:
            cache.popitem(last=False)
        return value

    def serve(self) -> bool:
        """Answer batches of jobs, each job's result as soon as it is ready; True when the
        parent closed the pipe, False when recycling (the rest of the batch is then left
        for the parent to send to the next runner)."""
        _send(self.proto_out, {"kind": "ready", "pid": os.getpid()})
        while True:
            batch = _receive(self.proto_in)
            if batch is None:
                return True
            for job in batch["jobs"]:
                payload, dirt = self.call(job)
                message = {"kind": "result", "seq": job.get("seq"), "recycle": dirt}
                _send_result(self.proto_out, message, payload)
                if dirt is not None:
                    return False

    def call(self, job: dict[str, Any]) -> tuple[bytes, str | None]:
        """Run one job; returns the JSON payload and why the runner must recycle, if so."""
        try:
            key = (job["code"], job["options"]["recorder"])
            program = self._cached(self.programs, key, _compile)
            args = self._cached(self.arguments, job["args"], tracer.compile_args)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            phase = "compile" if key not in self.programs else "arguments"
            exception = {"type": type(exc).__name__, "message": str(exc)[:500], "phase": phase}
            return json.dumps({"status": "exception", "exception": exception}).encode(), None
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
        signal.setitimer(signal.ITIMER_PROF, budget)
        try:
            result = tracer.run(program, job["entry_point"], args, job["options"])
        except _OutputLimit:
            result = {"status": "output_limit"}
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            elapsed = time.process_time() - start
            for timer in _OTHER_TIMERS:  # a program's alarm must not kill a later call
                signal.setitimer(timer, 0)
            sys.settrace(None)
            builtins_changed = self.snapshot.restore_builtins()
            sys.stdout, sys.stderr = self.snapshot.streams
            sys.setrecursionlimit(self.snapshot.recursion)
        result["cpu_time"] = elapsed
        if elapsed > budget + _TIMER_SLACK:
            # The program stopped its own timer (setitimer, a blocked SIGPROF) and ran past
            # its budget: the verdict is the one the timer would have given.
            result = {"status": "timeout", "detail": "CPU time limit", "cpu_time": elapsed}
        if stdout.exceeded:
            result["status"] = "output_limit"
        result["stdout"] = stdout.getvalue()
        os.chdir(self.root)
        cleaned = self._empty_workdir()
        dirt = "out of memory" if result["status"] == "memory" else \
            "builtins changed" if builtins_changed else \
            "files left that could not be removed" if not cleaned else \
            self.snapshot.dirt(program.imports)
        try:
            payload = _ENCODER.encode(result).encode("utf-8", "surrogatepass")
        except (ValueError, TypeError, RecursionError, MemoryError) as exc:
            detail = f"result not serialisable: {type(exc).__name__}"
            payload = json.dumps({"status": "crashed", "detail": detail}).encode()
        return payload, dirt


def _describe_death(status: int) -> dict[str, Any]:
    if os.WIFSIGNALED(status):
        sig = signal.Signals(os.WTERMSIG(status))
        if sig in (signal.SIGPROF, signal.SIGXCPU):
            return {"status": "timeout", "detail": "CPU time limit"}
        return {"status": "crashed", "detail": f"killed by {sig.name}", "signal": sig.name}
    code = os.WEXITSTATUS(status)
    return {"status": "crashed", "detail": f"exited with code {code} before answering"}


def _set_limits(limits: dict[str, Any]) -> None:
    """Resource limits, set once in the zygote; runners inherit them."""
    memory = int(limits["memory_mb"]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    files = int(limits["file_bytes"])
    resource.setrlimit(resource.RLIMIT_FSIZE, (files, files))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write then fails with EFBIG
    sys.setrecursionlimit(int(limits["recursion_limit"]))


def _run_runner(plan: confine.Plan, *args: Any) -> None:
    """The runner's whole life; it must never return into the zygote's code."""
    code = 1
    try:
        signal.signal(signal.SIGPROF, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)  # the zygote keeps the parent's stderr (a terminal?), a program not
        os.close(null)
        try:
            confine.apply(plan)
        except (OSError, confine.ConfinementError):
            code = EXIT_UNCONFINED
            return
        sys.addaudithook(_audit_hook(plan.root))
        code = EXIT_PARENT_GONE if Runner(*args).serve() else 0
    except BaseException:  # noqa: BLE001 - the zygote reports the exit code
        pass
    finally:
        os._exit(code)


def _wipe(root: str) -> bool:
    """Remove everything inside ``root``; False if some of it could not be removed. The
    tree is a program's: ``shutil.rmtree`` does not follow its links; it recurses per
    level, so the zygote lifts its own recursion limit for it."""
    import shutil  # rare in runners, so loaded lazily

    try:
        entries = os.listdir(root)
    except OSError:
        return False
    for entry in entries:
        path = os.path.join(root, entry)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except (OSError, RecursionError):
            pass
    try:
        return not os.listdir(root)
    except OSError:
        return False


@contextlib.contextmanager
def _deep_recursion() -> Iterator[None]:
    """The zygote's own recursion limit lifted while it removes a program's deep tree (the
    runners' limit is the program's, set in the zygote and inherited)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000_000)
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def _reset(root: str, plan: confine.Plan, proto_in: int) -> None:
    """Before each fork, undo what a dead runner may have left that would stop the next one
    from starting: the temporary root's owner and mode, and the job pipe's blocking mode
    (a runner shares that pipe's open file description with the zygote)."""
    os.chmod(root, 0o700)
    if plan.user is not None:
        os.chown(root, *plan.user)
    os.set_blocking(proto_in, True)


def main() -> None:
    """The zygote: move the protocol pipes aside, read the limits, confine, fork runners."""
    confine.die_with_parent()
    proto_in, proto_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    os.close(null)
    sys.stdin = open(os.devnull)  # noqa: SIM115 - lives as long as the worker
    sys.stdout = sys.__stdout__ = open(os.devnull, "w")  # noqa: SIM115
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when workers stop
    limits = _receive(proto_in)
    if limits is None:
        return
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else os.environ.get("TMPDIR", "/tmp")
    root = os.path.realpath(os.path.join(base, f"execbench-sandbox-{os.getpid()}"))
    os.makedirs(root, mode=0o700, exist_ok=True)
    os.chdir(root)
    os.environ["TMPDIR"] = os.environ["HOME"] = root
    for name in PRELOAD:
        __import__(name)
    isolated = confine.isolate_network()
    _set_limits(limits)
    plan = confine.probe(root)
    programs: OrderedDict = OrderedDict()
    arguments: OrderedDict = OrderedDict()
    _send(proto_out, {"kind": "hello", "pid": os.getpid(), "network_isolated": isolated,
                      "layers": plan.layers(isolated), "warnings": plan.warnings})
    try:
        while True:
            gc.collect()
            gc.freeze()  # keep the runner's collector off the zygote's objects
            _reset(root, plan, proto_in)
            pid = os.fork()
            if pid == 0:
                _run_runner(plan, proto_in, proto_out, limits, root, programs, arguments)
            _, status = os.waitpid(pid, 0)
            if os.WIFEXITED(status) and os.WEXITSTATUS(status) in (EXIT_PARENT_GONE,
                                                                   EXIT_UNCONFINED):
                return
            _send(proto_out, {"kind": "died", "pid": pid, **_describe_death(status)})
            with _deep_recursion():
                _wipe(root)  # what the runner left is no business of the next one
    finally:
        with _deep_recursion():
            _wipe(root)
        with contextlib.suppress(OSError):
            os.rmdir(root)


if __name__ == "__main__":
    main()
