"""A sandbox worker: ``python -m execbench.sandbox.worker``, the zygote.

The zygote starts once, imports the tracer and the standard modules benchmark programs use,
sets the resource limits, moves into namespaces of its own where permitted (an empty
network, its own IPC, a private mount namespace with a size-bounded tmpfs as the temporary
root), probes which kernel layers the machine offers (``confine.probe``), and then, for
each *unit* the parent sends (a batch of jobs: calls of one program, or one candidate):

1. reads and parses the batch, then forks a fresh runner (``runner``), which finds the batch
   in the memory it inherits and has one pipe of its own, for its answers; the runner
   confines itself and says it is ready;
2. relays its answers to the parent, checking each frame: a ``result`` must name the next
   job's ``seq`` and be followed by exactly the payload it announced; anything else is a
   protocol violation that ends the unit;
3. enforces each job's wall-clock limit (from the previous answer) by killing the runner;
4. kills the runner once the batch is answered (or it recycles, or dies), reaps it, and
   only then wipes the temporary root and reads the next unit's batch.

So the parent-facing pipes are never in a process that runs program code, and no unit's
runner is alive, or its files present, when the next unit starts: what one unit leaves
behind (patched modules, threads, a process answering ahead on the pipe) dies with it.
The zygote never runs program code, so it holds no audit hook. It confines itself once
(``confine.enclose``: the long Landlock layer, the unprivileged user, the worker's part of
the seccomp filter), and each runner adds only the short layers that name its own pid
(``confine.apply``); a runner cannot signal the zygote, trace it or read its memory
(seccomp, Landlock, and the zygote is undumpable).

Parent -> zygote: a length-prefixed JSON message (``frames.pack``): once the limits and the
seccomp filter's two parts (compiled by the parent: ``confine.seccomp_program``), then a
batch ``{"jobs": [...]}`` at a time (a candidate's with ``"wall"``, the seconds left to its
unit: ``pool.UnitTime``). Zygote -> parent, in frames (``frames``): ``hello``
(the layers), then per batch each job's ``result`` (``seq``, ``recycle``: why the runner
stopped after it, ``size``) and its payload chunks, or a ``died`` message for the job
whose run ended the runner (``status``, ``detail``); after a ``result`` with ``recycle``
or a ``died``, the jobs left of the batch are the parent's to send again. Where the steps
are measured (the setup's ``phases``), results carry the runner's figures and a
``phases`` message the zygote's, after each unit (``sandbox.phases``).
"""

from __future__ import annotations

import contextlib
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

from execbench.sandbox import (  # noqa: F401 - warm
    confine,
    frames,
    hygiene,
    immortal,
    phases,
    runner,
    syscall_filter,
    tracer,
)

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
    turns readable when it dies), and the zygote's end of its pipe."""

    pid: int
    answers: frames.FrameReader
    pidfd: int | None
    status: int | None = None
    usage: tuple[float, int] = (0.0, 0)
    """Its CPU seconds and minor faults, once reaped."""

    def end(self) -> int:
        """Kill and reap the runner; its wait status. Only after this may another start."""
        if self.status is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            _, self.status, rusage = os.wait4(self.pid, 0)
            self.usage = phases.of_child(rusage)
            for fd in (self.answers.fd, self.pidfd):  # once: their numbers are reused
                if fd is not None:                       # by the next runner
                    with contextlib.suppress(OSError):
                        os.close(fd)
        return self.status


def _fork(plan: confine.Plan, limits: dict[str, Any], snapshot: hygiene.Snapshot,
          keep_out: tuple[int, ...], batch: tuple[str, ...], measured: bool = False) -> _Runner:
    """A new runner for ``batch`` (read here, before the fork: the runner finds its jobs'
    texts in the memory it inherits, and parses each as it comes to it; ``_batch``), whose
    only descriptor besides the standard ones is its answers' pipe, at
    ``runner.ANSWERS_FD``; ``keep_out`` (the parent's pipes) are closed in it before
    anything else happens there."""
    answers_read, answers_write = os.pipe()
    serving = runner.Runner(limits, plan.root, snapshot, os.path.join(plan.root, runner.WORKDIR))
    layer = confine.next_layer(plan)
    gc.collect()
    gc.freeze()  # keep the runner's collector off the zygote's objects
    pid = os.fork()
    if pid == 0:
        try:
            for fd in (*keep_out, answers_read):
                os.close(fd)
            if answers_write != runner.ANSWERS_FD:
                os.dup2(answers_write, runner.ANSWERS_FD, inheritable=False)
                os.close(answers_write)
        except BaseException:  # noqa: BLE001 - a runner must never return into the zygote
            os._exit(1)
        runner.run(plan, serving, batch, measured, layer)
    os.close(answers_write)
    if layer is not None:
        os.close(layer)
    try:
        pidfd: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    watch = () if pidfd is None else (pidfd,)
    return _Runner(pid, frames.FrameReader(answers_read, watch), pidfd)


def _batch(body: bytes | None) -> tuple[tuple[str, ...], list[Any], float | None]:
    """A batch from the parent as its runner gets it: each job as a JSON text of its own
    (immutable, so one call cannot rewrite the later calls of its batch, and untracked by
    the collector, so what a program sees of it does not depend on how many calls came
    with it), the jobs' ``seq`` in order, and the unit's ``wall`` if it has one. Nothing
    else of the message is left when the runner is forked."""
    if body is None:
        raise _Stop("the parent closed its pipe")
    batch = json.loads(body)
    jobs = batch["jobs"]
    return (tuple(map(json.dumps, jobs)), [job.get("seq") for job in jobs],
            batch.get("wall"))


_BARE_FORKS = 100


def _bare_fork() -> list[float]:
    """The CPU seconds and minor faults of one fork of this process whose child does
    nothing and exits, this process's share and the child's together: the floor under a
    unit's own cost (``phases``)."""
    gc.collect()
    gc.freeze()
    start = phases.usage()
    children = [0.0, 0]
    for _ in range(_BARE_FORKS):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        cpu, faults = phases.of_child(os.wait4(pid, 0)[2])
        children[0] += cpu
        children[1] += faults
    end = phases.usage()
    return [(end[0] - start[0] + children[0]) / _BARE_FORKS,
            round((end[1] - start[1] + children[1]) / _BARE_FORKS)]


def _describe_death(status: int) -> dict[str, Any]:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number in (signal.SIGPROF, signal.SIGVTALRM, signal.SIGXCPU):
            return {"status": "timeout", "detail": tracer.CPU_LIMIT}
        try:
            name = signal.Signals(number).name
        except ValueError:  # a real-time signal has no name
            name = f"signal {number}"
        return {"status": "crashed", "detail": f"killed by {name}", "signal": name}
    code = os.WEXITSTATUS(status)
    return {"status": "crashed", "detail": f"exited with code {code} before answering"}


class _Zygote:
    def __init__(self, proto_in: int, proto_out: int, limits: dict[str, Any],
                 plan: confine.Plan, measured: bool = False) -> None:
        self.proto_in = proto_in
        self.proto_out = proto_out
        self.limits = limits
        self.plan = plan
        self.wall = float(limits["wall_seconds"])
        self.child: _Runner | None = None
        runner.warm_up(limits, plan.root)
        self._clean()
        self.snapshot = hygiene.Snapshot()
        """The process state runners start from, taken once: see ``Snapshot.refresh``."""
        immortal.make_immortal()
        self.clock = phases.Clock(phases.usage()) if measured else None
        """Set when the steps of each unit are measured (``phases``)."""
        self.reported: tuple[float, float] = 0.0, 0
        """The CPU seconds and faults the current runner reported of itself."""
        self.bare_fork = _bare_fork() if measured else None
        """A fork of this zygote with nothing in the child, measured once; sent with the
        first unit's figures."""

    def _start(self, batch: tuple[str, ...]) -> _Runner:
        if self.clock is not None:
            self.clock.mark("relay")
        self.reported = 0.0, 0
        self.child = _fork(self.plan, self.limits, self.snapshot,
                           (self.proto_in, self.proto_out), batch, self.clock is not None)
        if self.clock is not None:
            self.clock.mark("fork")
        return self.child

    def _handed(self, batch: tuple[str, ...]) -> _Runner:
        """A runner holding ``batch``, once it said it is ready (confined). A runner that
        dies first, so before any program code ran, is replaced (``_STILLBORN`` tries),
        then the worker stops."""
        for _ in range(_STILLBORN):
            child = self._start(batch)
            try:
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
        raise _Stop("runners die before they are ready")

    def serve(self) -> None:
        """Units, one after another, until the parent closes its pipe. A unit's runner is
        forked once its batch is read and parsed, so that reading and parsing happen while
        no runner shares this process's pages (each page written while one does is copied:
        a fault in this process)."""
        while True:
            batch = _batch(frames.receive_raw(self.proto_in))
            try:
                self._unit(*batch)
            finally:
                if self.clock is not None:
                    self.clock.mark("relay")
                if self.child is not None:
                    self.child.end()
                    self._account(self.child)
                    self.child = None
                self._clean()
                if self.clock is not None:
                    self.clock.mark("wipe")
                    self._send_measured()

    def _unit(self, jobs: tuple[str, ...], seqs: list[Any], whole: float | None) -> None:
        """Hand one batch to a fresh runner and relay its answers; see the module doc. Each
        call has the wall-clock limit; a batch that names its ``wall`` (a candidate's: what
        is left of its unit's time) has that too, for all its calls together."""
        child = self._handed(jobs)
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

    def _account(self, child: _Runner) -> None:
        """The reaping of ``child`` is measured (``reap``), and its cost beyond what it
        reported of itself (``exit``)."""
        if self.clock is None:
            return
        self.clock.mark("reap")
        cpu, faults = self.reported
        phases.add(self.clock.spent, "exit", max(child.usage[0] - cpu, 0.0),
                   max(child.usage[1] - faults, 0))

    def _measured(self, message: dict[str, Any]) -> dict[str, Any]:
        """What the relayed ``result`` carries of the steps measured: the runner's own
        figures, checked."""
        if self.clock is None:
            return {}
        spent = message.get("phases")
        if not phases.valid(spent):
            raise frames.Broken("a result's measured steps are not as announced")
        cpu, faults = phases.total(spent)
        self.reported = self.reported[0] + cpu, self.reported[1] + faults
        return {"phases": spent}

    def _send_measured(self) -> None:
        """The zygote's own figures for the unit just ended (and, the first time, its bare
        fork), in a message of their own, sent before the next runner is forked: a runner
        inherits this process's memory, and must find no figure of another unit there."""
        assert self.clock is not None
        message: dict[str, Any] = {"kind": "phases", "phases": self.clock.take()}
        if self.bare_fork is not None:
            message["bare_fork"], self.bare_fork = self.bare_fork, None
        frames.send(self.proto_out, message)

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
                                     "size": size, **self._measured(message)})
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
        """What the last runner left is no business of the next one: a root that cannot be
        emptied ends the worker (the parent starts another, with a root of its own)."""
        with _deep_recursion():
            emptied = hygiene.wipe(self.plan.root)
        if not emptied:
            raise _Stop("the temporary root could not be emptied")
        # The next runner's folder, made now (it would cost the runner more), by this
        # process, which is the runners' user.
        os.mkdir(os.path.join(self.plan.root, runner.WORKDIR), 0o700)


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
    measured = bool(setup.get("phases"))
    programs = setup["seccomp"]
    seccomp = (None if programs is None else syscall_filter.Programs(
        worker=bytes.fromhex(programs["worker"]), runner=bytes.fromhex(programs["runner"])),
        setup["seccomp_error"])
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
    if plan.user is not None:
        os.chown(root, *plan.user)
    confine.enclose(plan)
    frames.send(proto_out, {"kind": "hello", "pid": os.getpid(), "root": root,
                            "network_isolated": plan.network, "layers": plan.layers(),
                            "warnings": plan.warnings})
    try:
        _Zygote(proto_in, proto_out, limits, plan, measured).serve()
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
