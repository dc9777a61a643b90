"""Bug prediction, localization and repair: building on known bugs, reading answers, and
scoring repairs in the sandbox (including candidates that raise, loop, do not compile, try
to write outside the sandbox or to forge a verdict); ``--buggy`` builds; the whole of
HumanEvalPack with the oracle (slow)."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from execbench.cli import app
from execbench.kept import Kept
from execbench.runner import RunConfig, read_samples, run
from execbench.sandbox.pool import Sandbox
from execbench.suite import BuildOptions, SuiteError, build_suite, load_suite
from execbench.tasks import get_task
from execbench.tasks.asking import ask
from execbench.tasks.base import Instance
from execbench.tasks.bugs import bug_lines
from execbench.tasks.bugs_payload import (
    BugNote,
    BugPredictionSummary,
    BugQuestion,
    LocalizationQuestion,
    PredictionQuestion,
    RepairCall,
    RepairQuestion,
)
from execbench.tasks.common.balance import ClassBalance, ClassShare
from execbench.tasks.prediction_payload import OutputQuestion
from execbench.tasks.protocol import Protocol
from tests.conftest import QUICK
from tests.helpers.data import shared_data
from tests.sources.test_bugs import ADD, write_toys

SANDBOX_LIMITS = QUICK
BUG_TASKS = ["bug-prediction", "bug-localization", "bug-repair"]
PREDICTION, LOCALIZATION, REPAIR = (get_task(name) for name in BUG_TASKS)
PACK = "humanevalpack.jsonl.gz"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Instance]]:
    folder = tmp_path_factory.mktemp("bugs")
    manifest = build_suite([str(write_toys(folder / "toys.jsonl"))], folder / "suite",
                           BuildOptions(tasks=BUG_TASKS, workers=1, limits=QUICK))
    _, instances, _ = load_suite(folder / "suite")
    return manifest, {instance.id: instance for instance in instances}


def _one(built: tuple[dict[str, Any], dict[str, Instance]], task: str, toy: str,
         variant: str | None = None) -> Instance:
    found = [i for i in built[1].values() if i.task == task and i.program_id.endswith(toy)
             and i.variant == variant]
    assert len(found) == 1, found
    return found[0]


def _answer(text: str) -> str:
    return f"<REASONING>the call runs ...</REASONING>\n[ANSWER]\n{text}\n[/ANSWER]"


# --- building ---------------------------------------------------------------------------

def test_every_bug_task_builds_on_programs_with_a_revealed_bug(built) -> None:
    manifest, instances = built
    assert manifest.counts.by_task == {"bug-prediction": 6, "bug-localization": 3,
                                             "bug-repair": 3}
    reasons = {(s.where, s.task): s.reason for s in manifest.skipped if s.task is not None}
    for task in BUG_TASKS:
        assert reasons[("toys/Toy/3#0", task)] == "the source states no bug for this program"
        assert reasons[("toys/Toy/4#0", task)] == "the source states no bug for this program"
        assert reasons[("toys/Toy/5#0", task)] == "no call of the problem's tests reveals the bug"
    # All three tasks of a program show the same error-revealing test.
    for toy in ("Toy/0", "Toy/1", "Toy/2"):
        tests = {BugQuestion.from_record(i.data).test for i in instances.values()
                 if i.program_id.endswith(toy)}
        assert len(tests) == 1, tests


def test_the_test_shows_the_canonical_value_and_the_code_its_docstring(built) -> None:
    buggy = _one(built, "bug-prediction", "Toy/1", "buggy")
    fixed = _one(built, "bug-prediction", "Toy/1", "fixed")
    asked = PredictionQuestion.from_record(buggy.data)
    assert asked.test == "assert halves([4, 6]) == [2, 3]"
    assert asked.bug == BugNote("excess logic", "incorrect output", "wrong value", "[3]")
    assert "xs[9]" in buggy.code and "xs[9]" not in fixed.code
    assert (asked.answer, PredictionQuestion.from_record(fixed.data).answer) == ("yes", "no")
    text = ask(PREDICTION, buggy, Protocol(shots=0))[0]["content"]
    assert "Half of each number, rounded down." in text
    assert "[TEST]\nassert halves([4, 6]) == [2, 3]\n[/TEST]" in text
    assert "<REASONING>" in text and "count_vowels" not in text
    shot = ask(PREDICTION, buggy, Protocol(shots=1))[0]["content"]
    assert shot.count("count_vowels(\"Oak\")") == 2  # a buggy and a correct example
    located = _one(built, "bug-localization", "Toy/1")
    assert ask(LOCALIZATION, located, Protocol(shots=1))[0]["content"] \
        .count("count_vowels(\"Oak\")") == 1


def test_a_bug_that_loops_is_shown_with_the_call_it_never_finishes(built) -> None:
    instance = _one(built, "bug-localization", "Toy/2")
    asked = LocalizationQuestion.from_record(instance.data)
    assert asked.test == "assert countdown(3) == 3"
    assert asked.bug.reveals == "no result"


# --- prediction ---------------------------------------------------------------------------

@pytest.mark.parametrize(("response", "verdict"), [
    (_answer("yes"), "correct"), (_answer("Yes."), "correct"),
    (_answer("YES, line 2 is wrong"), "correct"), (_answer("no"), "incorrect"),
    (_answer("maybe"), "unparsable"), ("[ANSWER][/ANSWER]", "unparsable"),
])
def test_prediction_reads_yes_or_no(built, response: str, verdict: str) -> None:
    score = PREDICTION.judging.score(_one(built, "bug-prediction", "Toy/0", "buggy"), response,
                                     None)
    assert score.verdict == verdict
    assert score.extra == {"variant": "buggy"}


def test_prediction_reports_the_share_right_on_each_variant(built) -> None:
    _, instances = built
    samples = [Kept(instance_id=i.id, task=i.task, source=i.source, sample=0,
                    verdict="correct" if i.variant == "buggy" else "incorrect",
                    correct=i.variant == "buggy")
               for i in instances.values() if i.task == "bug-prediction"]
    summary = PREDICTION.reporting.summarize(samples, instances)
    # Always "yes": right on every buggy variant, wrong on every fixed one. The variants
    # come in pairs, so the majority class is half, and so is the balanced accuracy.
    balance = ClassBalance(0.5, "no", 0.5, {"no": ClassShare(3, 0.0),
                                            "yes": ClassShare(3, 1.0)})
    assert summary == BugPredictionSummary(1.0, 3, 0.0, 3, balance)
    assert json.dumps(summary.to_record()) == json.dumps(
        {"buggy": 1.0, "buggy_samples": 3, "fixed": 0.0, "fixed_samples": 3,
         "balance": {"majority": 0.5, "majority_class": "no", "balanced_accuracy": 0.5,
                     "classes": {"no": {"samples": 3, "recall": 0.0},
                                 "yes": {"samples": 3, "recall": 1.0}}}})
    assert [m.at.keys for m in PREDICTION.reporting.metrics()][1:] == [
        ("task_metrics", "bug-prediction", "buggy"), ("task_metrics", "bug-prediction", "fixed"),
        ("task_metrics", "bug-prediction", "balance", "majority"),
        ("task_metrics", "bug-prediction", "balance", "balanced_accuracy")]
    one_buggy = [sample for sample in samples if sample.correct][:1]
    assert PREDICTION.reporting.summarize(one_buggy, instances) == \
        BugPredictionSummary(1.0, 1, None, 0,
                             ClassBalance(1.0, "yes", 1.0, {"yes": ClassShare(1, 1.0)}))


def test_the_prediction_summary_reads_back_and_reads_an_old_record() -> None:
    summary = BugPredictionSummary(0.5, 4, None, 0)
    assert BugPredictionSummary.from_record(json.loads(json.dumps(summary.to_record()))) \
        == summary
    assert BugPredictionSummary.from_record({}) == BugPredictionSummary(None, 0, None, 0)
    assert BugPredictionSummary.from_record({"buggy": 1, "fixed": 0.25}) == \
        BugPredictionSummary(1, 0, 0.25, 0)
    assert BugPredictionSummary.from_record({"balance": [1]}).balance is None


def test_each_question_is_posed_with_the_code_it_shows(built) -> None:
    """``build`` gives typed questions: those of the buggy module carry its code (the
    instance's ``code``, out of ``data``), so each reads back to its own task fields."""
    _, instances = built
    kinds = {"bug-prediction": PredictionQuestion, "bug-localization": LocalizationQuestion,
             "bug-repair": RepairQuestion}
    for instance in instances.values():
        question = kinds[instance.task].from_record(instance.data)
        assert question.code is None and "code" not in instance.data
        assert question.to_record() == instance.data
    buggy = _one(built, "bug-prediction", "Toy/1", "buggy")
    fixed = _one(built, "bug-prediction", "Toy/1", "fixed")
    assert buggy.code == _one(built, "bug-localization", "Toy/1").code \
        == _one(built, "bug-repair", "Toy/1").code != fixed.code
    note = BugNote("excess logic", "incorrect output", "wrong value", "[3]")
    for posed in (PredictionQuestion("assert f(1) == 2", note, True, code="def f(x): ..."),
                  LocalizationQuestion("assert f(1) == 2", note, (3, 4), code="def f(x): ..."),
                  RepairQuestion("assert f(1) == 2", note, (RepairCall("1", ["int", 2], "2"),),
                                 "def f(x):\n    return 2\n", code="def f(x): ...")):
        record = posed.to_record()
        assert list(record)[-1] == "code" and list(record)[:2] == ["test", "bug"]
        # the code is the instance's, not its data's: a question reads back without it
        assert type(posed).from_record(record) == replace(posed, code=None)
    # a wrong value with no literal form has no repr to show (suites built before kept null)
    unshown = replace(note, buggy_result=None)
    assert BugNote.from_record(unshown.to_record()) == unshown
    with pytest.raises(ValueError, match="'buggy_result' is not a string or null"):
        BugNote.from_record({**note.to_record(), "buggy_result": 3})


# --- localization -------------------------------------------------------------------------

def test_localization_truth_on_the_toys(built) -> None:
    def lines(toy: str) -> tuple[int, ...]:
        return LocalizationQuestion.from_record(_one(built, "bug-localization", toy).data).lines

    assert (lines("Toy/0"), lines("Toy/2")) == ((3, 4), (4, 5))
    located = _one(built, "bug-localization", "Toy/2")
    text = ask(LOCALIZATION, located, Protocol(shots=0))[0]["content"]
    assert "4      while n != 0:" in text


@pytest.mark.parametrize(("response", "verdict"), [
    (_answer("4"), "correct"), (_answer("Line 5: n -= 2"), "correct"),
    (_answer("3"), "incorrect"), (_answer("the while loop"), "unparsable"),
])
def test_localization_reads_a_line_number(built, response: str, verdict: str) -> None:
    assert LOCALIZATION.judging.score(_one(built, "bug-localization", "Toy/2"), response,
                              None).verdict == verdict


DEF = "def f(x):\n"


@pytest.mark.parametrize(("canonical", "buggy", "lines"), [
    ("    a = 1\n    return a\n", "    a = 2\n    return a\n", [2]),            # changed
    ("    return x\n", "    x += 1\n\n    return x\n", [2]),                      # inserted
    ("    a = 1\n    a += x\n\n    return a\n", "    a = 1\n\n    return a\n", [2, 4]),  # deleted
    ("    a = 1\n    return a\n    print(a)\n", "    a = 1\n    return a\n", [3]),  # at the end
])
def test_bug_lines_rule(canonical: str, buggy: str, lines: list[int]) -> None:
    """A changed or inserted line is its own; a deleted one is both non-blank neighbours."""
    assert bug_lines("import os\n" + DEF + canonical, "import os\n" + DEF + buggy, "f") == \
        [n + 1 for n in lines]


@pytest.mark.parametrize(("task_id", "lines"), [
    ("Python/6", [20]),       # `depth -= 1` became `max_depth -= 1`
    ("Python/5", [18, 20]),   # `result.append(numbers[-1])` deleted after the loop
    ("Python/104", [15, 18]),  # `for j, i in enumerate(x):` and an extra `append(j)`
])
def test_localization_truth_checked_by_hand(task_id: str, lines: list[int]) -> None:
    with gzip.open(shared_data(PACK), "rt") as handle:
        record = next(r for r in map(json.loads, handle) if r["task_id"] == task_id)
    buggy = record["prompt"] + record["buggy_solution"]
    assert bug_lines(record["prompt"] + record["canonical_solution"], buggy,
                     record["entry_point"]) == lines


# --- repair -------------------------------------------------------------------------------

def _repair(built, sandbox: Sandbox, function: str, toy: str = "Toy/0"):
    return REPAIR.judging.score(_one(built, "bug-repair", toy),
                                _answer(f"```python\n{function}```"),
                        sandbox)


def test_the_canonical_function_repairs_and_the_buggy_one_does_not(built,
                                                                   sandbox: Sandbox) -> None:
    for toy in ("Toy/0", "Toy/1", "Toy/2"):
        instance = _one(built, "bug-repair", toy)
        right = REPAIR.asking.reference_response(instance)
        assert REPAIR.judging.score(instance, right, sandbox).correct
    score = _repair(built, sandbox, ADD[0] + "    if x > 1:\n        return x + 2\n"
                    "    return x + 1\n")
    assert score.verdict == "incorrect"
    assert score.detail == "2 of 4 test calls fail; first: add_one(2) returned 4, expected 3"
    assert (score.score, score.extra) == (0.5, {"passed": 2, "calls": 4})


def test_a_repair_may_use_the_modules_names(built, sandbox: Sandbox) -> None:
    """The candidate follows the buggy module, so what the module defines stays in reach."""
    instance = _one(built, "bug-repair", "Toy/0")
    helper = "def add_one(x):\n    return int(os.sep == '/') + x\n"
    with_import = REPAIR.judging.score(instance, _answer("import os\n\n" + helper), sandbox)
    assert with_import.correct, with_import.detail


@pytest.mark.parametrize(("function", "verdict", "detail"), [
    ("def add_one(x):\n    return x / 0\n", "incorrect",
     "4 of 4 test calls fail; first: add_one(0): exception (ZeroDivisionError)"),
    ("def add_one(x):\n    while True:\n        pass\n", "incorrect",
     "4 of 4 test calls fail; first: add_one(0): timeout"),
    ("def add_one(x):\n    return (x +\n", "unparsable",
     "the answer's code does not compile: '(' was never closed (line 2)"),
    ("def add_two(x):\n    return x + 1\n", "unparsable",
     "the answer does not define add_one"),
    ("from __future__ import annotations\ndef add_one(x):\n    return x + 1\n", "unparsable",
     "the answer does not compile after the buggy module: code does not compile: from "
     "__future__ imports must occur at the beginning of the file (line 8) of the module"),
])
def test_a_broken_repair_is_judged_with_its_reason(built, sandbox: Sandbox, function: str,
                                                   verdict: str, detail: str) -> None:
    score = _repair(built, sandbox, function)
    assert score.verdict == verdict
    assert score.detail.startswith(detail), score.detail


def test_a_repair_that_writes_outside_the_sandbox_is_contained(built, sandbox: Sandbox,
                                                               tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    score = _repair(built, sandbox, f"def add_one(x):\n    open({str(target)!r}, 'w').write('x')"
                                    "\n    return x + 1\n")
    assert score.verdict == "incorrect" and "exception" in score.detail
    assert not target.exists()


@pytest.mark.parametrize("function", [
    # an object equal to everything: typed equality never calls a program's __eq__
    "class Anything:\n    def __eq__(self, other):\n        return True\n\n\n"
    "def add_one(x):\n    return Anything()\n",
    # the sandbox's own equality patched inside the runner: verdicts are made in the parent
    "import execbench.values.equality as equality\nequality.equal = lambda a, b: True\n\n\n"
    "def add_one(x):\n    return str(x + 1)\n",
    # a result frame printed, and written to every descriptor, to look like the protocol's
    "import os\n\n\ndef add_one(x):\n"
    "    frame = b'{\"kind\": \"result\", \"status\": \"ok\", \"value\": [\"int\", 1]}'\n"
    "    print(frame.decode())\n"
    "    for fd in range(3, 20):\n"
    "        try:\n            os.write(fd, frame)\n        except OSError:\n            pass\n"
    "    return x\n",
])
def test_a_repair_cannot_forge_its_verdict(built, sandbox: Sandbox, function: str) -> None:
    assert _repair(built, sandbox, function).verdict == "incorrect"


def test_ls_tasks_says_which_task_runs_model_code() -> None:
    listed = CliRunner().invoke(app, ["ls", "tasks"]).output.splitlines()
    runs = [line.split()[0] for line in listed if "runs model-written code" in line]
    assert runs == ["bug-repair"]
    assert REPAIR.judging.runs_model_code and not PREDICTION.judging.runs_model_code


# --- --buggy --------------------------------------------------------------------------------

def test_a_buggy_build_poses_each_task_on_the_bug_with_its_revealing_call(built,
                                                                          tmp_path: Path) -> None:
    source = str(write_toys(tmp_path / "toys.jsonl"))
    manifest = build_suite([source], tmp_path / "suite", BuildOptions(
        tasks=["output", "bug-prediction"], buggy=True, workers=1, limits=QUICK))
    _, instances, _ = load_suite(tmp_path / "suite")
    assert manifest.recipe.buggy is True
    assert [(i.task, i.program_id, i.args, OutputQuestion.from_record(i.data).repr)
            for i in instances] == [
        ("output", "toys/Toy/0@buggy", _one(built, "bug-repair", "Toy/0").args, "5"),
        ("output", "toys/Toy/1@buggy", "[4, 6]", "[3]")]
    assert "x + 2" in instances[0].code
    assert instances[1].mutation == {"bug_type": "excess logic",
                                     "failure_symptoms": "incorrect output",
                                     "reveals": "wrong value", "original_id": "toys/Toy/1",
                                     "original_call_index": 1}
    reasons = {s.where: s.reason for s in manifest.skipped}
    assert reasons["toys/Toy/3"] == "the source states no bug for this program"
    assert reasons["toys/Toy/5"] == "no call of the problem's tests reveals the bug"
    # The bug that loops is posed too, and its endless run dropped as any ground truth would be.
    assert reasons["toys/Toy/2@buggy#0"].startswith("the ground-truth run took more than 25%")
    with pytest.raises(SuiteError, match="choose one"):
        build_suite([source], tmp_path / "other", BuildOptions(tasks=["output"], buggy=True,
                                                                mutate=True))


# --- the whole of HumanEvalPack -----------------------------------------------------------

@pytest.mark.slow
def test_humanevalpack_oracle_and_canonical_repairs(tmp_path: Path) -> None:
    """Every one of the 164 programs has an error-revealing call; the oracle gets every
    prediction and localization right, the canonical function passes every repair, and
    the buggy function fails every one."""
    suite = tmp_path / "suite"
    manifest = build_suite([str(shared_data(PACK))], suite, BuildOptions(tasks=BUG_TASKS))
    assert manifest.counts.by_task == {"bug-prediction": 328, "bug-localization": 164,
                                             "bug-repair": 164}
    run(RunConfig(suite=str(suite), model="reference/oracle"), tmp_path / "run")
    samples = read_samples(tmp_path / "run" / "samples.jsonl")
    assert len(samples) == 656
    assert [key for key, s in samples.items() if s.verdict != "correct"] == []
    _, instances, _ = load_suite(suite)
    with Sandbox() as sandbox:
        for instance in instances:
            if instance.task == "bug-repair":
                buggy = instance.code[instance.code.index(f"def {instance.entry_point}("):]
                score = REPAIR.judging.score(instance, _answer(f"```python\n{buggy}```"), sandbox)
                assert score.verdict == "incorrect", instance.id


@pytest.mark.slow
def test_humanevalpack_buggy_output_prediction(tmp_path: Path) -> None:
    """``--buggy --tasks output``: output prediction on each buggy program, at its
    error-revealing call; the oracle scores 100%."""
    suite = tmp_path / "suite"
    manifest = build_suite([str(shared_data(PACK))], suite,
                           BuildOptions(tasks=["output"], buggy=True))
    # 156 bugs return a wrong value; the 8 that raise or loop leave nothing to predict.
    assert manifest.counts.by_task == {"output": 156}
    run(RunConfig(suite=str(suite), model="reference/oracle"), tmp_path / "run")
    samples = read_samples(tmp_path / "run" / "samples.jsonl")
    assert {s.verdict for s in samples.values()} == {"correct"}
