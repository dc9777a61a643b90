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
from collections.abc import Sequence
from dataclasses import dataclass, replace

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from execbench.json_types import JSON, JSONObject
from execbench.rundir import Results
from execbench.tasks.base import CORRECT, ERROR, INCORRECT, UNPARSABLE
from execbench.text_safety import csv_cell, visible

FORMATS = ("text", "markdown", "csv", "json")
MISSING = "-"
VERDICT_COLUMNS = (CORRECT, INCORRECT, UNPARSABLE, ERROR)
"""The verdicts that have a column; the rare ``scoring_error`` (and any verdict of an older
log) is counted under ``other``."""

Interval = tuple[float | None, float | None]


@dataclass(frozen=True)
class Estimate:
    """A measured number with what it rests on: its 95% interval, where the results hold
    one, and how many instances it was measured on. A number alone hides both, and two
    runs measured on 1,166 and on 20 instances must not read as equals."""

    value: float | None
    interval: Interval | None = None
    instances: int | None = None


Cell = str | int | float | Interval | Estimate | None
"""A table cell: text, a number, a ``(low, high)`` interval, an estimate, or None where a
run lacks it."""


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


def model_labels(results: Sequence[Results]) -> list[str]:
    """One label per run: the model, and, where the runs were not all asked the same way,
    how each was asked (``qwen [direct, 1 shot]``), so that runs of other prompt styles,
    examples or templates never share a label (or a leaderboard row) unsaid."""
    protocols = [result.config.protocol().label() for result in results]
    if len(set(protocols)) < 2:
        return [result.model for result in results]
    return [f"{result.model} [{protocol}]"
            for result, protocol in zip(results, protocols, strict=True)]


def run_labels(results: Sequence[Results]) -> list[str]:
    """One label per run: its ``model_labels`` label, with the run directory added only
    where needed.

    Most comparisons are between models, so the model name alone reads best; two runs of
    the same model asked the same way would be indistinguishable without the directory.
    """
    labels = model_labels(results)
    seen = Counter(labels)
    return [f"{label} ({result.run_dir})" if seen[label] > 1 else label
            for label, result in zip(labels, results, strict=True)]


def available_ks(results: Sequence[Results]) -> list[int]:
    """Every k some run has pass@k for: 1 up to the largest number of samples drawn."""
    return list(range(1, max(result.config.n for result in results) + 1))


def percent(value: float | None) -> float | None:
    """A fraction as a percentage; absent (or undefined) values as None."""
    if value is None or isinstance(value, bool) or math.isnan(value):
        return None
    return 100 * value


def verdict_table(results: Sequence[Results]) -> Table:
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
        for task_block in result.metrics.values():
            counts.update(task_block.all.verdicts)
        named = [counts[verdict] for verdict in VERDICT_COLUMNS]
        apart = [result.counts.truncated, result.counts.refused]
        rows.append([label, *named, sum(counts.values()) - sum(named), *apart])
    return Table("Verdicts (samples)", headers, rows,
                 note="other: task-specific verdicts such as scoring_error; truncated (cut "
                      "off at the token limit) and refused (refused or filtered) count samples "
                      "whatever their verdict.")


def render(tables: list[Table], fmt: str, width: int = 100) -> str:
    """All ``tables`` as one document in ``fmt``; text tables are split to fit ``width``.
    Their text (run labels, source names: from run folders and datasets) is shown with
    control characters and lone surrogates as escapes, except in JSON, which keeps it
    whole (``json.dumps`` escapes what is not ASCII)."""
    if fmt == "json":
        return json.dumps({"tables": [_json_table(table) for table in tables]}, indent=2) + "\n"
    tables = [_one_line(table) for table in tables]
    if fmt == "text":
        return "\n".join(_render_text(table, width) for table in tables)
    if fmt == "markdown":
        return "\n".join(_render_markdown(table) for table in tables)
    if fmt == "csv":
        return _render_csv(tables)
    raise ValueError(f"unknown table format {fmt!r}; expected one of {', '.join(FORMATS)}")


def _one_line(table: Table) -> Table:
    """``table`` with its title, headers and text cells :func:`visible` on one line, and
    its note with its lines: nothing in it can drive a terminal, split a markdown row or
    stop the encoding of the output."""
    def shown(cell: Cell) -> Cell:
        return visible(cell, lines=False) if isinstance(cell, str) else cell

    return replace(table, title=visible(table.title, lines=False), note=visible(table.note),
                   headers=[visible(header, lines=False) for header in table.headers],
                   rows=[[shown(cell) for cell in row] for row in table.rows])


def cell_text(cell: Cell, digits: int = 1, instances: bool = True) -> str:
    """A cell as text and markdown show it: ``-`` for None, intervals as ``[lo, hi]``, an
    estimate as ``value [lo, hi] n=instances`` (``instances`` False leaves out the count,
    which the column's header then states)."""
    return " ".join(_pieces(cell, digits, instances))


def _pieces(cell: Cell, digits: int, instances: bool) -> list[str]:
    """A cell's text in the pieces a narrow text column puts on lines of their own (an
    estimate's value, interval and count); other cells are one piece."""
    if cell is None:
        return [MISSING]
    if isinstance(cell, Estimate):
        pieces = [cell_text(cell.value, digits)]
        if cell.interval is not None:
            pieces.append(cell_text(cell.interval, digits))
        if instances and cell.instances is not None:
            pieces.append(f"n={cell.instances}")
        return pieces
    if isinstance(cell, tuple):
        return [f"[{cell_text(cell[0], digits)}, {cell_text(cell[1], digits)}]"]
    if isinstance(cell, float):
        return [f"{cell:.{digits}f}"]
    return [str(cell)]


def _shown_pieces(table: Table) -> tuple[list[str], list[list[list[str]]]]:
    """``shown``, each cell still in its pieces."""
    headers = list(table.headers)
    in_cells = [True] * len(headers)
    for column in range(len(headers)):
        cells = [row[column] for row in table.rows if row[column] is not None]
        counts = {cell.instances for cell in cells if isinstance(cell, Estimate)}
        if cells and all(isinstance(cell, Estimate) for cell in cells) and len(counts) == 1 \
                and None not in counts:
            headers[column] += f" n={counts.pop()}"
            in_cells[column] = False
    return headers, [[_pieces(cell, table.digits, show) for cell, show in
                      zip(row, in_cells, strict=True)] for row in table.rows]


def shown(table: Table) -> tuple[list[str], list[list[str]]]:
    """The headers and cell texts that text, markdown and HTML show.

    A column of estimates measured on one instance count states it once, in its header
    (``output pass@1 n=800``); where runs' counts differ, each cell states its own."""
    headers, cells = _shown_pieces(table)
    return headers, [[" ".join(pieces) for pieces in row] for row in cells]


def _json_value(cell: Cell | float | None) -> JSON:
    if isinstance(cell, Estimate):
        return {"value": _json_value(cell.value), "ci95": _json_value(cell.interval),
                "instances": cell.instances}
    if isinstance(cell, tuple):
        return [_json_value(part) for part in cell]
    if isinstance(cell, float):
        return round(cell, 6)
    return cell


def _json_table(table: Table) -> JSONObject:
    return {"title": table.title, "note": table.note, "columns": [*table.headers],
            "rows": [{header: _json_value(cell) for header, cell in
                      zip(table.headers, row, strict=True)} for row in table.rows]}


def _bounds(cell: Cell) -> Interval | None:
    """The interval a cell holds (an interval's, or an estimate's), if any."""
    if isinstance(cell, Estimate):
        return cell.interval
    return cell if isinstance(cell, tuple) else None


def _render_csv(tables: list[Table]) -> str:
    """One CSV table. An interval column becomes two (``... low``, ``... high``) and an
    estimate column its value, its interval's bounds where any cell has one, and
    ``... instances``, so that spreadsheets read numbers; several tables share one header
    (the union of their columns) after a ``table`` column naming each row's table, absent
    cells left empty."""

    def split(table: Table) -> tuple[list[str], list[list[str]]]:
        columns = range(len(table.headers))
        estimate = [any(isinstance(row[i], Estimate) for row in table.rows) for i in columns]
        interval = [any(_bounds(row[i]) is not None for row in table.rows) for i in columns]
        headers: list[str] = []
        for i, header in enumerate(table.headers):
            names = [f"{header} low", f"{header} high"] if interval[i] else []
            headers += [header, *names, f"{header} instances"] if estimate[i] \
                else names or [header]
        rows = []
        for row in table.rows:
            cells: list[Cell] = []
            for i, cell in enumerate(row):
                bounds = list(_bounds(cell) or (None, None)) if interval[i] else []
                if estimate[i]:
                    found = cell if isinstance(cell, Estimate) else Estimate(None)
                    cells += [found.value, *bounds, found.instances]
                else:
                    cells += bounds or [cell]
            rows.append([_csv_text(cell, table.digits) for cell in cells])
        return [csv_cell(header) for header in headers], rows

    parts = [split(table) for table in tables]
    if len(parts) == 1:
        header, rows = parts[0]
    else:
        header = ["table", *dict.fromkeys(h for headers, _ in parts for h in headers)]
        rows = []
        for table, (headers, table_rows) in zip(tables, parts, strict=True):
            for row in table_rows:
                by_header = dict(zip(headers, row, strict=True))
                rows.append([csv_cell(table.title),
                             *(by_header.get(h, "") for h in header[1:])])
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def _csv_text(cell: Cell, digits: int) -> str:
    """A CSV cell: empty for None, text with :func:`csv_cell`'s formula guard, numbers as
    text and markdown show them (a negative number stays a number)."""
    if cell is None:
        return ""
    return csv_cell(cell) if isinstance(cell, str) else cell_text(cell, digits)


def _render_text(table: Table, width: int) -> str:
    """The title, then boxed rich tables free of colour codes, then the note.

    A table wider than ``width`` first lets its headers wrap between words, then is cut
    into parts by columns, each repeating the key columns, instead of wrapping every cell
    into an unreadable tower (the DexBench layout is over 300 columns wide). Cells go in
    as ``Text`` so that brackets in them (intervals, model names) are shown as they are
    rather than read as rich markup.
    """
    headers, pieces = _shown_pieces(table)
    columns = range(len(headers))
    # Each column takes its widest cell (and header) plus padding and a border; where
    # that is too wide, its widest piece or header word.
    widths = [max([cell_len(header), *(cell_len(" ".join(row[i])) for row in pieces)]) + 3
              for i, header in enumerate(headers)]
    if sum(widths) + 1 > width:
        widths = [max([0, *map(cell_len, header.split()),
                       *(cell_len(piece) for row in pieces for piece in row[i])]) + 3
                  for i, header in enumerate(headers)]
    cells = [[_pack(row[i], widths[i] - 3) for i in columns] for row in pieces]
    keys = list(range(min(table.keys, len(headers))))
    room = width - 1 - sum(widths[i] for i in keys)
    parts: list[list[int]] = []
    for column in range(len(keys), len(headers)):
        if parts and sum(widths[i] for i in parts[-1]) + widths[column] <= room:
            parts[-1].append(column)
        else:
            parts.append([column])
    buffer = io.StringIO()
    buffer.write(f"{table.title}\n")
    for part in parts or [[]]:
        shown_columns = keys + part
        rich = RichTable()
        for i in shown_columns:
            rich.add_column(Text("\n".join(textwrap.wrap(headers[i], widths[i] - 3,
                                                         break_long_words=False))))
        for row in cells:
            rich.add_row(*(Text(row[i]) for i in shown_columns))
        Console(file=buffer, width=1 + sum(widths[i] for i in shown_columns),
                color_system=None).print(rich)
    if table.note:
        buffer.write(textwrap.fill(table.note, max(width, 40)) + "\n")
    return buffer.getvalue()


def _pack(pieces: list[str], width: int) -> str:
    """Pieces joined by spaces, on as few lines of at most ``width`` cells as they allow."""
    lines = [pieces[0]]
    for piece in pieces[1:]:
        if cell_len(lines[-1]) + 1 + cell_len(piece) <= width:
            lines[-1] += " " + piece
        else:
            lines.append(piece)
    return "\n".join(lines)


def _render_markdown(table: Table) -> str:
    """A heading, a GitHub pipe table (pipes inside cells escaped so they do not split
    columns) and the note, with blank lines between so two tables never run together."""

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    headers, cells = shown(table)
    lines = [f"### {table.title}", "", line(headers), line(["---"] * len(headers)),
             *(line(row) for row in cells)]
    if table.note:
        lines += ["", table.note]
    return "\n".join(lines) + "\n"
