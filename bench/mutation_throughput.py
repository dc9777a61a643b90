"""Mutants generated and executed per second on CRUXEval, against a fresh process per mutant.

Usage: ``python bench/mutation_throughput.py [--data PATH] [--workers N] [--subset N]
[--seed N] [--time-box S]``

* generation: ``mutants(code)`` for all 800 programs, best of 3;
* execution: every mutant of every program whose call returns a value, all submitted at
  once to one ``Sandbox``, each with the CPU budget ``choose_mutant`` gives it (50 times
  the original call's CPU time, between 0.05 and 0.5 s) and its tracer options;
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
import os
import platform
import random
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from common import add_data_option, cruxeval_file, run_fresh_processes

from execbench.mutation import mutant_budget, mutants
from execbench.sandbox.pool import Job, Sandbox
from execbench.sandbox.trace import RESULT_ONLY, Trace
from execbench.sources import load_source
from execbench.tasks.generalization import mutant_for
from execbench.values import equal

"""What ``choose_mutant`` asks the tracer for: lines and the result, no event log."""
WARM_UP = Job("def f():\n    return 0\n", "f", "")


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
    add_data_option(parser)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="sandbox workers, and baseline processes in flight")
    parser.add_argument("--subset", type=int, default=400,
                        help="mutants in the baseline comparison")
    parser.add_argument("--seed", type=int, default=0,
                        help="for the subset, and Algorithm 1's ties (as `build --seed`)")
    parser.add_argument("--time-box", type=float, default=120.0,
                        help="seconds after which the baseline starts no new process")
    options = parser.parse_args(argv)
    path = cruxeval_file(parser, options.data)
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
    jobs = [Job(m.code, p.entry_point, p.calls[0].args, RESULT_ONLY,
                max_steps=mutant_budget(trace))
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
