"""Time to build DexBench on CRUXEval, against collecting coverage with a process per program.

Usage: ``python bench/dexbench_build.py [--data PATH] [--workers N]``

* execbench: ``build_suite`` with the coverage and counterfactual tasks on all 800
  programs: tracing in the sandbox, call selection, Algorithm 1 targets and the witness
  search, with the suite written to disk;
* the pipeline the DexBench paper describes: for each program a script file holding the
  program followed by its call, run under ``python -m coverage run`` in a process of its
  own, and the executed lines read back from the data file it wrote. This collects the
  coverage ground truth only; targets and witnesses would come on top.

Both run ``workers`` programs at a time (default: the CPU count). Afterwards (untimed), the
statement lines coverage.py saw executed are compared with the suite's ground truth on the
selected programs.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import coverage
from common import add_data_option, cruxeval_file

from execbench.program import Program
from execbench.sources import load_source
from execbench.suite import BuildOptions, build_suite, load_suite

WALL_SECONDS = 10.0
"""Per-process wall-clock limit for the baseline, the sandbox's default one."""


def write_scripts(programs: Sequence[Program], folder: Path) -> list[Path]:
    """One script per program: its code, then a call with the program's first input."""
    scripts = []
    for number, program in enumerate(programs):
        script = folder / f"program_{number}.py"
        call = f"{program.entry_point}({program.calls[0].args})"
        script.write_text(f"{program.code}\n\n{call}\n", encoding="utf-8")
        scripts.append(script)
    return scripts


def collect(script: Path) -> tuple[float, int, set[int]]:
    """Run one script under coverage.py; (wall seconds, exit status, executed lines)."""
    data_file = script.with_suffix(".coverage")
    start = time.perf_counter()
    try:
        status = subprocess.run(
            [sys.executable, "-m", "coverage", "run", f"--data-file={data_file}", str(script)],
            cwd=script.parent, capture_output=True, timeout=WALL_SECONDS,
            env={**os.environ, "PYTHONHASHSEED": "0"}).returncode
    except subprocess.TimeoutExpired:
        status = -1
    data = coverage.CoverageData(basename=str(data_file))
    data.read()
    lines = set(data.lines(str(script)) or [])
    return time.perf_counter() - start, status, lines


def program_statements(script: Path, code: str) -> set[int]:
    """coverage.py's executed statement lines (multi-line statements by their first line)
    for a script it has run, leaving out the call appended after the program."""
    measured = coverage.Coverage(data_file=str(script.with_suffix(".coverage")),
                                 config_file=False)
    measured.load()
    _, statements, _, missing, _ = measured.analysis2(str(script))
    last = len(code.splitlines())
    return {line for line in set(statements) - set(missing) if line <= last}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_option(parser)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="sandbox workers, and coverage processes in flight")
    options = parser.parse_args(argv)
    path = cruxeval_file(parser, options.data)
    programs = load_source(str(path)).programs
    workers = options.workers

    with tempfile.TemporaryDirectory(prefix="dexbench-bench-") as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        manifest = build_suite([str(path)], folder / "suite",
                               BuildOptions(tasks=["coverage", "counterfactual"],
                                            workers=workers))
        build_seconds = time.perf_counter() - start

        scripts = write_scripts(programs, folder)
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=workers) as pool:
            runs = list(pool.map(collect, scripts))
        coverage_seconds = time.perf_counter() - start

        _, instances, _ = load_suite(folder / "suite")
        index = {program.id: number for number, program in enumerate(programs)}
        selected = [i for i in instances if i["task"] == "coverage"]
        agree = sum(set(i["truth"]["lines"]) ==
                    program_statements(scripts[index[i["program_id"]]], i["code"])
                    for i in selected)

    counts = manifest.counts.by_task
    per_process = [seconds for seconds, _, _ in runs]
    failed = sum(status != 0 for _, status, _ in runs)
    print(f"CRUXEval: {len(programs)} programs; {workers} at a time; {os.cpu_count()} CPUs "
          f"(load average {os.getloadavg()[0]:.1f}); Python {platform.python_version()}; "
          f"coverage.py {coverage.__version__}")
    print(f"execbench build_suite (coverage + counterfactual): {build_seconds:7.1f} s  "
          f"({counts['coverage']} coverage, {counts['counterfactual']} counterfactual "
          "instances)")
    print(f"`python -m coverage run` per program:             {coverage_seconds:7.1f} s  "
          f"(mean {statistics.mean(per_process):.3f} s per process, "
          f"{coverage_seconds / len(programs):.3f} s per program elapsed; "
          f"{failed} non-zero exits)")
    print(f"ratio (process per program / build_suite): {coverage_seconds / build_seconds:.1f}x")
    print(f"coverage.py's executed statement lines equal the suite's truth on "
          f"{agree}/{len(selected)} selected programs")


if __name__ == "__main__":
    main()
