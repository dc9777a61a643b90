"""Time to build the CES simulation suite on all of HumanEval, and what recording the
properties costs over plain line tracing.

Usage: ``python bench/ces_build.py [--workers N] [--repeats N] [--tests K]``

* build: ``build_suite`` with the simulation task on the packaged HumanEval, ``--tests``
  calls per program (default 3): tracing every call with the ``properties`` recorder, the
  prime-path coverage of each, the choice of calls, the annotations, the Rule 1
  calibration run per instance and the worked examples, with the suite written to disk;
* overhead: every HumanEval call run through one ``Sandbox`` with the plain ``lines``
  recorder and with the ``properties`` recorder, best of ``--repeats`` (default 3) after a
  warm-up, in the same pool; printed as calls per second and the ratio. Calls that use
  more than a quarter of the CPU limit are left out, as a build leaves them out.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from execbench.sandbox.pool import Job, Sandbox
from execbench.sandbox.trace import TraceOptions
from execbench.sources import load_source
from execbench.suite import BuildOptions, build_suite


def _best(sandbox: Sandbox, jobs: list[Job], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        sandbox.map(jobs)
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tests", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"python {platform.python_version()}, {args.workers} workers")

    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        manifest = build_suite(["humaneval"], Path(folder) / "suite", BuildOptions(
            tasks=["simulation"], workers=args.workers,
            task_options={"tests": str(args.tests)}))
        built = time.perf_counter() - start
    counts = manifest.counts
    print(f"build: {built:.1f} s for {counts.instances} instances from "
          f"{counts.programs} programs ({counts.calls} calls traced), "
          f"categories {manifest.task_counts['simulation']}")

    programs = load_source("humaneval").programs
    plain = [Job(p.code, p.entry_point, c.args) for p in programs for c in p.calls]
    with Sandbox(workers=args.workers) as sandbox:
        quarter = sandbox.limits.cpu_seconds / 4
        light = [job for job, trace in zip(plain, sandbox.map(plain), strict=True)
                 if trace.status != "timeout" and trace.cpu_time <= quarter]
        recorded = [Job(j.code, j.entry_point, j.args, TraceOptions(recorder="properties"))
                    for j in light]
        sandbox.map(recorded)  # warm-up: every program compiled with both recorders
        lines = _best(sandbox, light, args.repeats)
        properties = _best(sandbox, recorded, args.repeats)
    print(f"tracing {len(light)} calls: lines {len(light) / lines:.0f} calls/s, properties "
          f"{len(light) / properties:.0f} calls/s; properties take {properties / lines:.2f}x "
          "the time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
