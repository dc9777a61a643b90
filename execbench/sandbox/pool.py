"""The sandbox pool: the one way execbench runs a program.

``Sandbox`` keeps ``workers`` warm worker processes (``execbench.sandbox.worker``), each fed
by one thread of this process. A job is a program, an entry point and an argument-list
text; the result is a ``Trace``. A worker that dies is replaced, and the job it had in hand
runs once more, on the new one: a runner cannot reach its zygote, so a worker's death is not
the program's doing, and what another unit did (held its user's processes, say) must not
make an honest unit ``crashed``. A job in hand at two deaths in a row is reported as
``crashed``. Nothing a program does can take this process down.

What the sandbox protects against, and what it does not, is written down in
``docs/sandbox.md``; the adversarial tests in ``tests/sandbox`` exercise each point.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import queue
import secrets
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from typing import Any

import execbench
from execbench.sandbox import phases, syscall_filter
from execbench.sandbox.confine import scrubbed_environment, seccomp_program
from execbench.sandbox.frames import JSON, MAX_RESULT_BYTES, Broken, FrameReader, pack
from execbench.sandbox.trace import STATUSES, Trace, TraceOptions
from execbench.sandbox.tracer import CPU_LIMIT

_PROTOCOL_SECONDS = 60.0
"""How long past a job's wall-clock limit the parent waits for the worker's word on it (the
zygote enforces the limit itself), or for its start-up, before it gives the worker up as
broken. The parent never blocks on a worker without a deadline."""
_START_SECONDS = 5.0
"""How long past the wall-clock limit a worker that cannot start is tried again."""
BATCH = 8
"""Calls of one unit a worker takes from the queue at once and sends in one message:
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


STEPS_PER_CPU_SECOND = 1_000_000
"""Steps a limit allows per second of CPU limit: about half of what a sandbox runner records
per second on a 2-core cloud machine (1.7 to 3.2 million; 1.2 million under ``sys.settrace``
on Python 3.12, which answer checks do not use), so a call the step limit ends is ended by
it, before the CPU net, on machines up to about twice as slow. Where the net comes first
anyway, the call keeps the lines it ran (``runner``), as it does at the step limit."""


@dataclass(frozen=True)
class Limits:
    """Per-call resource limits. Counted work (``max_steps``, line events of the program)
    decides every verdict and build choice about a call's cost, so the same call ends the
    same way on any machine under any load; CPU and wall time are safety nets, for work
    the count does not see (a long C call)."""

    cpu_seconds: float = 2.0
    wall_seconds: float = 10.0
    memory_mb: int = 1024
    stdout_bytes: int = 1_000_000
    file_bytes: int = 10_000_000
    recursion_limit: int = 1_000
    max_steps: int | None = None
    """Line events a call may run; None: ``STEPS_PER_CPU_SECOND`` for each second of
    ``cpu_seconds`` (set when the limits are made, so records name the number)."""

    def __post_init__(self) -> None:
        if self.max_steps is None:
            object.__setattr__(self, "max_steps", round(self.cpu_seconds * STEPS_PER_CPU_SECOND))

    @property
    def steps(self) -> int:
        """``max_steps``, typed as the number it always is once made."""
        assert self.max_steps is not None
        return self.max_steps


@dataclass(frozen=True)
class Job:
    code: str
    entry_point: str
    args: str
    options: TraceOptions = field(default_factory=TraceOptions)
    cpu_seconds: float | None = None
    """A tighter CPU budget for this call than the sandbox's."""
    max_steps: int | None = None
    """A tighter step budget for this call than the sandbox's (searches made while
    building: see ``tasks.base.build_step_budget``)."""
    unit: str | None = None
    """Which untrusted unit the job belongs to. Jobs share a runner only with jobs of the
    same code and unit, and a runner serves one batch and dies: None makes the program the
    unit (ground truth: its own calls may share a runner, each call with its own wall-clock
    limit); a candidate, or anything else that runs an answer, gets a unit of its own
    (``new_unit``), whose calls share one wall-clock budget (``UnitTime``)."""


def new_unit() -> str:
    """A unit no other job has: its runner serves nothing else."""
    return secrets.token_hex(8)


class UnitTime:
    """The time of one candidate's unit, shared by all its calls (which may go out in
    several batches, to several workers): one wall-clock limit plus each call's CPU limit,
    for all of them together (so an honest candidate whose every call is slow but within
    its limits still fits), counted while a batch of it runs (a batch waiting in the queue
    costs it nothing); each call still has the wall-clock limit too. Once a call runs out
    of time (killed at a wall-clock limit, or at its CPU limit: machine time, not the
    counted steps, which end a call the same way everywhere and cost the runner nothing)
    or the budget is spent, the calls left are judged ``timeout`` at once, never run: a
    candidate that stalls at import costs one limit, not one per call. Ground truth has no
    unit, so suites are unchanged."""

    def __init__(self, seconds: float) -> None:
        self.left = seconds
        self.out = False
        """Whether a call of the unit ran out of time."""
        self.jobs = 0
        """The unit's jobs queued or running: the record is dropped when none is left."""
        self._lock = threading.Lock()

    def grant(self, seconds: float) -> None:
        """One more call of the unit: its CPU limit is added to the budget."""
        with self._lock:
            self.left += seconds

    def judged(self) -> Trace | None:
        """The verdict on a call of the unit that is not to run, or None if it may run."""
        with self._lock:
            if self.out:
                return Trace(status="timeout", detail="not run: an earlier call of this "
                             "candidate ran out of time")
            if self.left <= 0:
                return Trace(status="timeout", detail="not run: this candidate's wall-clock "
                             "time, for all its calls together, is spent")
        return None

    def charge(self, seconds: float, traces: list[Trace], killed: bool) -> None:
        """A batch of the unit ran for ``seconds`` and answered ``traces``; ``killed``: its
        runner was killed for time."""
        with self._lock:
            self.left -= seconds
            self.out = self.out or killed or any(
                trace.status == "timeout" and trace.detail == CPU_LIMIT for trace in traces)


@functools.lru_cache(maxsize=64)
def _options(options: TraceOptions) -> dict[str, Any]:
    """``asdict`` once per distinct options, not once per job."""
    return asdict(options)


@functools.cache
def _seccomp() -> tuple[syscall_filter.Programs | None, str | None]:
    """The seccomp filter's two parts, compiled once per process for all its workers."""
    return seccomp_program()


class _WorkerProcess:
    """One worker (its zygote, which forks a runner per unit) and the pipes to it.

    Everything read from the worker is checked (a frame of the wrong form, a result for
    another job, a worker that owes a frame and stays silent past a deadline): then
    ``run`` says the worker is broken and it is replaced. The zygote relays and checks the
    runners' answers, so program code never writes on these pipes.
    """

    def __init__(self, limits: Limits, measured: bool = False) -> None:
        self.limits = limits
        self.measured = measured
        self.spent: phases.Spent = {}
        """The steps measured (``phases``) in the answers read since the owner last took
        them."""
        self.units = 0
        """Runners whose own figures came in (each reports ``after fork`` once)."""
        self.bare_fork: list[float] | None = None
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "execbench.sandbox.worker"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, env=worker_environment(), close_fds=True, bufsize=0)
        self.reader = FrameReader(self.proc.stdout.fileno())
        self.into = self.proc.stdin.fileno()
        os.set_blocking(self.into, False)
        self.held: dict[str, Any] | None = None
        self.batches = 0
        """Batches sent: each went to a runner of its own."""
        self.answered_at = 0.0
        """When the batch in hand last had a job answered (``time.monotonic``)."""
        try:
            programs, why_not = _seccomp()
            self._send({"limits": asdict(limits), "seccomp": None if programs is None else
                        {"worker": programs.worker.hex(), "runner": programs.runner.hex()},
                        "seccomp_error": why_not, "phases": measured})
            hello = self._message(time.monotonic() + _PROTOCOL_SECONDS)
        except (OSError, ValueError, TimeoutError, Broken):
            hello = None
        if hello is None or hello.get("kind") != "hello":
            self.close()
            raise RuntimeError("sandbox worker failed to start")
        self.info = hello
        for warning in hello.get("warnings") or ():
            _warn_once(str(warning))

    def _send(self, message: dict[str, Any]) -> None:
        """Write one message, within a deadline (the zygote may be busy ending a unit)."""
        view = memoryview(pack(message))
        deadline = time.monotonic() + _PROTOCOL_SECONDS
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([], [self.into], [], remaining)[1]:
                raise TimeoutError
            try:
                view = view[os.write(self.into, view):]
            except BlockingIOError:
                continue

    def _message(self, deadline: float) -> dict[str, Any] | None:
        """The next message (a frame held back by ``_payload`` first), skipping chunks left
        from a payload that was cut short; None when the worker is gone."""
        if self.held is not None:
            message, self.held = self.held, None
            return message
        while True:
            frame = self.reader.next(deadline)
            if frame is not None and frame[0] == JSON and frame[1]["kind"] == "phases":
                self._measured(frame[1])  # the zygote's figures for the unit before
            elif frame is None or frame[0] == JSON:
                return None if frame is None else frame[1]

    def _payload(self, result: dict[str, Any], deadline: float) -> bytes | None:
        """The chunks a ``result`` announced. None if a message came first (the runner died
        mid-answer): that message is held back for the caller to read next."""
        size = result.get("size")
        if not isinstance(size, int) or not 0 <= size <= MAX_RESULT_BYTES:
            raise Broken("result without a valid size")
        parts: list[bytes] = []
        while size > 0:
            frame = self.reader.next(deadline)
            if frame is None:
                raise Broken("worker gone mid-answer")
            if frame[0] == JSON:
                self.held = frame[1]
                return None
            parts.append(frame[1])
            size -= len(frame[1])
        return b"".join(parts)

    def run(self, jobs: list[dict[str, Any]],
            time_of: UnitTime | None = None) -> tuple[list[Trace], bool]:
        """Run ``jobs`` in order. Returns the traces of the jobs that finished, in order,
        and whether the worker broke (died, or said something the protocol does not allow):
        then the next job went down with it and the worker must be replaced.

        Consecutive jobs of the same code and unit go as one batch, to one runner that
        serves nothing else. A result echoes its job's ``seq`` (a random token for the batch
        and the job's place in it), checked by the zygote and again here. ``time_of``: the
        time of the unit all ``jobs`` belong to, where it is a candidate's.
        """
        done: list[Trace] = []
        try:
            while len(done) < len(jobs):
                start = end = len(done)
                while end < len(jobs) and _same_unit(jobs[end], jobs[start]):
                    end += 1
                judged = time_of.judged() if time_of is not None else None
                if judged is not None:
                    done += [judged] * (end - start)
                    continue
                token = secrets.token_hex(8)
                batch = [{**job, "seq": f"{token}.{i}"} for i, job in enumerate(jobs[start:end])]
                if not self._run_batch(batch, done, time_of):
                    return done, True
        except (OSError, ValueError, RecursionError, TimeoutError, Broken):
            return done, True
        return done, False

    def _run_batch(self, batch: list[dict[str, Any]], done: list[Trace],
                   time_of: UnitTime | None) -> bool:
        """Send one batch and collect its answers into ``done`` until it is answered or its
        runner ended (recycled, crashed, killed at the wall limit); the jobs left are then
        sent again as a new unit. A candidate's batch gets what is left of its unit's time,
        for all its calls together, and is charged what it took. False when the worker is
        gone."""
        first, start = len(done), time.monotonic()
        self.answered_at = start
        killed: bool | None = None
        try:
            killed = self._answers(batch, done, time_of)
        finally:
            if time_of is not None:
                # A worker that broke is not the unit's doing: the time of the job it had in
                # hand is not charged, and that job runs again with what is left.
                end = self.answered_at if killed is None else time.monotonic()
                time_of.charge(end - start, done[first:], bool(killed))
        return killed is not None

    def _answers(self, batch: list[dict[str, Any]], done: list[Trace],
                 time_of: UnitTime | None) -> bool | None:
        """``_run_batch``'s exchange: whether the runner was killed for time, None when
        the worker is gone."""
        request: dict[str, Any] = {"jobs": batch}
        if time_of is not None:
            request["wall"] = time_of.left
        self._send(request)
        self.batches += 1
        slack = self.limits.wall_seconds + _PROTOCOL_SECONDS
        index = 0
        while index < len(batch):
            job = batch[index]
            message = self._message(time.monotonic() + slack)
            if message is None:
                return None
            if message["kind"] == "died":
                status = message.get("status")
                done.append(Trace(status=status if status in STATUSES else "crashed",
                                  detail=str(message.get("detail"))[:500]))
                return status == "timeout"
            if message["kind"] != "result" or message.get("seq") != job["seq"]:
                raise Broken(f"unexpected {message['kind']!r} message")
            self._measured(message)
            payload = self._payload(message, time.monotonic() + slack)
            if payload is None:
                continue  # cut short: the ``died`` message held back is this same job's
            done.append(Trace.from_payload(payload))
            self.answered_at = time.monotonic()
            index += 1
            if message.get("recycle") is not None:
                return False
        return False

    def _drain(self) -> None:
        """Read what an exited worker left on its pipe (its last unit's figures)."""
        with contextlib.suppress(OSError, ValueError, TimeoutError, Broken):
            while self._message(time.monotonic() + 1.0) is not None:
                pass

    def _measured(self, message: dict[str, Any]) -> None:
        """Take the steps a ``result`` or the zygote's ``phases`` message reports, where they
        are measured (checked like the rest of a message)."""
        spent, bare = message.get("phases"), message.get("bare_fork")
        if spent is not None:
            if not phases.valid(spent, phases.STEPS):
                raise Broken("measured steps of the wrong form")
            for step, (cpu, faults) in spent.items():
                phases.add(self.spent, step, cpu, faults)
            self.units += "after fork" in spent
        if bare is not None:
            if not phases.valid({"fork": bare}, ("fork",)):
                raise Broken("a bare fork's figures of the wrong form")
            self.bare_fork = bare

    def close(self) -> None:
        """Stop the worker: the zygote sees its pipe close, even mid-unit, kills its runner
        and exits; one that does not is killed. Figures it sent of its last unit, where
        they are measured, are taken first."""
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.measured:
            self._drain()
        self.proc.stdout.close()
        root = getattr(self, "info", {}).get("root")
        if isinstance(root, str) and os.path.basename(root).startswith("execbench-sandbox-"):
            with contextlib.suppress(OSError):  # a killed zygote's empty mount point
                os.rmdir(root)


def _same_unit(job: dict[str, Any], other: dict[str, Any]) -> bool:
    return job["code"] == other["code"] and job.get("unit") == other.get("unit")


class Sandbox:
    """A pool of warm sandbox workers. Thread-safe; use as a context manager."""

    def __init__(self, workers: int | None = None, limits: Limits | None = None,
                 phases: bool = False) -> None:
        self.limits = limits or Limits()
        self.size = workers or os.cpu_count() or 1
        self.measured = phases
        """Whether each unit's steps are measured (``sandbox.phases``): for the bench."""
        self.phases: dict[str, list[float]] = {}
        """The steps measured, summed over the units: CPU seconds and faults per step."""
        self.units = 0
        """Units whose runner's figures are in ``phases``."""
        self.bare_forks: list[list[float]] = []
        """Per worker started: CPU seconds and faults of one bare fork of its zygote."""
        self._jobs: queue.Queue[tuple[dict[str, Any], Future] | None] = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self.restarts = 0
        self.batches = 0
        """Batches sent to workers, each to a runner of its own: the runners that ran
        program code (a unit of more than ``BATCH`` calls, or one whose runner recycles,
        takes more than one)."""
        self._times: dict[str, UnitTime] = {}
        """The time of each candidate unit with jobs queued or running."""
        self._times_lock = threading.Lock()
        self.network_isolated: bool | None = None
        self.layers: dict[str, str] = {}
        """Each confinement layer and whether it is on, as the last started worker said."""
        for _ in range(self.size):
            thread = threading.Thread(target=self._serve, daemon=True)
            thread.start()
            self._threads.append(thread)

    def _take(self) -> list[tuple[dict[str, Any], Future]] | None:
        """The next batch for a worker: the next job (waiting for one), then the jobs queued
        right behind it for the same unit, up to ``BATCH``; None when the pool closes.
        Jobs of other units stay queued for the pool's other workers."""
        item = self._jobs.get()
        if item is None:
            return None
        items = [item]
        with self._jobs.mutex:  # Queue's own lock: peek and take in one step
            waiting = self._jobs.queue
            while len(items) < BATCH and waiting and waiting[0] is not None \
                    and _same_unit(waiting[0][0], item[0]):
                items.append(waiting.popleft())
        return [(job, future) for job, future in items if future.set_running_or_notify_cancel()]

    def _serve(self) -> None:
        worker: _WorkerProcess | None = None
        again: Future | None = None  # the job in hand when the last worker broke
        try:
            while True:
                pending = self._take()
                if pending is None:
                    return
                while pending:
                    try:
                        if worker is None:
                            worker = self._start_worker()
                            self.network_isolated = worker.info.get("network_isolated")
                            self.layers = dict(worker.info.get("layers") or {})
                        traces, broken = self._run(worker, pending)
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
                        if pending and pending[0][1] is not again:
                            again = pending[0][1]
                        elif pending:
                            detail = f"sandbox worker died twice running it (exit {code})"
                            pending.pop(0)[1].set_result(Trace(status="crashed", detail=detail))
        finally:
            if worker is not None:
                worker.close()
                with self._times_lock:
                    self._take_measured(worker)

    def _start_worker(self) -> _WorkerProcess:
        """A fresh worker. One that cannot start is tried again, for up to the wall-clock
        limit and ``_START_SECONDS`` more: what keeps it from forking may be another unit
        holding the processes its user (or its container) may have, and that unit's runner
        is killed by then; only then do the jobs in hand fail, with the start's error."""
        give_up = time.monotonic() + self.limits.wall_seconds + _START_SECONDS
        pause = 0.05
        while True:
            try:
                return _WorkerProcess(self.limits, self.measured)
            except (RuntimeError, OSError):
                if time.monotonic() + pause > give_up:
                    raise
                time.sleep(pause)
                pause = min(2 * pause, 1.0)

    def _run(self, worker: _WorkerProcess,
             pending: list[tuple[dict[str, Any], Future]]) -> tuple[list[Trace], bool]:
        """``worker.run`` on one unit's pending jobs, with the unit's time where it is a
        candidate's; the batches it sent are counted."""
        unit = pending[0][0]["unit"]
        with self._times_lock:
            time_of = self._times.get(unit) if unit is not None else None
        sent = worker.batches
        try:
            return worker.run([job for job, _ in pending], time_of)
        finally:
            with self._times_lock:
                self.batches += worker.batches - sent
                self._take_measured(worker)

    def _take_measured(self, worker: _WorkerProcess) -> None:
        """Add what ``worker`` measured to the pool's figures (under ``_times_lock``)."""
        for step, (cpu, faults) in worker.spent.items():
            phases.add(self.phases, step, cpu, faults)
        self.units += worker.units
        worker.spent, worker.units = {}, 0
        if worker.bare_fork is not None:
            self.bare_forks.append(worker.bare_fork)
            worker.bare_fork = None

    def _count(self, unit: str, job: Job) -> None:
        """One more job of candidate ``unit`` queued: its time is made with the first, and
        grows by each job's CPU limit."""
        cpu = min(job.cpu_seconds or self.limits.cpu_seconds, self.limits.cpu_seconds)
        with self._times_lock:
            if unit not in self._times:
                self._times[unit] = UnitTime(self.limits.wall_seconds)
            self._times[unit].jobs += 1
            self._times[unit].grant(cpu)

    def _uncount(self, unit: str, _: Future) -> None:
        """A job of ``unit`` is answered (or cancelled): the last one drops its time."""
        with self._times_lock:
            self._times[unit].jobs -= 1
            if not self._times[unit].jobs:
                del self._times[unit]

    def submit(self, job: Job) -> Future[Trace]:
        if self._closed:
            raise RuntimeError("sandbox is closed")
        future: Future[Trace] = Future()
        if job.unit is not None:
            self._count(job.unit, job)
            future.add_done_callback(functools.partial(self._uncount, job.unit))
        payload = {"code": job.code, "entry_point": job.entry_point, "args": job.args,
                   "options": _options(job.options), "cpu_seconds": job.cpu_seconds,
                   "max_steps": job.max_steps,
                   "unit": job.unit}
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
