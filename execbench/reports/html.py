"""One self-contained HTML page for some runs: a leaderboard, charts, each layout's tables
and figures, verdict and failure breakdowns, and a sample browser.

Everything is inline (styles, script, charts as SVG, layout figures as base64 PNG,
samples as compressed JSON, see ``browser_data``), so the file opens anywhere with the
network off. The leaderboard's column groups come from the task families' declared
headline metrics and the sections from the layout registry, so a new family or layout
appears without a change here.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from markupsafe import Markup

from execbench.reports import browser_data
from execbench.reports.charts import charts
from execbench.reports.layouts import View, shown_layouts
from execbench.reports.leaderboard import by_suite, headline, rows
from execbench.reports.meanings import TERMS, footnotes, meaning
from execbench.reports.tables import (
    Table,
    available_ks,
    cell_text,
    run_labels,
    verdict_table,
)
from execbench.results import DeclaredMetric
from execbench.rundir import Results
from execbench.tasks.base import ERROR, INCORRECT, UNPARSABLE
from execbench.text_safety import visible

TEMPLATES = Path(__file__).parent / "templates"


@dataclass(frozen=True)
class _Cell:
    """A leaderboard cell as the template marks it."""

    text: str
    silent: bool
    """The run gave no readable answer to the column's task."""
    best: bool


@dataclass(frozen=True)
class _Row:
    """A run's row of the leaderboard."""

    label: str
    cells: list[_Cell]


@dataclass(frozen=True)
class _Column:
    """A leaderboard column: a headline metric and what its number means."""

    metric: DeclaredMetric
    meaning: str


@dataclass(frozen=True)
class _Family:
    """A column group of the leaderboard: a task family's headline metrics."""

    family: str
    columns: list[_Column]


@dataclass(frozen=True)
class _Leaderboard:
    """What the template draws one leaderboard from: the runs of one suite."""

    suite: str | None
    """The suite's name where the runs answered several (one leaderboard each)."""
    groups: list[_Family]
    rows: list[_Row]
    footnotes: list[tuple[str, str]]
    """(column, meaning) for every column."""


@dataclass(frozen=True)
class _Section:
    """A layout's part of the page."""

    name: str
    description: str
    tables: list[Table]
    figure: str | None
    """The layout's figure as base64 PNG."""
    figure_note: str
    """Why drawing the layout's figure failed (matplotlib missing); empty otherwise."""


def _leaderboards(results: Sequence[Results]) -> list[_Leaderboard]:
    """One leaderboard per suite the runs answered (``leaderboard.by_suite``): a column
    never holds two suites' numbers."""
    suites = by_suite(results)
    return [_leaderboard(members, suite if len(suites) > 1 else None)
            for suite, members in suites]


def _leaderboard(results: Sequence[Results], suite: str | None) -> _Leaderboard:
    """Column groups (one per family) and rows (one per model), the best value of each
    column marked among the runs that answered its task (``meanings.TERMS["best"]``),
    however many did, wherever the board compares two rows or more: a run that answered
    nothing (every request failed, no answer readable) has no wrong answers and no
    'suspicious' successes, but that 0 is no achievement."""
    metrics = headline(results)
    table = rows(results, metrics)
    best: list[float | None] = []
    for column, metric in enumerate(metrics):
        present = [value for row in table
                   if (value := row.values[column]) is not None and not row.silent[column]]
        pick = max if metric.higher_is_better else min
        best.append(pick(present) if present and len(table) > 1 else None)
    groups = [_Family(family, [_Column(m, meaning(m)) for m in members])
              for family, members in groupby(metrics, key=lambda m: m.family)]
    return _Leaderboard(
        suite, groups,
        [_Row(row.label, [_Cell(cell_text(value), row.silent[i],
                                value is not None and not row.silent[i] and value == best[i])
                          for i, value in enumerate(row.values)])
         for row in table],
        footnotes(metrics))


def _breakdown(results: Sequence[Results]) -> list[Table]:
    """Verdicts per run and task, and the failure labels tasks attach to samples."""
    labels = run_labels(results)
    verdicts = sorted({v for r in results for block in r.metrics.values()
                       for v in block.all.verdicts})
    per_task = Table("Verdicts per task (samples)", ["run", "task", *verdicts],
                     [[label, task, *(block.all.verdicts.get(v, 0) for v in verdicts)]
                      for label, result in zip(labels, results, strict=True)
                      for task, block in sorted(result.metrics.items())], keys=2)
    failures = Table("Failure labels (samples)", ["run", "task", "failure", "samples"],
                     [[label, task, name, count]
                      for label, result in zip(labels, results, strict=True)
                      for task, block in sorted(result.metrics.items())
                      for name, count in sorted(block.all.failures.items())],
                     keys=2, note="Labels a task gives failed samples where a rule can "
                                  "decide it (format_error, hallucination, ...).")
    return [verdict_table(results), per_task] + ([failures] if failures.rows else [])


def _sections(results: Sequence[Results]) -> list[_Section]:
    """The layouts ``shown_layouts`` picks, each with its tables and, where it has one and
    matplotlib is installed, its figure."""
    sections = []
    for layout, shown in shown_layouts(results):
        figure, note = None, ""
        if layout.figure is not None:
            try:
                figure = base64.b64encode(layout.draw(shown)).decode("ascii")
            except RuntimeError as exc:
                note = str(exc)
        sections.append(_Section(layout.name, layout.description,
                                 layout.sections(shown, View(ks=available_ks(shown))),
                                 figure, note))
    return sections


def _shown(value: Any) -> Any:
    """Every value the template writes, before it is escaped: text from run folders and
    datasets with its control characters and lone surrogates as escapes (the page must be
    UTF-8, and shows what was written). What the template marks safe (style, script, the
    SVG charts) is the page's own."""
    return visible(value) if isinstance(value, str) and not isinstance(value, Markup) \
        else value


@dataclass(frozen=True)
class _Wrong:
    """A row of "What went wrong": one run's one task, and its samples of each verdict that
    is not right (``WRONG_VERDICTS``), each a link to those samples in the browser."""

    run: str
    task: str
    samples: int
    counts: list[tuple[str, str, int]]
    """(verdict, the browser's fragment that lists those samples, how many)."""


WRONG_VERDICTS = (INCORRECT, UNPARSABLE, ERROR)
"""The verdicts the page counts up top: wrong, unreadable, and no answer at all."""


def _wrong(results: Sequence[Results]) -> list[_Wrong]:
    """Per run and task with a sample that is not right, how many of each verdict."""
    rows = []
    for label, result in zip(run_labels(results), results, strict=True):
        for task, block in sorted(result.metrics.items()):
            verdicts = block.all.verdicts
            # the browser's filters hold the run and task as its data shows them (visible)
            counts = [(verdict, "#" + urlencode({"run": visible(label), "task": visible(task),
                                                  "verdict": verdict}),
                       int(verdicts.get(verdict, 0))) for verdict in WRONG_VERDICTS]
            if any(count for *_, count in counts):
                rows.append(_Wrong(label, task, block.all.samples, counts))
    return rows


def render_html(run_dirs: list[Path], results: Sequence[Results],
                progress: Callable[[int, int], None] | None = None) -> tuple[str, list[str]]:
    """The page for runs (``run_dirs`` and their loaded ``results``, in the same order),
    and warnings about samples whose prompt cannot be shown as sent; ``progress`` is told
    how many runs' samples are read."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             finalize=_shown)
    env.filters["cell"] = cell_text
    samples, count, logged, warnings = browser_data.pack(
        run_dirs, run_labels(results), progress, [frozenset(r.metrics) for r in results])
    page = env.get_template("report.html.j2").render(
        runs=[{"label": label, **result.to_record()["run"], "counts": result.counts,
               "protocol": result.config.protocol().label(),
               "dates": result.config.dates().label() or "-"}
              for label, result in zip(run_labels(results), results, strict=True)],
        dated=any(result.config.dates() for result in results),
        leaderboards=_leaderboards(results), terms=TERMS, charts=charts(results),
        wrong=_wrong(results),
        sections=_sections(results),
        breakdown=_breakdown(results), samples=samples, sample_count=count,
        sample_note=None if count == logged else
        f"The page holds {count:,} of the runs' {logged:,} samples: the first "
        f"{browser_data.PER_TASK:,} "
        "of each task of each run, wrong answers first, then by instance id. The tables "
        "above count them all; "
        "`execbench show RUN` shows any sample.",
        style=(TEMPLATES / "report.css").read_text(encoding="utf-8"),
        script=(TEMPLATES / "report.js").read_text(encoding="utf-8"))
    return page, warnings
