"""``execbench report``: compare runs in a layout's tables, a figure and an HTML page."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from execbench.cli.app import err, fail, fail_setting, warn

if TYPE_CHECKING:
    from execbench.rundir import Results


def report(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run folders to compare.")],
    fmt: Annotated[str, typer.Option(
        "--format", help="text (fits the terminal), markdown, csv (one table) or json (one "
                         "document).")] = "text",
    by_source: Annotated[bool, typer.Option(
        help="One row per source (the default layout).")] = False,
    verdicts: Annotated[bool, typer.Option(help="Also show verdict counts.")] = False,
    layout: Annotated[str, typer.Option(
        help="The tables to show (`execbench ls layouts` lists them).")] = "default",
    k: Annotated[str | None, typer.Option(
        "--k", help="pass@k columns, comma-separated (default: every k up to the largest n).")
    ] = None,
    plot: Annotated[Path | None, typer.Option(
        help="With a layout that has a figure (generalization): also write it as a PNG "
             "(needs the plot extra).")] = None,
    plots: Annotated[Path | None, typer.Option(
        help="Write the figure of every layout the runs have (see --html) into this folder, "
             "each as LAYOUT.png and LAYOUT.svg (needs the plot extra).")] = None,
    compare: Annotated[bool, typer.Option(
        "--compare", help="Two runs: the paired difference of each per-instance number "
                          "(pass@1, string match, score) on the instances both answered, "
                          "with its bootstrap interval and whether it excludes 0.")] = False,
    html: Annotated[Path | None, typer.Option(
        help="Also write one self-contained HTML page: leaderboard, every layout present "
             "with its figures (the plot extra), verdicts and failures, and a sample browser.")
    ] = None,
    tasks: Annotated[str | None, typer.Option(
        help="Only these tasks (comma-separated, as `run --tasks`): their tables, figures "
             "and samples; pairings of two of them stay.")] = None,
    model_cards: Annotated[Path | None, typer.Option(
        metavar="FILE.toml",
        help="Model cards (a TOML table of release and cutoff per model name, as `run "
             "--model-cards` reads) for runs that carry no dates of their own; a run's own "
             "dates win.")] = None,
) -> None:
    """Compare runs: a layout's tables on stdout (and, with --html, a page to open)."""
    from execbench.api import ReportConfig
    from execbench.api import report as make_report
    from execbench.settings import SettingError

    config = ReportConfig(runs=run_dirs, layout=layout, fmt=fmt, k=_ks(k),
                          by_source=by_source, verdicts=verdicts, figure=plot is not None,
                          width=shutil.get_terminal_size().columns, compare=compare,
                          model_cards=model_cards,
                          tasks=None if tasks is None else _names(tasks))
    try:
        made = make_report(config)
    except SettingError as exc:
        fail_setting(exc, FLAGS)
    for folder in made.skipped:
        warn(folder, "skipped")
    for warning in made.warnings:
        warn(warning)
    sys.stdout.write(made.text)
    if plot is not None and made.figure is not None:
        plot.parent.mkdir(parents=True, exist_ok=True)
        plot.write_bytes(made.figure)
        err.print(f"plot written to {plot}", highlight=False)
    if plots is not None:
        _write_plots(plots, made.results)
    if html is not None:
        _write_html(html, made.results)


def _write_plots(folder: Path, results: list[Results]) -> None:
    from execbench.reports.layouts import figure_files

    try:
        files = figure_files(results)
    except RuntimeError as exc:  # no matplotlib
        fail(f"--plots: {exc}")
    if not files:
        warn("--plots: no layout these runs have draws a figure (`execbench ls layouts` "
             "says which do); nothing written")
        return
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    err.print(f"{len(files)} plot files written to {folder}", highlight=False)


FLAGS = {"figure": "--plot", "layout": "--layout", "by_source": "--by-source", "k": "--k",
         "compare": "--compare", "model_cards": "--model-cards", "tasks": "--tasks"}
"""The flag of each setting ``ReportConfig`` names in its messages."""


def _names(text: str) -> list[str]:
    """The task names ``--tasks`` lists, in order, each once."""
    return list(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))


def _ks(text: str | None) -> list[int] | None:
    """The pass@k columns ``--k`` names (checked against the runs by the report)."""
    if text is None:
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        fail(f"--k takes comma-separated whole numbers, not {text!r}")


def _write_html(path: Path, results: list[Results]) -> None:
    from execbench.cli.progress import Progress
    from execbench.jsonfiles import utf8
    from execbench.reports.html import render_html
    from execbench.runner import RunError

    folders = [Path(result.run_dir) for result in results]  # the folders read, in order
    try:
        with Progress("report", "runs") as shown:
            page, warnings = render_html(folders, results,
                                         lambda done, total: shown.update(done, total))
    except RunError as exc:  # results.json without the run's settings or samples
        fail(str(exc))
    for warning in warnings:
        warn(warning)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(utf8(page))
    err.print(f"HTML report written to {path}", highlight=False)
