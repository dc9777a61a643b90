"""The ``ces`` report layout: Table 1 with one column per run, the rules fired, the
divergence kinds and the consistency shares, from ``results.json`` records."""

from __future__ import annotations

from typing import Any

import pytest

from execbench.reports.ces import (
    consistency_table,
    divergence_table,
    rules_table,
    table1,
)
from execbench.reports.layouts import View, layouts
from execbench.reports.tables import render
from execbench.rundir import Results
from tests.helpers.results import make_results


def _group(samples: int, share: float, **more: Any) -> dict[str, Any]:
    return {"samples": samples, "coherent_correct": share, "coherent_incorrect": 1 - share,
            "incoherent_correct": 0.0, "incoherent_incorrect": 0.0, "errors": 0,
            "unparsable": 0, "rules": {"rule1": 1, "rule2": 0, "rule3": 2}, **more}


def _result(model: str, share: float) -> Results:
    groups = {name: _group(4, share, divergence={"iterable": 2}, quadruples={"TF--": 2})
              for name in ("CO", "LO", "LC", "Others")}
    level = {"strong": share, "weak": 0.0, "random": 1 - share, "programs": 3,
             "different_coverage": 2 / 3,
             "differing": {"strong": 0.5, "weak": 0.5, "random": 0.0, "programs": 2}}
    return make_results(model, model, task_metrics={"simulation": {
        "all": _group(16, share), "by_category": groups, "consistency": level,
        "consistency_by_category": dict.fromkeys(groups, level)}})


def test_the_ces_layout_is_registered_and_shows_every_table() -> None:
    results = [_result("m1", 0.5), _result("m2", 0.25)]
    assert "ces" in layouts()
    first = table1(results)
    assert first.headers == ["programs", "reasoning", "output", "m1", "m2"]
    assert len(first.rows) == 5 * 4
    assert first.rows[0] == ["CO (4)", "coherent", "correct output", 50.0, 25.0]
    assert first.rows[-4][:3] == ["Total (16)", "coherent", "correct output"]
    assert rules_table(results).rows[0] == ["m1", 16, 1, 0, 2, 0, 0]
    divergence = divergence_table(results).rows
    assert divergence[0] == ["m1", "CO", 0, 2, 0, 0, 0, "TF--:2"]
    consistency = consistency_table(results)
    assert consistency.headers == [
        "run", "programs", "strong", "weak", "random", "with two coverages", "programs (all)",
        "strong, two coverages", "weak, two coverages", "random, two coverages",
        "count, two coverages"]
    assert consistency.rows[-1] == ["m2", "Total", 25.0, 0.0, 75.0, pytest.approx(200 / 3), 3,
                                    50.0, 50.0, 0.0, 2]
    tables = layouts()["ces"].sections(results, View(ks=[1]))
    assert tables[0].title.startswith("Execution simulation")


def test_the_consistency_figure_is_drawn() -> None:
    assert layouts()["ces"].draw([_result("m1", 0.5), _result("m2", 0.25)]).startswith(b"\x89PNG")


def test_an_older_or_partial_summary_reports_what_it_has() -> None:
    """A run from before a field existed, and one with no summary of the task, report
    with blanks where their records are silent, as they always did."""
    old = make_results("old", "old", task_metrics={"simulation": {
        "all": {"samples": 4, "coherent_correct": 0.5, "rules": {"rule1": 1}},
        "by_category": {"LO": {"samples": 4, "coherent_correct": 0.5,
                               "divergence": {"branch": 1}}},
        "consistency": {"strong": 0.25, "programs": 2}}})
    none = make_results("none", "none")
    results = [old, none]
    rows = table1(results).rows
    assert rows[0] == ["CO", "coherent", "correct output", None, None]
    assert rows[4] == ["LO (4)", "coherent", "correct output", 50.0, None]
    assert rules_table(results).rows == [["old", 4, 1, None, None, None, None],
                                         ["none", None, None, None, None, None, None]]
    divergence = divergence_table(results).rows
    assert divergence[1] == ["old", "LO", 0, 0, 0, 1, 0, None]
    assert divergence[-1] == ["none", "Total", 0, 0, 0, 0, 0, None]
    # a run from before the spectrum over programs of two coverages was kept: '-' there
    assert consistency_table(results).rows[4] == ["old", "Total", 25.0, None, None, None, 2,
                                                  None, None, None, None]
    assert consistency_table(results).rows[-1] == ["none", "Total", *[None] * 9]


def test_an_older_run_shows_dashes_for_the_spectrum_it_lacks_in_text() -> None:
    """In the text table a run from before the restricted spectrum was kept shows '-'
    in its four columns, beside a run that has them."""
    old = make_results("old", "old", task_metrics={"simulation": {
        "consistency": {"strong": 0.25, "weak": 0.25, "random": 0.5, "programs": 4,
                        "different_coverage": 0.5}}})
    text = render([consistency_table([old, _result("new", 0.5)])], "markdown")
    lines = [line for line in text.splitlines() if "| Total |" in line]
    assert [[cell.strip() for cell in line.split("|")[1:-1][-4:]] for line in lines] == [
        ["-", "-", "-", "-"], ["50.0", "50.0", "0.0", "2"]]
