"""Tests for the run-comparison tables and their renderings: the default layout's one
compact table per task family, and every format."""

from __future__ import annotations

import csv
import io
import json

import pytest

from execbench.reports.families import family_tables
from execbench.reports.tables import Estimate, Table, render, verdict_table
from execbench.rundir import Results
from tests.helpers.results import make_results


def samples(model_correct: dict[tuple[str, str, str], list[str]]) -> list[dict]:
    """Sample records from ``{(task, source, instance): [verdict per sample]}``."""
    return [
        {
            "instance_id": instance,
            "task": task,
            "source": source,
            "sample": index,
            "verdict": verdict,
            "correct": verdict == "correct",
        }
        for (task, source, instance), verdicts in model_correct.items()
        for index, verdict in enumerate(verdicts)
    ]


def results(model: str, run_dir: str, n: int, records: list[dict],
            suite: str = "suites/crux", counted: tuple[int | None, int | None] = (None, None)
            ) -> Results:
    return make_results(model, run_dir, n=n, samples=records, suite=suite, counted=counted)


@pytest.fixture
def runs() -> list[Results]:
    """alpha (n=5) ran two tasks over two sources; beta (n=1) only the output task."""
    alpha = samples(
        {
            ("output", "cruxeval", "o1"): ["correct", "incorrect", "error", "incorrect", "correct"],
            ("output", "humaneval", "o2"): ["correct"] * 5,
            ("input", "cruxeval", "i1"): ["unparsable", "format_error", "incorrect", "a", "b"],
        }
    )
    beta = samples(
        {
            ("output", "cruxeval", "o1"): ["correct"],
            ("output", "cruxeval", "o3"): ["error"],
        }
    )
    return [results("alpha", "runs/alpha", 5, alpha), results("beta", "runs/beta", 1, beta)]


def test_one_table_per_family_of_estimates(runs: list[Results]) -> None:
    coverage = results("gamma", "runs/gamma", 1, samples({("coverage", "cruxeval", "c1"):
                                                          ["correct"]}))
    tables = family_tables([*runs, coverage], [1, 5])
    assert [table.title for table in tables] == ["dexbench: headline metrics (%)",
                                                 "prediction: headline metrics (%)"]
    dexbench, prediction = tables
    assert [row[0] for row in dexbench.rows] == ["gamma"]  # only runs with the family's tasks
    assert prediction.headers == ["run", "benchmark", "input pass@1", "input pass@5",
                                  "output pass@1", "output pass@5", "output string match"]
    alpha, beta = prediction.rows
    assert alpha[:4] == ["alpha", "cruxeval, humaneval", Estimate(0.0, (0.0, 0.0), 1),
                         Estimate(0.0, None, 1)]
    assert alpha[4].value == pytest.approx(70.0) and alpha[4].instances == 2
    assert alpha[5] == Estimate(100.0, None, 2)
    # beta never ran the input task, and with n=1 it has no pass@5. Results made from
    # samples alone have no summary: the string-match share is unknown, its count stated.
    assert beta == ["beta", "cruxeval", None, None, Estimate(50.0, (0.0, 100.0), 2), None,
                    Estimate(None, None, 2)]


def test_the_chosen_ks_are_the_columns(runs: list[Results]) -> None:
    [table] = family_tables(runs, [2])
    assert table.headers[2:] == ["input pass@2", "output pass@2", "output string match"]


def test_rows_by_source(runs: list[Results]) -> None:
    [table] = family_tables(runs, [1, 5], by_source=True)
    assert table.headers[:2] == ["run", "source"] and table.keys == 2
    assert [row[:2] for row in table.rows] == [
        ["alpha", "cruxeval"],
        ["alpha", "humaneval"],
        ["beta", "cruxeval"],
    ]
    alpha_human = table.rows[1]
    # alpha has no input instances from humaneval.
    assert alpha_human[2:4] == [None, None]
    assert alpha_human[4:6] == [Estimate(100.0, (100.0, 100.0), 1), Estimate(100.0, None, 1)]


def test_rows_name_the_suite_where_runs_differ(runs: list[Results]) -> None:
    other = results("delta", "runs/delta", 1, samples({("output", "humaneval", "h1"):
                                                      ["correct"]}), suite="suites/he")
    [table] = family_tables([*runs, other], [1])
    assert [row[1] for row in table.rows] == ["cruxeval, humaneval (crux)", "cruxeval (crux)",
                                              "humaneval (he)"]


def test_a_column_states_one_instance_count_in_its_header(runs: list[Results]) -> None:
    same = results("beta", "runs/beta", 1, samples({("output", "cruxeval", "o1"): ["correct"],
                                                    ("output", "humaneval", "o2"): ["error"]}))
    text = render(family_tables([runs[0], same], [1]), "markdown")
    assert "| run | benchmark | input pass@1 n=1 | output pass@1 n=2 |" in text
    assert "| beta | cruxeval, humaneval | - | 50.0 [0.0, 100.0] |" in text
    fewer = results("gamma", "runs/gamma", 1, samples({("output", "cruxeval", "o1"):
                                                       ["correct"]}))
    mixed = render(family_tables([*runs, fewer], [1]), "markdown")
    assert "| run | benchmark | input pass@1 n=1 | output pass@1 |" in mixed
    assert "| beta | cruxeval | - | 50.0 [0.0, 100.0] n=2 |" in mixed
    assert "| gamma | cruxeval | - | 100.0 [100.0, 100.0] n=1 |" in mixed


def test_runs_of_the_same_model_are_told_apart(runs: list[Results]) -> None:
    again = results("alpha", "runs/alpha-v2", 1, samples({("output", "cruxeval", "o1"): ["a"]}))
    [table] = family_tables([*runs, again], [1])
    assert [row[0] for row in table.rows] == ["alpha (runs/alpha)", "beta",
                                              "alpha (runs/alpha-v2)"]


def test_verdict_table(runs: list[Results]) -> None:
    table = verdict_table(runs)
    assert table.headers == ["run", "correct", "incorrect", "unparsable", "error", "other",
                             "truncated", "refused"]
    assert table.rows == [["alpha", 7, 3, 1, 1, 3, None, None],
                          ["beta", 1, 0, 0, 1, 0, None, None]]
    counted = results("beta", "runs/beta", 1, samples({("output", "cruxeval", "o1"): ["a"]}),
                      counted=(1, 0))
    assert verdict_table([runs[0], counted]).rows[1][-2:] == [1, 0]


def test_markdown_tables_stay_apart(runs: list[Results]) -> None:
    tables = [*family_tables(runs, [1, 5]), verdict_table(runs)]
    blocks = render(tables, "markdown").split("\n\n")
    assert blocks[0] == "### prediction: headline metrics (%)"
    lines = blocks[1].splitlines()
    assert lines[0] == "| run | benchmark | input pass@1 n=1 | input pass@5 n=1 | " \
                       "output pass@1 n=2 | output pass@5 n=2 | output string match n=2 |"
    assert set(lines[1].replace("|", "").split()) == {"---"}
    assert lines[3].startswith("| beta | cruxeval | - |")
    assert "### Verdicts (samples)" in blocks


def test_markdown_escapes_pipes() -> None:
    text = render([Table("t", ["run"], [["a|b"]])], "markdown")
    assert text.splitlines()[2:] == ["| run |", "| --- |", "| a\\|b |"]


def test_csv_is_one_table_with_estimates_as_numbers(runs: list[Results]) -> None:
    [table] = family_tables(runs, [1])
    parsed = list(csv.reader(io.StringIO(render([table], "csv"))))
    assert parsed[0] == ["run", "benchmark", "input pass@1", "input pass@1 low",
                         "input pass@1 high", "input pass@1 instances", "output pass@1",
                         "output pass@1 low", "output pass@1 high", "output pass@1 instances",
                         "output string match", "output string match instances"]
    assert parsed[2] == ["beta", "cruxeval", "", "", "", "", "50.0", "0.0", "100.0", "2", "",
                         "2"]
    both = list(csv.DictReader(io.StringIO(render([table, verdict_table(runs)], "csv"))))
    assert [row["table"] for row in both] == [table.title] * 2 + ["Verdicts (samples)"] * 2
    assert both[3]["error"] == "1" and both[3]["output pass@1"] == ""


def test_json_is_one_document_of_numbers_and_pairs(runs: list[Results]) -> None:
    loaded = json.loads(render([*family_tables(runs, [1]), verdict_table(runs)], "json"))
    first, verdicts = loaded["tables"]
    assert [record["run"] for record in first["rows"]] == ["alpha", "beta"]
    assert first["rows"][1]["input pass@1"] is None
    assert first["rows"][1]["output pass@1"] == {"value": 50.0, "ci95": [0.0, 100.0],
                                                 "instances": 2}
    assert first["rows"][0]["output pass@1"]["value"] == 70.0
    assert verdicts["rows"][0]["correct"] == 7
    assert list(first["rows"][0]) == first["columns"]


def test_text_shows_models_and_cells_verbatim(runs: list[Results]) -> None:
    [table] = family_tables(runs, [1, 5])
    text = render([table], "text", width=300)
    assert "alpha" in text and "beta" in text
    assert "50.0 [0.0, 100.0]" in text  # brackets are not taken for rich markup
    assert "\x1b[" not in text
    for header in table.headers:
        assert header in text  # the table is wide enough that nothing wraps


def test_a_wide_text_table_wraps_headers_then_is_split_to_fit(runs: list[Results]) -> None:
    [table] = family_tables(runs, [1, 2, 3, 4, 5], by_source=True)
    text = render([table], "text", width=70)
    assert max(len(line) for line in text.splitlines()) <= 70
    flat = " ".join(text.split())
    for word in " ".join(table.headers).split():
        assert word in flat
    assert "output pass@1 [100.0, 100.0]" not in text and "[100.0, 100.0]" in text
    # Each part repeats the columns that name a row.
    assert text.count("│ alpha │ humaneval") == text.count("┃ run ") > 1


def test_unknown_format_raises() -> None:
    with pytest.raises(ValueError, match="unknown table format"):
        render([Table("t", ["run"], [["x"]])], "html")
