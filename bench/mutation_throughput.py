"""Mutants generated and executed per second on CRUXEval, against a fresh process per mutant.

Usage: ``python bench/mutation_throughput.py [--data PATH] [--workers N] [--subset N]
[--seed N] [--time-box S]``

* generation: ``mutants(code)`` for all 800 programs, best of 3;
* execution: every mutant of every program whose call returns a value, all submitted at
  once to one ``Sandbox``, each with the CPU budget ``choose_mutant`` gives it (50 times
  the original call's CPU time, at least 0.05 s) and its tracer options;
* selection: Algorithm 1 per program as a build runs it (``mutant_for``: one program's
  mutants at a time), which gives the share of programs with a valid mutant and the
  operator mix of the chosen mutants;
* baseline: a fixed random subset of the mutants, each run in a freshly forked
  ``multiprocessing.Process`` (``workers`` in flight) by the same tracer with the same
  budget (an interval timer, as in the sandbox's runners) and memory limit, stopped after
  ``time-box`` seconds; the same subset through a new ``Sandbox`` gives the ratio.

Each timed phase uses its own sandbox, warmed up with one trivial call, so no phase finds
the programs already compiled by an earlier one.
"""

from __future__ import annotations

import argparse
import io
import multiprocessing
import os
import platform
import random
import resource
import signal
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from execbench.sandbox import tracer
from execbench.sandbox.pool import Job, Limits, Sandbox, Trace, TraceOptions
from execbench.sandbox.values import equal
from execbench.sources import load_source
from execbench.sources.mutate import CPU_FACTOR, MIN_CPU_SECONDS, mutants
from execbench.tasks.generalization import mutant_for

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "cruxeval.jsonl"
OPTIONS = TraceOptions(max_events=0, max_branch_seq=0)
"""What ``choose_mutant`` asks the tracer for: lines and the result, no event log."""
LIMITS = Limits()
WARM_UP = Job("def f():\n    return 0\n", "f", "")


def _child(conn: Connection, job: Job) -> None:
    """Body of a baseline process: run one mutant under its CPU budget, send the result."""
    memory = LIMITS.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    sys.stdout = sys.stderr = io.StringIO()
    random.seed(0)
    signal.setitimer(signal.ITIMER_PROF, job.cpu_seconds)  # SIGPROF ends the process
    try:
        program = tracer.compile_program(job.code)
        args = tracer.compile_args(job.args)
    except (SyntaxError, ValueError) as exc:
        result: dict[str, Any] = {"status": "exception", "value": None,
                                  "exception": tracer.describe_exception(exc)}
    else:
        result = tracer.run(program, job.entry_point, args, asdict(job.options))
    signal.setitimer(signal.ITIMER_PROF, 0)
    conn.send(result)
    conn.close()


def run_fresh_processes(jobs: Sequence[Job], concurrency: int, time_box: float
                        ) -> tuple[list[dict[str, Any]], float]:
    """Run jobs in order, each in its own forked process, ``concurrency`` at a time; no new
    one starts after ``time_box`` seconds. Returns the results of the jobs that ran (a
    prefix of ``jobs``) and the seconds taken."""
    context = multiprocessing.get_context("fork")
    results: list[dict[str, Any]] = []
    running: dict[Connection, tuple[int, multiprocessing.Process, float]] = {}
    start = time.perf_counter()
    launched = 0

    def launch() -> None:
        nonlocal launched
        while len(running) < concurrency and launched < len(jobs) \
                and time.perf_counter() - start < time_box:
            reader, writer = context.Pipe(duplex=False)
            process = context.Process(target=_child, args=(writer, jobs[launched]), daemon=True)
            process.start()
            writer.close()
            running[reader] = (launched, process, time.monotonic() + LIMITS.wall_seconds)
            results.append({})
            launched += 1

    launch()
    while running:
        for reader in wait(list(running), timeout=0.5):
            index, process, _ = running.pop(reader)
            try:
                results[index] = reader.recv()
            except EOFError:  # killed by its CPU timer (or the memory limit)
                results[index] = {"status": "timeout", "value": None}
            reader.close()
            process.join()
        now = time.monotonic()
        for reader, (index, process, deadline) in list(running.items()):
            if now > deadline:
                process.kill()
                process.join()
                reader.close()
                del running[reader]
                results[index] = {"status": "timeout", "value": None}
        launch()
    return results, time.perf_counter() - start


def _timed_map(workers: int, jobs: list[Job]) -> tuple[list[Trace], float]:
    with Sandbox(workers=workers) as sandbox:
        sandbox.map([WARM_UP] * workers)
        start = time.perf_counter()
        traces = sandbox.map(jobs)
        return traces, time.perf_counter() - start


def _same(trace: Trace, result: dict[str, Any]) -> bool:
    if trace.status != result["status"]:
        return False
    return trace.status != "ok" or equal(trace.value, result["value"])


def _shares(counts: Counter, total: int) -> str:
    return ", ".join(f"{name} {n} ({100 * n / total:.1f}%)" for name, n in counts.most_common())


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="cruxeval.jsonl, or the folder holding it")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="sandbox workers, and baseline processes in flight")
    parser.add_argument("--subset", type=int, default=400,
                        help="mutants in the baseline comparison")
    parser.add_argument("--seed", type=int, default=0,
                        help="for the subset, and Algorithm 1's ties (as `build --seed`)")
    parser.add_argument("--time-box", type=float, default=120.0,
                        help="seconds after which the baseline starts no new process")
    options = parser.parse_args(argv)
    path = options.data / "cruxeval.jsonl" if options.data.is_dir() else options.data
    if not path.exists():
        parser.error(f"{path} not found; pass --data (see shared/data/README.md)")
    programs = load_source(str(path)).programs
    workers = options.workers

    generation = []
    for _ in range(3):
        start = time.perf_counter()
        found = [mutants(p.code) for p in programs]
        generation.append(time.perf_counter() - start)
    generated = sum(len(f) for f in found)

    with Sandbox(workers=workers) as sandbox:
        originals = sandbox.map(Job(p.code, p.entry_point, p.calls[0].args) for p in programs)
    jobs = [Job(m.code, p.entry_point, p.calls[0].args, OPTIONS,
                cpu_seconds=max(MIN_CPU_SECONDS, CPU_FACTOR * trace.cpu_time))
            for p, trace, candidates in zip(programs, originals, found, strict=True)
            if trace.value is not None for m in candidates]
    traces, execution = _timed_map(workers, jobs)

    with Sandbox(workers=workers) as sandbox:
        sandbox.map([WARM_UP] * workers)
        start = time.perf_counter()
        chosen = [mutant_for(p, 0, trace, sandbox, options.seed, {})
                  for p, trace in zip(programs, originals, strict=True)]
        selection = time.perf_counter() - start
    kept = [c[0] for c in chosen if c is not None]

    picked = sorted(random.Random(options.seed).sample(range(len(jobs)),
                                                       min(options.subset, len(jobs))))
    subset = [jobs[i] for i in picked]
    sandbox_traces, sandbox_seconds = _timed_map(workers, subset)
    run_fresh_processes([WARM_UP] * workers, workers, options.time_box)
    fresh, fresh_seconds = run_fresh_processes(subset, workers, options.time_box)
    sandbox_rate, fresh_rate = len(subset) / sandbox_seconds, len(fresh) / fresh_seconds
    agree = sum(_same(t, r) for t, r in zip(sandbox_traces, fresh, strict=False))

    statuses = Counter(t.status for t in traces)
    print(f"CRUXEval: {len(programs)} programs; {workers} workers / processes in flight; "
          f"{os.cpu_count()} CPUs; Python {platform.python_version()}")
    print(f"generated: {generated} mutants ({generated / len(programs):.1f} per program) in "
          f"{min(generation):.2f} s, best of 3: {generated / min(generation):,.0f} mutants/s")
    print(f"executed: {len(jobs)} mutants (of the programs whose call returns a value) through "
          f"one Sandbox in {execution:.1f} s: {len(jobs) / execution:,.0f} mutants/s; "
          f"{_shares(statuses, len(jobs))}")
    print(f"Algorithm 1 per program, as a build runs it: {selection:.1f} s, "
          f"{len(jobs) / selection:,.0f} mutants/s")
    print(f"valid mutant: {len(kept)}/{len(programs)} programs "
          f"({100 * len(kept) / len(programs):.1f}%); chosen operators: "
          f"{_shares(Counter(m.operator for m in kept), len(kept))}")
    print(f"baseline on {len(subset)} random mutants (seed {options.seed}): Sandbox "
          f"{sandbox_seconds:.2f} s ({sandbox_rate:,.0f}/s); fresh Process per mutant "
          f"{len(fresh)} in {fresh_seconds:.2f} s ({fresh_rate:,.0f}/s); Sandbox "
          f"{sandbox_rate / fresh_rate:.1f}x faster; same status and value on "
          f"{agree}/{len(fresh)}")


if __name__ == "__main__":
    main()
