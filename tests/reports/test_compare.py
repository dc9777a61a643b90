"""``report --compare``: two runs' paired differences, with numbers stated by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from execbench.api import ReportConfig, report
from execbench.metrics import bootstrap_ci
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


def test_the_layout_sets_every_run_against_the_first(runs: tuple[Path, Path, Path],
                                                     tmp_path: Path) -> None:
    """Three runs: two tables (oracle - again, oracle - zero), and the figure, the page and
    --plots have them; one run is refused, and so is --compare with another layout."""
    pytest.importorskip("matplotlib")
    oracle, again, zero = runs
    made = report(ReportConfig(runs=[oracle, again, zero], layout="paired-differences",
                               fmt="json", figure=True))
    first, second = made.tables
    assert [row[:3] for row in first.rows] == [["output", "pass@1", 10],
                                               ["output", "string match", 10]]
    assert first.rows[0][5] == 0.0 and second.rows[0][5] == 50.0
    assert made.figure is not None and made.figure.startswith(b"\x89PNG")
    with pytest.raises(SettingError, match="give at least 2, not 1"):
        report(ReportConfig(runs=[oracle], layout="paired-differences"))
    with pytest.raises(SettingError, match="compare is the paired-differences layout"):
        report(ReportConfig(runs=[oracle, zero], compare=True, layout="ces"))
    refused = execbench("report", oracle, zero, "--compare", "--layout", "ces")
    assert refused.exit_code == 2 and "--compare is the paired-differences" in refused.stderr
    plots, page = tmp_path / "plots", tmp_path / "page.html"
    done = execbench("report", oracle, zero, "--plots", plots, "--html", page)
    assert done.exit_code == 0, done.stderr
    assert (plots / "paired-differences.png").read_bytes().startswith(b"\x89PNG")
    assert b"<svg" in (plots / "paired-differences.svg").read_bytes()
    assert 'id="layout-paired-differences"' in page.read_text(encoding="utf-8")
    alone = tmp_path / "alone.html"
    assert execbench("report", oracle, "--html", alone).exit_code == 0
    assert "layout-paired-differences" not in alone.read_text(encoding="utf-8")


def test_a_moved_run_is_compared_from_where_it_is_now(runs: tuple[Path, Path, Path],
                                                      tmp_path: Path) -> None:
    """``results.json`` names the folder a run was made in; its samples are read from the
    folder given, so a moved run compares, and a file naming another folder reads nothing
    from there."""
    import shutil

    oracle, _, zero = runs
    moved = tmp_path / "moved"
    shutil.copytree(zero, moved)
    shutil.rmtree(moved / "cache", ignore_errors=True)
    record = json.loads((moved / "results.json").read_text(encoding="utf-8"))
    record["run"]["run_dir"] = str(oracle)  # a file that points elsewhere
    (moved / "results.json").write_text(json.dumps(record), encoding="utf-8")
    assert _rows(oracle, moved)[("output", "pass@1")][:4] == [10, 100.0, 50.0, 50.0]
    (moved / "samples.jsonl").unlink()
    made = report(ReportConfig(runs=[oracle, moved], compare=True))
    assert made.tables[0].rows == []
    assert "B: no samples read" in (made.tables[0].note or "")


SPLIT = "def s(x):\n    return int(x >= 5)\n"
"""Returns 0 for the calls 0-4 and 1 for 5-9."""
COVERED = "def f(x):\n    if x > 1:\n        return 1\n    return 0\n"
"""Lines 1, 2, 4 run for x = 0, 1; lines 1, 2, 3 for x = 2, 3."""


def _constant(answer: str) -> tuple[str, dict[str, str]]:
    return "reference/constant", {"answer": f"[ANSWER]\n{answer}\n[/ANSWER]"}


@pytest.fixture(scope="module")
def halves(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Ten output questions s0..s9 whose truths are 0 (s0-s4) and 1 (s5-s9): ``zero``
    is right on the first five, ``one`` on the last five, ``first6`` is the oracle asked
    only the first six (``--limit 6``). Four coverage questions c0..c3: the oracle, and
    ``lines`` always answering [1, 2, 4] (right on c0 and c1; Jaccard 2/4 = 0.5 on c2
    and c3, whose lines are 1, 2, 3)."""
    folder = tmp_path_factory.mktemp("halves")
    split, covered = folder / "split.jsonl", folder / "covered.jsonl"
    split.write_text("".join(json.dumps({"id": f"s{i}", "code": SPLIT, "entry_point": "s",
                                         "calls": [str(i)]}) + "\n" for i in range(10)))
    covered.write_text("".join(json.dumps({"id": f"c{i}", "code": COVERED, "entry_point": "f",
                                           "calls": [str(i)]}) + "\n" for i in range(4)))
    build_suite([str(split)], folder / "split", BuildOptions(tasks=["output"], workers=1))
    build_suite([str(covered)], folder / "covered", BuildOptions(tasks=["coverage"],
                                                                 workers=1))
    made = {}
    for name, suite, (model, args), limit in (
            ("zero", "split", _constant("0"), None), ("one", "split", _constant("1"), None),
            ("first6", "split", ("reference/oracle", {}), 6),
            ("oracle", "covered", ("reference/oracle", {}), None),
            ("lines", "covered", _constant("[1, 2, 4]"), None)):
        run(RunConfig(suite=str(folder / suite), model=model, model_args=args, limit=limit),
            folder / name)
        made[name] = folder / name
    return made


def _table(first: Path, second: Path) -> Any:
    [table] = report(ReportConfig(runs=[first, second], compare=True, fmt="json")).tables
    return table


def test_opposite_halves_differ_by_nothing_with_the_bootstrap_interval(
        halves: dict[str, Path]) -> None:
    """zero - one on s0..s9 (in id order): +1 on each of the first five, -1 on each of the
    last five: 50% against 50%, a mean gap of 0, and the interval is ``bootstrap_ci`` of
    those ten gaps (1,000 resamples)."""
    table = _table(halves["zero"], halves["one"])
    rows = {(row[0], row[1]): row[2:] for row in table.rows}
    assert set(rows) == {("output", "pass@1"), ("output", "string match")}
    low, high = bootstrap_ci([1.0] * 5 + [-1.0] * 5, resamples=1000)
    assert low < 0 < high
    for metric in ("pass@1", "string match"):
        assert rows[("output", metric)] == [10, 50.0, 50.0, 0.0, 100 * low, 100 * high, "no"]
    assert "not corrected for multiple comparisons" in (table.note or "")


def test_a_limited_run_is_compared_on_the_instances_both_answered(
        halves: dict[str, Path]) -> None:
    """first6 answered s0..s5 only: on those six, zero is right on five (s5's truth is 1),
    the oracle on six; the gaps are 0 x5 and -1."""
    rows = {(row[0], row[1]): row[2:] for row in _table(halves["zero"], halves["first6"]).rows}
    low, high = bootstrap_ci([0.0] * 5 + [-1.0], resamples=1000)
    instances, a, b, mean, *interval, differs = rows[("output", "pass@1")]
    assert (instances, b) == (6, 100.0)
    assert a == pytest.approx(500 / 6) and mean == pytest.approx(-100 / 6)
    assert interval == [100 * low, 100 * high]
    assert differs == ("yes" if high < 0 else "no")


def test_coverage_compares_its_score(halves: dict[str, Path]) -> None:
    """oracle - lines on c0..c3: pass@1 100 against 50 (gaps 0, 0, 1, 1); score (Jaccard)
    100 against 75 (gaps 0, 0, 0.5, 0.5); coverage records no string match, so there is
    no such row and the note does not name it."""
    table = _table(halves["oracle"], halves["lines"])
    rows = {(row[0], row[1]): row[2:] for row in table.rows}
    assert list(rows) == [("coverage", "pass@1"), ("coverage", "score")]
    low, high = bootstrap_ci([0.0, 0.0, 1.0, 1.0], resamples=1000)
    assert rows[("coverage", "pass@1")] == [4, 100.0, 50.0, 50.0, 100 * low, 100 * high,
                                            "yes" if low > 0 else "no"]
    low, high = bootstrap_ci([0.0, 0.0, 0.5, 0.5], resamples=1000)
    assert rows[("coverage", "score")] == [4, 100.0, 75.0, 25.0, 100 * low, 100 * high,
                                           "yes" if low > 0 else "no"]
    assert "not compared" not in (table.note or "")


def test_a_metric_some_instances_lack_is_named_in_the_note(halves: dict[str, Path],
                                                           tmp_path: Path) -> None:
    """lines with c3's score taken out of its log: the score row is left out, and the note
    says so with the count; pass@1 is still compared."""
    import shutil

    lacking = tmp_path / "lacking"
    shutil.copytree(halves["lines"], lacking)
    log = lacking / "samples.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    for record in records:
        if record["instance_id"].endswith("/c3/0"):
            record["score"] = None
    log.write_text("".join(json.dumps(record) + "\n" for record in records))
    table = _table(halves["oracle"], lacking)
    assert [row[1] for row in table.rows] == ["pass@1"]
    assert "coverage score not compared: 1 of the 4 instances both answered lack it" in (
        table.note or "")


def test_a_failed_request_is_never_right(halves: dict[str, Path], tmp_path: Path) -> None:
    """one's log with s9 (right) turned into a failed request that still says correct:
    one is right on four of ten, as results.json counts it."""
    import shutil

    failed = tmp_path / "failed"
    shutil.copytree(halves["one"], failed)
    log = failed / "samples.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    for record in records:
        if record["instance_id"].endswith("/s9/0"):
            record.update(verdict="error", error="timed out", correct=True)
    log.write_text("".join(json.dumps(record) + "\n" for record in records))
    rows = {(row[0], row[1]): row[2:] for row in _table(halves["zero"], failed).rows}
    assert rows[("output", "pass@1")][:4] == [10, 50.0, 40.0, 10.0]


def test_nothing_to_compare_is_drawn_as_a_message_and_one_pair_is_kept(
        halves: dict[str, Path]) -> None:
    """Two runs with no task in common: no row, and the figure says there is nothing to
    compare; the module keeps only the last pair compared."""
    pytest.importorskip("matplotlib")
    from execbench.reports import compare
    from execbench.rundir import read_results

    split, covered = read_results(halves["zero"]), read_results(halves["oracle"])
    assert compare.differences(split, covered) == []
    fig = compare.figure([split, covered])
    [axis] = fig.axes
    assert [text.get_text() for text in axis.texts] == [
        "Nothing to compare: no instance of a task was answered by the first run and "
        "another (see the table's note)."]
    compare.differences(split, read_results(halves["one"]))
    assert len(compare._last) == 1
