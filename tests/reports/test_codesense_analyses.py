"""The CodeSense report's finer analyses (``reports.codesense_analyses``): accuracy by
function size and by block size in ranges, statement kind by language, by abstract
category, and the spread over repeated runs and over the samples of one run. Each reads
``results.json`` summaries; a summary from before a split was recorded says ``not
recorded`` instead of a number, and still reports."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from execbench.reports.codesense_analyses import (
    NOT_RECORDED,
    RESCORE,
    block_bins,
    category_table,
    function_size_table,
    kind_language_table,
    repeat_groups,
    sample_spread_table,
    spread_table,
)
from execbench.reports.layouts import View, layouts
from execbench.reports.tables import render
from execbench.rundir import Results
from execbench.tasks.common.abstract_payload import Share
from tests.helpers.cli import execbench
from tests.helpers.data import SHARED_DATA, needs_shared_data
from tests.helpers.results import make_results


def _group(samples: int, strict: float | None, string: float | None = None,
           not_comparable: int = 0) -> dict[str, Any]:
    group: dict[str, Any] = {"samples": samples, "strict": strict,
                             "string_match": strict if string is None else string}
    if not_comparable:
        group["not_comparable"] = not_comparable
    return group


def _summary(overall: dict[str, Any], **splits: Any) -> dict[str, Any]:
    return {"by_kind": {"call": overall}, "by_values": {"concrete": overall},
            "by_language": {"python": overall}, "all": overall, **splits}


def _run(model: str, run_dir: str, suite: str = "suite-a", n: int = 1,
         **tasks: dict[str, Any]) -> Results:
    return make_results(model, run_dir, n=n, suite_sha256=suite, task_metrics=tasks)


def _rows(table: Any) -> dict[tuple[Any, ...], list[Any]]:
    return {tuple(row[:table.keys]): row[table.keys:] for row in table.rows}


# -- function size ------------------------------------------------------------------------

def test_function_sizes_are_binned_as_the_papers_table_12() -> None:
    sized = _summary(_group(6, 0.5), by_function_lines={
        "3": _group(1, 1.0), "9": _group(1, 0.0), "10": _group(2, 0.5), "19": _group(1, 1.0),
        "20": _group(1, 0.0)})
    table = function_size_table([_run("m", "r", statement=sized)])
    assert table is not None
    assert table.rows == [
        ["statement", "small: 1-9 (2)", 50.0, 50.0],          # 3 and 9 lines
        ["statement", "medium: 10-19 (3)", pytest.approx(200 / 3), pytest.approx(200 / 3)],
        ["statement", "large: 20+ (1)", 0.0, 0.0]]
    assert RESCORE not in table.note


def test_a_run_scored_before_sizes_were_recorded_says_not_recorded() -> None:
    new = _run("new", "n", statement=_summary(_group(2, 1.0), by_function_lines={
        "4": _group(1, 1.0), "?": _group(1, 1.0)}))
    older = _run("old", "o", statement=_summary(_group(2, 0.5)),
                 output=_summary(_group(3, 1.0)))
    table = function_size_table([new, older])
    assert table is not None
    assert table.rows == [["statement", "small: 1-9 (1)", 100.0, 100.0, NOT_RECORDED,
                           NOT_RECORDED],
                          ["statement", "unknown (1)", 100.0, 100.0, NOT_RECORDED,
                           NOT_RECORDED],
                          ["output", NOT_RECORDED, None, None, NOT_RECORDED, NOT_RECORDED]]
    assert RESCORE in table.note
    # Only older runs: a row per task they answered, each not recorded.
    alone = function_size_table([older])
    assert alone is not None
    assert alone.rows == [["statement", NOT_RECORDED, NOT_RECORDED, NOT_RECORDED],
                          ["output", NOT_RECORDED, NOT_RECORDED, NOT_RECORDED]]
    assert function_size_table([_run("m", "r")]) is None


# -- block sizes --------------------------------------------------------------------------

def test_block_sizes_are_combined_in_ranges_from_their_shares() -> None:
    by_kind = {"block-1": Share(2, 0.5, 0.5), "block-4": Share(3, 2 / 3, 1 / 3),
               "block-7": Share(1, None, 1.0, not_comparable=1),
               "block-200": Share(1, 1.0, 1.0), "?": Share(1, 0.0, 0.0)}
    assert block_bins(by_kind) == {"1": Share(2, 0.5, 0.5),
                                   "4-7": Share(4, 2 / 3, 0.5, not_comparable=1),
                                   "64+": Share(1, 1.0, 1.0), "?": Share(1, 0.0, 0.0)}


def test_the_block_table_shows_ranges_and_results_keep_each_size() -> None:
    block = {"by_kind": {f"block-{k}": _group(1, float(k % 2)) for k in range(1, 40)},
             "by_values": {}, "all": _group(39, 20 / 39)}
    run = _run("m", "r", block=block)
    [table] = [t for t in layouts()["codesense"].sections([run], View(ks=[1]))
               if t.title.startswith("Program state")]
    assert [row[0] for row in table.rows] == [
        "block 1 (1)", "block 2 (1)", "block 3 (1)", "block 4-7 (4)", "block 8-15 (8)",
        "block 16-31 (16)", "block 32-63 (8)", "all (39)"]
    assert table.rows[3][1:] == [50.0, 50.0]
    assert "task_metrics.block.by_kind" in table.note
    assert len(run.task_metrics["block"]["by_kind"]) == 39     # the raw sizes, untouched


# -- statement kind by language -----------------------------------------------------------

def test_statement_kinds_by_language_are_a_matrix_per_run() -> None:
    mixed = _summary(_group(4, 0.5), by_language={"python": _group(2, 1.0),
                                                  "c": _group(2, 0.0)},
                     by_language_kind={"c": {"branch": _group(2, 0.0)},
                                       "python": {"call": _group(1, 1.0),
                                                  "assignment": _group(1, 1.0)}})
    python = _summary(_group(2, 0.5))   # one language: its kinds are by_kind's
    table = kind_language_table([_run("m1", "a", statement=mixed),
                                 _run("m2", "b", statement=python)])
    assert table is not None
    assert table.headers == ["run", "kind", "Python strict", "Python string", "C strict",
                             "C string"]
    assert table.rows == [
        ["m1", "assignment", 100.0, 100.0, None, None],
        ["m1", "branch", None, None, 0.0, 0.0],
        ["m1", "call", 100.0, 100.0, None, None],
        ["m1", "all", 100.0, 100.0, 0.0, 0.0],
        ["m2", "call", 50.0, 50.0, None, None],
        ["m2", "all", 50.0, 50.0, None, None]]
    # Statements of one language only: the kind table already is the matrix.
    assert kind_language_table([_run("m2", "b", statement=python)]) is None


def test_an_older_run_over_two_languages_cannot_split_its_kinds() -> None:
    older = _summary(_group(4, 0.5), by_language={"python": _group(2, 1.0),
                                                  "c": _group(2, 0.0)})
    table = kind_language_table([_run("m", "r", statement=older)])
    assert table is not None
    assert table.rows == [["m", "call", NOT_RECORDED, NOT_RECORDED, NOT_RECORDED,
                           NOT_RECORDED],
                          ["m", "all", 100.0, 100.0, 0.0, 0.0]]
    assert RESCORE in table.note


# -- abstract category --------------------------------------------------------------------

def test_categories_set_concrete_beside_abstract_questions() -> None:
    concrete = _summary(_group(3, 1 / 3), by_category={"concrete": {
        "int: Zero": _group(2, 0.5), "?": _group(1, 0.0)}})
    abstract = _summary(_group(2, 1.0), by_values={"abstract": _group(2, 1.0)},
                        by_category={"abstract": {"int: Zero": _group(1, 1.0),
                                                  "bool: True": _group(1, 1.0)}})
    older = _summary(_group(3, 0.0))
    table = category_table([_run("c", "c", statement=concrete),
                            _run("a", "a", statement=abstract),
                            _run("o", "o", statement=older)])
    assert table is not None
    assert _rows(table) == {
        ("statement", "int: Zero", "concrete (2)"): [50.0, 50.0, None, None, NOT_RECORDED,
                                                     NOT_RECORDED],
        ("statement", "int: Zero", "abstract (1)"): [None, None, 100.0, 100.0, None, None],
        ("statement", "bool: True", "abstract (1)"): [None, None, 100.0, 100.0, None, None],
        ("statement", "no category", "concrete (1)"): [0.0, 0.0, None, None, NOT_RECORDED,
                                                       NOT_RECORDED]}
    assert [row[1] for row in table.rows] == ["int: Zero", "int: Zero", "bool: True",
                                              "no category"]   # Table 6's order
    assert category_table([_run("o", "o", statement=older)]) is None


# -- spread -------------------------------------------------------------------------------

def test_repeated_runs_give_the_papers_mean_and_sample_sd() -> None:
    # The CodeSense paper's Table 10, Qwen2.5-14B: 44.4%, 44.4%, 43.3% -> 44.0% +- 0.6%.
    runs = [_run("qwen", f"r{i}", statement=_summary(_group(1000, value / 100)))
            for i, value in enumerate((44.4, 44.4, 43.3))]
    single = _run("other", "s", statement=_summary(_group(10, 0.3)))
    table = spread_table([*runs, single])
    assert table is not None
    [repeated, alone] = table.rows
    assert repeated[:3] == ["qwen", "statement", 3]
    mean, sd, low, high = repeated[3:7]
    assert (round(mean, 1), round(sd, 1), low, high) == (44.0, 0.6, 43.3, 44.4)
    assert alone == ["other", "statement", 1, 30.0, None, 30.0, 30.0, 30.0, None, 30.0, 30.0]
    assert "sample standard deviation" in table.note


def test_runs_are_repeats_only_on_the_same_suite_protocol_and_settings() -> None:
    base = _run("m", "a", statement=_summary(_group(1, 1.0)))
    other_suite = _run("m", "b", suite="suite-b", statement=_summary(_group(1, 0.0)))
    shots = replace(base, run_dir="c", config=replace(base.config, shots=1))
    hotter = replace(base, run_dir="d", config=replace(
        base.config, generate=replace(base.config.generate, temperature=0.8)))
    again = replace(base, run_dir="e")
    groups = repeat_groups([base, other_suite, shots, hotter, again])
    # Labelled by model and protocol, and where groups would share a label, by what
    # tells them apart.
    assert [(label, [r.run_dir for r in runs]) for label, runs in groups] == [
        ("m [shipped] (suite suite-a, temperature -)", ["a", "e"]),
        ("m [shipped] (suite suite-b, temperature -)", ["b"]),
        ("m [shipped, 1 shot]", ["c"]),
        ("m [shipped] (suite suite-a, temperature 0.8)", ["d"])]


def test_the_spread_over_samples_of_one_run_and_its_older_form() -> None:
    drawn = _run("m", "r", n=3, statement=_summary(_group(6, 0.5), by_sample={
        "0": _group(2, 0.5), "1": _group(2, 1.0), "2": _group(2, 0.0)}))
    older = _run("m", "o", n=2, statement=_summary(_group(4, 0.5)))
    table = sample_spread_table([drawn, older, _run("m", "one", statement=_summary(
        _group(1, 1.0)))])
    assert table is not None
    assert table.rows == [["m (r)", "statement", 3, 50.0, 50.0, 0.0, 100.0, 50.0, 50.0, 0.0,
                           100.0],
                          ["m (o)", "statement", 2, *[NOT_RECORDED] * 8]]
    assert "Over sample indices" in table.note and RESCORE in table.note
    assert sample_spread_table([_run("m", "one", statement=_summary(_group(1, 1.0)))]) is None


# -- the layout ---------------------------------------------------------------------------

def _full(model: str, run_dir: str, strict: float) -> Results:
    overall = _group(4, strict)
    statement = _summary(
        overall, by_language={"python": _group(2, strict), "c": _group(2, strict)},
        by_language_kind={"python": {"call": _group(2, strict)},
                          "c": {"branch": _group(2, strict)}},
        by_function_lines={"5": _group(2, strict), "30": _group(2, strict)},
        by_category={"concrete": {"int: Zero": overall}}, by_sample={
            "0": _group(2, strict), "1": _group(2, strict)})
    block = {"by_kind": {"block-3": overall}, "all": overall,
             "by_function_lines": {"12": overall}}
    return make_results(model, run_dir, n=2, suite_sha256="s",
                        task_metrics={"statement": statement, "block": block})


def test_every_analysis_is_in_the_layout_in_every_format() -> None:
    runs = [_full("m", "a", 0.5), _full("m", "b", 0.75), _full("other", "c", 0.25)]
    tables = layouts()["codesense"].sections(runs, View(ks=[1]))
    titles = [table.title.split(" (")[0] for table in tables]
    for title in ("Accuracy by function size, in lines of code",
                  "Accuracy by abstract category of the value",
                  "Statement accuracy by kind and language",
                  "Spread of accuracy across repeated runs",
                  "Spread of accuracy across the samples of one run"):
        assert title in titles, title
    for fmt in ("text", "markdown", "csv", "json"):
        assert render(tables, fmt)
    document = json.loads(render(tables, "json"))
    [spread] = [t for t in document["tables"] if t["title"].startswith("Spread of accuracy "
                                                                     "across repeated")]
    assert spread["rows"][0]["strict mean"] == 62.5 and spread["rows"][0]["runs"] == 2


def test_the_figure_draws_a_row_per_analysis() -> None:
    pytest.importorskip("matplotlib")
    runs = [_full("m", "a", 0.5), _full("m", "b", 0.75), _full("other", "c", 0.25)]
    layout = layouts()["codesense"]
    figure = layout.figure(runs)   # type: ignore[misc]
    titles = [part.get_suptitle() for part in figure.subfigs]
    assert [title.split(" (")[0].split(",")[0] for title in titles] == [
        "accuracy per kind", "accuracy by function size",
        "statement accuracy by kind and language", "accuracy by abstract category of the value",
        "spread over repeated runs"]
    from execbench.reports.layouts import pyplot
    pyplot().close(figure)
    assert layout.draw(runs, "svg").lstrip().startswith(b"<?xml")
    # An older run draws the rows it has data for.
    assert layout.draw([_run("m", "r", statement=_summary(_group(2, 0.5)))]).startswith(
        b"\x89PNG")


# -- real data, end to end ----------------------------------------------------------------

@needs_shared_data("codesense/statement_prediction_dataset_C.jsonl.gz")
def test_published_runs_report_each_analysis_and_an_older_run_is_scored_again(
        tmp_path: Path) -> None:
    # The statements of the first 20 records of the Python and of the C statement file, in
    # one suite (the Python records hold block questions too, left out here).
    suite, files = tmp_path / "suite", []
    for name in ("statement_prediction_dataset", "statement_prediction_dataset_C"):
        with gzip.open(SHARED_DATA / "codesense" / f"{name}.jsonl.gz", "rt") as published:
            head = [next(published) for _ in range(20)]
        files.append(tmp_path / f"{name}.jsonl.gz")
        with gzip.open(files[-1], "wt") as part:
            part.writelines(head)
    done = execbench("build", *files, "--tasks", "statement", "--out", suite)
    assert done.exit_code == 0, done.stderr
    runs = [tmp_path / "oracle", tmp_path / "constant"]
    for run, model in zip(runs, ("reference/oracle", "reference/constant"), strict=True):
        done = execbench("run", "--suite", suite, "--model", model, "--out", run)
        assert done.exit_code == 0, done.stderr
    done = execbench("report", *runs, "--layout", "codesense", "--format", "json")
    assert done.exit_code == 0, done.stderr
    tables = {t["title"]: t for t in json.loads(done.stdout)["tables"]}
    sizes = tables["Accuracy by function size, in lines of code (% of samples)"]
    assert sum(int(row["function size"].rsplit("(", 1)[1][:-1]) for row in sizes["rows"]) == 40
    assert {row["reference/oracle strict"] for row in sizes["rows"]} == {100.0}
    matrix = tables["Statement accuracy by kind and language (% of samples)"]
    assert {row["kind"] for row in matrix["rows"]} >= {"all"}
    assert any(row["C strict"] is not None for row in matrix["rows"])

    # The same run as an older execbench left it: no sizes or categories in its scores
    # nor in its summary. It still reports, saying 'not recorded', until scored again.
    results = runs[1] / "results.json"
    record = json.loads(results.read_text())
    for summary in record["task_metrics"].values():
        for key in ("by_function_lines", "by_category", "by_language_kind", "by_sample"):
            summary.pop(key, None)
    results.write_text(json.dumps(record))
    samples = runs[1] / "samples.jsonl"
    lines = []
    for line in samples.read_text().splitlines():
        sample = json.loads(line)
        for key in ("function_lines", "category"):
            (sample.get("extra") or {}).pop(key, None)
        lines.append(json.dumps(sample))
    samples.write_text("\n".join(lines) + "\n")
    done = execbench("report", runs[1], "--layout", "codesense", "--format", "json")
    assert done.exit_code == 0, done.stderr
    older = {t["title"]: t for t in json.loads(done.stdout)["tables"]}
    [row] = older["Accuracy by function size, in lines of code (% of samples)"]["rows"]
    assert row["function size"] == NOT_RECORDED
    done = execbench("score", runs[1])
    assert done.exit_code == 0, done.stderr
    again = json.loads(results.read_text())["task_metrics"]["statement"]
    assert "by_function_lines" in again and "by_category" in again
