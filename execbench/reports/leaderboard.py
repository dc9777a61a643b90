"""The leaderboard: one row per model, one column per headline metric of every task family
present, read through the metric declarations each run's ``results.json`` carries, so a
new family appears here without any change to this module.

Runs of different suites never share a column: HumanEval's output pass@1 beside
CRUXEval's would read as one benchmark. Each suite gets its own table (``tables``), with a
``suite`` column where there are several, so every format (text, markdown, CSV, JSON)
keeps them apart."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from execbench.reports.layouts import Layout, View, register_layout
from execbench.reports.tables import Table, model_labels, percent, run_labels
from execbench.results import DeclaredMetric, Group
from execbench.rundir import Results
from execbench.tasks.base import CORRECT, INCORRECT


def headline(results: Sequence[Results]) -> list[DeclaredMetric]:
    """The headline metrics declared by any of the runs, by family, task and declared order."""
    seen: dict[tuple[str, str, str], DeclaredMetric] = {}
    for result in results:
        for declared in result.declared_metrics:
            if declared.metric.headline:
                seen.setdefault((declared.family, declared.task, declared.name), declared)
    return [seen[key] for key in sorted(seen, key=lambda k: (k[0], k[1]))]


@dataclass(frozen=True)
class Row:
    """A model's row: its label, a percentage per metric (None where it has none), and
    per metric whether that value comes from a run that gave the task no readable answer
    (so it is no result, whatever it is)."""

    label: str
    values: list[float | None]
    silent: list[bool]


def answered(result: Results, task: str) -> bool:
    """Whether the run gave any readable answer to the task: a run whose every sample
    failed, or was unreadable, scores 0 (or a 'lower is better' 0) by saying nothing."""
    block = result.metrics.get(task)
    return block is not None and readable(block.all)


def readable(group: Group) -> bool:
    """Whether a metrics group (``metrics.summarize``) counts a readable answer."""
    return group.verdicts.get(CORRECT, 0) + group.verdicts.get(INCORRECT, 0) > 0


def rows(results: Sequence[Results], metrics: list[DeclaredMetric]) -> list[Row]:
    """One row per model: a model's runs of different tasks (a CRUXEval run, a DexBench
    run, ...) share its row when they were asked the same way (``model_labels``). Runs of
    one model that share a task cannot be merged and keep a row each, labelled with their
    folder."""
    by_model: dict[str, list[int]] = {}
    for index, label in enumerate(model_labels(results)):
        by_model.setdefault(label, []).append(index)
    labels = run_labels(results)
    groups: list[tuple[str, list[int]]] = []
    for model, members in by_model.items():
        tasks = [set(results[i].metrics) for i in members]
        if sum(map(len, tasks)) == len(set().union(*tasks)):
            groups.append((model, members))
        else:
            groups += [(labels[i], [i]) for i in members]
    table = []
    for label, members in groups:
        values: list[float | None] = []
        silent: list[bool] = []
        for declared in metrics:
            found = next(((v, i) for i in members
                          if (v := declared.metric.read(results[i])) is not None), None)
            values.append(None if found is None else percent(found[0]))
            silent.append(found is not None and not answered(results[found[1]], declared.task))
        table.append(Row(label, values, silent))
    return table


def by_suite(results: Sequence[Results]) -> list[tuple[str, list[Results]]]:
    """The runs grouped by the suite they answered (told apart by its hash, so a suite
    rebuilt in the same folder is another), in the order each first appears, each named
    as its first run recorded it (its folder), with the start of its hash where two
    share a name."""
    groups: dict[str, list[Results]] = {}
    for result in results:
        groups.setdefault(result.suite_sha256, []).append(result)
    names = [members[0].config.suite for members in groups.values()]
    return [(name if names.count(name) == 1 else f"{name} (sha256 {sha[:12]})", members)
            for name, (sha, members) in zip(names, groups.items(), strict=True)]


def table(results: Sequence[Results], suite: str | None = None) -> Table:
    """The leaderboard of runs of one suite; named (title and a ``suite`` column) when
    it is one of several."""
    metrics = headline(results)
    headers = ["model", *(["suite"] if suite is not None else [])] + [
        f"{m.family}: {m.task} {m.name} (%)" + ("" if m.higher_is_better
                                                 else " (lower is better)")
        for m in metrics]
    title = "headline metrics of every task family present"
    return Table(f"Leaderboard: {title}" if suite is None else f"Leaderboard, suite {suite}: "
                 f"{title}", headers,
                 [[row.label, *([suite] if suite is not None else []), *row.values]
                  for row in rows(results, metrics)],
                 note="One row per model; runs of one model on different tasks share it.",
                 keys=1 if suite is None else 2)


def tables(results: Sequence[Results]) -> list[Table]:
    """One leaderboard per suite the runs answered (one table, unnamed, for one suite)."""
    suites = by_suite(results)
    if len(suites) == 1:
        return [table(results)]
    return [table(members, suite) for suite, members in suites]


def _sections(results: Sequence[Results], view: View) -> list[Table]:
    return tables(results)


register_layout(Layout("leaderboard", "one row per model, the headline metrics every task "
                       "family declares", _sections))
