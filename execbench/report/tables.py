"""Tables of runs' results, in the formats people paste them into or feed to scripts.

A table holds typed cells (numbers, ``(low, high)`` intervals, text, ``None`` for absent)
and is rendered once per format, so every format shows the same numbers: a terminal
table that fits the terminal's width, GitHub markdown, CSV and JSON. A report is a list
of titled tables; each format turns the whole list into one document (one JSON value, one
CSV table), so scripts can parse what they get.
"""

from __future__ import annotations

import csv
import io
import json
import math
import textwrap
from collections import Counter
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from execbench.tasks.base import CORRECT, ERROR, INCORRECT, UNPARSABLE

FORMATS = ("text", "markdown", "csv", "json")
MISSING = "-"
VERDICT_COLUMNS = (CORRECT, INCORRECT, UNPARSABLE, ERROR)
"""The verdicts that have a column; the rare ``scoring_error`` (and any verdict of an older
log) is counted under ``other``."""

Interval = tuple[float | None, float | None]
Cell = str | int | float | Interval | None
"""A table cell: text, a number, a ``(low, high)`` interval, or None where a run lacks it."""


@dataclass(frozen=True)
class Table:
    """A titled table with typed cells (see ``Cell``)."""

    title: str
    headers: list[str]
    rows: list[list[Cell]]
    note: str = ""
    """What the columns mean where their names do not say it (``CO``, ``R_dual``)."""
    keys: int = 1
    """How many leading columns name a row (run, source): repeated in every part when a
    text table is split to fit the terminal."""
    digits: int = 1
    """Decimals a number is shown with in text, markdown and CSV."""


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


def available_ks(results: list[dict[str, Any]]) -> list[int]:
    """Every k some run has pass@k for: 1 up to the largest number of samples drawn."""
    return list(range(1, max(result["run"]["n"] for result in results) + 1))


def percent(value: float | None) -> float | None:
    """A fraction as a percentage; absent (or undefined) values as None."""
    if value is None or isinstance(value, bool) or math.isnan(value):
        return None
    return 100 * value


def comparison_table(results: list[dict[str, Any]], ks: list[int], *,
                     by_source: bool = False) -> Table:
    """Runs compared task by task: pass@k for each k in ``ks`` and the 95% accuracy interval.

    A run that lacks a task, a source or a k (it drew fewer samples) has None there. With
    ``by_source`` every run gets one row per source it covers, because a score averaged
    over sources can hide that a model is strong on one and weak on another.
    """
    tasks = sorted({task for result in results for task in result["metrics"]})
    keys = [f"pass@{k}" for k in ks]
    headers = ["run", "source"] if by_source else ["run"]
    for task in tasks:
        headers += [f"{task} {key} (%)" for key in keys]
        headers.append(f"{task} accuracy CI95 (%)")

    rows: list[list[Cell]] = []
    for label, result in zip(run_labels(results), results, strict=True):
        metrics = result["metrics"]
        if by_source:
            sources = sorted(
                {source for task_block in metrics.values() for source in task_block["by_source"]}
            )
            for source in sources:
                groups = [metrics.get(task, {}).get("by_source", {}).get(source) for task in tasks]
                rows.append([label, source, *_metric_cells(groups, keys)])
        else:
            groups = [metrics[task]["all"] if task in metrics else None for task in tasks]
            rows.append([label, *_metric_cells(groups, keys)])
    title = "pass@k per task and source (%)" if by_source else "pass@k per task (%)"
    note = ("pass@k: unbiased estimate of the chance that at least one of k samples is right; "
            "CI95: bootstrap 95% interval of the mean accuracy over instances.")
    return Table(title, headers, rows, note=note, keys=2 if by_source else 1)


def _metric_cells(groups: list[dict[str, Any] | None], keys: list[str]) -> list[Cell]:
    """The cells of one row: for each task's metrics group, its pass@k values and interval."""
    cells: list[Cell] = []
    for group in groups:
        if group is None:
            cells += [None] * (len(keys) + 1)
            continue
        cells += [percent(group.get(key)) for key in keys]
        low, high = group["accuracy_ci95"]
        cells.append((percent(low), percent(high)))
    return cells


def verdict_table(results: list[dict[str, Any]]) -> Table:
    """Counts of each run's verdicts over all of its tasks.

    These show *why* runs differ: a model that mostly returns unparsable answers, or a run
    hit by request errors, needs fixing before its accuracy means anything. ``truncated``
    (answers cut off at the token limit) and ``refused`` (refused or filtered) count samples
    whatever their verdict, so that a cut-off answer is not read as an ordinary wrong one;
    runs from before they were counted show ``-``.
    """
    headers = ["run", *VERDICT_COLUMNS, "other", "truncated", "refused"]
    rows: list[list[Cell]] = []
    for label, result in zip(run_labels(results), results, strict=True):
        counts: Counter[str] = Counter()
        for task_block in result["metrics"].values():
            counts.update(task_block["all"]["verdicts"])
        named = [counts[verdict] for verdict in VERDICT_COLUMNS]
        apart = [result["counts"].get(key) for key in ("truncated", "refused")]
        rows.append([label, *named, sum(counts.values()) - sum(named), *apart])
    return Table("Verdicts (samples)", headers, rows,
                 note="other: task-specific verdicts such as scoring_error; truncated (cut "
                      "off at the token limit) and refused (refused or filtered) count samples "
                      "whatever their verdict.")


def render(tables: list[Table], fmt: str, width: int = 100) -> str:
    """All ``tables`` as one document in ``fmt``; text tables are split to fit ``width``."""
    if fmt == "text":
        return "\n".join(_render_text(table, width) for table in tables)
    if fmt == "markdown":
        return "\n".join(_render_markdown(table) for table in tables)
    if fmt == "csv":
        return _render_csv(tables)
    if fmt == "json":
        return json.dumps({"tables": [_json_table(table) for table in tables]}, indent=2) + "\n"
    raise ValueError(f"unknown table format {fmt!r}; expected one of {', '.join(FORMATS)}")


def cell_text(cell: Cell, digits: int = 1) -> str:
    """A cell as text and markdown show it: ``-`` for None, intervals as ``[lo, hi]``."""
    if cell is None:
        return MISSING
    if isinstance(cell, tuple):
        return f"[{cell_text(cell[0], digits)}, {cell_text(cell[1], digits)}]"
    if isinstance(cell, float):
        return f"{cell:.{digits}f}"
    return str(cell)


def _json_value(cell: Cell) -> Any:
    if isinstance(cell, tuple):
        return [_json_value(part) for part in cell]
    if isinstance(cell, float):
        return round(cell, 6)
    return cell


def _json_table(table: Table) -> dict[str, Any]:
    return {"title": table.title, "note": table.note, "columns": table.headers,
            "rows": [{header: _json_value(cell) for header, cell in
                      zip(table.headers, row, strict=True)} for row in table.rows]}


def _render_csv(tables: list[Table]) -> str:
    """One CSV table. An interval column becomes two (``... low``, ``... high``) so that
    spreadsheets read numbers; several tables share one header (the union of their
    columns) after a ``table`` column naming each row's table, absent cells left empty."""

    def split(table: Table) -> tuple[list[str], list[list[str]]]:
        interval = [any(isinstance(row[i], tuple) for row in table.rows)
                    for i in range(len(table.headers))]
        headers: list[str] = []
        for header, is_interval in zip(table.headers, interval, strict=True):
            headers += [f"{header} low", f"{header} high"] if is_interval else [header]
        rows = []
        for row in table.rows:
            cells: list[str] = []
            for cell, is_interval in zip(row, interval, strict=True):
                parts = (cell if isinstance(cell, tuple) else (None, None)) if is_interval \
                    else (cell,)
                cells += ["" if part is None else cell_text(part, table.digits)
                          for part in parts]
            rows.append(cells)
        return headers, rows

    parts = [split(table) for table in tables]
    if len(parts) == 1:
        header, rows = parts[0]
    else:
        header = ["table", *dict.fromkeys(h for headers, _ in parts for h in headers)]
        rows = []
        for table, (headers, table_rows) in zip(tables, parts, strict=True):
            for row in table_rows:
                by_header = dict(zip(headers, row, strict=True))
                rows.append([table.title, *(by_header.get(h, "") for h in header[1:])])
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def _render_text(table: Table, width: int) -> str:
    """The title, then boxed rich tables free of colour codes, then the note.

    A table wider than ``width`` is cut into parts by columns, each repeating the key
    columns, instead of wrapping every cell into an unreadable tower (the DexBench layout
    is over 300 columns wide). Cells go in as ``Text`` so that brackets in them
    (intervals, model names) are shown as they are rather than read as rich markup.
    """
    cells = [[cell_text(cell, table.digits) for cell in row] for row in table.rows]
    # Each column takes its widest cell plus padding and a border.
    widths = [max(cell_len(text) for text in [header, *(row[i] for row in cells)]) + 3
              for i, header in enumerate(table.headers)]
    keys = list(range(min(table.keys, len(table.headers))))
    room = width - 1 - sum(widths[i] for i in keys)
    parts: list[list[int]] = []
    for column in range(len(keys), len(table.headers)):
        if parts and sum(widths[i] for i in parts[-1]) + widths[column] <= room:
            parts[-1].append(column)
        else:
            parts.append([column])
    buffer = io.StringIO()
    buffer.write(f"{table.title}\n")
    for part in parts or [[]]:
        columns = keys + part
        rich = RichTable()
        for i in columns:
            rich.add_column(Text(table.headers[i]))
        for row in cells:
            rich.add_row(*(Text(row[i]) for i in columns))
        Console(file=buffer, width=1 + sum(widths[i] for i in columns),
                color_system=None).print(rich)
    if table.note:
        buffer.write(textwrap.fill(table.note, max(width, 40)) + "\n")
    return buffer.getvalue()


def _render_markdown(table: Table) -> str:
    """A heading, a GitHub pipe table (pipes inside cells escaped so they do not split
    columns) and the note, with blank lines between so two tables never run together."""

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    lines = [f"### {table.title}", "", line(table.headers), line(["---"] * len(table.headers)),
             *(line([cell_text(cell, table.digits) for cell in row]) for row in table.rows)]
    if table.note:
        lines += ["", table.note]
    return "\n".join(lines) + "\n"
