"""Every layout in every format, with and without verdicts, through the command line:
json is one document and csv one table that parse back, text fits the terminal.

The command runs in this process (``CliRunner``): the same parsing and output as the
installed script, without paying the CLI's start-up for each of the 60-odd reports."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from execbench.cli import app
from execbench.reports.layouts import layouts
from execbench.rundir import read_results
from tests.helpers.cli import said


def report(*args: object, columns: int = 100) -> Result:
    return CliRunner(env={"COLUMNS": str(columns)}).invoke(app, ["report", *map(str, args)])


@pytest.mark.parametrize("layout", sorted(layouts()))
def test_every_layout_and_format_parses(report_runs: list[Path], layout: str) -> None:
    counts = []
    for verdicts in ((), ("--verdicts",)):
        done = {fmt: report(*report_runs, "--layout", layout, "--format", fmt, *verdicts)
                for fmt in ("json", "csv", "text", "markdown")}
        for fmt, result in done.items():
            assert result.exit_code == 0, (fmt, result.stderr)
        document = json.loads(done["json"].stdout)
        tables = document["tables"]
        counts.append(len(tables))
        titles = [table["title"] for table in tables]
        assert ("Verdicts (samples)" in titles) == bool(verdicts)
        for table in tables:
            assert set(table) == {"title", "note", "columns", "rows"}
            for row in table["rows"]:
                assert list(row) == table["columns"]
                for column, value in row.items():
                    assert not isinstance(value, str) or not _numeric(value), (column, value)
        rows = list(csv.reader(io.StringIO(done["csv"].stdout)))
        assert len({len(row) for row in rows}) == 1  # one header, every row as wide
        assert len(rows) - 1 == sum(len(table["rows"]) for table in tables)
        if len(tables) > 1:
            assert rows[0][0] == "table"
        widest = max(len(line) for line in done["text"].stdout.splitlines())
        assert widest <= 100, done["text"].stdout
        for title in titles:
            assert title in done["text"].stdout and f"### {title}" in done["markdown"].stdout
    assert counts[1] == counts[0] + 1 >= 2


def _numeric(text: str) -> bool:
    """Whether a JSON string is a number or an interval written as text (it must not be)."""
    try:
        float(text.strip("[]").split(",")[0])
    except ValueError:
        return False
    return True


def test_estimates_carry_intervals_and_pass_at_k_follows_k(report_runs: list[Path]) -> None:
    def tables(*args: str) -> dict[str, dict]:
        done = report(*report_runs, "--format", "json", *args)
        return {table["title"]: table for table in json.loads(done.stdout)["tables"]}

    every = tables()
    assert list(every) == [f"{family}: headline metrics (%)"
                           for family in ("ces", "codesense", "dexbench", "generalization",
                                          "prediction")]
    prediction = every["prediction: headline metrics (%)"]
    oracle = prediction["rows"][0]
    assert (oracle["run"], oracle["benchmark"]) == ("reference/oracle", "small")
    assert oracle["output pass@1"] == {"value": 100.0, "ci95": [100.0, 100.0], "instances": 5}
    assert oracle["output pass@2"] == {"value": 100.0, "ci95": None, "instances": 5}
    assert prediction["rows"][1]["output pass@2"] is None  # constant drew one sample
    chosen = tables("--k", "2")["prediction: headline metrics (%)"]
    assert not any("pass@1" in column for column in chosen["columns"])


def test_k_beyond_the_samples_drawn_is_refused(report_runs: list[Path]) -> None:
    done = report(*report_runs, "--k", "1,5")
    assert done.exit_code == 2
    assert said(done.stderr) == ["error: --k 5: no run drew that many samples (the most is "
                                 "n=2), so pass@k is not defined"]
    assert report(*report_runs, "--k", "one").exit_code == 2


def test_notes_explain_the_abbreviations(report_runs: list[Path]) -> None:
    tables = json.loads(report(*report_runs, "--layout", "dexbench", "--format",
                               "json").stdout)["tables"]
    notes = {table["title"]: table["note"] for table in tables}
    assert "CO: an if but no loop; LO: a loop but no if; LC: both" in notes["Suite complexity"]
    assert "R_dual: both on the same call" in notes["Dual-path reasoning, pass@k (%)"]


def test_the_generalization_figure_puts_at_most_three_runs_in_a_row(
        report_runs: list[Path]) -> None:
    pytest.importorskip("matplotlib")
    import struct

    from execbench.reports.layouts import layouts

    results = [read_results(run) for run in report_runs]

    def size(png: bytes) -> tuple[int, int]:
        return struct.unpack(">II", png[16:24])

    one_row = size(layouts()["generalization"].draw(results))
    two_rows = size(layouts()["generalization"].draw(results * 2))  # four panels: three, then one
    # the picture is cropped to what is drawn (``layouts._saved``): about twice as tall
    assert two_rows[0] > one_row[0] and 1.9 * one_row[1] < two_rows[1] < 2.1 * one_row[1]


def test_a_models_runs_on_different_tasks_share_its_leaderboard_row(
        report_runs: list[Path], tmp_path: Path) -> None:
    from execbench.runner import RunConfig, load_run_config, run

    suite = load_run_config(report_runs[0]).suite
    parts = []
    for tasks in (["output", "input"], ["coverage", "counterfactual"]):
        parts.append(tmp_path / "-".join(tasks))
        run(RunConfig(suite=suite, model="reference/oracle", tasks=tasks), parts[-1])

    def board(*runs: Path) -> list[dict]:
        done = report(*runs, "--layout", "leaderboard", "--format", "json")
        assert done.exit_code == 0, done.stderr
        return json.loads(done.stdout)["tables"][0]["rows"]

    merged = board(*parts, report_runs[1])
    assert [row["model"] for row in merged] == ["reference/oracle", "reference/constant"]
    oracle = merged[0]
    assert oracle["prediction: output pass@1 (%)"] == 100.0
    assert oracle["dexbench: coverage pass@1 (%)"] == 100.0
    assert oracle["generalization: mutation OC (%)"] is None
    # Two runs of one model on the same task cannot share a row.
    apart = board(parts[0], report_runs[0])
    assert [row["model"] for row in apart] == [f"reference/oracle ({parts[0]})",
                                               f"reference/oracle ({report_runs[0]})"]
