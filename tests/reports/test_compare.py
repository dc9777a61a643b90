"""``report --compare``: two runs' paired differences, with numbers stated by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from execbench.api import ReportConfig, report
from execbench.reports.tables import Cell
from execbench.runner import RunConfig, run
from execbench.settings import SettingError
from execbench.suite import BuildOptions, build_suite
from tests.helpers.cli import execbench


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """Ten output questions whose truths are 0 and 1 alternately, answered by the oracle
    (all right), the oracle again, and a model that always says 0 (right on the five 0s)."""
    folder = tmp_path_factory.mktemp("compare")
    source = folder / "parity.jsonl"
    source.write_text("".join(json.dumps({
        "id": f"p{i}", "code": f"def p{i}(x):\n    return x % 2\n", "entry_point": f"p{i}",
        "calls": [str(i)]}) + "\n" for i in range(10)))
    build_suite([str(source)], folder / "suite", BuildOptions(tasks=["output"], workers=1))
    made = []
    for name, model, args in (("oracle", "reference/oracle", {}),
                              ("again", "reference/oracle", {}),
                              ("zero", "reference/constant", {"answer": "[ANSWER]\n0\n[/ANSWER]"})):
        run(RunConfig(suite=str(folder / "suite"), model=model, model_args=args),
            folder / name)
        made.append(folder / name)
    return made[0], made[1], made[2]


def _rows(first: Path, second: Path) -> dict[tuple[str, str], list[Cell]]:
    made = report(ReportConfig(runs=[first, second], compare=True, fmt="json"))
    [table] = made.tables
    return {(str(row[0]), str(row[1])): list(row[2:]) for row in table.rows}


def test_a_difference_on_half_the_questions_is_fifty_points_and_real(
        runs: tuple[Path, Path, Path]) -> None:
    oracle, _, zero = runs
    rows = _rows(oracle, zero)
    assert set(rows) == {("output", "pass@1"), ("output", "string match")}
    instances, a, b, difference, low, high, differs = rows[("output", "pass@1")]
    assert (instances, a, b, difference, differs) == (10, 100.0, 50.0, 50.0, "yes")
    assert 0 < float(str(low)) <= 50.0 <= float(str(high)) <= 100.0
    assert rows[("output", "string match")][:4] == [10, 100.0, 50.0, 50.0]


def test_the_same_answers_do_not_differ(runs: tuple[Path, Path, Path]) -> None:
    oracle, again, _ = runs
    assert _rows(oracle, again)[("output", "pass@1")] == [10, 100.0, 100.0, 0.0, 0.0, 0.0,
                                                           "no"]


def test_compare_takes_two_runs_and_prints_from_the_cli(runs: tuple[Path, Path, Path]) -> None:
    oracle, again, zero = runs
    with pytest.raises(SettingError, match="takes two runs"):
        report(ReportConfig(runs=[oracle, again, zero], compare=True))
    done = execbench("report", oracle, zero, "--compare", "--format", "csv")
    assert done.exit_code == 0, done.stderr
    assert "output,pass@1,10,100.0,50.0,50.0," in done.stdout
