"""The CES report: the paper's Table 1 (four coherence x output classes per construct
category, one column per run), the coherence rules that fired, the divergence kinds per
category (Figure 7's data), and the consistency of each program's calls (Figure 6's data,
over all programs and over those whose calls cover different prime paths; also drawn
with ``--plot``).

Every table function returns a typed ``Table``; the figure needs the ``plot`` extra
(matplotlib), imported only when a figure is asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from execbench.reports.layouts import Layout, View, pyplot, register_layout
from execbench.reports.tables import Cell, Table, percent, run_labels
from execbench.rundir import Results
from execbench.tasks.ces.summary_payload import (
    CATEGORIES,
    LEVELS,
    RULES,
    Consistency,
    Group,
    SimulationSummary,
)

TASK = "simulation"
KINDS = ("loop variable", "iterable", "predicate", "branch", "output")
CATEGORY_NOTE = ("CO: only conditionals; LO: only loops; LC: loops and conditionals; Others: "
                 "neither (statement-level if/for/while). Only coherent with a correct output "
                 "counts as a success.")
RULES_NOTE = ("rule1: a compound property differs from what its predicted parts give; rule2: "
              "a predicate and its branch disagree; rule3: a right output after a wrong "
              "property.")
_CLASS_ROWS: tuple[tuple[str, str, Callable[[Group], float | None]], ...] = (
    ("coherent", "correct output", lambda group: group.coherent_correct),
    ("coherent", "wrong output", lambda group: group.coherent_incorrect),
    ("incoherent", "correct output", lambda group: group.incoherent_correct),
    ("incoherent", "wrong output", lambda group: group.incoherent_incorrect))
"""Table 1's rows per group: reasoning, output, and the share of the group they give."""


def _summary(result: Results) -> SimulationSummary:
    """The run's summary of the task (``task_metrics.simulation``); all unknown when the
    run has none."""
    return SimulationSummary.from_record(result.task_metrics.get(TASK))


def _groups(result: Results) -> list[tuple[str, Group]]:
    summary = _summary(result)
    return [*((name, summary.category(name)) for name in CATEGORIES),
            ("Total", summary.overall)]


def _named(name: str, group: Group) -> str:
    return f"{name} ({group.samples})" if group.samples else name


def table1(results: Sequence[Results]) -> Table:
    """Rows: category x class; columns: runs (shares of the category's samples, %)."""
    headers = ["programs", "reasoning", "output", *run_labels(results)]
    rows: list[list[Cell]] = []
    groups = [_groups(result) for result in results]
    for position, (name, group) in enumerate(groups[0]):
        for reasoning, output, share in _CLASS_ROWS:
            cells = [percent(share(found[position][1])) for found in groups]
            rows.append([_named(name, group), reasoning, output, *cells])
    return Table("Execution simulation: coherence x output per construct category "
                 "(% of samples)", headers, rows, keys=3, note=CATEGORY_NOTE)


def rules_table(results: Sequence[Results]) -> Table:
    """Samples on which each rule fired, with the unreadable and failed ones."""
    headers = ["run", "samples", *RULES, "unparsable", "errors"]
    rows: list[list[Cell]] = []
    for label, result in zip(run_labels(results), results, strict=True):
        group = _summary(result).overall
        rows.append([label, group.samples, *(group.rules.get(rule) for rule in RULES),
                     group.unparsable, group.errors])
    return Table("Coherence rules that fired (samples)", headers, rows, note=RULES_NOTE)


def divergence_table(results: Sequence[Results]) -> Table:
    """Coherent samples with a wrong output, by the kind of their first wrong property."""
    headers = ["run", "programs", *KINDS, "statement states (LV LI P B)"]
    rows: list[list[Cell]] = []
    for label, result in zip(run_labels(results), results, strict=True):
        for name, group in _groups(result):
            rows.append([label, name, *(group.divergence.get(kind, 0) for kind in KINDS),
                         " ".join(f"{k}:{v}" for k, v in group.quadruples.items()) or None])
    return Table("Divergence points of coherent simulations with a wrong output (samples)",
                 headers, rows, keys=2)


CONSISTENCY_NOTE = ("strong/weak/random: % of the group's programs; with two coverages: % "
                    "of them with two calls covering different prime paths; programs (all): "
                    "every program of the group; the columns "
                    "marked 'two coverages': the levels over those programs alone, where "
                    "consistency is put to the test (-: no such program, or a run scored "
                    "before they were kept).")


def consistency_table(results: Sequence[Results]) -> Table:
    """Programs by consistency across their calls (%), how many could differ, and the
    consistency over only those (the paper reports both spectra)."""
    headers = ["run", "programs", *LEVELS, "with two coverages", "programs (all)",
               *(f"{level}, two coverages" for level in LEVELS), "count, two coverages"]
    rows: list[list[Cell]] = []
    for label, result in zip(run_labels(results), results, strict=True):
        summary = _summary(result)
        groups: list[tuple[str, Consistency]] = [
            *((name, summary.category_consistency(name)) for name in CATEGORIES),
            ("Total", summary.consistency)]
        for name, group in groups:
            rows.append([label, name, *(percent(level) for level in group.levels),
                         percent(group.different_coverage), group.programs,
                         *(percent(level) for level in group.differing.levels),
                         group.differing.programs])
    return Table("Consistency across each program's calls (% of programs)", headers, rows,
                 keys=2, note=CONSISTENCY_NOTE)


def figure(results: Sequence[Results]) -> Any:
    """Figure 6 style: per run, the share of programs simulated with strong, weak and
    random consistency as stacked bars, over all programs (plain) and over the programs
    whose calls cover different prime paths (hatched, beside it; absent for a run from
    before it was kept), and the share whose calls differ in coverage as a dashed mark
    across the first bar (the most a run could have strong)."""
    plt = pyplot()
    labels = run_labels(results)
    groups = [_summary(result).consistency for result in results]
    fig, axis = plt.subplots(figsize=(1.6 * len(results) + 3.0, 3.6))
    colours = ("tab:green", "tab:orange", "tab:red")
    width = 0.38
    spectra: tuple[tuple[str, float, list[tuple[float | None, ...]]], ...] = (
        ("", -width / 2, [group.levels for group in groups]),
        ("//", width / 2, [group.differing.levels for group in groups]))
    for hatch, offset, levels in spectra:
        bottom = [0.0] * len(results)
        for index, (level, colour) in enumerate(zip(LEVELS, colours, strict=True)):
            heights = [100 * (shares[index] or 0.0) for shares in levels]
            axis.bar([x + offset for x in range(len(results))], heights, width, bottom=bottom,
                     color=colour, hatch=hatch, edgecolor="white" if hatch else None,
                     label=level if not hatch else None)
            bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    axis.bar([0], [0], width, color="white", edgecolor="grey", hatch="//",
             label="only programs with two coverages")
    differing = [100 * (group.different_coverage or 0.0) for group in groups]
    axis.hlines(differing, [x - width for x in range(len(results))], list(range(len(results))),
                colors="black", linestyles="dashed", label="programs with two coverages")
    axis.set_xticks(range(len(results)), labels, rotation=30, ha="right", fontsize=8)
    axis.set_ylabel("% of programs")
    axis.set_ylim(0, 105)
    axis.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.tight_layout()
    return fig


def _sections(results: Sequence[Results], view: View) -> list[Table]:
    return [table1(results), rules_table(results), divergence_table(results),
            consistency_table(results)]


register_layout(Layout("ces", "CES Table 1 per construct category, rules fired, divergence "
                       "kinds, consistency over all programs and over those whose calls "
                       "cover different prime paths", _sections, figure))
