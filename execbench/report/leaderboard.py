"""The leaderboard: one row per run, one column per headline metric of every task family
present, read through the metric declarations each run's ``results.json`` carries, so a
new family appears here without any change to this module."""

from __future__ import annotations

from typing import Any

from execbench.report.layouts import Layout, Section, register_layout
from execbench.report.tables import percent, run_labels
from execbench.tasks.base import Metric


def _headline(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The headline metrics declared by any of the runs, by family, task and declared order."""
    seen: dict[tuple[str, str, str], dict[str, Any]] = {}
    for result in results:
        for metric in result.get("declared_metrics", []):
            if metric.get("headline"):
                seen.setdefault((metric["family"], metric["task"], metric["name"]), metric)
    return [seen[key] for key in sorted(seen, key=lambda k: (k[0], k[1]))]


def table(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    metrics = _headline(results)
    headers = ["run"] + [f"{m['family']}: {m['task']} {m['name']} (%)"
                         + ("" if m["higher_is_better"] else " (lower is better)")
                         for m in metrics]
    readers = [Metric(m["name"], tuple(m["path"])) for m in metrics]
    rows = [[label, *(percent(reader.read(result)) for reader in readers)]
            for label, result in zip(run_labels(results), results, strict=True)]
    return headers, rows


def _sections(results: list[dict[str, Any]]) -> list[Section]:
    return [("Leaderboard: headline metrics of every task family present", table(results))]


register_layout(Layout("leaderboard", "one row per run, the headline metrics every task "
                       "family declares", _sections))
