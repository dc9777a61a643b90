"""The ``ces-success-overlap`` layout: which programs a model got right on each of the
three bug tasks and the buggy program's simulation, and how those sets overlap. Counted by
hand on samples written for four HumanEvalPack programs, and end to end with
``reference/oracle``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from execbench.reports.ces_overlap import COMBINATIONS, combination_name, shows, successes
from execbench.reports.layouts import View, layouts, shown_layouts
from execbench.rundir import SAMPLES, Results, Sample
from execbench.runner import RunConfig, run
from execbench.suite import MANIFEST, BuildOptions, SuiteError, SuiteFile, build_suite, load_suite
from execbench.tasks import task_names
from tests.helpers.cli import execbench
from tests.helpers.data import shared_data
from tests.helpers.results import make_results

PACK = "humanevalpack.jsonl.gz"
PROGRAMS = [f"humanevalpack/Python/{number}" for number in range(4)]
LAYOUT = "ces-success-overlap"


@pytest.fixture(scope="module")
def suites(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The first four HumanEvalPack programs: a bug-task suite and a ``--buggy`` simulation
    suite."""
    folder = tmp_path_factory.mktemp("overlap")
    pack = str(shared_data(PACK))
    bugs, buggy = folder / "bugs", folder / "buggy"
    build_suite([pack], bugs, BuildOptions(
        tasks=["bug-prediction", "bug-localization", "bug-repair"], limit=4, workers=1))
    build_suite([pack], buggy, BuildOptions(tasks=["simulation"], limit=4, buggy=True,
                                            workers=1))
    return bugs, buggy


def _instances(suite: Path) -> dict[tuple[str, str, str | None], str]:
    """(task, program, variant) -> instance id; a simulation's program is the original."""
    return {(instance.task, instance.program_id.removesuffix("@buggy"), instance.variant):
            instance.id for instance in load_suite(suite)[1]}


def _sample(instance: str, task: str, right: bool, sample: int = 0,
            extra: dict[str, Any] | None = None) -> dict[str, Any]:
    verdict = "correct" if right else "incorrect"
    return Sample(instance_id=instance, task=task, source="humanevalpack", sample=sample,
                  seed=None, prompt_hash="h", response="r", reasoning=None, answer="a",
                  verdict=verdict, correct=right, score=None, detail=None, extra=extra,
                  input_tokens=None, output_tokens=None, latency=None, attempts=1,
                  error=None).to_record()


def _run(folder: Path, model: str, suite: Path, samples: list[dict[str, Any]]) -> Results:
    folder.mkdir()
    (folder / SAMPLES).write_text("".join(json.dumps(s) + "\n" for s in samples),
                                  encoding="utf-8")
    known = [sample for sample in samples if sample["task"] in task_names()]
    return make_results(model, str(folder), suite=str(suite), samples=known,
                        suite_sha256=_sha(suite))


def _sha(suite: Path) -> str:
    """The sha256 a run of ``suite`` pins (a folder that is no suite pins a made-up one)."""
    try:
        return SuiteFile.open(suite).sha256
    except (SuiteError, ValueError, AttributeError):
        return "0" * 64


def _bug_samples(ids: dict[tuple[str, str, str | None], str],
                 right: dict[str, tuple[bool, bool, bool]]) -> list[dict[str, Any]]:
    """Per program, (prediction on the buggy variant, localization, repair) right; the
    fixed variant is answered the other way from the buggy one (it must not count)."""
    samples = []
    for program, (predicted, located, repaired) in right.items():
        samples += [
            _sample(ids[("bug-prediction", program, "buggy")], "bug-prediction", predicted),
            _sample(ids[("bug-prediction", program, "fixed")], "bug-prediction", not predicted),
            _sample(ids[("bug-localization", program, None)], "bug-localization", located),
            _sample(ids[("bug-repair", program, None)], "bug-repair", repaired)]
    return samples


def _simulation(ids: dict[tuple[str, str, str | None], str], program: str, kind: str,
                sample: int = 0) -> dict[str, Any]:
    return _sample(ids[("simulation", program, None)], "simulation",
                   kind == "coherent_correct", sample, extra={"class": kind})


@pytest.fixture
def runs(suites: tuple[Path, Path], tmp_path: Path) -> list[Results]:
    """Two models, written by hand (P0..P3 the four programs):

    m1, bug run: P0 right on all three; P1 prediction and repair; P2 nothing (but its
    fixed variant right, and a second sample of its buggy variant right: neither counts);
    P3 nothing, and its localization instance logged again under another task (the
    later record wins, and is skipped: P3 is not asked in localization). m1, simulation
    run: P0 and P2 coherent and right, P1 coherent with a wrong output, P3 incoherent with
    the right output; a later m1 run simulating P3 right does not count (the first run
    given wins). m1 was asked all four tasks; P0-P2 in each (P3 not in localization), so
    m1 compares 3 programs: all four 1 (P0), prediction + repair 1 (P1), only
    simulation 1 (P2), none 0.

    m2, a bug run only, on P0 and P1: P0 localization alone, P1 prediction and
    localization; never asked simulation. So m2 compares 2 programs: only localization
    1, prediction + localization 1, and every combination with simulation is unknown.
    """
    bugs, buggy = suites
    bug_ids, sim_ids = _instances(bugs), _instances(buggy)
    p0, p1, p2, p3 = PROGRAMS
    m1_bugs = _bug_samples(bug_ids, {p0: (True, True, True), p1: (True, False, True),
                                     p2: (False, False, False), p3: (False, False, False)})
    m1_bugs.append(_sample(bug_ids[("bug-prediction", p2, "buggy")], "bug-prediction", True,
                           sample=1))
    # a hostile record: P3's localization instance, logged under a task it is not of
    m1_bugs.append(_sample(bug_ids[("bug-localization", p3, None)], "no-such-task", True,
                           sample=0))
    m1_sims = [_simulation(sim_ids, p0, "coherent_correct"),
               _simulation(sim_ids, p1, "coherent_incorrect"),
               _simulation(sim_ids, p2, "coherent_correct"),
               _simulation(sim_ids, p2, "incoherent_incorrect", sample=1),
               _simulation(sim_ids, p3, "incoherent_correct")]
    m2_bugs = _bug_samples(bug_ids, {p0: (False, True, False), p1: (True, True, False)})
    return [_run(tmp_path / "m1-bugs", "m1", bugs, m1_bugs),
            _run(tmp_path / "m1-sim", "m1", buggy, m1_sims),
            _run(tmp_path / "m2-bugs", "m2", bugs, m2_bugs),
            _run(tmp_path / "m1-sim-later", "m1", buggy,
                 [_simulation(sim_ids, p3, "coherent_correct")])]


def test_each_program_lands_in_its_combination_by_hand(runs: list[Results]) -> None:
    found = successes(runs)
    assert list(found) == ["m1", "m2"]
    p0, p1, p2, p3 = PROGRAMS
    assert found["m1"].asked == {"bug-prediction": set(PROGRAMS),
                                 "bug-localization": {p0, p1, p2},
                                 "bug-repair": set(PROGRAMS), "simulation": set(PROGRAMS)}
    assert found["m1"].programs == {p0, p1, p2}
    assert found["m1"].right == {"bug-prediction": {p0, p1}, "bug-localization": {p0},
                                 "bug-repair": {p0, p1}, "simulation": {p0, p2}}
    assert {tasks: count for tasks, count in found["m1"].regions().items() if count} == {
        ("bug-prediction", "bug-localization", "bug-repair", "simulation"): 1,
        ("bug-prediction", "bug-repair"): 1, ("simulation",): 1}
    assert found["m1"].regions()[()] == 0
    assert found["m2"].tasks == ("bug-prediction", "bug-localization", "bug-repair")
    assert found["m2"].programs == {p0, p1}
    m2 = found["m2"].regions()
    assert {tasks: count for tasks, count in m2.items() if count} == {
        ("bug-localization",): 1, ("bug-prediction", "bug-localization"): 1}
    # a combination holding the task never asked is unknown, not 0
    assert {tasks for tasks, count in m2.items() if count is None} == {
        tasks for tasks in COMBINATIONS if "simulation" in tasks}
    assert m2[()] == 0


def test_the_tables_state_the_counts(runs: list[Results]) -> None:
    asked, combined, pairs = layouts()[LAYOUT].sections(runs, View(ks=[1]))
    assert asked.headers == ["model", "prediction", "localization", "repair", "simulation",
                             "compared"]
    assert asked.rows == [["m1", 4, 3, 4, 4, 3], ["m2", 2, 2, 2, None, 2]]
    assert combined.headers == ["tasks right", "m1 programs", "m1 %", "m2 programs", "m2 %"]
    assert "of those asked in all of the model's tasks" in combined.title
    rows = {row[0]: row[1:] for row in combined.rows}
    assert len(combined.rows) == 17  # every combination, then the programs
    assert rows["all four"] == [1, pytest.approx(100 / 3), None, None]
    assert rows["prediction + repair"] == [1, pytest.approx(100 / 3), 0, 0.0]
    assert rows["only simulation"] == [1, pytest.approx(100 / 3), None, None]
    assert rows["none"] == [0, 0.0, 0, 0.0]
    assert rows["only localization"] == [0, 0.0, 1, 50.0]
    assert rows["prediction + localization"] == [0, 0.0, 1, 50.0]
    assert rows["prediction + localization + repair"] == [0, 0.0, 0, 0.0]
    assert rows["programs"] == [3, None, 2, None]
    assert sum(int(str(row[1])) for row in combined.rows[:-1]) == 3
    assert sum(int(str(row[3])) for row in combined.rows[:-1] if row[3] is not None) == 2
    assert [row[:3] for row in combined.rows[:2]] == [
        ["all four", 1, pytest.approx(100 / 3)],
        ["prediction + localization + repair", 0, 0.0]]
    by_pair = {(row[0], row[1], row[2]): row[3:] for row in pairs.rows}
    assert len(pairs.rows) == 12
    # A right, B right, both, either, both / either (over the programs compared)
    assert by_pair[("m1", "prediction", "localization")] == [2, 1, 1, 2, 50.0]
    assert by_pair[("m1", "prediction", "repair")] == [2, 2, 2, 2, 100.0]
    assert by_pair[("m1", "prediction", "simulation")] == [2, 2, 1, 3, pytest.approx(100 / 3)]
    assert by_pair[("m1", "localization", "repair")] == [1, 2, 1, 2, 50.0]
    assert by_pair[("m1", "localization", "simulation")] == [1, 2, 1, 2, 50.0]
    assert by_pair[("m1", "repair", "simulation")] == [2, 2, 1, 3, pytest.approx(100 / 3)]
    assert by_pair[("m2", "prediction", "localization")] == [1, 2, 1, 2, 50.0]
    assert by_pair[("m2", "prediction", "repair")] == [1, 0, 0, 1, 0.0]
    assert by_pair[("m2", "repair", "simulation")] == [None] * 5


def test_combinations_are_named_and_ordered() -> None:
    assert len(COMBINATIONS) == 16 and COMBINATIONS[-1] == ()
    assert [combination_name(tasks) for tasks in COMBINATIONS[:6]] == [
        "all four", "prediction + localization + repair",
        "prediction + localization + simulation", "prediction + repair + simulation",
        "localization + repair + simulation", "prediction + localization"]
    assert [combination_name(tasks) for tasks in COMBINATIONS[-5:]] == [
        "only prediction", "only localization", "only repair", "only simulation", "none"]


def test_the_figure_is_drawn_and_the_layout_shows_for_bug_and_buggy_runs(
        runs: list[Results]) -> None:
    pytest.importorskip("matplotlib")
    assert layouts()[LAYOUT].draw(runs).startswith(b"\x89PNG")
    assert [shows(result) for result in runs] == [True, True, True, True]
    plain = make_results("m3", "x", suite="no/such/suite", samples=[
        _sample("simulation/p/0", "simulation", True, extra={"class": "coherent_correct"})])
    assert not shows(plain)
    picked = {layout.name: shown for layout, shown in shown_layouts([*runs, plain])}
    assert picked[LAYOUT] == runs


@pytest.mark.parametrize("manifest", [b"\xff{not json", b"[1, 2]", b'"buggy"'])
def test_a_run_whose_suite_cannot_be_read_counts_nothing(
        suites: tuple[Path, Path], tmp_path: Path, manifest: bytes) -> None:
    """A suite whose manifest is not JSON, or not an object, tells no program: the run
    counts nothing and the report still renders; nor is the run taken for a ``--buggy``
    one."""
    bugs, buggy = suites
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "instances.jsonl").write_bytes((buggy / "instances.jsonl").read_bytes())
    (broken / MANIFEST).write_bytes(manifest)
    sim_ids = _instances(buggy)
    hostile = _run(tmp_path / "hostile", "m9", broken,
                   [_simulation(sim_ids, PROGRAMS[0], "coherent_correct")])
    assert not shows(hostile)
    found = successes([hostile])
    assert found["m9"].programs == set()
    asked, combined, pairs = layouts()[LAYOUT].sections([hostile], View(ks=[1]))
    assert {row[0]: row[1] for row in combined.rows}["programs"] == 0
    assert f"Not read: m9: {broken / MANIFEST}: not" in (combined.note or "")


def test_oracle_is_right_on_all_four_for_every_program(suites: tuple[Path, Path],
                                                       tmp_path: Path) -> None:
    """End to end through the command: ``reference/oracle`` answers both suites; each of
    the four programs is right on all four tasks."""
    bugs, buggy = suites
    for suite, out in ((bugs, tmp_path / "run-bugs"), (buggy, tmp_path / "run-sim")):
        run(RunConfig(suite=str(suite), model="reference/oracle"), out)
    done = execbench("report", tmp_path / "run-bugs", tmp_path / "run-sim", "--layout",
                     LAYOUT, "--format", "json")
    assert done.exit_code == 0, done.stderr
    asked, combined, pairs = json.loads(done.stdout)["tables"]
    assert asked["rows"] == [{"model": "reference/oracle", "prediction": 4,
                              "localization": 4, "repair": 4, "simulation": 4,
                              "compared": 4}]
    rows = {row["tasks right"]: row["reference/oracle programs"] for row in combined["rows"]}
    assert rows["all four"] == 4 and rows["programs"] == 4
    assert sum(count for name, count in rows.items() if name != "programs") == 4
    assert {row["both"] for row in pairs["rows"]} == {4}
