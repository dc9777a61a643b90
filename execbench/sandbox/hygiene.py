"""What a call must leave as it found it: the runner's after-call check, and the wipe of
the temporary root.

A runner serves one unit (one program's calls, or one candidate) and then dies, so what a
unit leaves behind never reaches another unit. Within a unit, calls of the same program
share the runner; this check keeps their results independent of how the pool happened to
batch them (a call that changed the process makes its runner recycle, and the unit's next
call goes to a fresh one), so suites stay deterministic.
"""

from __future__ import annotations

import os
import signal
import sys
from operator import is_

PRELOAD = (
    "re", "math", "string", "collections", "itertools", "functools", "heapq", "bisect", "copy",
    "json", "random", "typing", "operator", "statistics", "datetime", "hashlib", "fractions",
    "decimal", "textwrap", "unicodedata", "array", "enum", "dataclasses", "numbers",
    "calendar", "cmath", "difflib", "abc", "contextlib", "sys", "os",
)
"""Standard modules the zygote imports once, so that runners find them in sys.modules;
a program importing anything else makes its runner recycle after the call."""
WATCHED_SIGNALS = (signal.SIGPROF, signal.SIGVTALRM, signal.SIGALRM, signal.SIGTERM,
                   signal.SIGINT, signal.SIGXFSZ, signal.SIGCHLD, signal.SIGPIPE)
RUNNER_MODULES = ("__main__", "execbench.registry", "execbench.sandbox.tracer",
                  "execbench.sandbox.recording", "execbench.sandbox.monitor",
                  "execbench.sandbox.properties", "execbench.sandbox.opcodes",
                  "execbench.sandbox.script", "execbench.values", "execbench.values.alike",
                  "execbench.values.decoding", "execbench.values.encoding",
                  "execbench.values.equality", "execbench.values.errors",
                  "execbench.values.literals", "execbench.values.shape",
                  "execbench.values.texts", "execbench.sandbox.confine",
                  "execbench.sandbox.landlock", "execbench.sandbox.syscall_filter",
                  "execbench.sandbox.libc", "execbench.sandbox.frames",
                  "execbench.sandbox.hygiene", "execbench.sandbox.runner")
"""Modules of the runner itself, checked whole after every call, whatever the program
imports: a program reaches them through ``__import__`` or ``sys.modules`` as easily as
through ``import``."""
RUNNER_CALLS = {
    "os": ("write", "read", "listdir", "lstat", "chdir", "mkdir", "umask", "getpid",
           "path", "environ", "_exit", "open", "dup", "dup2", "close", "unlink"),
    "io": ("StringIO",),
    "sys": ("settrace", "setrecursionlimit", "getrecursionlimit", "modules"),
    "signal": ("setitimer", "getsignal", "pthread_sigmask", "signal"),
    "time": ("process_time",),
    "json": ("dumps", "loads", "JSONEncoder"),
    "json.encoder": ("c_make_encoder", "encode_basestring", "encode_basestring_ascii"),
    "json.decoder": ("scanstring", "JSONDecoder"),
    "struct": ("pack", "unpack"),
    "random": ("seed",),
    "decimal": ("setcontext", "Context"),
}
"""The standard-library functions the runner calls to run, record and answer a call, and
to feed a stdin program its text (``tracer._stdin_file``), checked one by one after every
call (a whole-dict check of ``os`` and ``posix`` alone would cost more than tracing a
typical call)."""


class Snapshot:
    """Process state a call must leave as it found it, or the runner is recycled."""

    def __init__(self) -> None:
        import builtins

        self.builtins = _Frozen(builtins.__dict__)
        self.modules = set(sys.modules)
        self.module_dicts: dict[str, _Frozen] = {}
        self.own = [(name, _Frozen(vars(sys.modules[name]))) for name in RUNNER_MODULES
                    if name in sys.modules]
        self.calls = [(name, names, tuple(map(vars(sys.modules[name]).get, names)))
                      for name, names in RUNNER_CALLS.items() if name in sys.modules]
        self.streams = (sys.stdout, sys.stderr)
        self.mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())
        self.environ = dict(os.environ._data)  # bytes to bytes: compared in C
        self.signals = [signal.getsignal(s) for s in WATCHED_SIGNALS]
        self.recursion = sys.getrecursionlimit()
        self.hooks = _hooks()
        self.fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None

    def refresh(self) -> None:
        """Retake what differs between the zygote, where the snapshot is made once, and a
        runner forked from it (its modules, signal handlers and descriptors): the rest is the
        zygote's state as every runner inherits it, so a runner need not walk it again
        (a copy-on-write fault per page it would touch)."""
        self.modules = set(sys.modules)  # the zygote may have imported more since
        self.signals = [signal.getsignal(s) for s in WATCHED_SIGNALS]
        self.fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None

    def watch(self, modules: frozenset[str]) -> None:
        """Take the preloaded modules a program imports into the snapshot, before its first
        call runs. Only those are checked after its calls (as ever), and freezing them all
        up front would cost a fresh runner a copy-on-write fault on every page they touch:
        most of what a runner per unit costs beyond its fork."""
        for name in modules:
            if name not in self.module_dicts and name in PRELOAD and name in sys.modules:
                self.module_dicts[name] = _Frozen(vars(sys.modules[name]))

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
        if [signal.getsignal(s) for s in WATCHED_SIGNALS] != self.signals:
            return "signal handlers changed"
        if signal.pthread_sigmask(signal.SIG_BLOCK, ()) != self.mask:
            return "signal mask changed"
        if _threads() > 1:
            return "threads left running"
        if sys.getrecursionlimit() != self.recursion:
            return "recursion limit changed"
        if _hooks() != self.hooks:
            return "a tracer, profiler or monitoring tool left installed"
        if self.fds is not None and len(os.listdir("/proc/self/fd")) != self.fds:
            return "file descriptors left open"
        return None


def _hooks() -> tuple[object, ...]:
    """What watches the interpreter: the trace and profile functions and, since Python
    3.12, the ``sys.monitoring`` tools in use. The tracer leaves none behind; a program
    that does could count steps, or change events, in the unit's later calls."""
    monitoring = getattr(sys, "monitoring", None)
    tools = tuple(monitoring.get_tool(tool) for tool in range(6)) if monitoring else ()
    return (sys.gettrace(), sys.getprofile(), *tools)


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




def wipe(root: str) -> bool:
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
