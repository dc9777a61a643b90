"""The ``codesense`` report layout: strict and string-match accuracy per kind of each
CodeSense task (block sizes in ranges), and abstract against concrete values, from
``results.json`` records; its finer analyses (function size, statement kind by language,
abstract category, spread over repeated runs) are in ``test_codesense_analyses``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from execbench.reports.codesense import (
    NOT_COMPARABLE,
    kinds_table,
    language_table,
    values_table,
)
from execbench.reports.layouts import View, layouts
from execbench.rundir import Results
from tests.helpers.cli import execbench
from tests.helpers.data import SHARED_DATA, needs_shared_data
from tests.helpers.results import make_results


def _group(samples: int, strict: float, string: float) -> dict[str, Any]:
    return {"samples": samples, "strict": strict, "string_match": string}


def _result(model: str, strict: float, **tasks: dict[str, Any]) -> Results:
    statement = {"by_kind": {"call": _group(4, strict, 0.75), "assignment": _group(2, 1.0, 1.0)},
                 "by_values": {"concrete": _group(6, strict, 0.75)},
                 "all": _group(6, strict, 0.8)}
    block = {"by_kind": {"block-10": _group(1, 0.0, 0.0), "block-2": _group(1, 1.0, 1.0)},
             "by_values": {"concrete": _group(2, 0.5, 0.5)}, "all": _group(2, 0.5, 0.5)}
    return make_results(model, model,
                        task_metrics={"statement": statement, "block": block, **tasks})


def test_kinds_follow_the_papers_order_and_runs_get_strict_and_string_columns() -> None:
    results = [_result("m1", 0.5), _result("m2", 0.25)]
    table = kinds_table(results, "statement", "t", ("assignment", "arithmetic", "call"))
    assert table is not None
    assert table.headers == ["statement", "m1 strict", "m1 string", "m2 strict", "m2 string"]
    assert table.rows[0] == ["assignment (2)", 100.0, 100.0, 100.0, 100.0]
    assert table.rows[1] == ["call (4)", 50.0, 75.0, 25.0, 75.0]
    assert table.rows[-1][0] == "all (6)"
    blocks = kinds_table(results, "block", "t", ())
    assert blocks is not None
    assert [row[0] for row in blocks.rows] == ["block 2 (1)", "block 8-15 (1)", "all (2)"]
    assert kinds_table(results, "loop", "t", ("iterations",)) is None


def test_abstract_and_concrete_runs_are_set_side_by_side() -> None:
    abstract = _result("m1", 0.5)
    abstract.task_metrics["statement"]["by_values"] = {"abstract": _group(6, 0.9, 0.9)}
    table = values_table([_result("m1", 0.5), abstract])
    assert table is not None
    rows = {tuple(row[:2]): row[2:] for row in table.rows}
    assert rows[("statement", "concrete (6)")] == [50.0, 75.0, None, None]
    assert rows[("statement", "abstract (6)")] == [None, None, pytest.approx(90.0),
                                                   pytest.approx(90.0)]


def test_the_layout_is_registered_and_says_so_when_no_run_has_the_tasks() -> None:
    layout = layouts()["codesense"]
    tables = layout.sections([_result("m1", 0.5)], View(ks=[1]))
    # A run scored before function sizes were recorded says so; one run is its own spread.
    assert [t.title.split()[:3] for t in tables] == [
        ["Statement", "values", "by"], ["Program", "state", "after"],
        ["Accuracy", "by", "function"], ["Abstract", "against", "concrete"],
        ["Spread", "of", "accuracy"]]
    empty = layout.sections([make_results()], View(ks=[1]))
    assert "none of these runs" in empty[0].rows[0][0]


def test_the_figure_is_a_png() -> None:
    pytest.importorskip("matplotlib")
    drawn = layouts()["codesense"].draw([_result("m1", 0.5), _result("m2", 0.25)])
    assert drawn.startswith(b"\x89PNG")


def test_accuracy_by_language_when_runs_span_languages() -> None:
    python, native = _result("m1", 0.5), _result("m2", 0.25)
    python.task_metrics["statement"]["by_language"] = {"python": _group(6, 0.5, 0.8)}
    native.task_metrics["statement"]["by_language"] = {"c": _group(3, 0.25, 0.5),
                                                          "java": _group(2, 1.0, 1.0)}
    table = language_table([python, native])
    assert table is not None
    assert [row[:2] for row in table.rows] == [["statement", "Python (6)"],
                                               ["statement", "C (3)"],
                                               ["statement", "Java (2)"]]
    assert table.rows[1][2:] == [None, None, 25.0, 50.0]
    assert language_table([python]) is None      # one language: nothing to compare


def test_a_group_without_a_type_aware_verdict_says_so() -> None:
    run = _result("m1", 0.5)
    run.task_metrics["statement"]["by_kind"]["call"] = {
        "samples": 4, "strict": None, "string_match": 0.75, "not_comparable": 4}
    table = kinds_table([run], "statement", "t", ("assignment", "call"))
    assert table is not None
    assert table.rows[1] == ["call (4)", NOT_COMPARABLE, 75.0]
    run.task_metrics["statement"]["by_kind"]["call"] = {"samples": 0, "strict": None,
                                                        "string_match": None}
    table = kinds_table([run], "statement", "t", ("assignment", "call"))
    assert table is not None and table.rows[1] == ["call (0)", None, None]


def test_an_older_or_partial_summary_is_reported_as_far_as_it_goes() -> None:
    # An older run: no by_language, no not_comparable; a run without the task at all; and
    # a summary that lost its parts.
    older = _result("m1", 0.5)
    older.task_metrics["statement"].pop("all")
    partial = make_results("m3", "m3", task_metrics={"statement": {"by_kind": {"call": []}}})
    runs = [older, _result("m2", 0.25), make_results("m4", "m4"), partial]
    table = kinds_table(runs, "statement", "t", ("assignment", "call"))
    assert table is not None
    assert table.rows[0] == ["assignment (2)", 100.0, 100.0, 100.0, 100.0, None, None, None,
                             None]
    assert table.rows[1] == ["call (4)", 50.0, 75.0, 25.0, 75.0, None, None, None, None]
    assert table.rows[-1] == ["all (6)", None, None, 25.0, 80.0, None, None, None, None]
    assert language_table(runs) is None
    assert [t.title.split()[0] for t in layouts()["codesense"].sections(runs, View(ks=[1]))
            ] == ["Statement", "Program", "Accuracy", "Abstract", "Spread"]


@needs_shared_data("codesense/aliasing_dataset_c.jsonl.gz")
def test_the_report_and_its_page_compare_python_c_and_java(tmp_path: Path) -> None:
    runs = []
    for name in ("statement_prediction_dataset", "statement_prediction_dataset_C",
                 "input_output_dataset_java", "aliasing_dataset_c"):
        suite, run = tmp_path / f"{name}.suite", tmp_path / name
        done = execbench("build", SHARED_DATA / "codesense" / f"{name}.jsonl.gz", "--out",
                         suite, "--limit", "30")
        assert done.exit_code == 0, done.stderr
        done = execbench("run", "--suite", suite, "--model", "reference/oracle", "--out", run)
        assert done.exit_code == 0, done.stderr
        runs.append(run)
    page = tmp_path / "report.html"
    done = execbench("report", *runs, "--layout", "codesense", "--html", page)
    assert done.exit_code == 0, done.stderr
    assert "Accuracy by language of the code" in done.stdout
    assert "Pointer aliasing" in done.stdout
    html = page.read_text()
    for text in ("Accuracy by language of the code", "Python (30)", "C (30)", "Java (30)",
                 "Pointer aliasing"):
        assert text in html, text
