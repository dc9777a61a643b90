"""Typed results read the files runs wrote before the types existed, and write them back
byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

from execbench import __version__
from execbench.reports.leaderboard import rows
from execbench.reports.leaderboard import table as leaderboard
from execbench.reports.tables import verdict_table
from execbench.results import Place
from execbench.rundir import Results

OLD = Path(__file__).parent / "fixtures" / "results-before-typed.json"
"""An oracle run's results.json (CRUXEval mutants, coverage and counterfactual, n=2)
written by the code before ``Results`` was typed; paths and host made neutral."""


def _text(record: dict) -> str:
    return json.dumps(record, indent=2, sort_keys=True) + "\n"


def test_a_file_from_before_the_types_reads_and_writes_back_the_same() -> None:
    text = OLD.read_text(encoding="utf-8")
    results = Results.from_record(json.loads(text))
    written = results.to_record()
    assert written["execbench_version"] == __version__  # a rewrite says who rewrote it
    assert _text({**written, "execbench_version": json.loads(text)["execbench_version"]}) == text
    assert results.metrics["coverage"].all.pass_at_k(2) == 1.0
    assert results.paired_metrics["dual"].all.number("paired_pass@1") == 1.0
    assert results.sessions[0].outcome == "completed"


def test_declared_metrics_are_read_through_their_places() -> None:
    results = Results.from_record(json.loads(OLD.read_text(encoding="utf-8")))
    dual = next(d for d in results.declared_metrics if d.name == "R_dual pass@1")
    assert dual.metric.at == Place.paired("dual", "pass@1")
    assert dual.metric.read(results) == 1.0
    relaxed = next(d for d in results.declared_metrics if d.name == "relaxed")
    assert relaxed.metric.at.keys == ("metrics", "coverage", "all", "score")
    assert relaxed.metric.at.in_source("cruxeval") == Place(
        "metrics", "coverage", ("by_source", "cruxeval"), "score")
    assert [row.values for row in rows([results], [dual, relaxed])] == [[100.0, 100.0]]


def test_results_from_before_usage_and_sessions_still_report() -> None:
    """The oldest results lack usage, sessions and the truncated and refused counts."""
    record = json.loads(OLD.read_text(encoding="utf-8"))
    for key in ("usage", "sessions", "paired_metrics"):
        del record[key]
    for key in ("truncated", "refused"):
        del record["counts"][key]
    results = Results.from_record(record)
    assert results.sessions == () and results.usage.samples == record["counts"]["samples"]
    assert verdict_table([results]).rows[0][-2:] == [None, None]
    assert leaderboard([results]).rows[0][0] == "reference/oracle"
