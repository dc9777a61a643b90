"""The CodeSense report: accuracy per statement kind (the paper's Figure 4), by block size
(Figure 3a, in ranges), per loop question (Figure 5a), on branches, on function outputs and
inputs, on pointer aliasing, abstract against concrete values (Figure 7), per language of
the code (Python, C, Java: the paper's language comparison), and the finer analyses of
``codesense_analyses``: by function size (Table 12), statement kind by language, by
abstract category, and the spread over repeated runs (Table 10). One pair of columns per
run: ``strict`` is execbench's verdict (values read with the literal parser, type-aware
equality), ``string`` whether the paper's normalised string comparison would have accepted
the same answer, so numbers can be set beside the published ones and the gap between the
two read off.

Reads only ``task_metrics.<task>`` of each run's ``results.json`` (the tasks' summaries,
read back as ``KindSummary``); the figure needs the ``plot`` extra (matplotlib), imported
only when a figure is asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from execbench.analysis.shape import BLOCK_SIZE_BINS
from execbench.program import LANGUAGES
from execbench.reports.codesense_analyses import (
    NOT_COMPARABLE,
    NOTE,
    block_label,
    category_table,
    cells,
    function_size_table,
    headers,
    kind_language_table,
    sample_count,
    sample_spread_table,
    shown_kinds,
    spread_table,
    summaries,
    summary_of,
)
from execbench.reports.codesense_figure import draw
from execbench.reports.layouts import Layout, View, register_layout
from execbench.reports.tables import Cell, Table
from execbench.rundir import Results
from execbench.tasks.common.abstract_payload import Share

__all__ = ["NOT_COMPARABLE", "SECTIONS", "figure", "kinds_table", "language_table",
           "values_table"]

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
report reads. Kinds a run has beyond the listed ones follow in name order; the block
task's kinds (``block-k``) are shown in ranges of k (``analysis.shape.BLOCK_SIZE_BINS``)."""
VALUES = ("concrete", "abstract")
BLOCK_NOTE = ("Block sizes in ranges of k statements; each size's numbers are in the "
              "run's results.json (task_metrics.block.by_kind).")


def _kinds(results: Sequence[Results], task: str, order: tuple[str, ...]) -> list[str]:
    """The listed kinds any run has, then the others any run has, in name order; the block
    task's ranges in their order."""
    present = {kind for summary in summaries(results, task) if summary is not None
               for kind in shown_kinds(summary, task)}
    if task == "block":
        order = BLOCK_SIZE_BINS.names
    return [k for k in order if k in present] + sorted(present - set(order),
                                                       key=lambda k: (len(k), k))


def kinds_table(results: Sequence[Results], task: str, title: str,
                order: tuple[str, ...]) -> Table | None:
    """Rows: the task's kinds (the block task's in ranges of k) then all; columns: strict
    and string accuracy per run. None when no run has the task."""
    kinds = _kinds(results, task, order)
    if not kinds:
        return None
    found = [None if summary is None else shown_kinds(summary, task)
             for summary in summaries(results, task)]
    overall = [None if summary is None else summary.overall
               for summary in summaries(results, task)]
    rows: list[list[Cell]] = []
    for kind in [*kinds, "all"]:
        groups = overall if kind == "all" else [None if kinds_of is None else kinds_of.get(kind)
                                                for kinds_of in found]
        name = block_label(kind) if task == "block" and kind != "all" else kind
        rows.append([f"{name} ({sample_count(groups)})",
                     *(cell for group in groups for cell in cells(group))])
    note = f"{BLOCK_NOTE} {NOTE}" if task == "block" else NOTE
    return Table(title, headers([task], results), rows, note=note)


def values_table(results: Sequence[Results]) -> Table | None:
    """Figure 7's data: per task, concrete against abstract values, per run."""
    rows: list[list[Cell]] = []
    for task, _title, _order in SECTIONS:
        found = summaries(results, task)
        for values in VALUES:
            groups = [None if summary is None else summary.by_values.get(values)
                      for summary in found]
            if any(group is not None and group != Share() for group in groups):
                rows.append([task, f"{values} ({sample_count(groups)})",
                             *(cell for group in groups for cell in cells(group))])
    if not rows:
        return None
    return Table("Abstract against concrete values (% of samples)",
                 headers(["task", "values"], results), rows, keys=2, note=NOTE)


def language_table(results: Sequence[Results]) -> Table | None:
    """The paper's language comparison: per task, accuracy on Python, C and Java code, per
    run. None when every run's code is in one language."""
    rows: list[list[Cell]] = []
    seen: set[str] = set()
    for task, _title, _order in SECTIONS:
        found = summaries(results, task)
        present = {language for summary in found if summary is not None
                   for language in summary.by_language}
        seen |= present
        for language in sorted(present, key=lambda key: (key != "python", key)):
            groups = [None if summary is None else summary.by_language.get(language)
                      for summary in found]
            rows.append([task, f"{LANGUAGES.get(language, language)} ({sample_count(groups)})",
                         *(cell for group in groups for cell in cells(group))])
    if len(seen) < 2:
        return None
    return Table("Accuracy by language of the code (% of samples)",
                 headers(["task", "language"], results), rows, keys=2, note=NOTE)


def _sections(results: Sequence[Results], view: View) -> list[Table]:
    tables = [kinds_table(results, task, title, order) for task, title, order in SECTIONS]
    if not any(tables):
        return [Table("CodeSense tasks", ["note"], [["none of these runs has a statement, "
                                                     "block, loop or branch task"]])]
    tables += [function_size_table(results), values_table(results), category_table(results),
               language_table(results), kind_language_table(results), spread_table(results),
               sample_spread_table(results)]
    return [table for table in tables if table is not None]


def figure(results: Sequence[Results]) -> Any:
    """A row of panels per analysis the runs have data for (``codesense_figure``): accuracy
    per kind of each task (Figures 4, 3a, 5a) and by function size as grouped bars, the
    statement kinds by language and the abstract categories as heatmaps, the spread over
    repeated runs."""
    return draw(results, [(task, _kinds(results, task, order))
                          for task, _title, order in SECTIONS])


def _shows(result: Results) -> bool:
    """A run whose output or input questions were asked in CodeSense's style (their
    summaries have kinds) belongs in this report too."""
    return any(summary is not None and summary.by_kind
               for summary in (summary_of(result, task) for task, _title, _order in SECTIONS))


register_layout(Layout("codesense", "CodeSense accuracy per statement kind, block size, loop "
                       "question, branch, output, input and aliasing, by function size, "
                       "abstract vs concrete and by abstract category, by language and "
                       "statement kind by language, the spread over repeated runs; strict "
                       "and string match", _sections, figure, shows=_shows))
