"""``execbench harvest``: record calls of a project's functions while its tests run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from execbench.cli.app import counts_at_least_one, err, fail, out, warn
from execbench.cli.progress import Progress, ProgressEvery, check_every

if TYPE_CHECKING:
    from execbench.sources.harvest import HarvestResult


def harvest(
    project: Annotated[Path, typer.Argument(help="The project folder (its pytest suite runs).")],
    out_file: Annotated[Path, typer.Option("--out", "-o", help="JSONL file to write.")],
    python: Annotated[str, typer.Option(
        help="Interpreter that runs the tests (it needs pytest and the project's "
             "dependencies); default: this one.")] = sys.executable,
    pytest_args: Annotated[str, typer.Option(
        help="Arguments for pytest, as one shell-quoted string (e.g. '-k parse -x').")] = "",
    seed: Annotated[int, typer.Option(help="Seed of the calls sampled per function.")] = 0,
    max_calls: Annotated[int, typer.Option(help="Calls kept per function.")] = 5,
    max_events: Annotated[int, typer.Option(
        help="Line events per call; longer calls are dropped.")] = 1_000,
    max_value_nodes: Annotated[int, typer.Option(help="Nodes per recorded value.")] = 100,
    max_lines: Annotated[int, typer.Option(
        help="Lines of a function's source; longer functions are dropped.")] = 200,
    timeout: Annotated[float, typer.Option(
        help="Seconds for the whole test run; what was recorded by then is kept.")] = 600.0,
    test_timeout: Annotated[float, typer.Option(
        help="Seconds for one test, its fixtures included; a test past it fails and the "
             "run goes on.")] = 60.0,
    progress_every: ProgressEvery = 10.0,
) -> None:
    """Run PROJECT's pytest suite, recording calls of its functions, and write them as a
    generic JSONL source (recorded traces) for `execbench build`."""
    import shlex

    from execbench.sources.harvest import HarvestError, HarvestOptions
    from execbench.sources.harvest import harvest as run_harvest

    counts_at_least_one({"--max-calls": max_calls, "--max-events": max_events,
                         "--max-value-nodes": max_value_nodes, "--max-lines": max_lines})
    check_every(progress_every)
    for flag, seconds in (("--timeout", timeout), ("--test-timeout", test_timeout)):
        if not seconds > 0:
            fail(f"{flag} must be positive, not {seconds}")
    try:
        extra = tuple(shlex.split(pytest_args))
    except ValueError as exc:
        fail(f"--pytest-args: {exc}")
    options = HarvestOptions(python=python, pytest_args=extra, seed=seed, max_calls=max_calls,
                             max_events=max_events, max_value_nodes=max_value_nodes,
                             max_lines=max_lines, timeout=timeout,
                             test_timeout=test_timeout)
    with Progress("harvest", "tests", progress_every) as shown:

        def progress(status: dict[str, Any]) -> None:
            shown.update(status["tests"], status["total"] or None,
                         f"{status['calls']} calls of {status['functions']} functions "
                         "recorded")

        try:
            result = run_harvest(project, out_file, options, progress=progress,
                                 warn=lambda message: warn(message, "skipped"))
        except HarvestError as exc:
            fail(str(exc))
    out.print(_summary(result), highlight=False, markup=False)
    for message in result.jail_warnings:
        warn(message)
    if result.pytest_exit is None and not result.timed_out and not result.stopped:
        err.print("the test run ended early; the end of its output:\n" + result.log[-2000:],
                  highlight=False, markup=False)
    err.print(f"wrote {result.functions['kept']} functions to {out_file}", highlight=False)


def _summary(result: HarvestResult) -> str:
    """How the tests ended, then what was kept and dropped, by reason, most first."""
    from execbench.sources.harvest import NEVER_CALLED

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
    say.append(f"records refused: {sum(result.refused.values()):,}")
    say += [f"  {n:>11,}  {reason}" for reason, n in result.refused.most_common()]
    return "\n".join(say)
