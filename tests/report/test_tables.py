"""Tests for the run-comparison tables and their renderings."""

from __future__ import annotations

import csv
import io
import json

import pytest

from execbench.metrics import summarize, verdict_counts
from execbench.report.tables import comparison_rows, render_table, verdict_rows


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


def results(model: str, run_dir: str, n: int, records: list[dict]) -> dict:
    return {
        "schema_version": 1,
        "run": {"model": model, "run_dir": run_dir, "n": n},
        "metrics": summarize(records, n),
        "counts": {"verdicts": verdict_counts(records)},
    }


@pytest.fixture
def runs() -> list[dict]:
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


def test_comparison_rows(runs: list[dict]) -> None:
    headers, rows = comparison_rows(runs)
    assert headers == [
        "run",
        "input pass@1 (%)",
        "input pass@5 (%)",
        "input accuracy CI95 (%)",
        "output pass@1 (%)",
        "output pass@5 (%)",
        "output accuracy CI95 (%)",
    ]
    alpha, beta = rows
    assert alpha[:3] == ["alpha", "0.0", "0.0"]
    assert alpha[3] == "[0.0, 0.0]"
    assert alpha[4:6] == ["70.0", "100.0"]
    assert alpha[6].startswith("[") and alpha[6].endswith("]")
    # beta never ran the input task, and with n=1 it has no pass@5.
    assert beta == ["beta", "-", "-", "-", "50.0", "-", "[0.0, 100.0]"]


def test_pass5_column_only_when_some_run_has_five_samples(runs: list[dict]) -> None:
    headers, _ = comparison_rows(runs[1:])
    assert not any("pass@5" in header for header in headers)


def test_rows_by_source(runs: list[dict]) -> None:
    headers, rows = comparison_rows(runs, by_source=True)
    assert headers[:2] == ["run", "source"]
    assert [row[:2] for row in rows] == [
        ["alpha", "cruxeval"],
        ["alpha", "humaneval"],
        ["beta", "cruxeval"],
    ]
    alpha_human = rows[1]
    # alpha has no input instances from humaneval.
    assert alpha_human[2:5] == ["-", "-", "-"]
    assert alpha_human[5:7] == ["100.0", "100.0"]


def test_runs_of_the_same_model_are_told_apart(runs: list[dict]) -> None:
    again = results("alpha", "runs/alpha-v2", 1, samples({("output", "cruxeval", "o1"): ["a"]}))
    _, rows = comparison_rows([*runs, again])
    assert [row[0] for row in rows] == ["alpha (runs/alpha)", "beta", "alpha (runs/alpha-v2)"]


def test_verdict_rows(runs: list[dict]) -> None:
    headers, rows = verdict_rows(runs)
    assert headers == ["run", "correct", "incorrect", "unparsable", "error", "other",
                       "truncated", "refused"]
    assert rows == [
        ["alpha", "7", "3", "1", "1", "3", "-", "-"],
        ["beta", "1", "0", "0", "1", "0", "-", "-"],
    ]
    runs[1]["counts"].update(truncated=1, refused=0)
    assert verdict_rows(runs)[1][1][-2:] == ["1", "0"]


def test_markdown(runs: list[dict]) -> None:
    headers, rows = comparison_rows(runs)
    lines = render_table(headers, rows, "markdown").splitlines()
    assert lines[0] == "| " + " | ".join(headers) + " |"
    assert set(lines[1].replace("|", "").split()) == {"---"}
    assert len(lines) == 2 + len(rows)
    assert lines[3].startswith("| beta | - |")


def test_markdown_escapes_pipes() -> None:
    text = render_table(["run"], [["a|b"]], "markdown")
    assert text.splitlines()[2] == "| a\\|b |"


def test_csv_parses_back(runs: list[dict]) -> None:
    headers, rows = comparison_rows(runs)
    parsed = list(csv.reader(io.StringIO(render_table(headers, rows, "csv"))))
    assert parsed == [headers, *rows]


def test_json_loads(runs: list[dict]) -> None:
    headers, rows = comparison_rows(runs)
    loaded = json.loads(render_table(headers, rows, "json"))
    assert [record["run"] for record in loaded] == ["alpha", "beta"]
    assert loaded[1]["input pass@1 (%)"] == "-"
    assert list(loaded[0]) == headers


def test_text_shows_models_and_cells_verbatim(runs: list[dict]) -> None:
    headers, rows = comparison_rows(runs)
    text = render_table(headers, rows, "text")
    assert "alpha" in text and "beta" in text
    assert "[0.0, 100.0]" in text  # brackets are not taken for rich markup
    assert "\x1b[" not in text
    for header in headers:
        assert header in text  # the table is wide enough that nothing wraps


def test_unknown_format_raises() -> None:
    with pytest.raises(ValueError, match="unknown table format"):
        render_table(["run"], [["x"]], "html")
