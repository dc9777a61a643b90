"""The typer app and what its commands share: the consoles, refusing bad input with exit
status 2 and the results table (progress is ``cli.progress``)."""

from __future__ import annotations

import functools
import shutil
import sys
from collections.abc import Callable, Mapping
from typing import Annotated, Any, NoReturn, ParamSpec

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

import execbench.import_guard  # noqa: F401 - first: a folder hiding the package, in one line
from execbench import __version__
from execbench.settings import SettingError, at_least_one
from execbench.text_safety import visible

P = ParamSpec("P")

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="Build execution-reasoning benchmarks and evaluate models on them.")


class SafeConsole(Console):
    """A console that prints text from outside (a model's reply, a project's test output,
    a dataset's names) as written: its control characters and lone surrogates as escapes
    (``text_safety.visible``), so none drives the terminal or stops the output, and no
    ``:name:`` read as an emoji code. The console's own colours are added after."""

    def render_str(self, text: str, **options: Any) -> Text:
        return super().render_str(visible(text), **{**options, "emoji": False})


# soft_wrap: a message piped to a log stays on one line instead of wrapping at 80 columns.
err = SafeConsole(stderr=True, soft_wrap=True)
out = SafeConsole(soft_wrap=True)


ExecutorName = Annotated[str, typer.Option(
    "--executor", help="Where the work runs: local (here) or ray (Ray tasks on whichever "
    "node has room; needs execbench[ray]); the output is the same bytes.")]
RayAddress = Annotated[str | None, typer.Option(
    "--ray-address", help="The Ray cluster's HOST:PORT (ray://HOST:PORT needs ray[client]); "
    "default: the one RAY_ADDRESS names, else one `ray start` began on this machine, else "
    "a new one here.", show_default=False)]


def executor_choice(name: str, ray_address: str | None) -> Any:
    """``--executor`` and ``--ray-address`` as an ``ExecutorChoice``, or a one-line error."""
    from execbench.executors import ExecutorChoice, ExecutorError

    try:
        return ExecutorChoice(name, ray_address)
    except ExecutorError as exc:
        fail(str(exc))


def flag(name: str, help: str) -> Any:  # noqa: A002 - typer's own keyword
    """A plain on/off option (``--dry-run``, no ``--no-dry-run``), shown without a value
    placeholder in the help: it takes none."""
    return typer.Option(name, metavar="", help=help)


def plugin_errors_said(function: Callable[P, None]) -> Callable[P, None]:
    """``function`` as a command that ends in one line, not a traceback, when it reaches
    a plugin that cannot be loaded: any command may (a suite's task, a format, a model
    provider from another package), and what failed is the user's to fix."""

    @functools.wraps(function)
    def checked(*args: P.args, **kwargs: P.kwargs) -> None:
        from execbench.plugins import PluginError

        try:
            function(*args, **kwargs)
        except PluginError as exc:
            fail(str(exc))

    return checked


def one_line_summaries() -> None:
    """Give each command without one a short help of its docstring's first paragraph on
    one line. Without it, the rich help's command list keeps the docstring's own line
    breaks (typer joins them only for a command's own help), so ``execbench --help`` broke
    its lines mid-sentence wherever the source did, whatever the terminal's width."""
    for info in app.registered_commands:
        doc = info.callback.__doc__ if info.callback is not None else None
        if info.short_help is None and doc:
            info.short_help = " ".join(doc.strip().split("\n\n")[0].split())


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


def print_results(record: dict[str, Any]) -> None:
    """The default layout's tables of one run, after ``run`` and ``score``."""
    from execbench.reports.families import family_tables
    from execbench.reports.tables import available_ks, render
    from execbench.rundir import Results

    results = [Results.from_record(record)]
    tables = family_tables(results, available_ks(results))
    sys.stdout.write(render(tables, "text", width=shutil.get_terminal_size().columns))


@app.callback(invoke_without_command=True)
def _main(version: Annotated[bool, flag("--version", "Print the version.")] = False) -> None:
    if version:
        out.print(f"execbench {__version__}")
        raise typer.Exit()


def task_list(text: str) -> list[str]:
    """The task names of a --tasks value (``api.task_names``), or a one-line refusal."""
    from execbench.api import task_names

    try:
        return task_names(text)
    except SettingError as exc:
        fail_setting(exc, {"tasks": "--tasks"})
