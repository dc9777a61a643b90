"""The CodeSense report's figure: a row of panels per analysis the runs have data for.

1. accuracy per kind of each task (the paper's Figures 4, 3a and 5a; block sizes in
   ranges), as grouped bars, one bar per run (strict), a dash for the string match;
2. accuracy by function size (Table 12's small, medium, large), per task, the same way;
3. statement accuracy by kind and language of the code, a heatmap per run, where the
   runs' statements span languages;
4. accuracy by abstract category of the value, a heatmap per task (a column per run and
   values mode);
5. the spread over repeated runs: each group's mean with its standard deviation, and its
   least and greatest, per task, where some run was repeated.

Needs matplotlib (the ``plot`` extra), imported only when the figure is drawn.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from execbench.analysis.shape import FUNCTION_SIZE_BINS
from execbench.program import LANGUAGES
from execbench.reports.codesense_analyses import (
    KINDS,
    NOT_RECORDED,
    TASKS,
    Spread,
    repeat_groups,
    shown_kinds,
    size_bins,
    summaries,
)
from execbench.reports.layouts import pyplot
from execbench.reports.tables import percent, run_labels
from execbench.rundir import Results
from execbench.tasks.common.abstract_payload import UNFILED, KindSummary, Share, category_order

PANEL = 3.4
"""Inches a panel takes across (and a row of bars down)."""

Cellish = Share | str | None
"""A heatmap cell: a group, ``NOT_RECORDED``, or None where the run has none."""


def _short(label: str, limit: int = 36) -> str:
    """A run's label cut to ``limit`` characters in the middle (a label with its run folder
    keeps the folder's end, which tells runs apart), so that a long one cannot squeeze the
    panels to nothing. Labels come with each ``$`` escaped (``Layout.draw``); a cut may
    split an escape, so every ``$`` is escaped again."""
    if len(label) <= limit:
        return label
    head = (limit - 1) // 2
    cut = f"{label[:head]}\u2026{label[len(label) - (limit - 1 - head):]}"
    return cut.replace("\\$", "$").replace("$", "\\$")


@dataclass(frozen=True)
class _Row:
    title: str
    panels: list[Callable[[Any], Any]]
    """Each draws into one axis; a heatmap's returns its image, for the row's colour bar."""
    height: float = PANEL


def _bars(title: str, names: list[str], labels: list[str],
          per_run: Sequence[Mapping[str, Share] | None],
          tick: Callable[[str], str] = str) -> Callable[[Any], None]:
    """A panel of grouped bars: per name, a bar per run (strict), a dash (string match)."""
    def draw(axis: Any) -> None:
        width = 0.8 / max(1, len(per_run))
        for position, (label, groups) in enumerate(zip(labels, per_run, strict=True)):
            shares = [(groups or {}).get(name) or Share() for name in names]
            xs = [i + (position - (len(per_run) - 1) / 2) * width for i in range(len(names))]
            axis.bar(xs, [percent(g.strict) or 0.0 for g in shares], width,
                     label=_short(label, 48))
            axis.scatter(xs, [percent(g.string_match) or 0.0 for g in shares],
                         marker="_", color="black", s=60)
        axis.set_title(title, fontsize=9)
        axis.set_xticks(range(len(names)), [tick(name) for name in names], rotation=30,
                        ha="right", fontsize=8)
        axis.set_ylim(0, 105)
        axis.set_ylabel("% correct", fontsize=8)
    return draw


def _heatmap(title: str, rows: list[str], columns: list[str],
             values: list[list[Cellish]]) -> Callable[[Any], Any]:
    """A panel of strict accuracy per cell, each annotated with its value and samples
    (``n/r``: not recorded; blank: none)."""
    def draw(axis: Any) -> Any:
        plt = pyplot()
        cmap = plt.get_cmap("viridis").with_extremes(bad="#e8e8e8")
        data = [[_strict(cell) for cell in row] for row in values]
        image = axis.imshow(data, vmin=0, vmax=100, cmap=cmap, aspect="auto")
        crowded = len(columns) > 3
        for y, row in enumerate(values):
            for x, cell in enumerate(row):
                text, shade = _annotation(cell), data[y][x]
                axis.text(x, y, text, ha="center", va="center", fontsize=5 if crowded else 7,
                          color="white" if not math.isnan(shade) and shade < 55 else "black")
        axis.set_xticks(range(len(columns)), columns, rotation=90 if crowded else 30,
                        ha="center" if crowded else "right", fontsize=6 if crowded else 7)
        axis.set_yticks(range(len(rows)), rows, fontsize=7)
        axis.set_title(title, fontsize=9)
        return image
    return draw


def _strict(cell: Cellish) -> float:
    found = percent(cell.strict) if isinstance(cell, Share) else None
    return math.nan if found is None else found


def _annotation(cell: Cellish) -> str:
    if cell == NOT_RECORDED:
        return "n/r"
    if not isinstance(cell, Share) or not cell.samples:
        return ""
    strict = percent(cell.strict)
    shown = "n/c" if strict is None else f"{strict:.0f}"
    return f"{shown}\n({cell.samples})"


def _kind_row(results: Sequence[Results], kinds: list[tuple[str, list[str]]]) -> _Row | None:
    labels = run_labels(results)
    panels = [_bars(task, names, labels, [None if summary is None else
                                          shown_kinds(summary, task)
                                          for summary in summaries(results, task)])
              for task, names in kinds if names]
    return _Row("accuracy per kind (bars: strict, dashes: string)", panels) if panels else None


def _size_row(results: Sequence[Results]) -> _Row | None:
    labels = run_labels(results)
    panels = []
    for task in TASKS:
        per_run = [None if summary is None or not summary.by_function_lines
                   else size_bins(summary) for summary in summaries(results, task)]
        present = {name for groups in per_run if groups for name in groups}
        names = [name for name in FUNCTION_SIZE_BINS.names if name in present]
        if names:
            panels.append(_bars(task, names, labels, per_run, FUNCTION_SIZE_BINS.label))
    return _Row("accuracy by function size, lines of code (bars: strict, dashes: string)",
                panels) if panels else None


def _language_row(results: Sequence[Results]) -> _Row | None:
    found = summaries(results, "statement")
    languages = sorted({language for summary in found if summary is not None
                        for language in summary.by_language},
                       key=lambda key: (key not in LANGUAGES, key != "python", key))
    if len(languages) < 2:
        return None
    panels = []
    for label, summary in zip(run_labels(results), found, strict=True):
        if summary is None:
            continue
        splits = [summary.kinds_of(language) for language in languages]
        present = {kind for split in splits if split for kind in split} | (
            set(summary.by_kind) if None in splits else set())
        kinds = [kind for kind in KINDS if kind in present] + sorted(present - set(KINDS))
        values: list[list[Cellish]] = [[NOT_RECORDED if split is None else split.get(kind)
                                        for split in splits] for kind in kinds]
        panels.append(_heatmap(_short(label), kinds,
                               [LANGUAGES.get(lang, lang) for lang in languages], values))
    return _Row("statement accuracy by kind and language (% strict, samples)", panels,
                height=PANEL) if panels else None


def _category_row(results: Sequence[Results]) -> _Row | None:
    labels = run_labels(results)
    panels, tallest = [], 0
    for task in TASKS:
        found = summaries(results, task)
        if not any(summary is not None and summary.by_category for summary in found):
            continue
        columns: list[tuple[str, Mapping[str, Share] | None]] = []
        for label, summary in zip(labels, found, strict=True):
            columns += _category_columns(label, summary)
        names = sorted({name for _, split in columns if split for name in split},
                       key=category_order)
        values: list[list[Cellish]] = [[NOT_RECORDED if split is None else split.get(name)
                                        for _, split in columns] for name in names]
        rows = ["no category" if name == UNFILED else name for name in names]
        panels.append(_heatmap(task, rows, [name for name, _ in columns], values))
        tallest = max(tallest, len(names))
    return _Row("accuracy by abstract category of the value (% strict, samples)", panels,
                height=max(PANEL, 0.28 * tallest + 1.6)) if panels else None


def _category_columns(label: str, summary: KindSummary | None
                      ) -> list[tuple[str, Mapping[str, Share] | None]]:
    """A run's columns of the category heatmap: one per values mode it asked."""
    if summary is None:
        return []
    label = _short(label, 28)
    if not summary.by_category:
        return [(f"{label}\n{values}", None) for values in summary.by_values]
    return [(f"{label}\n{values}", split) for values, split in summary.by_category.items()]


def _spread_row(results: Sequence[Results]) -> _Row | None:
    repeated = [(label, runs) for label, runs in repeat_groups(results) if len(runs) > 1]
    if not repeated:
        return None
    tasks = [task for task in TASKS if any(summary is not None for _, runs in repeated
                                           for summary in summaries(runs, task))]

    def draw(axis: Any) -> None:
        width = 0.8 / len(repeated)
        for position, (label, runs) in enumerate(repeated):
            offset = (position - (len(repeated) - 1) / 2) * width
            for x, task in enumerate(tasks):
                spread = Spread.of(summary.overall.strict for summary in summaries(runs, task)
                                   if summary is not None)
                if spread.mean is None:
                    continue
                mean, sd = percent(spread.mean) or 0.0, percent(spread.sd) or 0.0
                low, high = percent(spread.low) or 0.0, percent(spread.high) or 0.0
                axis.errorbar([x + offset], [mean], yerr=[[sd], [sd]], fmt="o", capsize=3,
                              color=f"C{position}", label=_short(label, 48) if x == 0 else None)
                axis.vlines([x + offset], low, high, color=f"C{position}", linewidth=0.8,
                            linestyles="dotted")
        axis.set_xticks(range(len(tasks)), tasks, rotation=30, ha="right", fontsize=8)
        axis.set_ylim(0, 105)
        axis.set_ylabel("% correct (strict)", fontsize=8)
        axis.set_title("mean and sd over repeated runs (dotted: min to max)", fontsize=9)
        axis.legend(fontsize=7)
    return _Row("spread over repeated runs", [draw])


def draw(results: Sequence[Results], kinds: list[tuple[str, list[str]]]) -> Any:
    """The figure: a row per analysis the runs have data for (``kinds``: each task's kinds
    as the report shows them, for the first row)."""
    plt = pyplot()
    rows = [row for row in (_kind_row(results, kinds), _size_row(results),
                            _language_row(results), _category_row(results),
                            _spread_row(results)) if row is not None]
    if not rows:
        raise RuntimeError("none of these runs has a statement, block, loop or branch task")
    across = max(len(row.panels) for row in rows)
    fig = plt.figure(figsize=(PANEL * across + 2.0, sum(row.height for row in rows)),
                     layout="constrained")
    parts = fig.subfigures(len(rows), 1, height_ratios=[row.height for row in rows],
                           squeeze=False)
    for part, row in zip(parts[:, 0], rows, strict=True):
        # Every row has as many columns as the widest, so that panels are one size.
        axes = part.subplots(1, across, squeeze=False)[0]
        images = [panel(axis) for axis, panel in zip(axes, row.panels, strict=False)]
        for unused in axes[len(row.panels):]:
            unused.set_visible(False)
        part.suptitle(row.title, fontsize=10)
        drawn = [image for image in images if image is not None]
        if drawn:
            part.colorbar(drawn[0], ax=list(axes[:len(row.panels)]), shrink=0.8,
                          label="% correct (strict)")
    if rows[0].title.startswith("accuracy per kind"):
        parts[0, 0].axes[len(rows[0].panels) - 1].legend(
            loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    return fig
