"""The columns researchers report beside the strict one, in the reports: the string-match
share of every value task and, for yes/no tasks, the majority class rate and balanced
accuracy, read from the declared metrics alone (the default layout and the leaderboard);
and a results file from before them still reports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from execbench.reports.families import family_tables
from execbench.reports.leaderboard import table as leaderboard
from execbench.reports.tables import Estimate, render
from execbench.rundir import read_results

LENIENT = ["output string match", "mutation string match", "choice string match",
           "statement string match", "simulation output right",
           "simulation output string match"]


def _columns(report_runs: list[Path]) -> dict[str, dict[str, Estimate | None]]:
    """Column -> run -> cell, over the default layout's tables."""
    results = [read_results(folder) for folder in report_runs]
    found: dict[str, dict[str, Estimate | None]] = {}
    for table in family_tables(results, [1]):
        for row in table.rows:
            for header, cell in zip(table.headers, row, strict=True):
                assert cell is None or isinstance(cell, Estimate | str)
                if isinstance(cell, Estimate | type(None)):
                    found.setdefault(header, {})[str(row[0])] = cell
    return found


def test_every_value_task_shows_its_string_match_beside_pass_at_1(
        report_runs: list[Path]) -> None:
    columns = _columns(report_runs)
    for name in LENIENT:
        oracle = columns[name]["reference/oracle"]
        assert oracle is not None and oracle.value == 100.0, name
        assert columns[name]["reference/constant"] is not None, name
    # The constant answer, ``assert f(0) == 0``, is right once, by value and by text.
    constant = columns["output string match"]["reference/constant"]
    strict = columns["output pass@1"]["reference/constant"]
    assert constant is not None and strict is not None
    assert (constant.value, constant.interval, constant.instances) == (20.0, None, 5)
    assert strict.value == constant.value


def test_the_leaderboard_has_the_columns_and_every_format_renders_them(
        report_runs: list[Path]) -> None:
    results = [read_results(folder) for folder in report_runs]
    board = leaderboard(results)
    for name in LENIENT:
        family = "ces" if name.startswith("simulation") else "codesense" \
            if name.startswith("statement") else "generalization" \
            if name.split()[0] in ("mutation", "choice") else "prediction"
        assert f"{family}: {name} (%)" in board.headers
    tables = family_tables(results, [1])
    document = json.loads(render(tables, "json"))
    assert any("output string match" in t["columns"] for t in document["tables"])
    assert "output string match" in render(tables, "markdown")
    assert "output string match" in render(tables, "csv")


def test_a_results_file_from_before_the_columns_still_reports(report_runs: list[Path],
                                                              tmp_path: Path) -> None:
    """An older run: its results declare no such metric (nothing new is shown), or declare
    it with no summary behind it (the cell is empty, never an error)."""
    older, partial = tmp_path / "older", tmp_path / "partial"
    for folder in (older, partial):
        shutil.copytree(report_runs[0], folder)
    record = json.loads((older / "results.json").read_text())
    record["declared_metrics"] = [m for m in record["declared_metrics"]
                                  if "string match" not in m["name"]
                                  and m["name"] != "output right"]
    record["task_metrics"] = {task: summary for task, summary in
                              record["task_metrics"].items() if task != "output"}
    (older / "results.json").write_text(json.dumps(record))
    record = json.loads((partial / "results.json").read_text())
    record["task_metrics"] = {}
    (partial / "results.json").write_text(json.dumps(record))
    old = family_tables([read_results(older)], [1])
    assert not any("string match" in header for t in old for header in t.headers)
    cut = {header: cell for t in family_tables([read_results(partial)], [1])
           for header, cell in zip(t.headers, t.rows[0], strict=True)}
    assert cut["output string match"] == Estimate(None, None, 5)
    for fmt in ("text", "markdown", "csv", "json"):
        render(family_tables([read_results(partial)], [1]), fmt)
