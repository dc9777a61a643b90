"""The generalization report: execution prediction (OC, MC, OR, MR) and execution choice
(Pref, OC, MC, OR, MR) per source, the same by lines-of-code bin, and a figure of it.

The figure needs the ``plot`` extra (matplotlib), imported only when a figure is asked for.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from execbench.analysis.shape import bin_order
from execbench.reports.layouts import Layout, View, pyplot, register_layout
from execbench.reports.tables import Cell, Table, percent, run_labels
from execbench.rundir import Results
from execbench.tasks.generalization_payload import (
    ChoiceMetrics,
    ChoiceSummary,
    MutationMetrics,
    MutationSummary,
)

PREDICTION, CHOICE = "mutation", "choice"
PREDICTION_COLUMNS: tuple[tuple[str, Callable[[MutationMetrics], float | None]], ...] = (
    ("OC", lambda m: m.original.correct), ("MC", lambda m: m.mutant.correct),
    ("OR", lambda m: m.original.reverted), ("MR", lambda m: m.mutant.reverted))
CHOICE_COLUMNS: tuple[tuple[str, Callable[[ChoiceMetrics], float | None]], ...] = (
    ("Pref", lambda m: m.preference),
    ("OC", lambda m: m.original.correct), ("MC", lambda m: m.mutant.correct),
    ("OR", lambda m: m.original.reverted), ("MR", lambda m: m.mutant.reverted))
PREDICTION_KEYS = tuple(key for key, _ in PREDICTION_COLUMNS)
CHOICE_KEYS = tuple(key for key, _ in CHOICE_COLUMNS)
NOTE = ("OC/MC: output right on the original/mutant program; OR/MR: reverted, i.e. gave the "
        "other program's output (lower is better); Pref: share of choices of the original.")
_NO_PREDICTION = MutationMetrics.from_record({})
_NO_CHOICE = ChoiceMetrics.from_record({})


def _prediction(result: Results) -> MutationSummary:
    """The run's ``mutation`` summary; empty where the run has none."""
    return MutationSummary.from_record(result.task_metrics.get(PREDICTION))


def _choice(result: Results) -> ChoiceSummary:
    """The run's ``choice`` summary; empty where the run has none."""
    return ChoiceSummary.from_record(result.task_metrics.get(CHOICE))


def _prediction_cells(metrics: MutationMetrics) -> list[Cell]:
    return [percent(rate(metrics)) for _, rate in PREDICTION_COLUMNS]


def _choice_cells(metrics: ChoiceMetrics) -> list[Cell]:
    return [percent(rate(metrics)) for _, rate in CHOICE_COLUMNS]


def table(results: Sequence[Results]) -> Table:
    """One row per (run, source), as in the paper's Table 3."""
    headers = ["run", "source", *(f"prediction {k}" for k in PREDICTION_KEYS),
               *(f"choice {k}" for k in CHOICE_KEYS)]
    rows: list[list[Cell]] = []
    for label, result in zip(run_labels(results), results, strict=True):
        prediction, choice = _prediction(result), _choice(result)
        for source in sorted(set(prediction.by_source) | set(choice.by_source)):
            rows.append([label, source,
                         *_prediction_cells(prediction.by_source.get(source, _NO_PREDICTION)),
                         *_choice_cells(choice.by_source.get(source, _NO_CHOICE))])
    return Table("Execution prediction and execution choice (%)", headers, rows, note=NOTE,
                 keys=2)


def loc_table(results: Sequence[Results]) -> Table:
    """Execution prediction by lines-of-code bin (all sources together)."""
    headers = ["run", "LOC", *PREDICTION_KEYS, "problems"]
    rows: list[list[Cell]] = []
    for label, result in zip(run_labels(results), results, strict=True):
        by_loc = _prediction(result).by_loc
        for name in sorted(by_loc, key=bin_order):
            group = by_loc[name]
            rows.append([label, name, *_prediction_cells(group), group.original_problems])
    return Table("Execution prediction by lines of code (%)", headers, rows, keys=2,
                 note=NOTE + " problems: original programs in the bin.")


def figure(results: Sequence[Results]) -> Any:
    """Fig. 4 style: one panel per run with the mutation task (at most three to a row),
    OC/MC/OR/MR against lines of code, each bin labelled with its number of problems.
    Lines that coincide stay visible: each metric is drawn with its own marker size and a
    small sideways shift."""
    results = [result for result in results if _prediction(result).by_loc]
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
        bins = _prediction(result).by_loc
        names = sorted(bins, key=bin_order)
        for shift, ((key, rate), (style, size)) in enumerate(zip(PREDICTION_COLUMNS, styles,
                                                                  strict=True)):
            points = [(i + (shift - 1.5) * 0.04, percent(rate(bins[n])))
                      for i, n in enumerate(names)]
            points = [(x, y) for x, y in points if y is not None]
            if points:
                axis.plot(*zip(*points, strict=True), style, markersize=size, label=key,
                          alpha=0.85)
        axis.set_xticks(range(len(names)),
                        [f"{n}\n({bins[n].original_problems})" for n in names], fontsize=8)
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
    return fig


def _sections(results: Sequence[Results], view: View) -> list[Table]:
    return [table(results), loc_table(results)]


register_layout(Layout("generalization", "OC/MC/OR/MR and choice, by source and by lines of "
                       "code: correctness and reversion as programs grow (the Generalization "
                       "study)", _sections, figure))
