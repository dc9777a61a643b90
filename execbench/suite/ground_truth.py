"""The ground truth of each call a build keeps: a recorded trace as its source brought it,
or a run in the sandbox, made here or by an executor (a chunk of calls per unit of work),
kept only within the budget (``budget``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from execbench.executors import run_units
from execbench.manifest import Skip
from execbench.program import Program
from execbench.sandbox.pool import Job, Limits, Sandbox
from execbench.sandbox.trace import Trace, TraceOptions
from execbench.suite.budget import ground_truth_job, run_all, within_budget
from execbench.suite.options import BuildOptions, Progress


def ground_truth(sandbox: Sandbox, calls: list[tuple[Program, int]], recording: TraceOptions,
                 progress: Progress, skipped: list[Skip], stage: str = "tracing calls",
                 traced: list[Trace] | None = None
                 ) -> tuple[list[tuple[Program, int]], list[Trace]]:
    """The calls kept, with the trace each rests on, in the order given: a recorded trace
    as the source brought it, any other call traced in the sandbox with ``recording`` (or
    taken from ``traced``, those calls' traces made elsewhere, in order) and kept only if
    its run stayed within the step budget and the time limits (``within_budget``)."""
    to_run = [(p, i) for p, i in calls if p.calls[i].recorded is None]
    if traced is None:
        traces = []
        futures = [sandbox.submit(ground_truth_job(p, i, recording)) for p, i in to_run]
        progress(stage, 0, len(futures))
        for done, future in enumerate(futures, 1):
            traces.append(future.result())
            progress(stage, done, len(futures))
    else:
        traces = traced
        progress(stage, len(traces), len(traces))
    ran = {(p.id, i): trace for (p, i), trace
           in zip(*within_budget(sandbox, to_run, traces, skipped, recording),
                  strict=True)}
    kept = [((p, i), p.calls[i].recorded or ran.get((p.id, i))) for p, i in calls]
    return [call for call, trace in kept if trace], [trace for _, trace in kept if trace]


@dataclass(frozen=True)
class _Shard:
    """One chunk's ground-truth runs, as a unit of work for an executor."""

    jobs: list[Job]
    limits: Limits
    workers: int | None


def trace_shard(shard: _Shard) -> list[Trace]:
    """A chunk's calls traced in a sandbox of the worker's own, in order."""
    with Sandbox(workers=shard.workers, limits=shard.limits) as sandbox:
        return run_all(sandbox, shard.jobs)


def sharded(chunks: list[list[tuple[Program, int]]], recording: TraceOptions,
            options: BuildOptions) -> Iterator[list[Trace] | None]:
    """Per chunk, in order, its calls' traces made by the executor, or ``None`` (the
    chunk's own sandbox traces them) when the build runs here or has nothing to trace.
    The executor hands them back in order, holding at most its units in flight."""
    if options.executor.name == "local" or all(
            program.calls[index].recorded is not None for chunk in chunks
            for program, index in chunk):
        yield from (None for _ in chunks)
        return
    workers = options.workers or 1  # a task's sandbox workers, and the CPUs Ray gives it
    shards = (_Shard([ground_truth_job(p, i, recording) for p, i in chunk
                      if p.calls[i].recorded is None], options.limits, workers)
              for chunk in chunks)
    for _, traces in run_units(options.executor, trace_shard, shards, cpus=workers,
                               ordered=True):
        yield traces
