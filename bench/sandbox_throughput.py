"""Traced sandboxed calls per second on CRUXEval, against its floor and a process per call.

Usage: ``python bench/sandbox_throughput.py [--data PATH] [--repeats N] [--workers N]``

The floor: the same tracer run in this process, no sandbox at all, on one core (programs
compiled once, and compiled per call), times ``workers`` for the rate that many cores could
reach if the sandbox cost nothing. Then three ways of running the same 800 traced calls,
each with ``workers`` calls in flight, with every confinement layer this machine offers on
(the layers are printed):

* ``Sandbox``, programs new to the pool: each repeat's program texts carry a distinct
  trailing comment, so every runner compiles every program it is given, as a harness
  meeting a program for the first time must;
* ``Sandbox``, programs seen before: the same texts again, so runners hit their compile
  cache (what repeated calls of one program, e.g. HumanEval's tests, get);
* the baseline most execution harnesses (HumanEval's, CRUXEval's) use: fork a fresh
  ``multiprocessing.Process`` per call, run it there, send the result back through a pipe,
  join. The child runs the same tracer (``execbench.sandbox.tracer.run``), so the
  difference is the cost of the process model, not of the tracing.

Every runner serves one unit and dies, so "seen before" no longer hits a compile cache
across units: the row shows what per-unit isolation costs against the old reuse.

Then where a unit's cost goes, measured in the same run (``Sandbox(phases=True)``,
``execbench.sandbox.phases``): a bare fork of the warm zygote (its child does nothing and
exits), and each step of a new program's unit, in CPU time and minor page faults per
unit, with the unit's total against the bare fork; then the floor under any sandbox that
forks per unit (``fork_floor.py``: fork, compile, trace and send with nothing else) and the
rate it would allow, against the process per call.

Then bug-repair candidates per second, on HumanEvalPack (beside CRUXEval in ``--data``'s
folder): each problem's canonical function and its buggy one, as candidate modules, each a
unit of its own that runs all of the problem's test calls, through ``Sandbox`` and through
a fresh ``multiprocessing.Process`` per candidate running the same calls (once: about
200 s on 2 cores, where three repeats differed by 2%).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from common import add_data_option, cruxeval_file, run_fresh_processes, run_fresh_units

from execbench.sandbox import phases, tracer
from execbench.sandbox.pool import Job, Sandbox, new_unit
from execbench.sandbox.trace import RESULT_ONLY, TraceOptions
from execbench.sources import load_source
from execbench.sources.bugs import Bug

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


def _in_process(jobs: Sequence[Job], repeats: int, compile_each: bool) -> list[float]:
    """Seconds per repeat of tracing every job in this process, one at a time."""
    options = asdict(TraceOptions())
    programs = {job.code: tracer.compile_program(job.code) for job in jobs}
    arguments = {job.args: tracer.compile_args(job.args) for job in jobs}
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for job in jobs:
            program = tracer.compile_program(job.code) if compile_each else programs[job.code]
            with contextlib.redirect_stdout(io.StringIO()):
                tracer.run(program, job.entry_point, arguments[job.args], options)
        seconds.append(time.perf_counter() - start)
    return seconds


def _row(label: str, calls: int, seconds: list[float]) -> str:
    rates = [calls / s for s in seconds]
    runs = " ".join(f"{s:.2f}" for s in seconds)
    return f"{label:<42} {max(rates):>8.1f} {statistics.median(rates):>9.1f}   {runs}"


def _split(jobs: Sequence[Job], workers: int, fresh_rate: float) -> None:
    """A bare fork of the zygote, and each step of a unit, per unit: the units are the jobs
    as new programs, on a pool that measures them. Then the floor under any fork-per-unit
    design (``fork_floor``), against the same process-per-call rate (``fresh_rate``)."""
    with Sandbox(workers=workers, phases=True) as sandbox:
        sandbox.map(_tagged(jobs, "measured"))
    units, spent = sandbox.units, sandbox.phases
    bare_cpu = statistics.mean(cpu for cpu, _ in sandbox.bare_forks)
    bare_faults = statistics.mean(faults for _, faults in sandbox.bare_forks)
    print(f"where a unit's cost goes ({units} units of new programs, CPU ms and minor faults "
          "per unit):")
    print(f"  {'bare fork of the zygote (empty child)':<40} {bare_cpu * 1e3:7.3f} ms "
          f"{bare_faults:6.0f} faults")
    for step in phases.STEPS:
        cpu, faults = spent.get(step, (0.0, 0))
        label = ("runner: " if step in phases.RUNNER_STEPS else "zygote: ") + step
        print(f"  {label:<40} {cpu / units * 1e3:7.3f} ms {faults / units:6.0f} faults")
    cpu, faults = phases.total(spent)
    print(f"  {'unit in all':<40} {cpu / units * 1e3:7.3f} ms {faults / units:6.0f} faults: "
          f"{cpu / units / bare_cpu:.1f}x the bare fork's CPU, "
          f"{faults / units / bare_faults:.1f}x its faults")
    with tempfile.NamedTemporaryFile("w", suffix=".json") as work:
        json.dump([[job.code, job.entry_point, job.args] for job in jobs], work)
        work.flush()
        floor = json.loads(subprocess.run(
            [sys.executable, str(Path(__file__).with_name("fork_floor.py")), work.name],
            check=True, capture_output=True, text=True).stdout)
    ceiling = workers / floor["unit_cpu"]
    print(f"  {'no sandbox: fork, compile, trace, send':<40} {floor['unit_cpu'] * 1e3:7.3f} ms "
          f"{floor['unit_faults']:6.0f} faults: {floor['unit_cpu'] / floor['bare_cpu']:.1f}x "
          f"the bare fork of its own process ({floor['bare_cpu'] * 1e3:.3f} ms, "
          f"{floor['bare_faults']:.0f} faults)")
    print(f"  at that floor {workers} cores could run at most {ceiling:.0f} units/s: "
          f"{ceiling / fresh_rate:.1f}x the process per call ({fresh_rate:.0f}/s)")


def _candidates(path: Any) -> list[list[Job]]:
    """Each HumanEvalPack problem's canonical and buggy functions as repair candidates: per
    candidate, its test calls, in a unit of its own."""
    units = []
    for program in load_source(str(path)).programs:
        bug = Bug.of(program)
        for code in (program.code, bug.code if bug else None):
            if code is not None:
                unit = new_unit()
                units.append([Job(code, program.entry_point, call.args, RESULT_ONLY, unit=unit)
                              for call in program.calls])
    return units


def _repairs(path: Any, workers: int, repeats: int) -> None:
    """Bug-repair candidates per second, Sandbox against a process per candidate."""
    if not path.exists():
        print(f"bug repair: {path} not found, skipped (see shared/data/README.md)")
        return
    units = _candidates(path)
    flat = [job for unit in units for job in unit]
    with Sandbox(workers=workers) as sandbox:
        sandbox.map(flat[:WARM_UP_CALLS])
        seconds, traces = _timed(repeats, lambda r: [
            Job(j.code, j.entry_point, j.args, j.options, unit=f"{j.unit}-{r}") for j in flat],
            sandbox.map)
    run_fresh_units(units[:2 * workers], workers)
    # One repeat of the baseline: it takes minutes (each buggy candidate that loops runs to
    # its CPU limit in a process of its own), and its repeats differ by a few percent.
    fresh, results = _timed(1, lambda r: units, lambda batch: run_fresh_units(batch, workers)[0])
    agree = sum(t.status == r["status"] for t, r in
                zip(traces, [r for unit in results for r in unit], strict=True))
    print(f"bug repair: {len(units)} candidates (canonical and buggy), {len(flat)} test calls")
    print(_row("Sandbox, a runner per candidate", len(units), seconds))
    print(_row("fresh multiprocessing.Process per candidate", len(units), fresh))
    print(f"speed-up of Sandbox over a process per candidate: {min(fresh) / min(seconds):.1f}x "
          f"best; statuses equal on {agree}/{len(flat)} calls")


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

    floor_seen = _in_process(jobs, repeats, compile_each=False)
    floor_new = _in_process(jobs, repeats, compile_each=True)
    with Sandbox(workers=workers) as sandbox:
        sandbox.map(_tagged(jobs[:WARM_UP_CALLS], "warm-up"))
        new_seconds, new_traces = _timed(
            repeats, lambda r: _tagged(jobs, f"run {r}"), sandbox.map)
        sandbox.map(jobs)  # fills the runners' compile caches
        seen_seconds, _ = _timed(repeats, lambda r: jobs, sandbox.map)
        restarts = sandbox.restarts
        layers = sandbox.layers

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
    print("confinement: " + "; ".join(f"{k} {v.split(':')[0]}" for k, v in layers.items()))
    print(f"{'method':<42} {'best/s':>8} {'median/s':>9}   seconds per repeat")
    print(_row("in this process, compiled once, 1 core", calls, floor_seen))
    print(_row("in this process, compiled per call, 1 core", calls, floor_new))
    print(_row("Sandbox, programs new to the pool", calls, new_seconds))
    print(_row("Sandbox, programs seen before", calls, seen_seconds))
    print(_row("fresh multiprocessing.Process per call", calls, fresh_seconds))
    print(f"speed-up of Sandbox (new programs) over a process per call: {best_ratio:.1f}x best, "
          f"{median_ratio:.1f}x median")
    for label, sandboxed, floor in (("new", new_seconds, floor_new),
                                    ("seen", seen_seconds, floor_seen)):
        ideal = workers * calls / min(floor)
        rate = calls / min(sandboxed)
        print(f"Sandbox, {label} programs: {rate:.0f}/s, {rate / ideal:.0%} of the floor on "
              f"{workers} cores ({ideal:.0f}/s)")
    print(f"Sandbox statuses: {statuses}; worker restarts {restarts}; lines and status equal to "
          f"the baseline's on {agree}/{calls} calls")
    _split(jobs, workers, calls / min(fresh_seconds))
    _repairs(path.parent / "humanevalpack.jsonl.gz", workers, repeats)


if __name__ == "__main__":
    main()
