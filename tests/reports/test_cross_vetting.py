"""The ``vetted-output`` layout: output answers vetted by the same run's coverage and
simulation answers on the same call, on hand-built answers (the pairing of sample i with
sample i) and end to end on a small suite answered by a replay file whose every answer is
chosen here, so each number the tables show is stated by hand."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from execbench.reports.cross_vetting import (
    ABSENT,
    COHERENT,
    COVERAGE,
    INCOHERENT,
    RIGHT,
    SIMULATION,
    WRONG,
    Answers,
    matrix,
    simulation_state,
    vetted,
)
from execbench.reports.layouts import layouts, shown_layouts
from execbench.rundir import read_results
from execbench.runner import RunConfig, run
from execbench.suite import BuildOptions, SuiteFile, build_suite
from execbench.tasks import get_task
from execbench.tasks.base import Instance
from execbench.tasks.ces.simulation import Simulation
from tests.helpers.cli import execbench
from tests.helpers.programs import REPORTED

PROGRAMS = [
    *REPORTED,
    {"id": "sign", "entry_point": "s", "calls": ["-3", "4"],
     "code": "def s(x):\n    if x < 0:\n        return -1\n    if x == 0:\n        return 0\n"
             "    return 1\n"},
    {"id": "count", "entry_point": "c", "calls": ["[0, 1, 2]", "[]"],
     "code": "def c(xs):\n    n = 0\n    for x in xs:\n        if x:\n            n += 1\n"
             "    return n\n"},
    {"id": "flat", "entry_point": "h", "calls": ["3"],
     "code": "def h(x):\n    y = x + 1\n    return y * 2\n"},
]
"""Ten calls; the build asks coverage about one call of each program with a branch
(steps/1, words/0, sign/1, count/1: checked below), and output and simulation about all."""

PLAN = {
    # call: (output, coverage, simulation); "-": the suite does not ask coverage there
    "steps/1": (RIGHT, RIGHT, INCOHERENT),
    "words/0": (RIGHT, WRONG, COHERENT),
    "sign/1": (WRONG, RIGHT, "coherent, wrong output"),
    "count/1": (WRONG, WRONG, ABSENT),
    "steps/0": (RIGHT, "-", INCOHERENT),
    "steps/2": (RIGHT, "-", COHERENT),
    "words/1": (WRONG, "-", INCOHERENT),
    "sign/0": (RIGHT, "-", ABSENT),
    "count/0": (RIGHT, "-", COHERENT),
    "flat/0": (RIGHT, "-", COHERENT),
}
"""What the scripted run answers on each call. By hand:

* output x coverage (the 4 calls asked in both): one call in each of the four cells, 25%;
* output x simulation (all ten calls): right and coherent 4 (words/0, steps/2,
  count/0, flat/0), right and incoherent 2 (steps/1, steps/0), right and absent 1
  (sign/0), wrong and coherent 1 (sign/1: a coherent simulation need not state the right
  output), wrong and incoherent 1 (words/1), wrong and absent 1 (count/1);
* vetted by simulation: plain 7/10 = 70%, vetted 4/10 = 40%, drop 30 points;
* vetted by coverage: plain 2/4 = 50%, vetted 1/4 (steps/1) = 25%, drop 25;
* vetted by either: plain 2/4 = 50%, vetted 2/4 (steps/1 by coverage, words/0 by its
  simulation) = 50%, drop 0.
"""


def _reply(instance: Instance, wanted: str) -> str:
    """A reply that gets the wanted verdict (right/wrong) or simulation class."""
    asking = get_task(instance.task).asking
    if wanted in (RIGHT, COHERENT):
        return asking.reference_response(instance)
    if wanted == INCOHERENT:  # the right output after wrong properties: rule 3
        assert isinstance(asking, Simulation)
        return asking.shortcut_response(instance)
    if wanted == "coherent, wrong output":  # every property right, the output not
        lines = asking.reference_response(instance).splitlines()
        return "\n".join("[output] = None" if line.startswith("[output]") else line
                         for line in lines)
    if wanted == ABSENT:
        return "I cannot say."
    if instance.task == COVERAGE:
        return '[ANSWER]\n{"executed_lines": [1]}\n[/ANSWER]'
    return f"[ANSWER]\nassert {instance.call} == None\n[/ANSWER]"


def _scripted_run(folder: Path, suite: Path, tasks: list[str] | None = None) -> Path:
    """A run of ``suite`` answered as ``PLAN`` says, through a replay file."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for instance in SuiteFile.open(suite).instances():
        call = f"{instance.program_id.split('/', 1)[1]}/{instance.call_index}"
        wanted = dict(zip(("output", COVERAGE, SIMULATION), PLAN[call], strict=True))
        lines.append(json.dumps({"instance_id": instance.id,
                                 "response": _reply(instance, wanted[instance.task])}))
    answers = folder / f"{folder.name}.jsonl"
    answers.write_text("\n".join(lines) + "\n")
    out = folder / "run"
    run(RunConfig(suite=str(suite), model=f"replay/{answers}", n=1, tasks=tasks), out)
    return out


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("vetted")
    source = folder / "vet.jsonl"
    source.write_text("".join(json.dumps(record) + "\n" for record in PROGRAMS))
    built = folder / "suite"
    build_suite([str(source)], built, BuildOptions(tasks=["output", COVERAGE, SIMULATION],
                                                   workers=1))
    return built


@pytest.fixture(scope="module")
def scripted(suite: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run answered as ``PLAN`` says."""
    return _scripted_run(tmp_path_factory.mktemp("scripted"), suite)


def _tables(*runs: Path) -> dict[str, list[dict[str, Any]]]:
    done = execbench("report", *runs, "--layout", "vetted-output", "--format", "json")
    assert done.exit_code == 0, done.stderr
    return {table["title"]: table["rows"] for table in json.loads(done.stdout)["tables"]}


def _vetted_rows(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(row["vetted by"], row["calls"], row["plain pass@1 (%)"],
             row["vetted pass@1 (%)"], row["drop (points)"]) for row in rows]


def _cells(rows: list[dict[str, Any]], against: str) -> dict[tuple[str, str], tuple[Any, Any]]:
    return {(row["output"], row[against]): (row["sample pairs"], row["share of calls (%)"])
            for row in rows}


VETTED = "Output pass@1 vetted by the same run's other answers on the call"
BY_COVERAGE = "Output against coverage on the same call"
BY_SIMULATION = "Output against simulation on the same call"
CALLS = "Calls asked in several tasks"


def test_the_scripted_run_gives_the_numbers_stated_by_hand(suite: Path,
                                                            scripted: Path) -> None:
    asked = {(i.task, f"{i.program_id.split('/', 1)[1]}/{i.call_index}")
             for i in SuiteFile.open(suite).instances()}
    assert {call for task, call in asked if task == COVERAGE} == \
        {call for call, plan in PLAN.items() if plan[1] != "-"}
    tables = _tables(scripted)
    assert _vetted_rows(tables[VETTED]) == [
        ("simulation", 10, pytest.approx(70.0), pytest.approx(40.0), pytest.approx(30.0)),
        ("coverage", 4, 50.0, 25.0, 25.0),
        ("either", 4, 50.0, 50.0, 0.0)]
    assert _cells(tables[BY_COVERAGE], COVERAGE) == {
        (RIGHT, RIGHT): (1, 25.0), (RIGHT, WRONG): (1, 25.0),
        (WRONG, RIGHT): (1, 25.0), (WRONG, WRONG): (1, 25.0)}
    assert _cells(tables[BY_SIMULATION], SIMULATION) == {
        (RIGHT, COHERENT): (4, 40.0), (RIGHT, INCOHERENT): (2, 20.0),
        (RIGHT, ABSENT): (1, 10.0), (WRONG, COHERENT): (1, 10.0),
        (WRONG, INCOHERENT): (1, 10.0), (WRONG, ABSENT): (1, 10.0)}
    [calls] = tables[CALLS]
    assert [calls[name] for name in ("all three tasks", "output+simulation",
                                     "output+coverage", "left out", "note")] == \
        [4, 6, 0, 0, None]


def test_calls_asked_in_the_output_task_alone_are_left_out_and_counted(
        suite: Path, tmp_path: Path) -> None:
    """A run asked only output and coverage: the six calls without coverage are output
    alone; only the coverage rule and matrix have calls."""
    tables = _tables(_scripted_run(tmp_path, suite, tasks=["output", COVERAGE]))
    assert _vetted_rows(tables[VETTED]) == [("coverage", 4, 50.0, 25.0, 25.0)]
    assert tables[BY_SIMULATION] == []
    [calls] = tables[CALLS]
    assert [calls[name] for name in ("all three tasks", "output+simulation",
                                     "output+coverage", "left out")] == [0, 0, 4, 6]


def test_sample_i_is_paired_with_sample_i() -> None:
    """Two samples per instance. Call a: output right then wrong, simulation incoherent
    then coherent: no pair has both (a reading of any right output with any coherent
    simulation would vet it). Call b: output right twice, coverage right then wrong,
    simulation absent twice. Each call weighs one."""
    a = Answers(output={0: True, 1: False}, simulation={0: INCOHERENT, 1: COHERENT})
    b = Answers(output={0: True, 1: True}, coverage={0: True, 1: False},
                simulation={0: ABSENT, 1: ABSENT})
    by_simulation = vetted([a, b], "simulation")
    assert by_simulation is not None
    assert (by_simulation.calls, by_simulation.plain, by_simulation.vetted) == (2, 0.75, 0.0)
    by_coverage = vetted([a, b], "coverage")
    assert by_coverage is not None
    assert (by_coverage.calls, by_coverage.plain, by_coverage.vetted) == (1, 1.0, 0.5)
    assert by_coverage.drop == 50.0
    assert vetted([a], "coverage") is None
    cells = matrix([a, b], SIMULATION)
    assert cells is not None
    # a: (right, incoherent) and (wrong, coherent), half a call each; b: two (right, absent)
    assert {cell: (found.pairs, found.share) for cell, found in cells.items()
            if found.pairs} == {(RIGHT, INCOHERENT): (1, 0.25), (WRONG, COHERENT): (1, 0.25),
                                (RIGHT, ABSENT): (2, 0.5)}


def test_a_sample_index_one_task_lacks_is_not_paired() -> None:
    """Sample 1 of the output has no simulation sample 1: only sample 0 is read."""
    found = vetted([Answers(output={0: True, 1: False}, simulation={0: COHERENT})],
                   "simulation")
    assert found is not None and (found.plain, found.vetted) == (1.0, 1.0)


@pytest.mark.parametrize(("extra", "state"), [
    ({"class": "coherent_correct"}, COHERENT),
    ({"class": "coherent_incorrect"}, COHERENT),
    ({"class": "incoherent_correct"}, INCOHERENT),
    ({"class": "incoherent_incorrect"}, INCOHERENT),
    ({"class": "something else"}, ABSENT),
    ({"category": "LO"}, ABSENT),
    (None, ABSENT),
    (["not", "a", "mapping"], ABSENT),
])
def test_the_simulation_state_of_a_sample(extra: object, state: str) -> None:
    assert simulation_state(extra) == state


def test_the_layout_is_shown_for_runs_that_have_it_and_draws(scripted: Path) -> None:
    result = read_results(scripted)
    assert layouts()["vetted-output"].shows is not None
    assert "vetted-output" in [layout.name for layout, _ in shown_layouts([result])]
    assert layouts()["vetted-output"].draw([result, result]).startswith(b"\x89PNG")
    assert layouts()["vetted-output"].draw([result], "svg").lstrip().startswith(b"<?xml")


def _retyped(run_dir: Path, key: str, value: object) -> None:
    """Log the first sample again with every field there, one of them of the wrong type."""
    log = run_dir / "samples.jsonl"
    record = json.loads(log.read_text().splitlines()[0])
    _append(log, json.dumps({**record, key: value}) + "\n")


def _append(path: Path, text: str) -> None:
    with path.open("a") as file:
        file.write(text)


@pytest.mark.parametrize(("harm", "said"), [
    pytest.param(lambda run_dir, suite: shutil.rmtree(suite), "not found", id="suite gone"),
    pytest.param(lambda run_dir, suite: (suite / "instances.jsonl").write_text("{}\n"),
                 "changed since the run", id="suite changed"),
    pytest.param(lambda run_dir, suite: _append(run_dir / "samples.jsonl", "not json\n"),
                 "not a sample record", id="log line not json"),
    pytest.param(lambda run_dir, suite: _retyped(run_dir, "instance_id", ["output", "x"]),
                 "wrong types", id="log id a list"),
    pytest.param(lambda run_dir, suite: _retyped(run_dir, "sample", "0"), "wrong types",
                 id="log index a string"),
    pytest.param(lambda run_dir, suite: (run_dir / "samples.jsonl").unlink(), "not found",
                 id="log gone"),
])
def test_a_run_whose_suite_or_log_cannot_be_read_gets_a_note(
        suite: Path, scripted: Path, tmp_path: Path, harm: Any, said: str) -> None:
    """Each run is vetted or noted alone: the harmed run gets a note and no rows, the
    other reports as before, and nothing raises."""
    own_suite = tmp_path / "suite"
    shutil.copytree(suite, own_suite)
    harmed = _scripted_run(tmp_path / "harmed", own_suite)
    harm(harmed, own_suite)
    tables = _tables(harmed, scripted)
    notes = [row["note"] for row in tables[CALLS]]
    assert said in notes[0] and notes[1] is None
    assert len(tables[VETTED]) == 3 and len({row["run"] for row in tables[VETTED]}) == 1
