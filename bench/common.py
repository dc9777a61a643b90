"""What the benchmark scripts share: where CRUXEval is, and the baseline they are measured
against, the process-per-call model of most execution harnesses (HumanEval's,
CRUXEval's): fork a fresh ``multiprocessing.Process`` per call, run it there, send the
result back through a pipe, join. The child runs our own tracer under the same limits as
the sandbox, so a comparison measures the process model, not the tracing."""

from __future__ import annotations

import argparse
import io
import multiprocessing
import random
import resource
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from execbench.sandbox import tracer
from execbench.sandbox.pool import Job, Limits

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "cruxeval.jsonl"
LIMITS = Limits()


def add_data_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="cruxeval.jsonl, or the folder holding it")


def programs_options(doc: str, argv: list[str] | None) -> tuple[argparse.ArgumentParser,
                                                                  argparse.Namespace]:
    """The options of a bench over the first CRUXEval programs: ``--data``, ``--programs``
    (200) and ``--repeats`` (3), parsed from ``argv``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    add_data_option(parser)
    parser.add_argument("--programs", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    return parser, parser.parse_args(argv)


def cruxeval_file(parser: argparse.ArgumentParser, data: Path) -> Path:
    """The CRUXEval file named by ``--data``; a clear usage error when it is missing."""
    path = data / "cruxeval.jsonl" if data.is_dir() else data
    if not path.exists():
        parser.error(f"{path} not found; pass --data (see shared/data/README.md)")
    return path


def _child(conn: Connection, jobs: tuple[Job, ...]) -> None:
    """Body of a baseline process: trace its calls under the limits, send the results."""
    memory = LIMITS.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    sys.stdout = sys.stderr = io.StringIO()
    results = []
    for job in jobs:
        random.seed(0)
        if job.cpu_seconds:
            signal.setitimer(signal.ITIMER_PROF, job.cpu_seconds)  # SIGPROF ends the process
        try:
            program = tracer.compile_program(job.code)
            args = tracer.compile_args(job.args)
        except (SyntaxError, ValueError) as exc:
            result: dict[str, Any] = {"status": "exception", "lines": [], "value": None,
                                      "exception": tracer.describe_exception(exc)}
        else:
            result = tracer.run(program, job.entry_point, args, asdict(job.options))
        signal.setitimer(signal.ITIMER_PROF, 0)
        results.append(result)
    conn.send(results)
    conn.close()


def run_fresh_processes(jobs: Sequence[Job], concurrency: int, time_box: float | None = None
                        ) -> tuple[list[dict[str, Any]], float]:
    """Run jobs in order, each in its own forked process, ``concurrency`` at a time; with a
    ``time_box``, no new one starts after that many seconds. Returns the results of the
    jobs that ran (a prefix of ``jobs``) and the seconds taken."""
    results, seconds = run_fresh_units([(job,) for job in jobs], concurrency, time_box)
    return [result[0] for result in results], seconds


def run_fresh_units(units: Sequence[Sequence[Job]], concurrency: int,
                    time_box: float | None = None) -> tuple[list[list[dict[str, Any]]], float]:
    """``run_fresh_processes`` for units of several calls (a repair candidate and its test
    calls): one process per unit, running its calls one after another."""
    context = multiprocessing.get_context("fork")
    results: list[list[dict[str, Any]]] = []
    running: dict[Connection, tuple[int, multiprocessing.Process, float]] = {}
    start = time.perf_counter()

    def failed(unit: Sequence[Job], status: str) -> list[dict[str, Any]]:
        return [{"status": status, "lines": [], "value": None} for _ in unit]

    def launch() -> None:
        while len(running) < concurrency and len(results) < len(units) and (
                time_box is None or time.perf_counter() - start < time_box):
            unit = tuple(units[len(results)])
            reader, writer = context.Pipe(duplex=False)
            process = context.Process(target=_child, args=(writer, unit), daemon=True)
            process.start()
            writer.close()
            deadline = time.monotonic() + LIMITS.wall_seconds * len(unit)
            running[reader] = (len(results), process, deadline)
            results.append([])

    launch()
    while running:
        for reader in wait(list(running), timeout=0.5):
            index, process, _ = running.pop(reader)
            try:
                results[index] = reader.recv()
            except EOFError:  # ended by its CPU timer, or by a crash
                unit = units[index]
                results[index] = failed(unit, "timeout" if unit[0].cpu_seconds else "crashed")
            reader.close()
            process.join()
        now = time.monotonic()
        for reader, (index, process, deadline) in list(running.items()):
            if now > deadline:
                process.kill()
                process.join()
                reader.close()
                del running[reader]
                results[index] = failed(units[index], "timeout")
        launch()
    return results, time.perf_counter() - start
