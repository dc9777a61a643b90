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

from itertools import groupby
from pathlib import Path
from typing import Any

from execbench.report.leaderboard import headline
from execbench.report.tables import Cell, Estimate, Table, percent, run_labels
from execbench.tasks.base import Metric

NOTE = ("value (%) [bootstrap 95% interval over instances, where the task has one]; n: "
        "the task's instances the run answered; ↓: lower is better; pass@k: unbiased "
        "estimate of the chance that at least one of k samples is right.")


def _reader(metric: dict[str, Any], k: int = 1, source: str | None = None) -> Metric:
    """The declared ``metric`` as a ``Metric``, read at pass@``k`` (for a pass@1 metric)
    and within one ``source`` (from the ``by_source`` block that stands beside each
    ``all`` block), where asked."""
    path = list(metric["path"])
    interval = metric.get("interval")
    if k != 1:
        path[-1] = f"pass@{k}"
        interval = None
    if source is not None:
        path = _within(path, source)
        interval = _within(interval, source) if interval else None
    return Metric(metric["name"], tuple(path), metric["higher_is_better"],
                  interval=tuple(interval) if interval else None)


def _within(path: list[str], source: str) -> list[str]:
    at = path.index("all")
    return [*path[:at], "by_source", source, *path[at + 1:]]


def _at_k(metric: dict[str, Any]) -> bool:
    """Whether the metric is a pass@1 that results also hold at every other k."""
    return metric["path"][-1] == "pass@1"


def _instances(result: dict[str, Any], task: str, k: int = 1,
              source: str | None = None) -> int | None:
    """How many of the task's instances the run answered (those pass@``k`` rests on)."""
    block = result["metrics"].get(task, {})
    group = block.get("all") if source is None else block.get("by_source", {}).get(source)
    if not group:
        return None
    return group.get(f"pass@{k}_instances", group["instances"])


def estimate(result: dict[str, Any], metric: dict[str, Any], k: int = 1,
             source: str | None = None) -> Estimate | None:
    """The metric in one run as a cell; None where the run lacks its task (or, within a
    source, where the metric is not kept per source)."""
    if source is not None and "all" not in metric["path"]:
        return None
    count = _instances(result, metric["task"], k, source)
    read = _reader(metric, k, source)
    value = read.read(result)
    if count is None or value is None and k != 1:  # no task, or fewer than k samples
        return None
    low, high = read.read_interval(result) or (None, None)
    return Estimate(percent(value), None if low is None else (percent(low), percent(high)),
                    count)


def _header(metric: dict[str, Any], k: int) -> str:
    name = metric["name"] if k == 1 else metric["name"].replace("pass@1", f"pass@{k}")
    return f"{metric['task']} {name}" + ("" if metric["higher_is_better"] else " ↓")


def _benchmarks(results: list[dict[str, Any]], tasks: set[str]) -> list[str]:
    """What each run answered of ``tasks``: its sources, and its suite's folder where the
    runs were not all on one suite (its whole path where two folders share a name)."""
    suites = [result["run"].get("suite", "") for result in results]
    names = [Path(suite).name for suite in suites]
    if len(set(names)) < len(set(suites)):
        names = suites
    several = len({result["run"].get("suite_sha256") for result in results}) > 1
    described = []
    for result, name in zip(results, names, strict=True):
        sources = sorted({source for task in tasks & set(result["metrics"])
                          for source in result["metrics"][task].get("by_source", {})})
        text = ", ".join(sources) or "-"
        described.append(f"{text} ({name})" if several else text)
    return described


def family_tables(results: list[dict[str, Any]], ks: list[int], *,
                  by_source: bool = False) -> list[Table]:
    """One table per task family present, families in name order; a run appears in the
    tables of the families it has tasks of. With ``by_source`` a run gets a row per source
    it answered, since a score over sources can hide that a model is strong on one and
    weak on another."""
    labels = run_labels(results)
    tables = []
    for family, members in groupby(headline(results), key=lambda m: m["family"]):
        metrics = list(members)
        columns = [(metric, k) for metric in metrics
                   for k in (ks if _at_k(metric) else [1])]
        tasks = {metric["task"] for metric in metrics}
        shown = [i for i, result in enumerate(results) if tasks & set(result["metrics"])]
        rows: list[list[Cell]] = []
        if by_source:
            for i in shown:
                sources = sorted({source for task in tasks & set(results[i]["metrics"])
                                  for source in results[i]["metrics"][task]["by_source"]})
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
