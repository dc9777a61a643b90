"""``execbench harvest``: record calls of a project's functions while its tests run."""

from __future__ import annotations

import sys
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from execbench.cli.app import (
    ExecutorName,
    RayAddress,
    err,
    executor_choice,
    fail,
    fail_setting,
    flag,
    out,
    warn,
)
from execbench.cli.progress import Progress, ProgressEvery, check_every

if TYPE_CHECKING:
    from rich.console import Console

    from execbench.executors import ExecutorChoice
    from execbench.harvest.many import Project
    from execbench.harvest.options import HarvestOptions, HarvestResult

FLAGS = {"max_calls": "--max-calls", "max_events": "--max-events",
         "max_value_nodes": "--max-value-nodes", "max_lines": "--max-lines",
         "timeout": "--timeout", "test_timeout": "--test-timeout", "pip_args": "--pip-args",
         "install_deps": "--install-deps", "language": "--language", "build": "--build",
         "test": "--test"}
"""The flag of each setting ``HarvestOptions`` checks, for its messages."""


def harvest(
    out_file: Annotated[Path, typer.Option(
        "--out", "-o", help="FILE.jsonl for one project (pytest's output in FILE.pytest.log); a "
        "folder for several (or for --projects): one file per project and its pytest log, "
        "a merged harvest.jsonl, resumable.")],
    projects: Annotated[list[Path] | None, typer.Argument(
        help="Project folders or source archives (.tar.gz, .tgz, .tar, .zip); each "
             "one's pytest suite runs.", show_default=False)] = None,
    listing: Annotated[Path | None, typer.Option(
        "--projects", help="A file listing projects, a path per line (relative to the "
        "file's folder; # comments).", show_default=False)] = None,
    package: Annotated[list[str] | None, typer.Option(
        "--package", help="A package on the index, NAME or NAME==VERSION (repeatable): its "
        "source distribution is downloaded (checked against the index's sha256), unpacked "
        "and harvested as a project; every record carries the release's upload date. The "
        "index is pip's (--pip-args '--index-url URL', else pip's settings, else PyPI). "
        "--out is a folder.", show_default=False)] = None,
    packages: Annotated[Path | None, typer.Option(
        "--packages", help="A file listing packages, NAME or NAME==VERSION a line "
        "(# comments).", show_default=False)] = None,
    new_since: Annotated[str | None, typer.Option(
        "--new-since", help="For packages: harvest the first release uploaded after this "
        "day (YYYY-MM-DD) and keep only functions that are not in the last release before "
        "it (new, or changed), each dated by its release.", show_default=False)] = None,
    changed_since: Annotated[str | None, typer.Option(
        "--changed-since", help="For git checkouts: keep only functions whose lines were "
        "last committed after this day (YYYY-MM-DD), each dated by that commit (git "
        "blame, at the commit checked out).", show_default=False)] = None,
    python: Annotated[str, typer.Option(
        help="Interpreter that runs the tests (it needs pytest and the project's "
             "dependencies); default: the one execbench runs on.",
        show_default=False)] = sys.executable,
    pytest_args: Annotated[str, typer.Option(
        help="Arguments for pytest, as one shell-quoted string (e.g. '-k parse -x').")] = "",
    seed: Annotated[int, typer.Option(help="Seed of the calls sampled per function.")] = 0,
    max_calls: Annotated[int, typer.Option(help="Calls kept per function.")] = 5,
    max_events: Annotated[int, typer.Option(
        help="Line events per call; longer calls are dropped.")] = 1_000,
    max_value_nodes: Annotated[int, typer.Option(help="Nodes per recorded value.")] = 100,
    install_deps: Annotated[bool, flag(
        "--install-deps", "Install each project's declared test dependencies (pyproject, "
        "setup.cfg, requirements files; plain requirements only, wheels only) into a cached "
        "virtual environment made from --python, and run its tests there. pip runs in the "
        "jail as an unprivileged user, with the network.")] = False,
    pip_args: Annotated[str, typer.Option(
        help="More arguments for --install-deps' pip, as one shell-quoted string (e.g. "
             "'--index-url URL' or '--no-index --find-links DIR').")] = "",
    literals_only: Annotated[bool, flag(
        "--literals-only", "Keep only calls whose values are builtin values (no methods, "
        "no objects shown by their attributes), as earlier versions did.")] = False,
    max_lines: Annotated[int, typer.Option(
        help="Lines of a function's source; longer functions are dropped.")] = 200,
    timeout: Annotated[float, typer.Option(
        help="Seconds for the whole test run; what was recorded by then is kept.")] = 600.0,
    test_timeout: Annotated[float, typer.Option(
        help="Seconds for one test, its fixtures included; a test past it fails and the "
             "run goes on.")] = 300.0,
    language: Annotated[str, typer.Option(
        help="The projects' language: python (their pytest suite runs), or c or java: "
             "built with --build, tested with --test, recorded under a debugger (GDB, the "
             "JVM's debug interface) in the jail.")] = "python",
    build: Annotated[str, typer.Option(
        help="For c or java: the shell command that builds the project (in the jail; C "
             "gets CFLAGS='-g -O0').")] = "",
    test: Annotated[str, typer.Option(
        help="For c or java: the shell command that runs the project's tests (in the "
             "jail, under the recorder; e.g. 'make test').")] = "",
    executor: ExecutorName = "local",
    ray_address: RayAddress = None,
    progress_every: ProgressEvery = 10.0,
) -> None:
    """Run each project's pytest suite, recording calls of its functions, and write them
    as a generic JSONL source (recorded traces) for `execbench build`. Projects are
    folders, archives or packages on the index (--package); --new-since and
    --changed-since keep only code written after a day, each record dated (meta.date,
    which `build --after/--before` and `report --layout cutoff-split` read).

    A project whose tests did not run (import or collection errors, no tests, a session
    that crashed) fails with pytest's errors and a hint: exit status 1, and the next run
    tries it again."""
    import shlex

    from execbench.executors import EXECUTORS, ExecutorError
    from execbench.harvest.options import HarvestError, HarvestOptions
    from execbench.settings import SettingError

    check_every(progress_every)
    since = _day("--new-since", new_since)
    changed = _day("--changed-since", changed_since)
    try:
        extra = tuple(shlex.split(pytest_args))
    except ValueError as exc:
        fail(f"--pytest-args: {exc}")
    try:
        pip = tuple(shlex.split(pip_args))
    except ValueError as exc:
        fail(f"--pip-args: {exc}")
    named = bool(package or packages)
    if since is not None and not named:
        fail("--new-since picks releases of packages: name some with --package or --packages")
    if changed is not None and not (projects or listing):
        fail("--changed-since dates git checkouts' lines: give project folders")
    try:
        options = HarvestOptions(python=python, pytest_args=extra, seed=seed,
                                 max_calls=max_calls, max_events=max_events,
                                 max_value_nodes=max_value_nodes, objects=not literals_only,
                                 install_deps=install_deps,
                                 pip_args=pip if install_deps or not named else (),
                                 max_lines=max_lines, timeout=timeout,
                                 test_timeout=test_timeout, language=language, build=build,
                                 test=test)
    except SettingError as exc:
        fail_setting(exc, FLAGS)
    given = projects or []
    one_file = len(given) == 1 and listing is None and out_file.suffix == ".jsonl" \
        and not named
    if one_file and executor in EXECUTORS and executor != "local":
        fail(f"--executor {executor} writes a folder of projects: give --out a folder")
    choice = executor_choice(executor, ray_address)
    try:
        if one_file:
            _one(given[0], out_file, options, progress_every, changed)
        else:
            found = _projects(given, listing, package or [], packages, since, pip)
            _many(found, out_file, options, progress_every, choice, changed)
    except (HarvestError, ExecutorError) as exc:
        fail(str(exc))


def _day(flag: str, text: str | None) -> date | None:
    """A day option's value, or the command fails naming the flag."""
    from execbench.sources.dates import DateError, parse_date

    if text is None:
        return None
    try:
        return parse_date(text)
    except DateError as exc:
        fail(f"{flag}: {exc}")


def _projects(given: list[Path], listing: Path | None, names: list[str],
              package_list: Path | None, since: date | None, pip: tuple[str, ...]
              ) -> list[Project]:
    """The folders and archives given, then the packages, each with its release chosen
    (or why none is: its failure); names unique across them all."""
    from execbench.harvest.index import index_url
    from execbench.harvest.many import package_projects, projects_from
    from execbench.harvest.options import HarvestError
    from execbench.harvest.releases import wanted_from

    wanted = wanted_from(names, package_list)
    found = projects_from(given, listing) if given or listing is not None or not wanted \
        else []
    if wanted:
        found += package_projects(wanted, since, index_url(pip))
    taken: set[str] = set()
    for project in found:
        if project.name in taken:
            raise HarvestError(f"two projects are named {project.name!r}")
        taken.add(project.name)
    return found


def _one(project: Path, out_file: Path, options: HarvestOptions, every: float,
         changed: date | None) -> None:
    """One project into one file, its summary printed; pytest's output in
    ``FILE.pytest.log``. Tests that did not run: their errors and a hint, nothing written
    (an older ``FILE`` removed, so nothing builds on stale records), exit status 1."""
    import tempfile

    from execbench.harvest import history
    from execbench.harvest.failures import TestsNotRun
    from execbench.harvest.many import projects_from, unpacked
    from execbench.harvest.options import HarvestError
    from execbench.harvest.project import harvest as run_harvest

    [found] = projects_from([project])
    if changed is not None and not found.path.is_dir():
        raise HarvestError(f"{project}: --changed-since dates a git checkout's lines; an "
                           "archive has no history")
    dating = None if changed is None else history.since_commit(
        found.path, changed, lambda message: warn(message, "undated"))
    log = out_file.with_name(f"{out_file.stem}.pytest.log")
    try:
        with Progress("harvest", "tests", every) as shown, \
                tempfile.TemporaryDirectory(prefix="execbench-project-") as scratch:

            def progress(status: dict[str, Any]) -> None:
                shown.update(status["tests"], status["total"] or None, _recorded(status))

            root = found.path if found.path.is_dir() else \
                unpacked(found.path, Path(scratch) / "unpacked")
            result = run_harvest(root, out_file, options, progress=progress,
                                 warn=lambda message: warn(message, "skipped"), log=log,
                                 dating=dating)
    except TestsNotRun as exc:
        err.print("[bold red]error:[/] " + escape(str(exc)), highlight=False)
        _said(err, exc.errors, exc.hint, log, _nothing_written(out_file))
        raise typer.Exit(1) from None
    except HarvestError as exc:
        raise HarvestError(f"{exc}; {_nothing_written(out_file)}") from None
    out.print(_summary(result), highlight=False, markup=False)
    for message in result.jail_warnings:
        warn(message)
    err.print(f"wrote {result.functions['kept']} functions to {out_file} (pytest's output: "
              f"{log})", highlight=False, markup=False)


def _many(projects: list[Project], out_dir: Path, options: HarvestOptions, every: float,
          executor: ExecutorChoice, changed: date | None) -> None:
    """Several projects (or packages) into a folder: a line per project, then the merged
    file; exit 1 if a project failed (the others are written all the same)."""
    from execbench.harvest.many import Outcome, harvest_projects, log_path

    if out_dir.suffix == ".jsonl" or out_dir.is_file():
        fail(f"--out {out_dir}: several projects are written to a folder, not a file (and "
             "packages always are)")
    done: list[Outcome] = []
    with Progress("harvest", "projects", every) as shown:

        def started(project: Project) -> None:
            shown.update(len(done), len(projects), project.name)

        def progress(project: Project, status: dict[str, Any]) -> None:
            shown.update(len(done), len(projects),
                         f"{project.name}: {status['tests']}/{status['total'] or '?'} tests, "
                         + _recorded(status))

        def finished(outcome: Outcome) -> None:
            done.append(outcome)
            shown.update(len(done), len(projects), f"{outcome.project.name}: {outcome.state}")

        outcomes = harvest_projects(projects, out_dir, options, progress=progress,
                                    warn=lambda message: warn(message, "skipped"),
                                    started=started, executor=executor, finished=finished,
                                    changed_since=changed)
        shown.update(len(projects), len(projects))
    failed = 0
    for outcome in outcomes:
        summary = outcome.summary
        if outcome.state == "failed":
            failed += 1
            out.print(f"{outcome.project.name}: failed: {summary['error']}", highlight=False,
                      markup=False)
            if summary.get("hint"):
                _said(out, summary["errors"], summary["hint"],
                      log_path(out_dir / "projects", outcome.project.name))
            continue
        done, total = summary["tests"]
        hung = f", {len(summary['hung'])} stopped at --test-timeout" if summary["hung"] else ""
        out.print(f"{outcome.project.name}: {outcome.state}; tests {done} of {total}{hung}; "
                  f"functions {summary['functions'].get('kept', 0)} kept, calls "
                  f"{summary['calls'].get('kept', 0)} kept{_ages(summary)}", highlight=False,
                  markup=False)
    kept = len(outcomes) - failed
    err.print(f"wrote {out_dir / 'harvest.jsonl'} ({kept} of {len(outcomes)} projects; "
              f"each in {out_dir / 'projects'})", highlight=False)
    if failed:
        raise typer.Exit(1)


def _ages(summary: dict[str, Any]) -> str:
    """What a dated harvest says of its functions' age: the release and what it was
    compared with, and the count of each state (``ages``)."""
    release = summary.get("release") or {}
    said = f"; release {release['version']} of {release['uploaded'][:10]}" if release else ""
    if release.get("new_since"):
        said += f", against {release['compared_with'] or 'no earlier release'}"
    counts = summary.get("ages")
    if counts:
        said += "; listed functions " + ", ".join(f"{n} {state}" for state, n in counts.items()
                                                  if n or state != "undated")
    return said


def _nothing_written(out_file: Path) -> str:
    """Says nothing was written to ``out_file``, removing the file an earlier harvest left
    there (or saying why it stays)."""
    try:
        out_file.unlink()
    except FileNotFoundError:
        return f"nothing written to {out_file}"
    except OSError as exc:
        return f"nothing written to {out_file}; the one there left as it was: {exc.strerror}"
    return f"nothing written to {out_file}; the one an earlier harvest wrote there removed"


def _said(console: Console, errors: list[str], hint: str, log: Path, *more: str) -> None:
    """pytest's error lines (indented), the hint and where its whole output is."""
    lines = [f"    {line}" for line in errors] or ["    (pytest printed nothing)"]
    lines += [f"  hint: {hint}", f"  pytest's whole output: {log}", *(f"  {m}" for m in more)]
    console.print("\n".join(lines), highlight=False, markup=False)


def _recorded(status: dict[str, Any]) -> str:
    return f"{status['calls']} calls of {status['functions']} functions recorded"


def _summary(result: HarvestResult) -> str:
    """How the tests ended, then what was kept and dropped, by reason, most first."""
    from execbench.harvest.project import NEVER_CALLED

    done, total = result.tests
    exit_note = "stopped at --timeout" if result.timed_out else (
        f"pytest exit status {result.pytest_exit}" if result.pytest_exit is not None
        else f"stopped: {result.stopped}" if result.stopped else "the test run ended early")
    say = [f"tests: {done} of {total} finished ({exit_note}); network: {result.network}"]
    if result.hung:
        shown = ", ".join(result.hung[:3]) + (", ..." if len(result.hung) > 3 else "")
        say.append(f"tests stopped at --test-timeout: {len(result.hung)} ({shown})")
    never = result.functions[NEVER_CALLED]
    for what, counts in (("functions", result.functions), ("calls", result.calls)):
        dropped = {k: v for k, v in counts.items() if k not in ("kept", NEVER_CALLED)}
        said = f"{what}: {counts['kept']} kept, {sum(dropped.values()):,} dropped"
        say.append(said + (f", {never} never called by the tests" if what == "functions" else ""))
        say += [f"  {n:>11,}  {reason}" for reason, n in
                sorted(dropped.items(), key=lambda item: (-item[1], item[0]))]
    if result.ages:
        say.append("listed functions by date: " + ", ".join(
            f"{n} {state}" for state, n in sorted(result.ages.items())))
    say.append(f"records refused: {sum(result.refused.values()):,}")
    say += [f"  {n:>11,}  {reason}" for reason, n in result.refused.most_common()]
    return "\n".join(say)
