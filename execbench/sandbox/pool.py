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
import json
import os
import queue
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

from execbench.sandbox.tracer import DEFAULT_OPTIONS
from execbench.sandbox.worker import result_path

STATUSES = ("ok", "exception", "timeout", "memory", "crashed", "output_limit")
_PROTOCOL_SECONDS = 60.0
"""How long the parent waits for a frame the worker owes it (a start-up, the rest of a
frame, the report of a runner it killed) before it gives the worker up as broken. The
parent never blocks on a worker without a deadline."""


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
class TraceOptions:
    """What the tracer records beyond lines and the result (see ``tracer.DEFAULT_OPTIONS``)."""

    max_events: int = DEFAULT_OPTIONS["max_events"]
    states: bool = DEFAULT_OPTIONS["states"]
    max_states: int = DEFAULT_OPTIONS["max_states"]
    max_value_nodes: int = DEFAULT_OPTIONS["max_value_nodes"]
    max_branch_seq: int = DEFAULT_OPTIONS["max_branch_seq"]


@dataclass(frozen=True)
class Job:
    code: str
    entry_point: str
    args: str
    options: TraceOptions = field(default_factory=TraceOptions)
    cpu_seconds: float | None = None
    """A tighter CPU budget for this call than the sandbox's (e.g. for input search)."""


@dataclass
class Trace:
    """Everything one sandboxed call produced; see ``tracer`` for the meaning of each field."""

    status: str
    detail: str | None = None
    value: list | None = None
    value_repr: str | None = None
    args: list | None = None
    kwargs: dict[str, Any] | None = None
    exception: dict[str, Any] | None = None
    stdout: str = ""
    lines: list[int] = field(default_factory=list)
    events: list[list[int]] = field(default_factory=list)
    events_truncated: bool = False
    frames: list[dict[str, Any]] = field(default_factory=list)
    states: list[dict[str, Any]] = field(default_factory=list)
    branches: dict[str, dict[str, Any]] = field(default_factory=dict)
    loops: dict[str, int] = field(default_factory=dict)
    cpu_time: float = 0.0

    @classmethod
    def from_payload(cls, payload: bytes) -> Trace:
        """Read a runner's JSON result; anything malformed is a ``crashed`` trace."""
        try:
            data = json.loads(payload.decode("utf-8", "surrogatepass"))
            known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
            trace = cls(**known)
        except (ValueError, UnicodeDecodeError, TypeError, AttributeError):
            return cls(status="crashed", detail="unreadable result")
        if trace.status not in STATUSES:
            return cls(status="crashed", detail=f"unknown status {trace.status!r}")
        return trace


class _WorkerProcess:
    """One worker (zygote + its current runner) and the pipes to it."""

    def __init__(self, limits: Limits) -> None:
        env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
        self.limits = limits
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "execbench.sandbox.worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, close_fds=True, bufsize=0)
        self.out = self.proc.stdout.fileno()
        self.runner: int | None = None
        self.awaiting_runner = True
        self.seq = 0
        self._send(asdict(limits))
        hello = self._frame(time.monotonic() + _PROTOCOL_SECONDS)
        if hello is None or hello.get("kind") != "hello":
            self.close()
            raise RuntimeError("sandbox worker failed to start")
        self.info = hello
        self.root = hello["root"]

    def _send(self, message: dict[str, Any]) -> bool:
        data = json.dumps(message).encode()
        try:
            self.proc.stdin.write(struct.pack(">I", len(data)) + data)
        except (BrokenPipeError, OSError):
            return False
        return True

    def _read(self, size: int, deadline: float) -> bytes | None:
        parts = []
        while size:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.out], [], [], remaining)[0]:
                raise TimeoutError
            chunk = os.read(self.out, size)
            if not chunk:
                return None
            parts.append(chunk)
            size -= len(chunk)
        return b"".join(parts)

    def _frame_bytes(self, deadline: float) -> bytes | None:
        header = self._read(4, deadline)
        if header is None:
            return None
        return self._read(struct.unpack(">I", header)[0], time.monotonic() + _PROTOCOL_SECONDS)

    def _frame(self, deadline: float) -> dict[str, Any] | None:
        body = self._frame_bytes(deadline)
        return None if body is None else json.loads(body)

    def _payload(self, frame: dict[str, Any]) -> bytes | None:
        """The payload frame after a ``result``, read from its file if it was too big."""
        payload = self._frame_bytes(time.monotonic() + _PROTOCOL_SECONDS)
        if payload is None or not frame.get("file"):
            return payload
        path = result_path(self.root, frame.get("seq", 0))
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            with open(fd, "rb") as file:
                return file.read()
        except OSError:
            return b""  # read as an unreadable result
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)

    def _wait_runner(self) -> bool:
        """Consume frames up to the next runner's ``ready``; False if the worker is gone."""
        while self.awaiting_runner:
            frame = self._frame(time.monotonic() + _PROTOCOL_SECONDS)
            if frame is None:
                return False
            if frame["kind"] == "ready":
                self.runner = frame["pid"]
                self.awaiting_runner = False
            elif frame["kind"] == "result" and self._payload(frame) is None:
                return False  # a stale result: its payload is dropped too
        return True

    def call(self, job: dict[str, Any]) -> Trace | None:
        """Run one job; ``None`` means the whole worker died or broke and must be replaced.

        Frames are matched to the job: a result echoes the job's sequence number and a
        death names the runner's pid, so a frame left over from an earlier job (a runner
        that answered just as the parent killed it) can never be taken for this one's.
        """
        self.seq += 1
        job = {**job, "seq": self.seq}
        try:
            if not self._wait_runner() or not self._send(job):
                return None
            runner = self.runner
            deadline = time.monotonic() + self.limits.wall_seconds
            killed = False
            while True:
                try:
                    frame = self._frame(deadline)
                except TimeoutError:
                    if killed:
                        return None  # the zygote never reported the kill: give it up
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(runner, signal.SIGKILL)
                    killed = True
                    deadline = time.monotonic() + _PROTOCOL_SECONDS
                    continue
                if frame is None:
                    return None
                kind = frame["kind"]
                if kind == "result":
                    payload = self._payload(frame)
                    if payload is None:
                        return None
                    if frame.get("seq") != self.seq:
                        continue
                    # After a kill the runner's death is still to be reported: wait for
                    # the next runner before sending another job.
                    self.awaiting_runner = killed or frame.get("recycle") is not None
                    return Trace.from_payload(payload)
                if kind == "died":
                    if frame.get("pid") != runner:
                        continue
                    self.awaiting_runner = True
                    if killed:
                        with contextlib.suppress(OSError):
                            os.unlink(result_path(self.root, self.seq))
                        return Trace(status="timeout",
                                     detail=f"wall-clock limit {self.limits.wall_seconds}s")
                    return Trace(status=frame["status"], detail=frame.get("detail"))
                if kind == "ready":
                    self.runner = frame["pid"]
        except (OSError, ValueError):
            return None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
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
        for _ in range(self.size):
            thread = threading.Thread(target=self._serve, daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self) -> None:
        worker: _WorkerProcess | None = None
        try:
            while True:
                item = self._jobs.get()
                if item is None:
                    return
                job, future = item
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    if worker is None:
                        worker = _WorkerProcess(self.limits)
                        self.network_isolated = worker.info.get("network_isolated")
                    trace = worker.call(job)
                    if trace is None:
                        worker.close()
                        code = worker.proc.returncode
                        worker = None
                        self.restarts += 1
                        trace = Trace(status="crashed", detail=f"sandbox worker died (exit {code})")
                    future.set_result(trace)
                except BaseException as exc:  # noqa: BLE001 - surface to the caller
                    future.set_exception(exc)
        finally:
            if worker is not None:
                worker.close()

    def submit(self, job: Job) -> Future[Trace]:
        if self._closed:
            raise RuntimeError("sandbox is closed")
        future: Future[Trace] = Future()
        payload = {"code": job.code, "entry_point": job.entry_point, "args": job.args,
                   "options": asdict(job.options), "cpu_seconds": job.cpu_seconds}
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
