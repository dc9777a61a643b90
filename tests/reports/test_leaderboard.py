"""The leaderboard never puts two suites' numbers in one column: runs of several suites
get a leaderboard each, with a ``suite`` column, in every format."""

from __future__ import annotations

import json

from execbench.reports.leaderboard import by_suite, tables
from execbench.reports.tables import render
from execbench.rundir import Results
from tests.helpers.results import make_results

TITLE = "headline metrics of every task family present"


def samples(right: int, wrong: int) -> list[dict]:
    return [{"instance_id": f"output/s/p{i}/0", "task": "output", "source": "s",
             "sample": 0, "verdict": "correct" if i < right else "incorrect",
             "correct": i < right} for i in range(right + wrong)]


def mixed() -> list[Results]:
    """The oracle on a HumanEval-like suite (2 of 2), a model (1 of 4) and the oracle (4
    of 4) on a CRUXEval-like one."""
    return [make_results("oracle", "runs/he-oracle", suite="suites/he", samples=samples(2, 0)),
            make_results("model", "runs/crux-model", suite="suites/crux",
                         samples=samples(1, 3)),
            make_results("oracle", "runs/crux-oracle", suite="suites/crux",
                         samples=samples(4, 0))]


def test_runs_are_grouped_by_suite_in_the_order_they_come() -> None:
    assert [(suite, [r.run_dir for r in members]) for suite, members in by_suite(mixed())] \
        == [("suites/he", ["runs/he-oracle"]),
            ("suites/crux", ["runs/crux-model", "runs/crux-oracle"])]
    # one folder rebuilt between runs: another suite, told apart by its hash
    rebuilt = [make_results(suite="suites/s", suite_sha256="aaaaaaaaaaaaaaaa"),
               make_results(suite="suites/s", suite_sha256="bbbbbbbbbbbbbbbb")]
    assert [suite for suite, _ in by_suite(rebuilt)] == ["suites/s (sha256 aaaaaaaaaaaa)",
                                                         "suites/s (sha256 bbbbbbbbbbbb)"]


def test_csv_has_a_suite_column_and_no_column_mixes_suites() -> None:
    assert render(tables(mixed()), "csv").splitlines() == [
        "table,model,suite,prediction: output pass@1 (%),prediction: output string match (%)",
        f'"Leaderboard, suite suites/he: {TITLE}",oracle,suites/he,100.0,',
        f'"Leaderboard, suite suites/crux: {TITLE}",model,suites/crux,25.0,',
        f'"Leaderboard, suite suites/crux: {TITLE}",oracle,suites/crux,100.0,']


def test_json_has_a_table_per_suite() -> None:
    document = json.loads(render(tables(mixed()), "json"))
    assert [(table["title"], table["rows"]) for table in document["tables"]] == [
        (f"Leaderboard, suite suites/he: {TITLE}",
         [{"model": "oracle", "suite": "suites/he", "prediction: output pass@1 (%)": 100.0,
           "prediction: output string match (%)": None}]),
        (f"Leaderboard, suite suites/crux: {TITLE}",
         [{"model": "model", "suite": "suites/crux", "prediction: output pass@1 (%)": 25.0,
           "prediction: output string match (%)": None},
          {"model": "oracle", "suite": "suites/crux", "prediction: output pass@1 (%)": 100.0,
           "prediction: output string match (%)": None}])]


def test_markdown_and_text_show_a_table_per_suite() -> None:
    markdown = render(tables(mixed()), "markdown")
    assert f"### Leaderboard, suite suites/he: {TITLE}\n" in markdown
    assert "| oracle | suites/he | 100.0 | - |" in markdown
    crux = markdown.split("suite suites/crux")[1]
    assert "| model | suites/crux | 25.0 | - |\n| oracle | suites/crux | 100.0 | - |" in crux
    text = render(tables(mixed()), "text", width=200)
    assert text.count("Leaderboard, suite ") == 2
    he, crux = text.split(f"Leaderboard, suite suites/crux: {TITLE}")
    assert "100.0" in he and "25.0" not in he and "25.0" in crux


def test_one_suite_keeps_one_unnamed_table() -> None:
    alone = tables(mixed()[1:])
    assert [(t.title, t.headers[:2], [row[:2] for row in t.rows]) for t in alone] == [
        (f"Leaderboard: {TITLE}", ["model", "prediction: output pass@1 (%)"],
         [["model", 25.0], ["oracle", 100.0]])]
