"""The CodeSense report: accuracy per statement kind (the paper's Figure 4), by block size
(Figure 3a), per loop question (Figure 5a), on branches, on function outputs and inputs,
on pointer aliasing, abstract against concrete values (Figure 7), and per language of the
code (Python, C, Java: the paper's language comparison), one pair of columns per run: ``strict`` is
execbench's verdict (values read with the literal parser, type-aware equality),
``string`` whether the paper's normalised string comparison would have accepted the same
answer, so numbers can be set beside the published ones and the gap between the two read
off.

Reads only ``task_metrics.<task>`` of each run's ``results.json`` (the tasks' summaries,
read back as ``KindSummary``); the figure needs the ``plot`` extra (matplotlib), imported
only when a figure is asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from execbench.program import LANGUAGES
from execbench.reports.layouts import Layout, View, pyplot, register_layout
from execbench.reports.tables import Cell, Table, percent, run_labels
from execbench.rundir import Results
from execbench.tasks.common.abstract_payload import KindSummary, Share

SECTIONS = (
    ("statement", "Statement values by statement kind (% of samples)",
     ("assignment", "arithmetic", "constant", "branch", "call")),
    ("block", "Program state after the first k statements, by k (% of samples)", ()),
    ("loop", "Loop properties (% of samples)", ("iterations", "body", "final", "after")),
    ("branch", "Branches: is the line executed (% of samples)", ("branch",)),
    ("output", "Function output: the value a call returns (% of samples)", ("output",)),
    ("input", "Function input: the recorded inputs from the output (C and Java; % of "
     "samples)", ("input",)),
    ("alias", "Pointer aliasing: do two pointers refer to the same memory (% of samples)",
     ("alias",)),
)
"""(task, title, the order its kinds are shown in): the keys of ``task_metrics.TASK`` this
report reads. Kinds a run has beyond the listed ones follow in name order (block sizes)."""
VALUES = ("concrete", "abstract")
MEASURES = ("strict", "string")
NOTE = ("strict: type-aware equality of the parsed answer (1 != 1.0 != True); string: the "
        "published benchmark's lower-cased, whitespace-stripped text comparison. Samples "
        "in brackets. A published value that is no literal has only the string comparison: "
        "strict leaves it out, and says 'not comparable' where nothing is left.")


def _summary(result: Results, task: str) -> KindSummary | None:
    """The run's summary of the task; None when it has none (no such task, or its
    questions were not asked in CodeSense's style)."""
    record = result.task_metrics.get(task)
    return KindSummary.from_record(record) if isinstance(record, dict) else None


def _summaries(results: Sequence[Results], task: str) -> list[KindSummary | None]:
    return [_summary(result, task) for result in results]


def _kinds(results: Sequence[Results], task: str, order: tuple[str, ...]) -> list[str]:
    """The listed kinds any run has, then the others any run has, in name order."""
    present = {kind for summary in _summaries(results, task) if summary is not None
               for kind in summary.by_kind}
    return [k for k in order if k in present] + sorted(present - set(order),
                                                       key=lambda k: (len(k), k))


def _headers(keys: list[str], results: Sequence[Results]) -> list[str]:
    return [*keys, *(f"{label} {measure}" for label in run_labels(results)
                     for measure in MEASURES)]


NOT_COMPARABLE = "not comparable"
"""The strict cell of a group whose every sample has no type-aware verdict."""


def _cells(group: Share | None) -> list[Cell]:
    if group is None:
        return [None, None]
    strict: Cell = percent(group.strict)
    if strict is None and group.not_comparable:
        strict = NOT_COMPARABLE
    return [strict, percent(group.string_match)]


def _samples(groups: list[Share | None]) -> str:
    """The sample count of a row: one number, or each distinct one where runs differ."""
    counts = {g.samples for g in groups if g is not None and g.samples is not None}
    return "/".join(str(c) for c in sorted(counts)) or "0"


def kinds_table(results: Sequence[Results], task: str, title: str,
                order: tuple[str, ...]) -> Table | None:
    """Rows: the task's kinds then all; columns: strict and string accuracy per run. None
    when no run has the task."""
    kinds = _kinds(results, task, order)
    if not kinds:
        return None
    summaries = _summaries(results, task)
    rows: list[list[Cell]] = []
    for kind in [*kinds, "all"]:
        groups = [None if summary is None else summary.overall if kind == "all"
                  else summary.by_kind.get(kind) for summary in summaries]
        rows.append([f"{kind} ({_samples(groups)})",
                     *(cell for group in groups for cell in _cells(group))])
    return Table(title, _headers([task], results), rows, note=NOTE)


def values_table(results: Sequence[Results]) -> Table | None:
    """Figure 7's data: per task, concrete against abstract values, per run."""
    rows: list[list[Cell]] = []
    for task, _title, _order in SECTIONS:
        summaries = _summaries(results, task)
        for values in VALUES:
            groups = [None if summary is None else summary.by_values.get(values)
                      for summary in summaries]
            if any(group is not None and group != Share() for group in groups):
                rows.append([task, f"{values} ({_samples(groups)})",
                             *(cell for group in groups for cell in _cells(group))])
    if not rows:
        return None
    return Table("Abstract against concrete values (% of samples)",
                 _headers(["task", "values"], results), rows, keys=2, note=NOTE)


def language_table(results: Sequence[Results]) -> Table | None:
    """The paper's language comparison: per task, accuracy on Python, C and Java code, per
    run. None when every run's code is in one language."""
    rows: list[list[Cell]] = []
    seen: set[str] = set()
    for task, _title, _order in SECTIONS:
        summaries = _summaries(results, task)
        present = {language for summary in summaries if summary is not None
                   for language in summary.by_language}
        seen |= present
        for language in sorted(present, key=lambda key: (key != "python", key)):
            groups = [None if summary is None else summary.by_language.get(language)
                      for summary in summaries]
            rows.append([task, f"{LANGUAGES.get(language, language)} ({_samples(groups)})",
                         *(cell for group in groups for cell in _cells(group))])
    if len(seen) < 2:
        return None
    return Table("Accuracy by language of the code (% of samples)",
                 _headers(["task", "language"], results), rows, keys=2, note=NOTE)


def _sections(results: Sequence[Results], view: View) -> list[Table]:
    tables = [kinds_table(results, task, title, order) for task, title, order in SECTIONS]
    tables.append(values_table(results))
    tables.append(language_table(results))
    found = [table for table in tables if table is not None]
    if not found:
        return [Table("CodeSense tasks", ["note"], [["none of these runs has a statement, "
                                                     "block, loop or branch task"]])]
    return found


def figure(results: Sequence[Results]) -> Any:
    """Figure 4/3a/5a style: one panel per task present, strict accuracy per kind as
    grouped bars (one bar per run), the string-match accuracy as a hollow marker above."""
    plt = pyplot()
    labels = run_labels(results)
    panels = [(task, _kinds(results, task, order)) for task, _title, order in SECTIONS]
    panels = [(task, kinds) for task, kinds in panels if kinds]
    if not panels:
        raise RuntimeError("none of these runs has a statement, block, loop or branch task")
    fig, axes = plt.subplots(1, len(panels), figsize=(3.4 * len(panels) + 1.5, 3.6),
                             squeeze=False)
    width = 0.8 / len(results)
    for axis, (task, kinds) in zip(axes[0], panels, strict=True):
        for position, (label, result) in enumerate(zip(labels, results, strict=True)):
            summary = _summary(result, task) or KindSummary()
            groups = [summary.by_kind.get(kind) or Share() for kind in kinds]
            xs = [i + (position - (len(results) - 1) / 2) * width for i in range(len(kinds))]
            axis.bar(xs, [percent(g.strict) or 0.0 for g in groups], width, label=label)
            axis.scatter(xs, [percent(g.string_match) or 0.0 for g in groups],
                         marker="_", color="black", s=60)
        axis.set_title(task, fontsize=9)
        axis.set_xticks(range(len(kinds)), kinds, rotation=30, ha="right", fontsize=8)
        axis.set_ylim(0, 105)
    axes[0][0].set_ylabel("% correct (bars: strict, dashes: string)")
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.tight_layout()
    return fig


def _shows(result: Results) -> bool:
    """A run whose output or input questions were asked in CodeSense's style (their
    summaries have kinds) belongs in this report too."""
    return any(summary is not None and summary.by_kind
               for summary in (_summary(result, task) for task, _title, _order in SECTIONS))


register_layout(Layout("codesense", "CodeSense accuracy per statement kind, block size, loop "
                       "question, branch, output, input and aliasing, abstract vs concrete, "
                       "by language; strict and string match", _sections, figure,
                       shows=_shows))
