"""The default layout: one compact table per task family, its rows the runs, its columns
the headline metrics the family's tasks declare, each cell a value with its 95% interval
and the instances it rests on.

A table per task (pass@k and an interval column for each) grew to 8 tables of 120
columns for an 11-task suite; the families' own headline metrics say what matters in a
handful of columns. Each row also names the benchmark the run answered (its sources, and
its suite where the runs' suites differ), so two runs on different benchmarks never share
a column unremarked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import groupby
from pathlib import Path

from execbench.reports.leaderboard import headline
from execbench.reports.tables import Cell, Estimate, Table, percent, run_labels
from execbench.results import DeclaredMetric, Metric
from execbench.rundir import Results

NOTE = ("value (%) [bootstrap 95% interval over instances, where the task has one]; n: "
        "the task's instances the run answered; ↓: lower is better; pass@k: unbiased "
        "estimate of the chance that at least one of k samples is right.")


def _reader(declared: DeclaredMetric, k: int = 1, source: str | None = None) -> Metric | None:
    """The declared metric read at pass@``k`` (for a pass@1 metric) and within one
    ``source``, where asked; None where it is not kept per source."""
    metric = declared.metric
    at, interval = metric.at, metric.interval
    if k != 1:
        at, interval = at.at_k(k), None
    if source is not None:
        within = at.in_source(source)
        if within is None:
            return None
        at, interval = within, None if interval is None else interval.in_source(source)
    return replace(metric, at=at, interval=interval)


def _at_k(declared: DeclaredMetric) -> bool:
    """Whether the metric is a pass@1 that results also hold at every other k."""
    return declared.metric.at.key == "pass@1"


def _instances(result: Results, task: str, k: int = 1, source: str | None = None) -> int | None:
    """How many of the task's instances the run answered (those pass@``k`` rests on)."""
    block = result.metrics.get(task)
    group = None if block is None else block.group(source)
    return None if group is None else group.instances_at(k)


def estimate(result: Results, declared: DeclaredMetric, k: int = 1,
             source: str | None = None) -> Estimate | None:
    """The metric in one run as a cell; None where the run lacks its task (or, within a
    source, where the metric is not kept per source)."""
    read = _reader(declared, k, source)
    if read is None:
        return None
    count = _instances(result, declared.task, k, source)
    value = read.read(result)
    if count is None or value is None and k != 1:  # no task, or fewer than k samples
        return None
    low, high = read.read_interval(result) or (None, None)
    return Estimate(percent(value), None if low is None else (percent(low), percent(high)),
                    count)


def _header(declared: DeclaredMetric, k: int) -> str:
    name = declared.name if k == 1 else declared.name.replace("pass@1", f"pass@{k}")
    return f"{declared.task} {name}" + ("" if declared.higher_is_better else " ↓")


def _benchmarks(results: Sequence[Results], tasks: set[str]) -> list[str]:
    """What each run answered of ``tasks``: its sources, and its suite's folder where the
    runs were not all on one suite (its whole path where two folders share a name)."""
    suites = [result.config.suite for result in results]
    names = [Path(suite).name for suite in suites]
    if len(set(names)) < len(set(suites)):
        names = suites
    several = len({result.suite_sha256 for result in results}) > 1
    described = []
    for result, name in zip(results, names, strict=True):
        sources = sorted({source for task in tasks & set(result.metrics)
                          for source in result.metrics[task].by_source})
        text = ", ".join(sources) or "-"
        described.append(f"{text} ({name})" if several else text)
    return described


def family_tables(results: Sequence[Results], ks: list[int], *,
                  by_source: bool = False) -> list[Table]:
    """One table per task family present, families in name order; a run appears in the
    tables of the families it has tasks of. With ``by_source`` a run gets a row per source
    it answered, since a score over sources can hide that a model is strong on one and
    weak on another."""
    labels = run_labels(results)
    tables = []
    for family, members in groupby(headline(results), key=lambda m: m.family):
        metrics = list(members)
        columns = [(metric, k) for metric in metrics
                   for k in (ks if _at_k(metric) else [1])]
        tasks = {metric.task for metric in metrics}
        shown = [i for i, result in enumerate(results) if tasks & set(result.metrics)]
        rows: list[list[Cell]] = []
        if by_source:
            for i in shown:
                sources = sorted({source for task in tasks & set(results[i].metrics)
                                  for source in results[i].metrics[task].by_source})
                rows += [[labels[i], source, *(estimate(results[i], metric, k, source)
                                               for metric, k in columns)]
                         for source in sources]
        else:
            described = _benchmarks([results[i] for i in shown], tasks)
            rows = [[labels[i], benchmark, *(estimate(results[i], metric, k)
                                             for metric, k in columns)]
                    for i, benchmark in zip(shown, described, strict=True)]
        keys = ["run", "source" if by_source else "benchmark"]
        tables.append(Table(f"{family}: headline metrics (%)",
                            [*keys, *(_header(metric, k) for metric, k in columns)],
                            rows, note=NOTE, keys=2))
    return tables
