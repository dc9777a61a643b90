"""The witness search finds inputs that simple edits of the given call reach, including
targets that need two arguments, or an element and its neighbour, to move together."""

from __future__ import annotations

from pathlib import Path

from execbench.sandbox.pool import Sandbox
from execbench.tasks import get_task
from execbench.tasks.dexbench_payload import CounterfactualQuestion
from tests.tasks.test_dexbench import build_counterfactual

# HumanEval/127: the loop of is_prime runs only for an intersection of length 3 or more,
# which no single edit of (1, 2), (2, 3) gives: both intervals' ends must grow.
INTERVALS = '''def f(interval1, interval2):
    def is_prime(num):
        if num == 1 or num == 0:
            return False
        if num == 2:
            return True
        for i in range(2, num):
            if num % i == 0:
                return False
        return True
    l = max(interval1[0], interval2[0])
    r = min(interval1[1], interval2[1])
    length = r - l
    if length > 0 and is_prime(length):
        return "YES"
    return "NO"
'''


def test_a_target_two_arguments_must_move_for_is_reached(tmp_path: Path,
                                                         sandbox: Sandbox) -> None:
    manifest, [instance] = build_counterfactual(tmp_path, INTERVALS, ["(1, 2), (2, 3)"])
    target = CounterfactualQuestion.from_record(instance.data).target
    assert target.line == 7 and instance.args == "(1, 2), (2, 3)"
    task = get_task("counterfactual")
    response = task.asking.reference_response(instance)
    assert task.judging.score(instance, response, sandbox).verdict == "correct"


def test_a_target_no_input_reaches_is_skipped_with_its_line(tmp_path: Path) -> None:
    """``k < 2`` never holds for the k this function is called with (HumanEval/59's
    shape): the search tries every round, and the manifest names the branch it could not enter."""
    code = ("def f(n):\n    def small(k):\n        if k < 2:\n            return True\n"
            "        return False\n    return [small(j) for j in range(2, n + 2)]\n")
    manifest, instances = build_counterfactual(tmp_path, code, ["3"])
    assert instances == []
    [skip] = [s for s in manifest.skipped if s.task == "counterfactual"]
    assert skip.reason == "no input reaching line 3 that can be written as literal " \
                          "arguments was found"


def test_what_the_conditions_test_is_tried(tmp_path: Path) -> None:
    """A length bound (CRUXEval's sample_139) and a character code (sample_115) that the
    program tests: a list grown to the length, a string given the character."""
    lengths = ("def f(first, second):\n    if len(first) < 10 or len(second) < 10:\n"
               "        return 'no'\n    return first + second\n")
    codes = ("def f(text):\n    res = []\n    for ch in text.encode('utf-8'):\n"
             "        if ch == 61:\n            break\n        res.append(ch)\n    return res\n")
    for code, call, witness in ((lengths, "[1, 2, 1], [1, 1, 2]",
                                 "[1, 2, 1, 1, 2, 1, 1, 2, 1, 1], [1, 1, 2, 1, 1, 2, 1, 1, 2, 1]"),
                                (codes, "'os||agx5'", "'os||agx5='")):
        folder = tmp_path / str(len(code))
        folder.mkdir()
        _, [instance] = build_counterfactual(folder, code, [call])
        assert CounterfactualQuestion.from_record(instance.data).witness == witness
