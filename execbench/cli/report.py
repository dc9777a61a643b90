"""``execbench report``: compare runs in a layout's tables, a figure and an HTML page."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from execbench.cli.app import err, fail, warn

if TYPE_CHECKING:
    from execbench.report.layouts import Layout


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
    html: Annotated[Path | None, typer.Option(
        help="Also write one self-contained HTML page: leaderboard, every layout present "
             "with its figures (the plot extra), verdicts and failures, and a sample browser.")
    ] = None,
) -> None:
    """Compare runs: a layout's tables on stdout (and, with --html, a page to open)."""
    from execbench.report.comparable import coverage_warning
    from execbench.report.layouts import View
    from execbench.report.tables import FORMATS as TABLE_FORMATS
    from execbench.report.tables import render, verdict_table

    if fmt not in TABLE_FORMATS:
        fail(f"unknown format {fmt!r}; choose one of {', '.join(TABLE_FORMATS)}")
    chosen = _layout(layout, plot is not None, by_source)
    results = _load_results(run_dirs)
    mismatch = coverage_warning(results)
    if mismatch is not None:
        warn(mismatch)
    tables = chosen.sections(results, View(ks=_ks(k, results), by_source=by_source))
    if verdicts:
        tables.append(verdict_table(results))
    sys.stdout.write(render(tables, fmt, width=shutil.get_terminal_size().columns))
    if plot is not None and chosen.figure is not None:
        try:
            image = chosen.draw(results)
        except RuntimeError as exc:
            fail(str(exc))
        plot.parent.mkdir(parents=True, exist_ok=True)
        plot.write_bytes(image)
        err.print(f"plot written to {plot}", highlight=False)
    if html is not None:
        _write_html(html, run_dirs, results)


def _layout(name: str, plot: bool, by_source: bool) -> Layout:
    """The layout called ``name``, refused where it cannot do what was asked of it."""
    from execbench.report.layouts import LAYOUTS, layouts

    if name not in LAYOUTS:
        fail(str(LAYOUTS.unknown([name])))
    chosen = LAYOUTS.get(name)
    if plot and chosen.figure is None:
        with_figure = [other for other, item in layouts().items() if item.figure is not None]
        fail(f"--plot needs a layout that has a figure (--layout {' or '.join(with_figure)}); "
             f"the {name} layout has none")
    if by_source and not chosen.by_source:
        fail(f"--by-source concerns the default layout; the {name} layout has its own rows")
    return chosen


def _load_results(run_dirs: list[Path]) -> list[dict[str, Any]]:
    """Each run's results.json; a folder without one is skipped with a warning, and no
    run at all is an error."""
    from execbench.rundir import not_a_run, stale_suite

    results = []
    for folder in run_dirs:
        path = folder / "results.json"
        if not path.is_file():
            warn(not_a_run(folder), "skipped")
            continue
        stale = stale_suite(folder)
        if stale:
            warn(stale)
        results.append(json.loads(path.read_text(encoding="utf-8")))
    if not results:
        fail("no run with results to report")
    return results


def _ks(text: str | None, results: list[dict[str, Any]]) -> list[int]:
    """The pass@k columns: those ``--k`` names, or every k up to the largest n."""
    from execbench.report.tables import available_ks

    available = available_ks(results)
    if text is None:
        return available
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        fail(f"--k takes comma-separated whole numbers, not {text!r}")
    if not ks or ks[0] < 1:
        fail(f"--k takes numbers of at least 1, not {text!r}")
    if ks[-1] > available[-1]:
        fail(f"--k {ks[-1]}: no run drew that many samples (the most is n={available[-1]}), "
             "so pass@k is not defined")
    return ks


def _write_html(path: Path, run_dirs: list[Path], results: list[dict[str, Any]]) -> None:
    from execbench.cli.progress import Progress
    from execbench.jsonfiles import utf8
    from execbench.report.html import render_html
    from execbench.runner import RunError

    folders = [folder for folder in run_dirs if (folder / "results.json").is_file()]
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
