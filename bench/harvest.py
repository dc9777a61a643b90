"""``execbench harvest`` on more-itertools: its cost next to the same test suite run
untraced, and how fast a suite builds from the harvest file.

Run from the repository root: ``.venv/bin/python bench/harvest.py [--project TAR_OR_DIR]
[--python PATH] [--timeout S] [--repeats N]``. The project (default: more-itertools from
../shared/data/projects) is unpacked into a temporary folder; its pytest suite runs once
untraced (``python -m pytest -q -p no:cacheprovider``, the same interpreter, a scrubbed
environment, the same working folder) and then once under ``harvest``, in the same run,
so their ratio is measured under the same machine load. Then ``build_suite`` builds the
``output`` task and the four CodeSense tasks from the harvest file (best of
``--repeats``) and the rate is instances per second.

With ``--ray``, the three shared projects are then harvested together twice in the same
run: one after another here (``--executor local``), and as Ray tasks on a Ray cluster
started on this machine (``--executor ray``, one CPU per project; the cluster's start is
timed apart), and the two merged files are compared byte for byte.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from execbench.executors import ExecutorChoice, ray_module
from execbench.sandbox.confine import scrubbed_environment
from execbench.sources.harvest import HarvestOptions, harvest
from execbench.sources.harvest_many import Project, harvest_projects, projects_from
from execbench.suite import BuildOptions, build_suite

TASKS = ["output", "statement", "block", "loop", "branch"]
"""What the build measures: the output task and the CodeSense tasks, all on recorded calls."""

SHARED_PROJECTS = Path(__file__).resolve().parents[2] / "shared" / "data" / "projects"
DEFAULT_PROJECT = SHARED_PROJECTS / "more_itertools-11.2.1.tar.gz"
THREE = ["inflection-0.5.1.tar.gz", "toolz-1.2.0.tar.gz", "more_itertools-11.2.1.tar.gz"]


def _unpack(project: Path, into: Path) -> Path:
    if project.is_dir():
        return project
    with tarfile.open(project) as tar:
        tar.extractall(into, filter="data")
    [root] = [p for p in into.iterdir() if p.is_dir()]
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", type=Path, default=DEFAULT_PROJECT,
                        help="a project folder, or a .tar.gz holding one")
    parser.add_argument("--python", default=sys.executable, help="interpreter with pytest")
    parser.add_argument("--timeout", type=float, default=1200.0, help="harvest's --timeout")
    parser.add_argument("--repeats", type=int, default=3, help="builds timed (best kept)")
    parser.add_argument("--ray", action="store_true",
                        help="also time the three shared projects on Ray against locally")
    args = parser.parse_args()
    if not args.project.exists():
        parser.error(f"{args.project} not found (see shared/data/README.md)")
    with tempfile.TemporaryDirectory() as scratch:
        root = _unpack(args.project, Path(scratch) / "src")
        env = {**scrubbed_environment(os.environ), "PYTHONHASHSEED": "0",
               "PYTHONDONTWRITEBYTECODE": "1"}
        start = time.perf_counter()
        done = subprocess.run([args.python, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                              cwd=root, env=env, capture_output=True, text=True)
        untraced = time.perf_counter() - start
        summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "?"
        print(f"project {root.name}: pytest untraced {untraced:.1f} s ({summary})")

        out = Path(scratch) / "harvest.jsonl"
        start = time.perf_counter()
        result = harvest(root, out, HarvestOptions(python=args.python, timeout=args.timeout))
        traced = time.perf_counter() - start
        status = "stopped at the timeout" if result.timed_out else \
            f"pytest exit {result.pytest_exit}"
        print(f"harvest {traced:.1f} s ({status}; {result.tests[0]}/{result.tests[1]} tests): "
              f"{traced / untraced:.1f}x the untraced run; {result.functions['kept']} "
              f"functions, {result.calls['kept']} calls kept, "
              f"{sum(n for k, n in result.calls.items() if k != 'kept'):,} calls dropped")

        best, instances = float("inf"), 0
        for repeat in range(args.repeats):
            start = time.perf_counter()
            manifest = build_suite([str(out)], Path(scratch) / f"suite{repeat}",
                                   BuildOptions(tasks=TASKS))
            best = min(best, time.perf_counter() - start)
            instances = manifest.counts.instances
        print(f"build --tasks {','.join(TASKS)} from the harvest file: {instances} instances in "
              f"{best:.2f} s (best of {args.repeats}), {instances / best:.0f} instances/s")
        if args.ray:
            _ray_beside_local(Path(scratch), HarvestOptions(python=args.python,
                                                            timeout=args.timeout))


def _ray_beside_local(scratch: Path, options: HarvestOptions) -> None:
    """The three shared projects harvested here, then on a Ray cluster of this machine."""
    projects = projects_from([SHARED_PROJECTS / name for name in THREE])
    times = {}
    try:
        _time_both(projects, scratch, options, times)
    finally:
        ray_module().shutdown()
    same = (scratch / "local" / "harvest.jsonl").read_bytes() == \
        (scratch / "ray" / "harvest.jsonl").read_bytes()
    print(f"ray / local: {times['ray'] / times['local']:.2f}x; merged files "
          f"{'identical' if same else 'DIFFER'}")


def _time_both(projects: list[Project], scratch: Path, options: HarvestOptions,
               times: dict[str, float]) -> None:
    for name in ("local", "ray"):
        choice = ExecutorChoice(name)
        if name == "ray":
            start = time.perf_counter()
            ray_module().init(address="local", log_to_driver=False,
                              include_dashboard=False, logging_level="ERROR")
            print(f"ray: a local cluster started in {time.perf_counter() - start:.1f} s")
        start = time.perf_counter()
        outcomes = harvest_projects(projects, scratch / name, options, executor=choice)
        times[name] = time.perf_counter() - start
        states = ", ".join(f"{o.project.name} {o.state}" for o in outcomes)
        print(f"harvest of 3 projects, --executor {name}: {times[name]:.1f} s ({states})")


if __name__ == "__main__":
    main()
