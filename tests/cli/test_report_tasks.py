"""``execbench report --tasks``: a report of some of the runs' tasks, in the tables, in the
layouts that read the runs' logs, and in the verdict counts; a task no run answered and an
empty list refused in one line; a run that answered none of them left out with the
reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import execbench, said
from tests.helpers.pages import page_samples

SOURCE = [{"id": "twice", "code": "def f(x):\n    return 2 * x\n", "entry_point": "f",
           "calls": ["1", "2", "3"]},
          {"id": "last", "code": "def g(xs):\n    return xs[-1]\n", "entry_point": "g",
           "calls": ["[1, 2]", "[5]"]}]
"""Five calls: five output and five input instances."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An oracle run and a constant-answer run of output and input, and an oracle run of
    input only."""
    folder = tmp_path_factory.mktemp("report-tasks")
    source = folder / "small.jsonl"
    source.write_text("".join(json.dumps(record) + "\n" for record in SOURCE))
    built = execbench("build", source, "--out", folder / "suite", "--tasks", "output,input")
    assert built.exit_code == 0, built.stderr
    made = {}
    for name, model, tasks in (("oracle", "reference/oracle", "output,input"),
                               ("constant", "reference/constant", "output,input"),
                               ("inputs", "reference/oracle", "input")):
        done = execbench("run", "--suite", folder / "suite", "--model", model, "--out",
                         folder / name, "--tasks", tasks)
        assert done.exit_code == 0, done.stderr
        made[name] = folder / name
    return made


def _tables(*args: object) -> list[dict]:
    done = execbench("report", *args, "--format", "json")
    assert done.exit_code == 0, done.stderr
    return json.loads(done.stdout)["tables"]


def test_only_the_named_tasks_are_shown(runs: dict[str, Path]) -> None:
    both = _tables(runs["oracle"], runs["constant"], "--verdicts")
    columns = " ".join(" ".join(table["columns"]) for table in both)
    assert "input pass@1" in columns and "output pass@1" in columns

    tables = _tables(runs["oracle"], runs["constant"], "--tasks", "output", "--verdicts")
    shown = json.dumps([table for table in tables if table["title"] != "Verdicts (samples)"])
    assert "output" in shown and "input" not in shown
    verdicts = next(table for table in tables if table["title"] == "Verdicts (samples)")
    rows = {row["run"]: row for row in verdicts["rows"]}
    # five output samples each; truncated and refused are counted over whole runs only
    assert (rows["reference/oracle"]["correct"], rows["reference/oracle"]["incorrect"]) \
        == (5, 0)
    assert (rows["reference/constant"]["correct"], rows["reference/constant"]["incorrect"]) \
        == (0, 5)
    assert rows["reference/oracle"]["truncated"] is None
    assert rows["reference/oracle"]["refused"] is None


def test_layouts_that_read_logs_read_only_those_tasks(runs: dict[str, Path]) -> None:
    """The paired comparison reads both runs' logs, sample by sample."""
    def rows(*args: str) -> list[tuple[str, str]]:
        table, = _tables(runs["oracle"], runs["constant"], "--compare", *args)
        return [(row["task"], row["metric"]) for row in table["rows"]]

    assert rows() == [("input", "pass@1"), ("output", "pass@1"), ("output", "string match")]
    assert rows("--tasks", "input") == [("input", "pass@1")]


def test_a_run_without_the_tasks_is_left_out_with_the_reason(runs: dict[str, Path]) -> None:
    done = execbench("report", runs["oracle"], runs["inputs"], "--tasks", "output",
                     "--format", "json")
    assert done.exit_code == 0, done.stderr
    lines = said(done.stderr)
    assert any(f"{runs['inputs']}: answered none of output" in line for line in lines)
    assert "reference/oracle" in done.stdout


@pytest.mark.parametrize(("given", "message"), [
    ("outptu", "--tasks: no run here answered outptu (they answered input, output)"),
    (",", "--tasks names no task"),
])
def test_a_task_no_run_answered_is_one_line(runs: dict[str, Path], given: str,
                                            message: str) -> None:
    done = execbench("report", runs["oracle"], "--tasks", given)
    assert done.exit_code != 0 and done.stdout == ""
    lines = said(done.stderr)
    assert len(lines) == 1 and message in lines[0]


def test_the_page_holds_only_those_tasks(runs: dict[str, Path], tmp_path: Path) -> None:
    """Its tables and its sample browser: five output samples of each of the two runs."""
    page = tmp_path / "page.html"
    done = execbench("report", runs["oracle"], runs["constant"], "--tasks", "output",
                     "--html", page)
    assert done.exit_code == 0, done.stderr
    data = page_samples(page.read_text(encoding="utf-8"))
    assert {row[1] for row in data["instances"]} == {"output"}
    assert [len(run["rows"]) for run in data["runs"]] == [5, 5]
    assert "input pass@1" not in page.read_text(encoding="utf-8")
