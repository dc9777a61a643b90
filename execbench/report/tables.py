"""Side-by-side tables of several runs' results, in the formats people paste them into.

Rows are built once as plain strings and then rendered, so every format shows exactly the
same numbers: a terminal table, a GitHub markdown table, CSV for spreadsheets, and JSON for
scripts.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import Counter
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from execbench.tasks.base import CORRECT, ERROR, INCORRECT, UNPARSABLE

FORMATS = ("text", "markdown", "csv", "json")
MISSING = "-"
VERDICT_COLUMNS = (CORRECT, INCORRECT, UNPARSABLE, ERROR)
"""The verdicts that have a column; the rare ``scoring_error`` (and any verdict of an older
log) is counted under ``other``."""


def run_labels(results: list[dict[str, Any]]) -> list[str]:
    """One label per run: the model, with the run directory added only where needed.

    Most comparisons are between models, so the model name alone reads best; two runs of
    the same model (say, different prompts) would be indistinguishable without the
    directory.
    """
    models = Counter(result["run"]["model"] for result in results)
    labels = []
    for result in results:
        run = result["run"]
        model = run["model"]
        labels.append(f"{model} ({run['run_dir']})" if models[model] > 1 else model)
    return labels


def comparison_rows(
    results: list[dict[str, Any]], *, by_source: bool = False
) -> tuple[list[str], list[list[str]]]:
    """Headers and rows comparing runs task by task (percentages with one decimal).

    Each task gets pass@1, pass@5 when some run drew at least five samples, and the 95%
    accuracy interval as ``[lo, hi]``. A run that lacks a task (or source, or pass@5) shows
    ``-``. With ``by_source`` every run gets one row per source it covers, because a score
    averaged over sources can hide that a model is strong on one and weak on another.
    """
    tasks = sorted({task for result in results for task in result["metrics"]})
    show_pass5 = any(result["run"]["n"] >= 5 for result in results)
    metric_keys = ["pass@1", "pass@5"] if show_pass5 else ["pass@1"]

    headers = ["run", "source"] if by_source else ["run"]
    for task in tasks:
        headers += [f"{task} {key} (%)" for key in metric_keys]
        headers.append(f"{task} accuracy CI95 (%)")

    rows: list[list[str]] = []
    for label, result in zip(run_labels(results), results, strict=True):
        metrics = result["metrics"]
        if by_source:
            sources = sorted(
                {source for task_block in metrics.values() for source in task_block["by_source"]}
            )
            for source in sources:
                groups = [metrics.get(task, {}).get("by_source", {}).get(source) for task in tasks]
                rows.append([label, source, *_metric_cells(groups, metric_keys)])
        else:
            groups = [metrics[task]["all"] if task in metrics else None for task in tasks]
            rows.append([label, *_metric_cells(groups, metric_keys)])
    return headers, rows


def _metric_cells(groups: list[dict[str, Any] | None], metric_keys: list[str]) -> list[str]:
    """The cells of one row: for each task's metrics group, its pass@k values and interval."""
    cells: list[str] = []
    for group in groups:
        if group is None:
            cells += [MISSING] * (len(metric_keys) + 1)
            continue
        cells += [percent(group.get(key)) for key in metric_keys]
        low, high = group["accuracy_ci95"]
        cells.append(f"[{percent(low)}, {percent(high)}]")
    return cells


def percent(value: float | None) -> str:
    """A fraction as a percentage with one decimal; absent (or undefined) values as ``-``."""
    if value is None or math.isnan(value):
        return MISSING
    return f"{100 * value:.1f}"


def verdict_rows(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Headers and rows counting each run's verdicts over all of its tasks.

    These show *why* runs differ: a model that mostly returns unparsable answers, or a run
    hit by request errors, needs fixing before its accuracy means anything. ``truncated``
    (answers cut off at the token limit) and ``refused`` (refused or filtered) count samples
    whatever their verdict, so that a cut-off answer is not read as an ordinary wrong one;
    runs from before they were counted show ``-``.
    """
    headers = ["run", *VERDICT_COLUMNS, "other", "truncated", "refused"]
    rows: list[list[str]] = []
    for label, result in zip(run_labels(results), results, strict=True):
        counts: Counter[str] = Counter()
        for task_block in result["metrics"].values():
            counts.update(task_block["all"]["verdicts"])
        named = [counts[verdict] for verdict in VERDICT_COLUMNS]
        other = sum(counts.values()) - sum(named)
        apart = [str(result["counts"].get(key, "-")) for key in ("truncated", "refused")]
        rows.append([label, *(str(count) for count in named), str(other), *apart])
    return headers, rows


def render_table(headers: list[str], rows: list[list[str]], fmt: str) -> str:
    """Render a table as ``text`` (rich), ``markdown``, ``csv`` or ``json``."""
    if fmt == "text":
        return _render_text(headers, rows)
    if fmt == "markdown":
        return _render_markdown(headers, rows)
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(headers)
        writer.writerows(rows)
        return buffer.getvalue()
    if fmt == "json":
        return json.dumps([dict(zip(headers, row, strict=True)) for row in rows], indent=2) + "\n"
    raise ValueError(f"unknown table format {fmt!r}; expected one of {', '.join(FORMATS)}")


def _render_text(headers: list[str], rows: list[list[str]]) -> str:
    """A boxed rich table, wide enough that no cell wraps and free of terminal colour codes.

    Cells go in as ``Text`` so that brackets in them (intervals, model names) are shown
    as they are rather than read as rich markup.
    """
    table = Table()
    for header in headers:
        table.add_column(Text(header))
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    # Each column takes its widest cell plus padding and a border.
    width = 1 + sum(
        max(cell_len(cell) for cell in [header, *(row[i] for row in rows)]) + 3
        for i, header in enumerate(headers)
    )
    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None).print(table)
    return buffer.getvalue()


def _render_markdown(headers: list[str], rows: list[list[str]]) -> str:
    """A GitHub pipe table; pipes inside cells are escaped so they do not split columns."""

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    return "\n".join([line(headers), line(["---"] * len(headers)), *map(line, rows)]) + "\n"
