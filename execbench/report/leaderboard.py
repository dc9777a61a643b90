"""The leaderboard: one row per run, one column per headline metric of every task family
present, read through the metric declarations each run's ``results.json`` carries, so a
new family appears here without any change to this module."""

from __future__ import annotations

from typing import Any

from execbench.report.layouts import Layout, View, register_layout
from execbench.report.tables import Cell, Table, percent, run_labels
from execbench.tasks.base import Metric


def headline(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The headline metrics declared by any of the runs, by family, task and declared order."""
    seen: dict[tuple[str, str, str], dict[str, Any]] = {}
    for result in results:
        for metric in result.get("declared_metrics", []):
            if metric.get("headline"):
                seen.setdefault((metric["family"], metric["task"], metric["name"]), metric)
    return [seen[key] for key in sorted(seen, key=lambda k: (k[0], k[1]))]


def values(results: list[dict[str, Any]], metrics: list[dict[str, Any]]) -> list[list[Cell]]:
    """Per run, each declared metric's value as a percentage (None where the run lacks it)."""
    readers = [Metric(m["name"], tuple(m["path"])) for m in metrics]
    return [[percent(reader.read(result)) for reader in readers] for result in results]


def table(results: list[dict[str, Any]]) -> Table:
    metrics = headline(results)
    headers = ["run"] + [f"{m['family']}: {m['task']} {m['name']} (%)"
                         + ("" if m["higher_is_better"] else " (lower is better)")
                         for m in metrics]
    rows = [[label, *row] for label, row in
            zip(run_labels(results), values(results, metrics), strict=True)]
    return Table("Leaderboard: headline metrics of every task family present", headers, rows)


def _sections(results: list[dict[str, Any]], view: View) -> list[Table]:
    return [table(results)]


register_layout(Layout("leaderboard", "one row per run, the headline metrics every task "
                       "family declares", _sections))
