"""The sandbox pool: the one way execbench runs a program.

``Sandbox`` keeps ``workers`` warm worker processes (``execbench.sandbox.worker``), each fed
by one thread of this process. A job is a program, an entry point and an argument-list
text; the result is a ``Trace``. A worker that dies is replaced and its job is reported as
``crashed``; nothing a program does can take this process down.

What the sandbox protects against, and what it does not, is written down in the README
("Sandbox"); the adversarial tests in ``tests/sandbox`` exercise each point.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import queue
import secrets
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from typing import Any

import execbench
from execbench.sandbox.confine import scrubbed_environment
from execbench.sandbox.trace import STATUSES, Trace, TraceOptions
from execbench.sandbox.worker import CHUNK, FRAME_BYTES, JSON

_PROTOCOL_SECONDS = 60.0
"""How long the parent waits for a frame the worker owes it (a start-up, the rest of a
frame, the report of a runner it killed) before it gives the worker up as broken. The
parent never blocks on a worker without a deadline."""
_CHUNK_GRACE_SECONDS = 5.0
MAX_RESULT_BYTES = 256 * 1024 * 1024
"""The largest result the parent accepts (results of tens of MB come back whole); a runner
announcing more is broken, so a program cannot make the parent buffer without end."""
_STILLBORN = 3
"""Runner deaths (each reported by the zygote) in a row before one says it is ready, after
which the worker is given up: a dead runner's one death is normal, a string of them is not."""
BATCH = 8
"""Calls of one program a worker takes from the queue at once and sends in one message:
enough to share the thread hand-off and pipe costs, few enough that the pool's other
workers still share the tail of a run."""
_log = logging.getLogger("execbench.sandbox")
_warned: set[str] = set()
_warned_lock = threading.Lock()


def _warn_once(message: str) -> None:
    """A missing confinement layer is said once per process, not once per worker."""
    with _warned_lock:
        if message in _warned:
            return
        _warned.add(message)
    _log.warning("execbench sandbox: %s", message)


def worker_environment() -> dict[str, str]:
    """What a worker starts with: the allow-list (no keys or tokens), reproducible hashing,
    and execbench importable without the current folder on ``sys.path`` (``-P``)."""
    package_parent = os.path.dirname(os.path.dirname(os.path.realpath(execbench.__file__)))
    env = scrubbed_environment(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    return {**env, "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONSAFEPATH": "1"}


@dataclass(frozen=True)
class Limits:
    """Per-call resource limits. CPU time, not wall time, decides verdicts on a busy machine."""

    cpu_seconds: float = 2.0
    wall_seconds: float = 10.0
    memory_mb: int = 1024
    stdout_bytes: int = 1_000_000
    file_bytes: int = 10_000_000
    recursion_limit: int = 1_000


@dataclass(frozen=True)
class Job:
    code: str
    entry_point: str
    args: str
    options: TraceOptions = field(default_factory=TraceOptions)
    cpu_seconds: float | None = None
    """A tighter CPU budget for this call than the sandbox's (e.g. for input search)."""


@functools.lru_cache(maxsize=64)
def _options(options: TraceOptions) -> dict[str, Any]:
    """``asdict`` once per distinct options, not once per job."""
    return asdict(options)


class _Broken(Exception):
    """The worker said something the protocol does not allow: it is replaced."""


class _WorkerProcess:
    """One worker (zygote + its current runner) and the pipes to it.

    Everything read from the worker is untrusted (program code runs in the runner and can
    write to the pipe): any malformed frame, or a worker that owes a frame and stays silent
    past a deadline, makes ``call`` return None and the worker is replaced.
    """

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "execbench.sandbox.worker"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, env=worker_environment(), close_fds=True, bufsize=0)
        self.out = self.proc.stdout.fileno()
        self.into = self.proc.stdin.fileno()
        os.set_blocking(self.into, False)
        self.buffer = bytearray()
        self.held: dict[str, Any] | None = None
        self.runner: int | None = None
        self.awaiting_runner = True
        self.busy = False
        self.seq = ""
        try:
            self._send(asdict(limits))
            hello = self._message(time.monotonic() + _PROTOCOL_SECONDS)
        except (OSError, ValueError, _Broken):
            hello = None
        if hello is None or hello.get("kind") != "hello":
            self.close()
            raise RuntimeError("sandbox worker failed to start")
        self.info = hello
        for warning in hello.get("warnings") or ():
            _warn_once(str(warning))

    def _send(self, message: dict[str, Any]) -> None:
        """Write one job; the runner may not be reading (a program can stall), so: a deadline."""
        data = json.dumps(message).encode()
        view = memoryview(struct.pack(">I", len(data)) + data)
        deadline = time.monotonic() + _PROTOCOL_SECONDS
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([], [self.into], [], remaining)[1]:
                raise TimeoutError
            try:
                view = view[os.write(self.into, view):]
            except BlockingIOError:
                continue

    def _read(self, size: int, deadline: float) -> bytes | None:
        while len(self.buffer) < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.out], [], [], remaining)[0]:
                raise TimeoutError
            chunk = os.read(self.out, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    def _next(self, deadline: float) -> tuple[bytes, Any] | None:
        """The next frame as (tag, message or chunk bytes); None when the worker is gone."""
        if self.held is not None:
            message, self.held = self.held, None
            return JSON, message
        header = self._read(4, deadline)
        if header is None:
            return None
        size = struct.unpack(">I", header)[0]
        if not 1 <= size <= FRAME_BYTES:
            raise _Broken(f"frame of {size} bytes")
        body = self._read(size, time.monotonic() + _PROTOCOL_SECONDS)
        if body is None:
            return None
        tag, body = body[:1], body[1:]
        if tag == CHUNK:
            return CHUNK, body
        if tag != JSON:
            raise _Broken(f"unknown frame tag {tag!r}")
        try:
            message = json.loads(body)
        except RecursionError:  # deeply nested JSON a program wrote: not a message
            raise _Broken("frame nested too deep") from None
        if not isinstance(message, dict) or not isinstance(message.get("kind"), str):
            raise _Broken("frame is not a message")
        return JSON, message

    def _message(self, deadline: float) -> dict[str, Any] | None:
        """The next message, skipping chunks left from a payload that was cut short."""
        while True:
            frame = self._next(deadline)
            if frame is None or frame[0] == JSON:
                return None if frame is None else frame[1]

    def _payload(self, result: dict[str, Any], deadline: float) -> bytes | None:
        """The chunks a ``result`` announced. None if a message came first (the runner died
        mid-answer): that message is held back for the caller to read next. The chunks
        follow at once, so a few seconds past ``deadline`` are ample."""
        size = result.get("size")
        if not isinstance(size, int) or size < 0:
            raise _Broken("result without a size")
        if size > MAX_RESULT_BYTES:
            raise _Broken(f"result of {size} bytes announced")
        parts: list[bytes] = []
        deadline = max(deadline, time.monotonic() + _CHUNK_GRACE_SECONDS)
        while size > 0:
            frame = self._next(deadline)
            if frame is None:
                raise _Broken("worker gone mid-answer")
            if frame[0] == JSON:
                self.held = frame[1]
                return None
            parts.append(frame[1])
            size -= len(frame[1])
        return b"".join(parts)

    def _wait_runner(self) -> bool:
        """Consume messages up to the next runner's ``ready``; False if the worker is gone.
        Bounded: within ``_PROTOCOL_SECONDS`` and ``_STILLBORN`` runner deaths, so a worker
        whose runners cannot start is given up, never waited on forever."""
        deadline = time.monotonic() + _PROTOCOL_SECONDS
        deaths = 0
        while self.awaiting_runner:
            message = self._message(deadline)
            if message is None:
                return False
            if message["kind"] == "ready":
                self.runner = self._child(message.get("pid"))
                self.awaiting_runner = False
            elif message["kind"] == "result":
                self._payload(message, time.monotonic())  # a stale result, dropped
            elif message["kind"] == "died":
                deaths += 1
                if deaths > _STILLBORN:
                    raise _Broken("runners die before they start")
        return True

    def _child(self, pid: Any) -> int:
        """A runner pid from a ``ready`` frame, checked to be the zygote's child, since the
        parent will SIGKILL it at the wall limit and a program could name another process."""
        if not isinstance(pid, int) or pid <= 0:
            raise _Broken("ready frame without a pid")
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                parent = int(stat.read().rpartition(b")")[2].split()[1])
        except OSError:
            return pid  # gone already (its death is reported next), or no /proc here
        if parent != self.proc.pid:
            raise _Broken(f"process {pid} is not a runner of this worker")
        return pid

    def run(self, jobs: list[dict[str, Any]]) -> tuple[list[Trace], bool]:
        """Run ``jobs`` in order. Returns the traces of the jobs that finished, in order,
        and whether the worker broke (died, or said something the protocol does not allow):
        then the next job went down with it and the worker must be replaced.

        Consecutive calls of the same program go to the runner as one batch (one message,
        one token). A batch never mixes programs: a runner holds its whole batch in memory
        where the running program can read it, so a batch of other programs' calls would
        let a program write results ahead for them; for calls of its own it can forge its
        trace in any case (the README says so). Frames are matched to jobs: a result echoes
        its job's ``seq`` (the batch's random token and the job's place in it), and a death
        names the runner's pid, so a frame left over from an earlier job (a runner that
        answered just as the parent killed it) can never be taken for another's.
        """
        done: list[Trace] = []
        try:
            while len(done) < len(jobs):
                if not self._wait_runner():
                    return done, True
                start = end = len(done)
                while end < len(jobs) and jobs[end]["code"] == jobs[start]["code"]:
                    end += 1
                token = secrets.token_hex(8)
                batch = [{**job, "seq": f"{token}.{i}"} for i, job in enumerate(jobs[start:end])]
                if not self._run_batch(batch, done):
                    return done, True
        except (OSError, ValueError, RecursionError, _Broken):
            return done, True
        return done, False

    def _run_batch(self, batch: list[dict[str, Any]], done: list[Trace]) -> bool:
        """Send one batch to the current runner and collect its answers into ``done`` until
        the batch is answered or the runner ends (recycled, crashed, killed); the jobs left
        are then for the next runner. False when the worker is gone.

        Each job has ``wall_seconds`` from the moment the previous answer arrived. When the
        parent kills a runner for overrunning, the death belongs to that job, unless its
        answer came in just as the kill landed: then the kill hit the job after it, which
        is not charged with a timeout but sent again to a fresh runner.
        """
        self.busy = True
        self._send({"jobs": batch})
        runner = self.runner
        wall = self.limits.wall_seconds
        deadline = time.monotonic() + wall
        index = 0
        killed_at: int | None = None
        recycled = False
        while index < len(batch):
            try:
                message = self._message(deadline)
            except TimeoutError:
                if killed_at is not None:
                    return False  # the zygote never reported the kill: give it up
                with contextlib.suppress(ProcessLookupError):
                    os.kill(runner, signal.SIGKILL)
                killed_at = index
                deadline = time.monotonic() + _PROTOCOL_SECONDS
                continue
            if message is None:
                return False
            kind = message["kind"]
            if kind == "result":
                payload = self._payload(message, deadline)
                if payload is None or message.get("seq") != batch[index]["seq"]:
                    continue
                done.append(Trace.from_payload(payload))
                index += 1
                if killed_at is None:
                    deadline = time.monotonic() + wall
                if message.get("recycle") is not None:
                    recycled = True
                    break  # this runner ends; the rest of the batch goes to the next one
            elif kind == "died":
                if message.get("pid") != runner:
                    continue
                if killed_at is None:
                    status = message.get("status")
                    done.append(Trace(status=status if status in STATUSES else "crashed",
                                      detail=message.get("detail")))
                elif killed_at == index:
                    done.append(Trace(status="timeout", detail=f"wall-clock limit {wall}s"))
                self.busy = False
                self.awaiting_runner = True
                return True
            elif kind == "ready":
                self.runner = self._child(message.get("pid"))
        self.busy = False
        # A killed or recycling runner's death is still to be reported: wait for the next
        # runner before sending another batch.
        self.awaiting_runner = killed_at is not None or recycled
        return True

    def close(self) -> None:
        """Stop the worker. A runner still busy with a call (a worker given up mid-call)
        would never read the end of its job pipe, so it is killed first, not orphaned."""
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        if self.busy and self.runner is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.runner, signal.SIGKILL)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


class Sandbox:
    """A pool of warm sandbox workers. Thread-safe; use as a context manager."""

    def __init__(self, workers: int | None = None, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self.size = workers or os.cpu_count() or 1
        self._jobs: queue.Queue[tuple[dict[str, Any], Future] | None] = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self.restarts = 0
        self.network_isolated: bool | None = None
        self.layers: dict[str, str] = {}
        """Each confinement layer and whether it is on, as the last started worker said."""
        for _ in range(self.size):
            thread = threading.Thread(target=self._serve, daemon=True)
            thread.start()
            self._threads.append(thread)

    def _take(self) -> list[tuple[dict[str, Any], Future]] | None:
        """The next batch for a worker: the next job (waiting for one), then the jobs queued
        right behind it for the same program, up to ``BATCH``; None when the pool closes.
        Jobs of other programs stay queued for the pool's other workers."""
        item = self._jobs.get()
        if item is None:
            return None
        items = [item]
        with self._jobs.mutex:  # Queue's own lock: peek and take in one step
            waiting = self._jobs.queue
            while len(items) < BATCH and waiting and waiting[0] is not None \
                    and waiting[0][0]["code"] == item[0]["code"]:
                items.append(waiting.popleft())
        return [(job, future) for job, future in items if future.set_running_or_notify_cancel()]

    def _serve(self) -> None:
        worker: _WorkerProcess | None = None
        try:
            while True:
                pending = self._take()
                if pending is None:
                    return
                while pending:
                    try:
                        if worker is None:
                            worker = _WorkerProcess(self.limits)
                            self.network_isolated = worker.info.get("network_isolated")
                            self.layers = dict(worker.info.get("layers") or {})
                        traces, broken = worker.run([job for job, _ in pending])
                    except BaseException as exc:  # noqa: BLE001 - surface to the callers
                        for _, future in pending:
                            future.set_exception(exc)
                        if worker is not None:  # in an unknown state: never used again
                            worker.close()
                            worker = None
                        break
                    for (_, future), trace in zip(pending, traces, strict=False):
                        future.set_result(trace)
                    pending = pending[len(traces):]
                    if broken:
                        worker.close()
                        code = worker.proc.returncode
                        worker = None
                        self.restarts += 1
                        if pending:
                            detail = f"sandbox worker died (exit {code})"
                            pending.pop(0)[1].set_result(Trace(status="crashed", detail=detail))
        finally:
            if worker is not None:
                worker.close()

    def submit(self, job: Job) -> Future[Trace]:
        if self._closed:
            raise RuntimeError("sandbox is closed")
        future: Future[Trace] = Future()
        payload = {"code": job.code, "entry_point": job.entry_point, "args": job.args,
                   "options": _options(job.options), "cpu_seconds": job.cpu_seconds}
        self._jobs.put((payload, future))
        return future

    def run(self, job: Job) -> Trace:
        return self.submit(job).result()

    def map(self, jobs: Iterable[Job]) -> list[Trace]:
        """Run jobs concurrently on all workers; results in the order of ``jobs``."""
        futures = [self.submit(job) for job in jobs]
        return [f.result() for f in futures]

    def close(self) -> None:
        """Stop the workers; jobs still queued are cancelled rather than run (Ctrl-C)."""
        if self._closed:
            return
        self._closed = True
        while True:
            try:
                item = self._jobs.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[1].cancel()
        for _ in self._threads:
            self._jobs.put(None)
        for thread in self._threads:
            thread.join()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
