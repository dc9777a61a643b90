"""The ``cutoff-split`` and ``release-date`` layouts on hand-made suites of dated contest
programs, answered by a replay file whose right and wrong answers are chosen here, so
each side's counts and pass@1 are stated by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from execbench.metrics import bootstrap_ci
from execbench.reports.dates import (
    AFTER,
    BEFORE,
    NO_CUTOFF,
    NO_DATES,
    NO_RELEASE,
    UNDATED,
)
from execbench.runner import RunConfig, run
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks import get_task
from tests.helpers.cli import execbench

# (id, contest date, body of f, its call's x, what it returns)
PROGRAMS = [("p1", "2023-09-15", "x + 1", 1, 2), ("p2", "2023-10-01", "x * 3", 2, 6),
            ("p3", "2023-10-31", "x - 1", 5, 4), ("p4", "2023-11-01", "x * x", 3, 9),
            ("p5", "2024-02-10", "x + 10", 2, 12)]
# Which of the two samples of each program's question is answered right, per task. Each
# wrong answer says f(0) == 0, which no program above gives.
RIGHT = {"output": {"p1": (1, 1), "p2": (1, 0), "p3": (0, 0), "p4": (0, 0), "p5": (1, 0)},
         "input": {"p1": (1, 1), "p2": (1, 1), "p3": (1, 0), "p4": (0, 0), "p5": (0, 0)}}
WRONG = "[ANSWER]\nassert f(0) == 0\n[/ANSWER]"


def _contest(records: list[tuple[str, str, str, int, int]]) -> str:
    """Contest records (LiveCodeBench's execution shape) of ``records``."""
    return "".join(json.dumps({
        "id": name, "code": f"def f(x):\n    return {body}\n", "function_name": "f",
        "input": f"f(x = {x})", "output": str(value), "contest_date": f"{day}T00:00:00",
        "difficulty": "easy"}) + "\n" for name, day, body, x, value in records)


def _answers(suite: Path, path: Path) -> str:
    """A replay file answering each instance of ``suite`` twice, right where ``RIGHT``
    says; the replay model's name."""
    _, instances, _ = load_suite(suite)
    lines = []
    for instance in instances:
        right = get_task(instance.task).asking.reference_response(instance)
        for correct in RIGHT[instance.task][instance.program_id.split("/")[1]]:
            lines.append({"instance_id": instance.id, "response": right if correct else WRONG})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return f"replay/{path}"


@pytest.fixture(scope="module")
def dated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A suite of the five dated programs (output and input) and runs of it: the replay
    answers with cutoff 2023-10 and release 2024-05-13 (``month``), the same answers with
    cutoff 2023-10-01 and no release (``day``), the oracle without dates (``undated``)."""
    folder = tmp_path_factory.mktemp("dated")
    source = folder / "contest.jsonl"
    source.write_text(_contest(PROGRAMS))
    suite = folder / "suite"
    build_suite([str(source)], suite, BuildOptions(tasks=["output", "input"], workers=1))
    model = _answers(suite, folder / "answers.jsonl")
    runs = {"month": (model, 2, "2024-05-13", "2023-10"),
            "day": (model, 2, None, "2023-10-01"),
            "undated": ("reference/oracle", 1, None, None)}
    for name, (who, n, release, cutoff) in runs.items():
        run(RunConfig(suite=str(suite), model=who, n=n, model_release=release,
                      model_cutoff=cutoff), folder / name)
    return {"folder": folder, "suite": suite, "model": model}


def _tables(*args: object) -> list[dict[str, Any]]:
    done = execbench("report", *args, "--format", "json")
    assert done.exit_code == 0, done.stderr
    tables: list[dict[str, Any]] = json.loads(done.stdout)["tables"]
    return tables


def _split_rows(tables: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(row["run"], row["task"], row["side"]): row for row in tables[0]["rows"]}


def _percent_interval(fractions: list[float]) -> list[float]:
    low, high = bootstrap_ci(fractions)
    return [100 * low, 100 * high]


def test_each_side_of_a_month_cutoff_by_hand(dated: dict[str, Any]) -> None:
    """Cutoff 2023-10 covers through 2023-10-31: p1, p2 and p3 (dated on the 31st) on or
    before it, p4 and p5 after."""
    folder = dated["folder"]
    tables = _tables(folder / "month", "--layout", "cutoff-split")
    rows = _split_rows(tables)
    label = dated["model"]
    assert set(rows) == {(label, task, side) for task in ("input", "output")
                         for side in (BEFORE, AFTER)}
    output_before = rows[(label, "output", BEFORE)]
    # per instance, in id order: p1 2 of 2, p2 1 of 2, p3 0 of 2
    assert output_before["pass@1"]["value"] == pytest.approx(50.0)
    assert output_before["pass@1"]["instances"] == 3 and output_before["samples"] == 6
    assert output_before["pass@1"]["ci95"] == pytest.approx(_percent_interval([1, 0.5, 0]))
    assert output_before["dates"] == "2023-09-15 to 2023-10-31"
    assert output_before["cutoff"] == "2023-10"
    output_after = rows[(label, "output", AFTER)]   # p4 0 of 2, p5 1 of 2
    assert output_after["pass@1"]["value"] == pytest.approx(25.0)
    assert (output_after["pass@1"]["instances"], output_after["samples"]) == (2, 4)
    assert output_after["pass@1"]["ci95"] == pytest.approx(_percent_interval([0, 0.5]))
    assert output_after["dates"] == "2023-11-01 to 2024-02-10"
    input_before = rows[(label, "input", BEFORE)]   # 2 of 2, 2 of 2, 1 of 2
    assert input_before["pass@1"]["value"] == pytest.approx(250 / 3)
    input_after = rows[(label, "input", AFTER)]     # none right
    assert input_after["pass@1"]["value"] == 0.0
    assert input_after["pass@1"]["ci95"] == [0.0, 0.0]
    assert len(tables) == 1  # every run given was split


def test_a_day_cutoff_covers_that_day_and_runs_without_dates_are_listed(
        dated: dict[str, Any]) -> None:
    """Cutoff 2023-10-01: p1 and p2 (dated on the day) on or before, p3 to p5 after; the
    oracle run without a cutoff is listed with the reason."""
    folder = dated["folder"]
    tables = _tables(folder / "day", folder / "undated", "--layout", "cutoff-split")
    rows = _split_rows(tables)
    label = dated["model"]
    assert rows[(label, "output", BEFORE)]["pass@1"]["value"] == pytest.approx(75.0)
    assert rows[(label, "output", BEFORE)]["pass@1"]["instances"] == 2
    assert rows[(label, "output", AFTER)]["pass@1"]["value"] == pytest.approx(50 / 3)
    assert rows[(label, "output", AFTER)]["samples"] == 6
    assert rows[(label, "input", BEFORE)]["pass@1"]["value"] == pytest.approx(100.0)
    assert rows[(label, "input", AFTER)]["pass@1"]["value"] == pytest.approx(50 / 3)
    assert tables[1]["rows"] == [{"run": "reference/oracle", "cutoff": None, "why": NO_CUTOFF}]


def test_release_date_table_places_each_run_by_its_release(dated: dict[str, Any]) -> None:
    """Headline pass@1 over all five instances: output (1 + .5 + 0 + 0 + .5) / 5 = 40%,
    input (1 + 1 + .5 + 0 + 0) / 5 = 50%; the runs without a release are listed."""
    folder = dated["folder"]
    tables = _tables(folder / "month", folder / "day", folder / "undated", "--layout",
                     "release-date")
    label = f"{dated['model']} ({folder / 'month'})"
    assert [(row["run"], row["released"], row["cutoff"], row["task"], row["pass@1"]["value"],
             row["pass@1"]["instances"]) for row in tables[0]["rows"]] == [
        (label, "2024-05-13", "2023-10", "input", pytest.approx(50.0), 5),
        (label, "2024-05-13", "2023-10", "output", pytest.approx(40.0), 5)]
    assert tables[0]["rows"][1]["pass@1"]["ci95"] == pytest.approx(
        _percent_interval([1, 0.5, 0, 0, 0.5]))
    assert tables[1]["rows"] == [
        {"run": f"{dated['model']} ({folder / 'day'})", "why": NO_RELEASE},
        {"run": "reference/oracle", "why": NO_RELEASE}]


def test_report_model_cards_dates_older_runs_and_a_runs_own_dates_win(
        dated: dict[str, Any], tmp_path: Path) -> None:
    """The card gives the oracle run (no dates) a release and a cutoff, and the ``day``
    run a release; the ``day`` run keeps its own cutoff, not the card's."""
    folder = dated["folder"]
    cards = tmp_path / "cards.toml"
    cards.write_text(f'["reference/oracle"]\nrelease = 2024-01-15\ncutoff = "2023-09"\n\n'
                     f'["{dated["model"]}"]\nrelease = "2024-02"\ncutoff = "2022-01"\n')
    tables = _tables(folder / "day", folder / "undated", "--layout", "release-date",
                     "--model-cards", cards)
    assert [(row["run"], row["released"], row["cutoff"], row["task"], row["pass@1"]["value"])
            for row in tables[0]["rows"]] == [
        ("reference/oracle", "2024-01-15", "2023-09", "input", 100.0),
        ("reference/oracle", "2024-01-15", "2023-09", "output", 100.0),
        (dated["model"], "2024-02", "2023-10-01", "input", pytest.approx(50.0)),
        (dated["model"], "2024-02", "2023-10-01", "output", pytest.approx(40.0))]
    assert len(tables) == 1
    # the oracle's card cutoff 2023-09: only p1 on or before it (the oracle is right on all)
    rows = _split_rows(_tables(folder / "undated", "--layout", "cutoff-split",
                               "--model-cards", cards))
    assert rows[("reference/oracle", "output", BEFORE)]["pass@1"]["instances"] == 1
    assert rows[("reference/oracle", "output", AFTER)]["pass@1"]["instances"] == 4
    assert rows[("reference/oracle", "output", AFTER)]["pass@1"]["value"] == 100.0


def test_a_bad_card_file_for_report_is_one_line(dated: dict[str, Any], tmp_path: Path) -> None:
    cards = tmp_path / "cards.toml"
    cards.write_text('["reference/oracle"]\ncutoff = 2023-09\n')
    done = execbench("report", dated["folder"] / "undated", "--model-cards", cards)
    assert done.exit_code == 2
    assert done.stderr.count("\n") == 1 and "--model-cards" in done.stderr
    assert 'cutoff = "2023-10"' in done.stderr


def test_undated_instances_and_undated_or_changed_suites(tmp_path: Path) -> None:
    """A suite of one dated contest program and one undated generic program splits into
    on-or-before and undated; a suite with no date at all, and one changed since its run,
    are listed with the reason."""
    contest, generic = tmp_path / "contest.jsonl", tmp_path / "generic.jsonl"
    contest.write_text(_contest(PROGRAMS[:1]))
    generic.write_text(json.dumps({"id": "g", "code": "def g(x):\n    return -x\n",
                                   "entry_point": "g", "calls": ["1", "2"]}) + "\n")
    mixed, plain = tmp_path / "mixed", tmp_path / "plain"
    build_suite([str(contest), str(generic)], mixed, BuildOptions(tasks=["output"], workers=1))
    build_suite([str(generic)], plain, BuildOptions(tasks=["output"], workers=1))
    for suite, out in ((mixed, "run-mixed"), (plain, "run-plain"), (mixed, "run-changed")):
        run(RunConfig(suite=str(suite), model="reference/oracle", model_cutoff="2024-01"),
            tmp_path / out)
    tables = _tables(tmp_path / "run-mixed", tmp_path / "run-plain", "--layout",
                     "cutoff-split")
    rows = _split_rows(tables)
    assert {key: (row["pass@1"]["instances"], row["samples"], row["dates"])
            for key, row in rows.items()} == {
        ("reference/oracle (" + str(tmp_path / "run-mixed") + ")", "output", BEFORE):
            (1, 1, "2023-09-15"),
        ("reference/oracle (" + str(tmp_path / "run-mixed") + ")", "output", UNDATED):
            (2, 2, None)}
    assert [row["why"] for row in tables[1]["rows"]] == [NO_DATES]
    with (mixed / "instances.jsonl").open("a") as file:
        file.write("\n")
    tables = _tables(tmp_path / "run-changed", "--layout", "cutoff-split")
    assert tables[0]["rows"] == []
    assert tables[1]["rows"][0]["why"] == (f"suite not used: suite {mixed} changed since "
                                            "the run")


def test_the_figures_draw_and_say_when_there_is_nothing(dated: dict[str, Any],
                                                       tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    folder = dated["folder"]
    done = execbench("report", folder / "month", folder / "day", folder / "undated",
                     "--plots", tmp_path / "plots")
    assert done.exit_code == 0, done.stderr
    names = {path.name for path in (tmp_path / "plots").iterdir()}
    assert {"cutoff-split.png", "cutoff-split.svg", "release-date.png",
            "release-date.svg"} <= names
    # a layout asked for by name draws for runs it has nothing for, saying so
    done = execbench("report", folder / "undated", "--layout", "cutoff-split", "--plot",
                     tmp_path / "nothing.png")
    assert done.exit_code == 0, done.stderr
    assert (tmp_path / "nothing.png").stat().st_size > 0


def test_the_page_lists_each_runs_model_dates(dated: dict[str, Any], tmp_path: Path) -> None:
    folder = dated["folder"]
    page = tmp_path / "page.html"
    done = execbench("report", folder / "month", folder / "undated", "--html", page)
    assert done.exit_code == 0, done.stderr
    text = page.read_text()
    assert "<th>model dates</th>" in text and "released 2024-05-13, cutoff 2023-10" in text


def test_report_cards_that_fit_no_run_or_clash_with_its_dates_are_refused(
        dated: dict[str, Any], tmp_path: Path) -> None:
    """A card file naming none of the runs' models (a typo) would date nothing, unsaid;
    a card whose release comes before the run's own cutoff makes dates no run can have:
    each is one line, exit 2, as ``run`` refuses them."""
    folder = dated["folder"]
    typo = tmp_path / "typo.toml"
    typo.write_text('["reference/oracel"]\nrelease = "2024-01"\n')
    done = execbench("report", folder / "undated", "--model-cards", typo)
    assert done.exit_code == 2 and done.stderr.count("\n") == 1
    said = " ".join(done.stderr.split())
    assert "has no card for any of the runs' models ('reference/oracle')" in said
    assert "'reference/oracel'" in said
    clash = tmp_path / "clash.toml"
    clash.write_text(f'["{dated["model"]}"]\nrelease = "2023-06"\n')  # day's cutoff 2023-10-01
    done = execbench("report", folder / "day", "--model-cards", clash)
    assert done.exit_code == 2 and done.stderr.count("\n") == 1
    assert "--model-cards" in done.stderr and "cutoff" in done.stderr
