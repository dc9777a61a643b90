"""The typer app and what its commands share: the consoles, refusing bad input with exit
status 2, progress bars and the results table."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from execbench import __version__
from execbench.settings import SettingError, at_least_one

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Build execution-reasoning benchmarks and evaluate models on them.")
# soft_wrap: a message piped to a log stays on one line instead of wrapping at 80 columns.
err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)


def fail(message: str, code: int = 2) -> NoReturn:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    raise typer.Exit(code)


def warn(message: str, what: str = "warning:") -> None:
    err.print(f"[yellow]{what}[/] {escape(message)}", highlight=False)


def fail_setting(error: SettingError, flags: Mapping[str, str]) -> NoReturn:
    """Fail with a setting's error, each setting called by its flag."""
    fail(error.named(flags))


def counts_at_least_one(counts: dict[str, int | None]) -> None:
    """Refuse a count option below 1 (None: not given); ``counts`` are keyed by flag."""
    try:
        at_least_one(counts)
    except SettingError as exc:
        fail(str(exc))


def pairs(items: list[str], flag: str) -> dict[str, str]:
    """``key=value`` options (``-T``, ``-M``) as a dict."""
    result = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            fail(f"{flag} expects key=value, got {item!r}")
        result[key.strip()] = value
    return result


def progress_bar() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[note]}"), TimeRemainingColumn(), console=err,
                    transient=False, disable=not err.is_terminal)


def print_results(results: list[dict]) -> None:
    """The default layout's tables of one run, after ``run`` and ``score``."""
    from execbench.report.families import family_tables
    from execbench.report.tables import available_ks, render

    tables = family_tables(results, available_ks(results))
    sys.stdout.write(render(tables, "text", width=shutil.get_terminal_size().columns))


@app.callback(invoke_without_command=True)
def _main(version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False
          ) -> None:
    if version:
        out.print(f"execbench {__version__}")
        raise typer.Exit()


def task_list(text: str, *, known_only: bool = True) -> list[str]:
    """The task names of a --tasks value; an empty list is refused, and so is a name no
    task has unless ``known_only`` is off (a run says which tasks its suite has instead)."""
    from execbench.tasks.base import TASKS

    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        fail(f"--tasks names no task; known tasks: {', '.join(TASKS.names())}")
    unknown = [t for t in names if t not in TASKS]
    if known_only and unknown:
        fail(str(TASKS.unknown(unknown)))
    return names
