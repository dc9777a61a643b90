"""The generalization report: execution prediction (OC, MC, OR, MR) and execution choice
(Pref, OC, MC, OR, MR) per source, the same by lines-of-code bin, and a figure of it.

The figure needs the ``plot`` extra (matplotlib), imported only when a figure is asked for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from execbench.analysis.shape import bin_order
from execbench.reports.layouts import Layout, View, png, pyplot, register_layout
from execbench.reports.tables import Cell, Table, percent, run_labels
from execbench.rundir import Results

PREDICTION, CHOICE = "mutation", "choice"
PREDICTION_KEYS = ("OC", "MC", "OR", "MR")
CHOICE_KEYS = ("Pref", "OC", "MC", "OR", "MR")
NOTE = ("OC/MC: output right on the original/mutant program; OR/MR: reverted, i.e. gave the "
        "other program's output (lower is better); Pref: share of choices of the original.")


def _block(result: Results, task: str) -> dict[str, Any]:
    return result.task_metrics.get(task, {})


def table(results: Sequence[Results]) -> Table:
    """One row per (run, source), as in the paper's Table 3."""
    headers = ["run", "source", *(f"prediction {k}" for k in PREDICTION_KEYS),
               *(f"choice {k}" for k in CHOICE_KEYS)]
    rows: list[list[Cell]] = []
    for label, result in zip(run_labels(results), results, strict=True):
        prediction, choice = _block(result, PREDICTION), _block(result, CHOICE)
        sources = sorted(set(prediction.get("by_source", {})) | set(choice.get("by_source", {})))
        for source in sources:
            p = prediction.get("by_source", {}).get(source, {})
            c = choice.get("by_source", {}).get(source, {})
            rows.append([label, source, *(percent(p.get(k)) for k in PREDICTION_KEYS),
                         *(percent(c.get(k)) for k in CHOICE_KEYS)])
    return Table("Execution prediction and execution choice (%)", headers, rows, note=NOTE,
                 keys=2)


def loc_table(results: Sequence[Results]) -> Table:
    """Execution prediction by lines-of-code bin (all sources together)."""
    headers = ["run", "LOC", *PREDICTION_KEYS, "problems"]
    rows: list[list[Cell]] = []
    for label, result in zip(run_labels(results), results, strict=True):
        by_loc = _block(result, PREDICTION).get("by_loc", {})
        for name in sorted(by_loc, key=bin_order):
            group = by_loc[name]
            rows.append([label, name, *(percent(group.get(k)) for k in PREDICTION_KEYS),
                         group.get("O_problems", 0)])
    return Table("Execution prediction by lines of code (%)", headers, rows, keys=2,
                 note=NOTE + " problems: original programs in the bin.")


def figure(results: Sequence[Results]) -> bytes:
    """Fig. 4 style: one panel per run with the mutation task (at most three to a row),
    OC/MC/OR/MR against lines of code, each bin labelled with its number of problems.
    Lines that coincide stay visible: each metric is drawn with its own marker size and a
    small sideways shift."""
    results = [result for result in results if _block(result, PREDICTION).get("by_loc")]
    if not results:
        raise RuntimeError(f"no run has the {PREDICTION} task, so there is no figure to draw")
    plt = pyplot()
    labels = run_labels(results)
    columns = min(3, len(results))
    rows = math.ceil(len(results) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.8 * columns, 3.8 * rows),
                             squeeze=False, sharey=True)
    styles = (("o-", 8), ("s-", 6.5), ("^--", 5), ("v--", 3.5))
    for number, (label, result) in enumerate(zip(labels, results, strict=True)):
        axis = axes[number // columns][number % columns]
        bins = _block(result, PREDICTION).get("by_loc", {})
        names = sorted(bins, key=bin_order)
        for shift, (key, (style, size)) in enumerate(zip(PREDICTION_KEYS, styles, strict=True)):
            points = [(i + (shift - 1.5) * 0.04, percent(bins[n].get(key)))
                      for i, n in enumerate(names)]
            points = [(x, y) for x, y in points if y is not None]
            if points:
                axis.plot(*zip(*points, strict=True), style, markersize=size, label=key,
                          alpha=0.85)
        axis.set_xticks(range(len(names)),
                        [f"{n}\n({bins[n].get('O_problems', 0)})" for n in names], fontsize=8)
        axis.set_xlabel("lines of code (problems)")
        axis.set_title(label, fontsize=9)
        axis.set_ylim(-5, 105)
        axis.grid(alpha=0.3)
        if axis.get_legend_handles_labels()[0]:
            axis.legend(loc="best", fontsize=7)
    for number in range(len(results), rows * columns):
        axes[number // columns][number % columns].set_visible(False)
    for row in axes:
        row[0].set_ylabel("% of samples")
    fig.tight_layout()
    return png(fig)


def _sections(results: Sequence[Results], view: View) -> list[Table]:
    return [table(results), loc_table(results)]


register_layout(Layout("generalization", "OC/MC/OR/MR and choice, by source and by lines of "
                       "code", _sections, figure))
