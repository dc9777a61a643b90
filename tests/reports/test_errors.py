"""The ``error-taxonomy`` layout: label counts per task and per run, from hand-built
results and from a real run whose constant answer lands in known labels; ``execbench
show`` prints a sample's label and line, and older results without labels still read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from execbench.reports.errors import UNLABELLED, figure, has_labels, run_table, task_table
from execbench.reports.layouts import layouts, shown_layouts
from execbench.rundir import RESULTS, Results
from execbench.runner import RunConfig, run
from execbench.suite import BuildOptions, build_suite
from tests.helpers.cli import execbench
from tests.helpers.programs import EVERY_STATEMENT
from tests.helpers.results import make_results


def sample(task: str, number: int, verdict: str, label: str | None = None) -> dict[str, Any]:
    extra = {} if label is None else {"error_label": label, "error_line": 3}
    return {"instance_id": f"{task}/p/{number}", "task": task, "source": "s", "sample": 0,
            "verdict": verdict, "correct": verdict == "correct", "extra": extra}


def run_a() -> Results:
    """coverage: 2 right, 3 wrong (2 control_flow, 1 hallucination), 1 unreadable
    (format); output: 1 wrong with no label, 1 right; input: nothing labelled."""
    return make_results("a", samples=[
        sample("coverage", 1, "correct"), sample("coverage", 2, "correct"),
        sample("coverage", 3, "incorrect", "control_flow"),
        sample("coverage", 4, "incorrect", "control_flow"),
        sample("coverage", 5, "incorrect", "hallucination"),
        sample("coverage", 6, "unparsable", "format"),
        sample("output", 1, "incorrect"), sample("output", 2, "correct"),
        sample("input", 1, "incorrect")])


def run_b() -> Results:
    """simulation: 4 wrong (computation, computation, api_behaviour, null); output: 1
    wrong, hallucination, and one whose request failed (not an answer)."""
    return make_results("b", samples=[
        sample("simulation", 1, "incorrect", "computation"),
        sample("simulation", 2, "incorrect", "computation"),
        sample("simulation", 3, "incorrect", "api_behaviour"),
        sample("simulation", 4, "unparsable", "null"),
        sample("output", 1, "incorrect", "hallucination"), sample("output", 2, "error")])


COLUMNS = ["computation", "control_flow", "api_behaviour", "hallucination", "format",
           "null", UNLABELLED]


def test_labels_are_counted_per_task_and_per_run() -> None:
    results = [run_a(), run_b()]
    assert results[0].metrics["coverage"].all.errors == {
        "control_flow": 2, "format": 1, "hallucination": 1}
    table = task_table(results)
    assert table.headers == ["run", "task", "wrong", *COLUMNS]
    assert table.rows == [
        ["a", "coverage", 4, 0, 2, 0, 1, 1, 0, 0],
        ["b", "output", 1, 0, 0, 0, 1, 0, 0, 0],
        ["b", "simulation", 4, 2, 0, 1, 0, 0, 1, 0],
    ]
    # run a: 4 labelled coverage samples; its output and input tasks have no label at all
    per_run = run_table(results)
    assert per_run.rows == [
        ["a", 4, 0.0, 50.0, 0.0, 25.0, 25.0, 0.0, 0.0],
        ["b", 5, 40.0, 0.0, 20.0, 20.0, 0.0, 20.0, 0.0],
    ]


def test_unlabelled_wrong_answers_of_a_labelled_task_are_counted() -> None:
    result = make_results("c", samples=[
        sample("output", 1, "incorrect", "hallucination"), sample("output", 2, "incorrect"),
        sample("output", 3, "unparsable")])
    assert task_table([result]).rows == [["c", "output", 3, 0, 0, 0, 1, 0, 0, 2]]


def test_the_layout_shows_only_runs_with_labels_and_draws_its_chart() -> None:
    pytest.importorskip("matplotlib")
    unlabelled = make_results("old", samples=[sample("output", 1, "incorrect")])
    assert not has_labels(unlabelled) and has_labels(run_a())
    picked = {layout.name: [r.model for r in runs]
              for layout, runs in shown_layouts([unlabelled, run_a()])}
    assert picked["error-taxonomy"] == ["a"]
    drawn = figure([run_a(), run_b()])
    axis = drawn.axes[0]
    assert [tick.get_text() for tick in axis.get_yticklabels()] == [
        "a\ncoverage", "b\noutput", "b\nsimulation"]
    # one bar per run and task in each label's colour: 3 bars x 7 columns
    assert len(axis.patches) == 21
    assert sorted(bar.get_width() for bar in axis.patches if bar.get_width()) == [
        1, 1, 1, 1, 1, 2, 2]
    assert layouts()["error-taxonomy"].draw([run_a()], "svg").startswith(b"<?xml")


def test_results_without_labels_read_and_write_without_them() -> None:
    record = run_a().to_record()
    del record["metrics"]["coverage"]["all"]["errors"]
    for block in record["metrics"]["coverage"]["by_source"].values():
        block.pop("errors", None)
    back = Results.from_record(record)
    assert back.metrics["coverage"].all.errors == {}
    assert "errors" not in back.to_record()["metrics"]["coverage"]["all"]
    assert not has_labels(back)




@pytest.fixture(scope="module")
def constant_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run answering ``[1, 42]`` to every coverage and statement question of one call."""
    folder = tmp_path_factory.mktemp("errors")
    source = folder / "programs.jsonl"
    source.write_text(json.dumps({"id": "f", "code": EVERY_STATEMENT, "entry_point": "f",
                                  "calls": ["[1, 2, 9], 4"]}) + "\n")
    suite = folder / "suite"
    build_suite([str(source)], suite, BuildOptions(
        tasks=["coverage", "statement"], task_options={"questions": "20"}, workers=1))
    out = folder / "run"
    run(RunConfig(suite=str(suite), model="reference/constant",
                  model_args={"answer": "[ANSWER]\n[1, 42]\n[/ANSWER]"}), out)
    return out


def test_a_run_counts_the_labels_its_answers_get(constant_run: Path) -> None:
    """Line 42 is no line of the program: coverage's answer is a hallucination there.
    The statement questions ask about lines 2 (a constant: a value never seen), 3 and 7
    (arithmetic), 5 and 9 (conditions) and 8 (``str``)."""
    record = json.loads((constant_run / RESULTS).read_text())
    assert record["metrics"]["coverage"]["all"]["errors"] == {"hallucination": 1}
    assert record["metrics"]["statement"]["all"]["errors"] == {
        "api_behaviour": 1, "computation": 2, "control_flow": 2, "hallucination": 1}
    done = execbench("report", constant_run, "--layout", "error-taxonomy", "--format", "json")
    assert done.exit_code == 0, done.stderr
    per_task, per_run = json.loads(done.stdout)["tables"]
    assert [[row[column] for column in ("task", "wrong", *COLUMNS)]
            for row in per_task["rows"]] == [["coverage", 1, 0, 0, 0, 1, 0, 0, 0],
                                             ["statement", 6, 2, 2, 1, 1, 0, 0, 0]]
    assert [row["wrong"] for row in per_run["rows"]] == [7]
    assert per_run["rows"][0]["hallucination"] == pytest.approx(100 * 2 / 7)


def test_show_prints_a_samples_label_and_line(constant_run: Path) -> None:
    done = execbench("show", constant_run, "--task", "coverage")
    assert done.exit_code == 0, done.stderr
    assert "error: hallucination at line 42" in done.stdout.splitlines()
    done = execbench("show", constant_run, "--instance", "statement/", "--limit", 20)
    said = [line for line in done.stdout.splitlines() if line.startswith("error: ")]
    assert said == ["error: hallucination at line 2", "error: computation at line 3",
                    "error: control_flow at line 5", "error: computation at line 7",
                    "error: api_behaviour at line 8", "error: control_flow at line 9"]


def test_hostile_labels_in_a_run_folder_are_counted_or_shown_escaped(
        constant_run: Path, tmp_path: Path) -> None:
    """A results file's counts that are no whole numbers, or labels no rule gives, are not
    counted; a log's label (any text) is shown with its control characters escaped."""
    from dataclasses import replace

    result = make_results("odd", samples=[sample("output", 1, "incorrect", "computation")])
    group = result.metrics["output"].all
    odd = replace(group, errors={"computation": True, "control_flow": -4,
                                 "hallucination": "many", "\x1b[2Jwiped": 5, "format": 1},
                  verdicts={"incorrect": "1", "unparsable": 1})
    hostile = replace(result, metrics={"output": replace(result.metrics["output"], all=odd)})
    assert task_table([hostile]).rows == [["odd", "output", 1, 0, 0, 0, 0, 1, 0, 0]]
    copied = tmp_path / "run"
    copied.mkdir()
    for name in ("run.json", "results.json", "samples.jsonl"):
        (copied / name).write_bytes((constant_run / name).read_bytes())
    log = copied / "samples.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    for record in records:
        record["extra"] = {"error_label": "\x1b[2J\u202ewiped", "error_line": "7; rm"}
    log.write_text("".join(json.dumps(record) + "\n" for record in records))
    done = execbench("show", copied, "--task", "coverage")
    assert done.exit_code == 0, done.stderr
    assert "\x1b" not in done.stdout and "\u202e" not in done.stdout
    assert "error: \\x1b[2J\\u202ewiped" in done.stdout.splitlines()
