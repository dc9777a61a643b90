"""The ``error-taxonomy`` report: how each run's wrong answers fall into the error labels
the scoring gives them from the trace (``tasks.common.taxonomy``), per task and per run.

DexBench's error table and CES's study of where simulations go wrong counted such
classes by reading answers by hand; these are counted from ``results.json`` (each task's
``errors``), so any run scored with labels shows, whatever its family. A wrong answer no
rule decides is counted as ``unlabelled``; a failed request is no answer and is not
counted at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from execbench.reports.layouts import Layout, View, pyplot, register_layout
from execbench.reports.tables import Cell, Table, percent, run_labels
from execbench.rundir import Results
from execbench.tasks.base import INCORRECT, UNPARSABLE
from execbench.tasks.common.taxonomy_payload import LABELS

UNLABELLED = "unlabelled"
COLUMNS = (*LABELS, UNLABELLED)
COLOURS = {"computation": "tab:blue", "control_flow": "tab:orange",
           "api_behaviour": "tab:green", "hallucination": "tab:red", "format": "tab:purple",
           "null": "tab:gray", UNLABELLED: "lightgray"}


def _count(found: Any) -> int:
    """A count from a results file (outside input): a whole number, else 0."""
    return found if type(found) is int and found >= 0 else 0


def counts(result: Results) -> dict[str, dict[str, int]]:
    """Per task with labelled answers: each label's samples, ``unlabelled`` for the wrong
    or unreadable ones no rule labelled, in ``COLUMNS`` order."""
    found: dict[str, dict[str, int]] = {}
    for task, metrics in sorted(result.metrics.items()):
        errors = metrics.all.errors if isinstance(metrics.all.errors, Mapping) else {}
        labelled = {label: _count(errors.get(label)) for label in LABELS}
        if not any(labelled.values()):
            continue
        verdicts = metrics.all.verdicts if isinstance(metrics.all.verdicts, Mapping) else {}
        wrong = _count(verdicts.get(INCORRECT)) + _count(verdicts.get(UNPARSABLE))
        found[task] = {**labelled, UNLABELLED: max(wrong - sum(labelled.values()), 0)}
    return found


def has_labels(result: Results) -> bool:
    """Whether the run's results count any error label (runs scored before labels
    existed have none)."""
    return bool(counts(result))


def task_table(results: Sequence[Results]) -> Table:
    """Per run and task: the wrong answers and how many got each label."""
    rows: list[list[Cell]] = []
    for label, result in zip(run_labels(results), results, strict=True):
        for task, tally in counts(result).items():
            rows.append([label, task, sum(tally.values()), *(tally[c] for c in COLUMNS)])
    return Table("Error labels per task (wrong or unreadable samples)",
                 ["run", "task", "wrong", *COLUMNS], rows, keys=2,
                 note="Each wrong answer's first divergence from the recorded run, labelled "
                      "by the statement where it happens; the rules are in "
                      "docs/reports.md (Error taxonomy).")


def run_table(results: Sequence[Results]) -> Table:
    """Per run, over its labelled tasks: each label's share of the wrong answers."""
    rows: list[list[Cell]] = []
    for label, result in zip(run_labels(results), results, strict=True):
        total = {column: sum(tally[column] for tally in counts(result).values())
                 for column in COLUMNS}
        wrong = sum(total.values())
        if wrong:
            rows.append([label, wrong, *(percent(total[c] / wrong) for c in COLUMNS)])
    return Table("Error labels per run (% of wrong or unreadable samples)",
                 ["run", "wrong", *COLUMNS], rows)


def figure(results: Sequence[Results]) -> Any:
    """Per run and task, a bar of its wrong answers split by label (the counts of the
    per-task table)."""
    plt = pyplot()
    bars = [(f"{label}\n{task}", tally)
            for label, result in zip(run_labels(results), results, strict=True)
            for task, tally in counts(result).items()]
    fig, axis = plt.subplots(figsize=(7.5, 0.45 * max(len(bars), 1) + 1.6))
    left = [0] * len(bars)
    for column in COLUMNS:
        widths = [tally[column] for _, tally in bars]
        axis.barh(range(len(bars)), widths, left=left, color=COLOURS[column], label=column)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    axis.set_yticks(range(len(bars)), [name for name, _ in bars], fontsize=8)
    axis.invert_yaxis()
    axis.set_xlabel("wrong or unreadable samples")
    axis.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4, fontsize=8)
    fig.tight_layout()
    return fig


def _sections(results: Sequence[Results], view: View) -> list[Table]:
    return [task_table(results), run_table(results)]


register_layout(Layout(
    "error-taxonomy", "wrong answers per task and per run by the error their first "
    "divergence from the recorded run shows (computation, control_flow, api_behaviour, "
    "hallucination, format, null): the error classes DexBench and CES sorted by hand, "
    "labelled from the trace", _sections, figure, shows=has_labels))
