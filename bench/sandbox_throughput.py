"""Traced sandboxed calls per second on CRUXEval, against a fresh process per call.

Usage: ``python bench/sandbox_throughput.py [--data PATH] [--repeats N] [--workers N]``

Three ways of running the same 800 traced calls, each with ``workers`` calls in flight:

* ``Sandbox``, programs new to the pool: each repeat's program texts carry a distinct
  trailing comment, so every runner compiles every program it is given, as a harness
  meeting a program for the first time must;
* ``Sandbox``, programs seen before: the same texts again, so runners hit their compile
  cache (what repeated calls of one program, e.g. HumanEval's tests, get);
* the baseline most execution harnesses (HumanEval's, CRUXEval's) use: fork a fresh
  ``multiprocessing.Process`` per call, run it there, send the result back through a pipe,
  join. The child runs the same tracer (``execbench.sandbox.tracer.run``), so the
  difference is the cost of the process model, not of the tracing.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from common import add_data_option, cruxeval_file, run_fresh_processes

from execbench.sandbox.pool import Job, Sandbox
from execbench.sources import load_source

WARM_UP_CALLS = 100


def _timed(repeats: int, make_jobs: Callable[[int], list[Job]],
           execute: Callable[[list[Job]], list[Any]]) -> tuple[list[float], list[Any]]:
    """Seconds per repeat (jobs built outside the timing) and the last repeat's results."""
    seconds, results = [], []
    for repeat in range(repeats):
        jobs = make_jobs(repeat)
        start = time.perf_counter()
        results = execute(jobs)
        seconds.append(time.perf_counter() - start)
    return seconds, results


def _tagged(jobs: Sequence[Job], tag: str) -> list[Job]:
    """The same jobs with a comment appended to each program: new to any compile cache."""
    return [Job(f"{job.code}\n# {tag}\n", job.entry_point, job.args) for job in jobs]


def _row(label: str, calls: int, seconds: list[float]) -> str:
    rates = [calls / s for s in seconds]
    runs = " ".join(f"{s:.2f}" for s in seconds)
    return f"{label:<42} {max(rates):>8.1f} {statistics.median(rates):>9.1f}   {runs}"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_option(parser)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="sandbox workers, and baseline processes in flight")
    options = parser.parse_args(argv)
    path = cruxeval_file(parser, options.data)
    jobs = [Job(p.code, p.entry_point, call.args)
            for p in load_source(str(path)).programs for call in p.calls]
    workers, repeats, calls = options.workers, options.repeats, len(jobs)

    with Sandbox(workers=workers) as sandbox:
        sandbox.map(_tagged(jobs[:WARM_UP_CALLS], "warm-up"))
        new_seconds, new_traces = _timed(
            repeats, lambda r: _tagged(jobs, f"run {r}"), sandbox.map)
        sandbox.map(jobs)  # fills the runners' compile caches
        seen_seconds, _ = _timed(repeats, lambda r: jobs, sandbox.map)
        restarts = sandbox.restarts

    run_fresh_processes(jobs[:2 * workers], workers)
    fresh_seconds, fresh_results = _timed(
        repeats, lambda r: jobs, lambda batch: run_fresh_processes(batch, workers)[0])

    agree = sum(t.lines == r["lines"] and t.status == r["status"]
                for t, r in zip(new_traces, fresh_results, strict=True))
    best_ratio = min(fresh_seconds) / min(new_seconds)
    median_ratio = statistics.median(fresh_seconds) / statistics.median(new_seconds)
    statuses = ", ".join(f"{k} {v}" for k, v in Counter(t.status for t in new_traces).items())
    print(f"CRUXEval: {calls} traced calls; {workers} in flight; {os.cpu_count()} CPUs; "
          f"Python {platform.python_version()}; {repeats} repeats after {WARM_UP_CALLS} warm-up "
          "calls")
    print(f"{'method':<42} {'best/s':>8} {'median/s':>9}   seconds per repeat")
    print(_row("Sandbox, programs new to the pool", calls, new_seconds))
    print(_row("Sandbox, programs seen before", calls, seen_seconds))
    print(_row("fresh multiprocessing.Process per call", calls, fresh_seconds))
    print(f"speed-up of Sandbox (new programs) over a process per call: {best_ratio:.1f}x best, "
          f"{median_ratio:.1f}x median")
    print(f"Sandbox statuses: {statuses}; worker restarts {restarts}; lines and status equal to "
          f"the baseline's on {agree}/{calls} calls")


if __name__ == "__main__":
    main()
