"""``execbench harvest`` on the shared projects: what it keeps with objects shown by their
attributes and with literal values only, its cost next to the same test suite run
untraced, and how fast a suite builds from the harvest file.

Run from the repository root: ``.venv/bin/python bench/harvest.py [--project TAR_OR_DIR
...] [--python PATH] [--timeout S] [--repeats N] [--ray]``. Each project (default: the
three in ../shared/data/projects) is unpacked into a temporary folder; its pytest suite
runs once untraced (``python -m pytest -q -p no:cacheprovider``, the same interpreter, a
scrubbed environment, the same working folder), then under ``harvest`` twice, with
``--literals-only`` (the harvest before objects were kept) and as it is now, all in the
same run, so the ratios are measured under the same machine load. Then ``build_suite``
builds the ``output`` task and the four CodeSense tasks from the second harvest file
(best of ``--repeats``) and the rate is instances per second.

With ``--ray``, the three shared projects are then harvested together twice in the same
run: one after another here (``--executor local``), and as Ray tasks on a Ray cluster
started on this machine (``--executor ray``, one CPU per project; the cluster's start is
timed apart), and the two merged files are compared byte for byte.

With ``--c DIR`` (and ``--c-build``, ``--c-test``), only that C project: its test command
timed untraced on a copy built with ``CFLAGS='-g -O0'``, then ``harvest --language c``
(build included), the functions and calls kept, and ``reference/oracle`` on every
CodeSense task built from the harvest. ``--java DIR`` (with ``--java-build`` and
``--java-test``) does the same for a Java project with ``harvest --language java``, its
untraced run built with ``JDK_JAVAC_OPTIONS=-g`` as the harvest builds it;
``bench/native_projects.sh c|java DIR`` fetches and prepares the ones measured (cJSON
1.7.15 and Apache Commons Codec 1.15, Debian's source packages).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from execbench.executors import ExecutorChoice, ray_module
from execbench.harvest.many import Project, harvest_projects, projects_from
from execbench.harvest.options import HarvestOptions
from execbench.harvest.project import NEVER_CALLED, harvest
from execbench.sandbox.confine import scrubbed_environment
from execbench.suite import BuildOptions, build_suite

TASKS = ["output", "statement", "block", "loop", "branch"]
"""What the build measures: the output task and the CodeSense tasks, all on recorded calls."""

SHARED_PROJECTS = Path(__file__).resolve().parents[2] / "shared" / "data" / "projects"
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
    parser.add_argument("--project", type=Path, nargs="+",
                        default=[SHARED_PROJECTS / name for name in THREE],
                        help="project folders, or .tar.gz files holding one")
    parser.add_argument("--python", default=sys.executable, help="interpreter with pytest")
    parser.add_argument("--timeout", type=float, default=1200.0, help="harvest's --timeout")
    parser.add_argument("--repeats", type=int, default=3, help="builds timed (best kept)")
    parser.add_argument("--ray", action="store_true",
                        help="also time the three shared projects on Ray against locally")
    parser.add_argument("--c", type=Path, metavar="DIR",
                        help="a C project folder: harvested with --language c, only it")
    parser.add_argument("--c-build", default="make", help="its build command")
    parser.add_argument("--c-test", default="make test", help="its test command")
    parser.add_argument("--java", type=Path, metavar="DIR",
                        help="a Java project folder: harvested with --language java, only it "
                             "(bench/native_projects.sh java DIR prepares one)")
    parser.add_argument("--java-build", default="sh execbench-build.sh", help="its build")
    parser.add_argument("--java-test", default="sh execbench-test.sh", help="its tests")
    args = parser.parse_args()
    for language, folder, build, test in (("c", args.c, args.c_build, args.c_test),
                                          ("java", args.java, args.java_build,
                                           args.java_test)):
        if folder is not None:
            with tempfile.TemporaryDirectory() as scratch:
                _native_project(language, folder, build, test, Path(scratch), args)
            return
    for project in args.project:
        if not project.exists():
            parser.error(f"{project} not found (see shared/data/README.md)")
    with tempfile.TemporaryDirectory() as scratch:
        for number, project in enumerate(args.project):
            _one_project(project, Path(scratch) / str(number), args)
        if args.ray:
            _ray_beside_local(Path(scratch), HarvestOptions(python=args.python,
                                                            timeout=args.timeout))


def _one_project(project: Path, scratch: Path, args: argparse.Namespace) -> None:
    root = _unpack(project, scratch / "src")
    env = {**scrubbed_environment(os.environ), "PYTHONHASHSEED": "0",
           "PYTHONDONTWRITEBYTECODE": "1"}
    start = time.perf_counter()
    done = subprocess.run([args.python, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                          cwd=root, env=env, capture_output=True, text=True)
    untraced = time.perf_counter() - start
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "?"
    print(f"project {root.name}: pytest untraced {untraced:.1f} s ({summary})")
    kept = {}
    for label, objects in (("literals only", False), ("objects", True)):
        out = scratch / f"harvest-{objects}.jsonl"
        start = time.perf_counter()
        result = harvest(root, out, HarvestOptions(python=args.python, timeout=args.timeout,
                                                   objects=objects))
        traced = time.perf_counter() - start
        status = "stopped at the timeout" if result.timed_out else \
            f"pytest exit {result.pytest_exit}"
        functions = result.functions["kept"]
        listed = sum(n for k, n in result.functions.items() if k != NEVER_CALLED)
        kept[label] = (functions, result.calls["kept"])
        print(f"  harvest, {label}: {traced:.1f} s ({status}; {result.tests[0]}/"
              f"{result.tests[1]} tests), {traced / untraced:.1f}x the untraced run; "
              f"functions kept {functions} of {listed} called, calls kept "
              f"{result.calls['kept']} of {result.seen:,} seen")
    (before_f, before_c), (after_f, after_c) = kept["literals only"], kept["objects"]
    print(f"  kept with objects / literals only: functions {after_f}/{before_f} = "
          f"{after_f / max(before_f, 1):.2f}x, calls {after_c}/{before_c} = "
          f"{after_c / max(before_c, 1):.2f}x")
    best, instances = float("inf"), 0
    for repeat in range(args.repeats):
        start = time.perf_counter()
        manifest = build_suite([str(scratch / "harvest-True.jsonl")],
                               scratch / f"suite{repeat}", BuildOptions(tasks=TASKS))
        best = min(best, time.perf_counter() - start)
        instances = manifest.counts.instances
    print(f"  build --tasks {','.join(TASKS)} from the harvest file: {instances} instances "
          f"in {best:.2f} s (best of {args.repeats}), {instances / best:.0f} instances/s")


def _native_project(language: str, project: Path, build: str, test: str, scratch: Path,
                    args: argparse.Namespace) -> None:
    """A C or Java project: its build and tests untraced (a copy built with the harvest's
    build environment, the test command timed alone), then the harvest, the CodeSense
    tasks built from it and ``reference/oracle`` run on them."""
    import shutil

    from execbench.harvest.languages import LANGUAGES

    options = HarvestOptions(language=language, build=build, test=test,
                             timeout=args.timeout)
    copy = scratch / "untraced"
    shutil.copytree(project, copy, symlinks=True)
    env = {**scrubbed_environment(os.environ),
           **LANGUAGES.get(language).build_env(options)}
    subprocess.run(["/bin/sh", "-c", build], cwd=copy, env=env, check=True,
                   capture_output=True)
    start = time.perf_counter()
    done = subprocess.run(["/bin/sh", "-c", test], cwd=copy, env=env,
                          capture_output=True)
    untraced = time.perf_counter() - start
    print(f"{language} project {project.name}: tests untraced {untraced:.2f} s "
          f"(exit {done.returncode})")
    out = scratch / "harvest.jsonl"
    start = time.perf_counter()
    result = harvest(project, out, options)
    traced = time.perf_counter() - start
    print(f"  harvest --language {language}: {traced:.1f} s (build included; tests exit "
          f"{result.pytest_exit}), {traced / untraced:.0f}x the untraced test run; "
          f"functions kept {result.functions['kept']}, calls kept {result.calls['kept']} "
          f"of {result.seen:,} recorded; records refused {sum(result.refused.values())}")
    tasks = "statement,block,loop,branch,output,input,alias"
    execbench = [sys.executable, "-c", "from execbench.cli import app; app()"]
    subprocess.run([*execbench, "build", str(out), "--tasks", tasks, "--out",
                    str(scratch / "suite")], check=True, capture_output=True)
    subprocess.run([*execbench, "run", "--suite", str(scratch / "suite"), "--model",
                    "reference/oracle", "--out", str(scratch / "run")], check=True,
                   capture_output=True)
    metrics = json.loads((scratch / "run" / "results.json").read_text())["metrics"]
    said = ", ".join(f"{task} {metrics[task]['all']['pass@1']:.0%} of "
                     f"{metrics[task]['all']['instances']}" for task in sorted(metrics))
    print(f"  reference/oracle on the harvest: {said}")


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
