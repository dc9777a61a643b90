"""A sandbox worker: ``python -m execbench.sandbox.worker``, the zygote.

The zygote starts once, imports the tracer and the standard modules benchmark programs use,
sets the resource limits, moves into namespaces of its own where permitted (an empty
network, its own IPC, a private mount namespace with a size-bounded tmpfs as the temporary
root), probes which kernel layers the machine offers (``confine.probe``), and then, for
each *unit* the parent sends (a batch of jobs: calls of one program, or one candidate):

1. forks a fresh runner (``runner``) with two pipes of its own; the runner confines itself
   and says it is ready;
2. hands it the batch, then relays its answers to the parent, checking each frame: a
   ``result`` must name the next job's ``seq`` and be followed by exactly the payload it
   announced; anything else is a protocol violation that ends the unit;
3. enforces each job's wall-clock limit (from the previous answer) by killing the runner;
4. kills the runner once the batch is answered (or it recycles, or dies), reaps it, and
   only then wipes the temporary root and forks the next unit's runner.

So the parent-facing pipes are never in a process that runs program code, and no unit's
runner is alive, or its files present, when the next unit starts: what one unit leaves
behind (patched modules, threads, a process answering ahead on the pipe) dies with it.
The zygote never runs program code, so it holds no audit hook; a runner cannot signal it,
trace it or read its memory (seccomp, Landlock, another uid).

Parent -> zygote: a length-prefixed JSON message (``frames.pack``): once the limits and the
runners' seccomp filter (compiled by the parent: ``confine.seccomp_program``), then a
batch ``{"jobs": [...]}`` at a time (a candidate's with ``"wall"``, the seconds left to its
unit: ``pool.UnitTime``). Zygote -> parent, in frames (``frames``): ``hello``
(the layers), then per batch each job's ``result`` (``seq``, ``recycle``: why the runner
stopped after it, ``size``) and its payload chunks, or a ``died`` message for the job
whose run ended the runner (``status``, ``detail``); after a ``result`` with ``recycle``
or a ``died``, the jobs left of the batch are the parent's to send again.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import json
import math
import os
import resource
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from execbench.sandbox import confine, frames, hygiene, runner, tracer  # noqa: F401 - warm

_READY_SECONDS = 60.0
"""How long a new runner may take to confine itself and say it is ready."""
_STILLBORN = 3
"""Runners in a row that die before they are ready, after which the worker stops: one is
bad luck (memory), a string of them a machine that cannot start runners."""
_PAYLOAD_SECONDS = 5.0
"""How long past a job's deadline the rest of a result may take to arrive, once announced."""
TEMP_FILES = 4096
"""Files and folders the temporary root may hold at once (a tmpfs inode bound)."""


def temp_bytes(limits: dict[str, Any]) -> int:
    """The temporary root's size: room for a few files of the largest size a call may write."""
    return max(8 * int(limits["file_bytes"]), 64 * 2 ** 20)


class _Stop(Exception):
    """The worker must stop: the parent closed its pipe, or runners cannot start."""


@dataclass
class _Runner:
    """The zygote's handle on one runner: its pid, a pidfd where the kernel has them (which
    turns readable when it dies), and the zygote's ends of its two pipes."""

    pid: int
    jobs: int
    answers: frames.FrameReader
    pidfd: int | None
    status: int | None = None

    def end(self) -> int:
        """Kill and reap the runner; its wait status. Only after this may another start."""
        if self.status is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            self.status = os.waitpid(self.pid, 0)[1]
            for fd in (self.jobs, self.answers.fd, self.pidfd):  # once: their numbers are
                if fd is not None:                               # reused by the next runner
                    with contextlib.suppress(OSError):
                        os.close(fd)
        return self.status


def _fork(plan: confine.Plan, limits: dict[str, Any], snapshot: hygiene.Snapshot,
          keep_out: tuple[int, ...]) -> _Runner:
    """A new runner whose only descriptors besides the standard ones are its own pipes, at
    ``runner.JOBS_FD`` and ``runner.ANSWERS_FD``; ``keep_out`` (the parent's pipes) are
    closed in it before anything else happens there."""
    jobs_read, jobs_write = os.pipe()
    answers_read, answers_write = os.pipe()
    gc.collect()
    gc.freeze()  # keep the runner's collector off the zygote's objects
    pid = os.fork()
    if pid == 0:
        try:
            for fd in (*keep_out, jobs_write, answers_read):
                os.close(fd)
            above = runner.ANSWERS_FD + 1
            moved = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, above)
                     for fd in (jobs_read, answers_write)]
            os.close(jobs_read)
            os.close(answers_write)
            for fd, target in zip(moved, (runner.JOBS_FD, runner.ANSWERS_FD), strict=True):
                os.dup2(fd, target, inheritable=False)
                os.close(fd)
        except BaseException:  # noqa: BLE001 - a runner must never return into the zygote
            os._exit(1)
        runner.run(plan, limits, snapshot)
    os.close(jobs_read)
    os.close(answers_write)
    try:
        pidfd: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    watch = () if pidfd is None else (pidfd,)
    return _Runner(pid, jobs_write, frames.FrameReader(answers_read, watch), pidfd)


def _describe_death(status: int) -> dict[str, Any]:
    if os.WIFSIGNALED(status):
        sig = signal.Signals(os.WTERMSIG(status))
        if sig in (signal.SIGPROF, signal.SIGVTALRM, signal.SIGXCPU):
            return {"status": "timeout", "detail": tracer.CPU_LIMIT}
        return {"status": "crashed", "detail": f"killed by {sig.name}", "signal": sig.name}
    code = os.WEXITSTATUS(status)
    return {"status": "crashed", "detail": f"exited with code {code} before answering"}


class _Zygote:
    def __init__(self, proto_in: int, proto_out: int, limits: dict[str, Any],
                 plan: confine.Plan) -> None:
        self.proto_in = proto_in
        self.proto_out = proto_out
        self.limits = limits
        self.plan = plan
        self.wall = float(limits["wall_seconds"])
        self.child: _Runner | None = None
        self.snapshot = hygiene.Snapshot()
        """The process state runners start from, taken once: see ``Snapshot.refresh``."""

    def _start(self) -> _Runner:
        self.child = _fork(self.plan, self.limits, self.snapshot,
                           (self.proto_in, self.proto_out))
        return self.child

    def _handed(self, batch: bytes) -> _Runner:
        """The runner holding ``batch``, once it said it is ready (confined). The batch is
        written at once, before the runner is ready (it reads it only then), to save a
        round trip per unit. A runner that dies first, so before any program code ran, is
        replaced (``_STILLBORN`` tries), then the worker stops."""
        child = self.child or self._start()
        for _ in range(_STILLBORN):
            try:
                frames.write_all(child.jobs, batch)
                first = child.answers.next(time.monotonic() + _READY_SECONDS)
            except (OSError, TimeoutError, frames.Broken, frames.Interrupted):
                first = None
            if first is not None and first[0] == frames.JSON and first[1]["kind"] == "ready":
                child.answers.watch += (self.proto_in,)
                return child
            status = child.end()
            self._clean()
            if os.WIFEXITED(status) and os.WEXITSTATUS(status) == runner.EXIT_UNCONFINED:
                raise _Stop("a confinement layer failed in a runner")
            child = self._start()
        raise _Stop("runners die before they are ready")

    def serve(self) -> None:
        """Units, one after another, until the parent closes its pipe. The next runner is
        forked (and confines itself) while the parent decides the next batch."""
        while True:
            self._start()
            try:
                body = frames.receive_raw(self.proto_in)
                if body is None:
                    raise _Stop("the parent closed its pipe")
                self._unit(body)
            finally:
                if self.child is not None:
                    self.child.end()
                self._clean()

    def _unit(self, body: bytes) -> None:
        """Hand one batch to a fresh runner and relay its answers; see the module doc. Each
        call has the wall-clock limit; a batch that names its ``wall`` (a candidate's: what
        is left of its unit's time) has that too, for all its calls together."""
        batch = json.loads(body)
        seqs = [job.get("seq") for job in batch["jobs"]]
        whole = batch.get("wall")
        child = self._handed(len(body).to_bytes(4, "big") + body)
        end = math.inf if whole is None else time.monotonic() + whole
        for seq in seqs:
            deadline = min(end, time.monotonic() + self.wall)
            try:
                outcome = self._relay(child, seq, deadline)
            except TimeoutError:
                child.end()
                detail = f"wall-clock limit {self.wall:g}s" if deadline < end else \
                    "the candidate's wall-clock time, for all its calls together, is spent"
                frames.send(self.proto_out, {"kind": "died", "status": "timeout",
                                             "detail": detail})
                return
            except frames.Interrupted as interrupted:
                if self.proto_in in interrupted.ready:
                    raise _Stop("the parent closed its pipe") from None
                self._died(child)
                return
            except frames.Broken as broken:
                child.end()
                frames.send(self.proto_out, {"kind": "died", "status": "crashed",
                                             "detail": f"protocol violation: {broken}"})
                return
            if outcome is None:
                self._died(child)
                return
            if outcome:  # the runner recycles: the rest of the batch is for a fresh one
                return

    def _relay(self, child: _Runner, seq: Any, deadline: float) -> bool | None:
        """Relay one job's result and payload; whether the runner recycles after it, or None
        when the runner's pipe ended first."""
        got = child.answers.next(deadline)
        if got is None:
            return None
        tag, message = got
        size = message.get("size") if tag == frames.JSON else None
        recycle = message.get("recycle") if tag == frames.JSON else None
        if tag != frames.JSON or message["kind"] != "result" or message.get("seq") != seq \
                or type(size) is not int or not 0 <= size <= frames.MAX_RESULT_BYTES \
                or not (recycle is None or isinstance(recycle, str)):
            raise frames.Broken("not the result of the job in hand")
        recycle = None if recycle is None else recycle[:200]
        frames.send(self.proto_out, {"kind": "result", "seq": seq, "recycle": recycle,
                                     "size": size})
        # The payload follows at once: a few seconds past the job's deadline, counted once,
        # never renewed per chunk (a runner dripping chunks would otherwise never time out).
        finish = max(deadline, time.monotonic() + _PAYLOAD_SECONDS)
        while size > 0:
            got = child.answers.next(finish, grace=0.0)
            if got is None:
                return None
            if got[0] != frames.CHUNK or not got[1] or len(got[1]) > size:
                raise frames.Broken("a result's payload is not as announced")
            frames.write_all(self.proto_out, frames.frame(frames.CHUNK, got[1]))
            size -= len(got[1])
        return recycle is not None

    def _died(self, child: _Runner) -> None:
        """The runner ended before answering the job in hand: say how."""
        frames.send(self.proto_out, {"kind": "died", **_describe_death(child.end())})

    def _clean(self) -> None:
        """What the last runner left is no business of the next one."""
        with _deep_recursion():
            hygiene.wipe(self.plan.root)
        os.chmod(self.plan.root, 0o700)
        if self.plan.user is not None:
            os.chown(self.plan.root, *self.plan.user)


def _set_limits(limits: dict[str, Any]) -> None:
    """Resource limits, set once in the zygote; runners inherit them."""
    memory = int(limits["memory_mb"]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    files = int(limits["file_bytes"])
    resource.setrlimit(resource.RLIMIT_FSIZE, (files, files))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write then fails with EFBIG
    sys.setrecursionlimit(int(limits["recursion_limit"]))


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


def _isolate(root: str, limits: dict[str, Any]) -> dict[str, Any]:
    """The zygote's namespaces, each where the machine allows it."""
    size = temp_bytes(limits)
    bounded = confine.bound_root(root, size, TEMP_FILES)
    return {"network": confine.isolate_network(), "ipc": confine.isolate_ipc(),
            "temp_bytes": size if bounded else 0, "temp_files": TEMP_FILES if bounded else 0}


def main() -> None:
    """The zygote: move the protocol pipes aside, read the limits, isolate, serve units."""
    confine.die_with_parent()
    proto_in, proto_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    os.close(null)
    sys.stdin = open(os.devnull)  # noqa: SIM115 - lives as long as the worker
    sys.stdout = sys.__stdout__ = open(os.devnull, "w")  # noqa: SIM115
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when workers stop
    setup = frames.receive(proto_in)
    if setup is None:
        return
    limits = setup["limits"]
    seccomp = (bytes.fromhex(setup["seccomp"]), setup["seccomp_error"])
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else os.environ.get("TMPDIR", "/tmp")
    # A fresh name, made by this process alone: a folder left by a zygote that was killed,
    # or one planted in the shared base under a name that can be guessed, is never reused.
    root = tempfile.mkdtemp(prefix=f"execbench-sandbox-{os.getpid()}-",
                            dir=os.path.realpath(base))
    isolated = _isolate(root, limits)
    os.chdir(root)
    os.environ["TMPDIR"] = os.environ["HOME"] = root
    for name in hygiene.PRELOAD:
        __import__(name)
    _set_limits(limits)
    plan = confine.probe(root, seccomp)
    for key, value in isolated.items():
        setattr(plan, key, value)
    if not plan.temp_bytes:
        plan.warnings.append("no private tmpfs could be mounted (needs root or CAP_SYS_ADMIN): "
                             "the temporary root is not size-bounded")
    confine.enclose(plan)
    frames.send(proto_out, {"kind": "hello", "pid": os.getpid(), "root": root,
                            "network_isolated": plan.network, "layers": plan.layers(),
                            "warnings": plan.warnings})
    try:
        _Zygote(proto_in, proto_out, limits, plan).serve()
    except (_Stop, OSError):
        pass
    finally:
        with _deep_recursion():
            hygiene.wipe(root)
        if plan.temp_bytes:
            confine.release_root(root)
        with contextlib.suppress(OSError):
            os.rmdir(root)


if __name__ == "__main__":
    main()
