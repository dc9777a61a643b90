"""The ``ces-vetting`` layout: bug-task successes sorted by the same model's simulation of
the buggy program, by hand, end to end on HumanEvalPack with ``reference/oracle``, and end
to end with scripted answers over HTTP that land in each class."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from execbench.reports.vetting import BUG_TASKS, CLASSES, SIMULATION, vet, vetting_table
from execbench.runner import RunConfig, read_samples, run
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks import get_task
from execbench.tasks.asking import ask
from execbench.tasks.base import Instance
from execbench.tasks.bugs_payload import LocalizationQuestion
from execbench.tasks.ces.payload import Property, SimulationQuestion
from execbench.tasks.ces.simulation import answer_lines
from execbench.tasks.ces.summary_payload import AT_OUTPUT, Divergence, Judged
from execbench.tasks.protocol import Protocol
from execbench.values import to_literal
from tests.helpers.cli import execbench
from tests.helpers.data import shared_data
from tests.helpers.fake_model import FAKE_MODEL, fake_model
from tests.helpers.results import make_results

PACK = "humanevalpack.jsonl.gz"


def _simulated(kind: str, line: int | None = None) -> Judged:
    """What the scoring of a simulation sample says of it, read from its ``extra``."""
    divergence = AT_OUTPUT if line is None else Divergence("iterable", "3a", line, "TF--",
                                                           label="x")
    return Judged.of({"class": kind, "divergence": divergence.to_record()})


@pytest.mark.parametrize(("sample", "expected"), [
    (_simulated("coherent_correct"), "confident"),
    (_simulated("coherent_incorrect", 7), "likely"),       # at the bug's line
    (_simulated("coherent_incorrect", 9), "likely"),       # after it
    (_simulated("coherent_incorrect"), "likely"),          # only the output was wrong
    (_simulated("coherent_incorrect", 4), "suspicious"),   # before the bug
    (_simulated("incoherent_correct"), "incoherent"),
    (_simulated("incoherent_incorrect", 2), "incoherent"),
    (Judged.of(None), "not simulated"),                    # an unreadable simulation
    (Judged.of({"category": "LO"}), "not simulated"),      # no class: unparsable
    (None, "not simulated"),                               # no simulation of that program
])
def test_each_class_by_hand(sample: Judged | None, expected: str) -> None:
    assert vet(sample, [7, 8]) == expected


def test_a_sample_logged_before_divergences_had_every_field_still_vets() -> None:
    """A divergence record with its line alone reads; without a line it counts as after
    the bug."""
    assert vet(Judged.of({"class": "coherent_incorrect",
                          "divergence": {"kind": "iterable", "line": 4}}), [7]) == "suspicious"
    assert vet(Judged.of({"class": "coherent_incorrect", "divergence": {}}), [7]) == "likely"


def test_oracle_successes_are_all_confident(tmp_path: Path) -> None:
    pack = str(shared_data(PACK))
    bugs, buggy = tmp_path / "bugs", tmp_path / "buggy"
    build_suite([pack], bugs, BuildOptions(
        tasks=["bug-prediction", "bug-localization", "bug-repair"], limit=4, workers=1))
    build_suite([pack], buggy, BuildOptions(tasks=["simulation"], limit=4, buggy=True,
                                                 workers=1))
    for suite, out in ((bugs, tmp_path / "run-bugs"), (buggy, tmp_path / "run-sim")):
        run(RunConfig(suite=str(suite), model="reference/oracle"), out)

    done = execbench("report", tmp_path / "run-bugs", tmp_path / "run-sim", "--layout",
                     "ces-vetting", "--format", "json")
    assert done.exit_code == 0, done.stderr
    rows = [row for table in json.loads(done.stdout)["tables"] for row in table["rows"]]
    assert {row["task"] for row in rows} == {"bug-prediction", "bug-localization",
                                             "bug-repair"}
    for row in rows:
        assert (row["model"], row["successes"], row["confident"]) == ("reference/oracle", 4,
                                                                       100.0)
        assert [row[name] for name in ("likely", "suspicious", "incoherent",
                                       "not simulated")] == [0.0] * 4


def _altered(properties: tuple[Property, ...], prop_id: str, truth_repr: str) -> str:
    """A coherent simulation that goes wrong at ``prop_id``: every property as it was but
    that loop variable's first value, and a wrong output (a loop variable is no part of any
    other property, so no rule ties the rest to it; a wrong output after it is what a
    wrong value carried on gives)."""
    values = {}
    for prop in properties:
        listed = list(prop.values)
        if prop.id == prop_id:
            listed[0] = ["int", 0] if listed[0] == ["none"] else ["none"]
        values[prop.id] = "[" + ", ".join(to_literal(v) for v in listed) + "]"
    return answer_lines(properties, values, "0" if truth_repr == "None" else "None")


def _scripted(bugs: list[Instance], simulations: list[Instance]
              ) -> tuple[dict[str, str], dict[str, str]]:
    """Per prompt, the scripted reply, and the class each chosen program's simulation is
    written to have. Programs are taken in order: the first whose buggy run has a loop
    variable before the bug's first line goes wrong there (suspicious), the first with
    one at or after it goes wrong there (likely), the next with any property states the
    right output after a wrong simulation (incoherent), the next is simulated right
    (confident). The chosen programs' bug-task answers are right; the others' cannot be
    read, so only the chosen four have successes to vet."""
    bug_lines = {i.program_id: LocalizationQuestion.from_record(i.data).lines for i in bugs
                 if i.task == "bug-localization"}
    wanted: dict[str, str] = {}
    replies: dict[str, str] = {}
    for instance in simulations:
        program = instance.program_id.removesuffix("@buggy")
        truth = SimulationQuestion.from_record(instance.data).truth
        first_bug = min(bug_lines[program])
        loops = [p for p in truth.properties if p.kind == "loop_variable" and p.values]
        before = [p for p in loops if p.line < first_bug]
        after = [p for p in loops if p.line >= first_bug]
        task = get_task(SIMULATION)
        if before and "suspicious" not in wanted.values():
            wanted[program], reply = "suspicious", _altered(truth.properties, before[0].id,
                                                            truth.repr)
        elif after and "likely" not in wanted.values():
            wanted[program], reply = "likely", _altered(truth.properties, after[0].id,
                                                        truth.repr)
        elif truth.properties and "incoherent" not in wanted.values():
            wanted[program], reply = "incoherent", task.asking.shortcut_response(instance)
        elif "confident" not in wanted.values():
            wanted[program], reply = "confident", task.asking.reference_response(instance)
        else:
            reply = "I cannot say."
        replies[prompt_text(task, instance)] = f"<REASONING>Step by step.</REASONING>\n{reply}"
    for instance in bugs:
        task = get_task(instance.task)
        replies[prompt_text(task, instance)] = task.asking.reference_response(instance) \
            if instance.program_id in wanted else "I cannot say."
    return replies, wanted


def prompt_text(task: Any, instance: Instance) -> str:
    return ask(task, instance, Protocol(shots=0))[-1]["content"]


@pytest.mark.slow
def test_scripted_answers_land_in_each_class(tmp_path: Path) -> None:
    """End to end on the first nine HumanEvalPack programs: a bug-task suite and a
    ``--buggy`` simulation suite, answered over HTTP by a scripted server with one program
    written for each class (see ``_scripted``); the report puts each program's successes on
    all three bug tasks in that class, and the chosen programs are the ones checked by hand
    (Python/0's first loop, line 12, runs before its bug on line 15; Python/8's loop, line
    15, after its bug on line 13)."""
    pack = str(shared_data(PACK))
    bugs, buggy = tmp_path / "bugs", tmp_path / "buggy"
    build_suite([pack], bugs, BuildOptions(tasks=list(BUG_TASKS), limit=9, workers=1))
    build_suite([pack], buggy, BuildOptions(tasks=[SIMULATION], limit=9, buggy=True,
                                                 workers=1))
    replies, wanted = _scripted(load_suite(bugs)[1], load_suite(buggy)[1])
    assert wanted == {"humanevalpack/Python/0": "suspicious",
                      "humanevalpack/Python/1": "incoherent",
                      "humanevalpack/Python/2": "confident",
                      "humanevalpack/Python/8": "likely"}
    with fake_model(replies.__getitem__) as model:
        for suite, out in ((bugs, tmp_path / "run-bugs"), (buggy, tmp_path / "run-sim")):
            run(RunConfig(suite=str(suite), **model), out)
    classes = {s.instance_id.split("/", 1)[1].rsplit("/", 1)[0].removesuffix("@buggy"):
               s.extra["class"]
               for s in read_samples(tmp_path / "run-sim" / "samples.jsonl").values()
               if s.extra and "class" in s.extra}
    assert {name: classes[name] for name in wanted} == {
        "humanevalpack/Python/0": "coherent_incorrect",
        "humanevalpack/Python/1": "incoherent_correct",
        "humanevalpack/Python/2": "coherent_correct",
        "humanevalpack/Python/8": "coherent_incorrect"}

    done = execbench("report", tmp_path / "run-bugs", tmp_path / "run-sim", "--layout",
                     "ces-vetting", "--format", "json")
    assert done.exit_code == 0, done.stderr
    rows = [row for table in json.loads(done.stdout)["tables"] for row in table["rows"]]
    assert sorted(row["task"] for row in rows) == sorted(BUG_TASKS)
    for row in rows:
        assert (row["model"], row["successes"]) == (FAKE_MODEL, 4)
        assert [row[name] for name in CLASSES] == [25.0, 25.0, 25.0, 25.0, 0.0], row


@pytest.mark.parametrize("manifest", [b"\xff{not json", b"[1, 2]"])
def test_a_suite_with_a_broken_manifest_vets_nothing(tmp_path: Path, manifest: bytes) -> None:
    """A run whose suite's manifest is not JSON or not an object (someone else's folder)
    is read as a run with no suite: nothing to vet, no traceback."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "manifest.json").write_bytes(manifest)
    (suite / "instances.jsonl").write_text("", encoding="utf-8")
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "samples.jsonl").write_text("", encoding="utf-8")
    result = make_results("m", str(folder), suite=str(suite))
    assert vetting_table([result]).rows == []
