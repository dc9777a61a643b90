"""A yes/no task's accuracy against its suite's balance: the majority class rate (the
accuracy of always giving the commonest answer) and the balanced accuracy (the mean of
the per-answer recalls), on samples with known truths, and on a small branch suite
answered by the oracle and by ``reference/constant -M answer=no``."""

from __future__ import annotations

import json

import pytest

from execbench.kept import Kept
from execbench.runner import RunConfig, run
from execbench.suite import BuildOptions, build_suite
from execbench.tasks import get_task
from execbench.tasks.base import CORRECT, ERROR, INCORRECT, UNPARSABLE
from execbench.tasks.common.abstract_payload import KindSummary
from execbench.tasks.common.balance import (
    NO,
    YES,
    ClassBalance,
    ClassShare,
    class_balance,
    yes_no,
)


def _sample(index: int, verdict: str) -> Kept:
    return Kept(instance_id=str(index), task="branch", source="s", sample=0, verdict=verdict,
                correct=verdict == CORRECT)


def test_a_constant_answer_scores_the_majority_rate_and_half_balanced() -> None:
    """Three lines never run, one runs: always ``no`` is 75% accurate, exactly the
    majority class rate, and 50% balanced; an unreadable answer, a failed request and a
    wrong one all count against the truth's class."""
    truths = [NO, NO, NO, YES]
    always_no = [_sample(i, CORRECT if t == NO else INCORRECT) for i, t in enumerate(truths)]
    found = class_balance(always_no, lambda s: truths[int(s.instance_id)])
    assert found == ClassBalance(0.75, NO, 0.5, {NO: ClassShare(3, 1.0), YES: ClassShare(1, 0.0)})
    muddled = [_sample(0, CORRECT), _sample(1, UNPARSABLE), _sample(2, ERROR), _sample(3, CORRECT)]
    found = class_balance(muddled, lambda s: truths[int(s.instance_id)])
    assert found is not None
    assert (found.majority, found.balanced_accuracy) == (0.75, (1 / 3 + 1.0) / 2)
    assert found.classes[NO] == ClassShare(3, 1 / 3)


def test_ties_go_to_the_first_answer_and_unknown_truths_are_left_out() -> None:
    truths = [YES, NO, None]
    found = class_balance([_sample(i, CORRECT) for i in range(3)],
                          lambda s: truths[int(s.instance_id)])
    assert found == ClassBalance(0.5, NO, 1.0, {NO: ClassShare(1, 1.0), YES: ClassShare(1, 1.0)})
    assert class_balance([_sample(2, CORRECT)], lambda s: truths[int(s.instance_id)]) is None
    assert class_balance([], lambda s: YES) is None


def test_the_block_reads_back_and_an_old_or_malformed_one_reads_leniently() -> None:
    block = ClassBalance(0.75, NO, 0.5, {NO: ClassShare(3, 1.0), YES: ClassShare(1, 0.0)})
    assert ClassBalance.from_record(json.loads(json.dumps(block.to_record()))) == block
    assert list(block.to_record()) == ["majority", "majority_class", "balanced_accuracy",
                                       "classes"]
    assert ClassBalance.from_record(None) is None
    assert ClassBalance.from_record([0.5]) is None
    assert ClassBalance.from_record({"majority": "x", "classes": {"no": 3}}) == \
        ClassBalance(None, None, None, {"no": ClassShare(None, None)})


@pytest.mark.parametrize(("truth", "answer"), [
    ({"value": ["bool", True], "text": "yes"}, YES), ({"value": ["bool", False]}, NO),
    ({"value": ["int", 1]}, None), ({"value": ["bool", 1]}, None), ({}, None), (None, None),
    ("yes", None)])
def test_the_class_of_a_codesense_truth(truth: object, answer: str | None) -> None:
    assert yes_no(truth) == answer  # type: ignore[arg-type]


BRANCHY = {"id": "sign", "entry_point": "f", "calls": ["1", "7", "-3"],
           "code": "def f(x):\n    if x > 0:\n        y = 1\n    else:\n        y = 2\n"
                   "    if x > 5:\n        y += 1\n    for i in range(x):\n"
                   "        if i == 3:\n            y -= 1\n    return y\n"}
"""15 branch questions: 7 lines that run during their call, 8 that do not."""


@pytest.fixture(scope="module")
def branch_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    folder = tmp_path_factory.mktemp("branch")
    source = folder / "p.jsonl"
    source.write_text(json.dumps(BRANCHY) + "\n")
    build_suite([str(source)], folder / "suite", BuildOptions(tasks=["branch"], workers=1))
    return {name: run(RunConfig(suite=str(folder / "suite"), model=model, model_args=args),
                      folder / name)
            for name, model, args in (("oracle", "reference/oracle", {}),
                                      ("no", "reference/constant", {"answer": "no"}),
                                      ("yes", "reference/constant", {"answer": "yes"}))}


def test_the_floor_is_what_a_constant_answer_scores(branch_runs: dict[str, dict]) -> None:
    def numbers(name: str) -> tuple[float, KindSummary]:
        results = branch_runs[name]
        return (results["metrics"]["branch"]["all"]["accuracy"],
                KindSummary.from_record(results["task_metrics"]["branch"]))

    accuracy, summary = numbers("no")
    assert summary.balance is not None
    assert (summary.balance.majority, summary.balance.majority_class) == (8 / 15, NO)
    assert accuracy == pytest.approx(summary.balance.majority)
    assert summary.balance.balanced_accuracy == 0.5
    accuracy, summary = numbers("yes")
    assert summary.balance is not None and accuracy == pytest.approx(7 / 15)
    assert (summary.balance.majority, summary.balance.balanced_accuracy) == (8 / 15, 0.5)
    accuracy, summary = numbers("oracle")
    assert summary.balance == ClassBalance(8 / 15, NO, 1.0, {NO: ClassShare(8, 1.0),
                                                              YES: ClassShare(7, 1.0)})


def test_the_yes_no_tasks_declare_both_numbers_and_the_others_do_not(
        branch_runs: dict[str, dict]) -> None:
    declared = {(m["task"], m["name"]): m for m in branch_runs["no"]["declared_metrics"]}
    assert declared[("branch", "majority class")]["path"] == [
        "task_metrics", "branch", "balance", "majority"]
    assert declared[("branch", "balanced accuracy")]["headline"] is True
    names = {task: [m.name for m in get_task(task).reporting.metrics()]
             for task in ("branch", "alias", "bug-prediction", "statement", "output")}
    for task in ("branch", "alias", "bug-prediction"):
        assert {"majority class", "balanced accuracy"} <= set(names[task])
    for task in ("statement", "output"):
        assert "majority class" not in names[task]


def test_a_summary_without_the_block_keeps_its_record() -> None:
    """Tasks that are not yes/no write their summary as before: no ``balance`` key."""
    assert "balance" not in KindSummary().to_record()
    assert KindSummary.from_record({"all": {}}).balance is None
