"""Answer extraction and scoring for the output and input prediction tasks.

Instances come from a small suite built for this module; the input task runs answers in a
real sandbox, with tight limits so that a looping answer costs about a second.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from execbench.program import Call, Program
from execbench.sandbox.pool import Job, Sandbox
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks import get_task
from execbench.tasks.asking import ask
from execbench.tasks.base import BuildContext, Instance, SkipInstance
from execbench.tasks.common.extract import answer_text
from execbench.tasks.protocol import Protocol
from tests.conftest import QUICK

PROGRAMS = [
    # entry point, code, the dataset's call
    ("order", "def order(xs):\n    return sorted(xs)\n", "[2, 1]"),
    ("keep", "def keep(xs, pred):\n    return [x for x in xs if pred(x)]\n",
     "[0, 3, 1], lambda x: x < 2"),
    ("countdown", "def countdown(n):\n    while n != 0:\n        n -= 2\n    return n\n", "4"),
    ("pair", "def pair(a, b):\n    return (a, b)\n", "1, 'x'"),
    ("scale", "def scale(n, k=1):\n    return n * k\n", "3 * 19, k=-(2)"),
]

OUTPUT = get_task("output")
INPUT = get_task("input")


@pytest.fixture(scope="module")
def instances(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("suite")
    source = folder / "progs.jsonl"
    source.write_text("".join(
        json.dumps({"id": name, "code": code, "entry_point": name, "calls": [call]}) + "\n"
        for name, code, call in PROGRAMS))
    build_suite([str(source)], folder / "suite",
                BuildOptions(tasks=["output", "input"], workers=1))
    _, records, _ = load_suite(folder / "suite")
    return {f"{r.task}/{r.entry_point}": r for r in records}


SANDBOX_LIMITS = QUICK


# --- extraction -------------------------------------------------------------------------

@pytest.mark.parametrize(("response", "expected"), [
    ("<think>maybe [ANSWER]9[/ANSWER]</think>[ANSWER]1[/ANSWER]", "1"),
    ("still thinking [ANSWER]9[/ANSWER]</think>\n[ANSWER]1[/ANSWER]", "1"),
    ("first [ANSWER]1[/ANSWER] then, on reflection, [ANSWER]2[/ANSWER]", "2"),
    ("[ANSWER]\nassert f(1) == 3\n", "assert f(1) == 3"),
    ("[answer] 5 [/answer]", "5"),
    ("Working:\n```\nx = 1\n```\nSo:\n```python\nassert f(1) == 3\n```\ndone",
     "assert f(1) == 3"),
    ("  42\n", "42"),
])
def test_answer_text_finds_the_answer(response: str, expected: str) -> None:
    assert answer_text(response) == expected


@pytest.mark.parametrize("response", [None, "", "  \n\t", "[ANSWER]  [/ANSWER]",
                                      "<think>[ANSWER]1[/ANSWER]</think>"])
def test_nothing_to_read_is_none(response: str | None) -> None:
    assert answer_text(response) is None


@pytest.mark.parametrize("task", [OUTPUT, INPUT])
@pytest.mark.parametrize("response", [None, "", "<think>[1, 2]</think>", "[ANSWER][/ANSWER]"])
def test_empty_answer_is_unparsable(instances: dict, sandbox: Sandbox, task: Any,
                                    response: str | None) -> None:
    score = task.judging.score(instances[f"{task.name}/order"], response, sandbox)
    assert (score.verdict, score.correct, score.answer) == ("unparsable", False, None)


# --- output prediction ------------------------------------------------------------------

@pytest.mark.parametrize("response", [
    "[ANSWER]\nassert order([2, 1]) == [1, 2]\n[/ANSWER]",
    "[ANSWER][1, 2][/ANSWER]",
    "[1,2]",
    "Step by step, the list gets sorted.\nassert order([2, 1]) == [1, 2]",
    "<think>it could be [2, 1]</think>[ANSWER]assert order([2, 1]) == [1, 2][/ANSWER]",
])
def test_output_right_value_is_correct(instances: dict, response: str) -> None:
    score = OUTPUT.judging.score(instances["output/order"], response, None)
    assert score.verdict == "correct" and score.correct
    assert score.answer == "[1, 2]"


@pytest.mark.parametrize(("instance", "response", "answer"), [
    ("order", "[ANSWER]assert order([2, 1]) == [2, 1][/ANSWER]", "[2, 1]"),
    ("order", "[ANSWER](1, 2)[/ANSWER]", "(1, 2)"),
    ("order", "[ANSWER][1.0, 2][/ANSWER]", "[1.0, 2]"),
    ("pair", "[ANSWER][1, 'x'][/ANSWER]", "[1, 'x']"),
    ("pair", "[ANSWER](True, 'x')[/ANSWER]", "(True, 'x')"),
])
def test_output_wrong_value_or_type_is_incorrect(instances: dict, instance: str,
                                                 response: str, answer: str) -> None:
    score = OUTPUT.judging.score(instances[f"output/{instance}"], response, None)
    assert (score.verdict, score.answer) == ("incorrect", answer)


def test_output_tuple_is_compared_as_a_tuple(instances: dict) -> None:
    score = OUTPUT.judging.score(instances["output/pair"], "[ANSWER](1, 'x')[/ANSWER]", None)
    assert score.verdict == "correct"


@pytest.mark.parametrize("response", [
    "[ANSWER]assert order([2, 1]) == sorted([2, 1])[/ANSWER]",
    "[ANSWER]xs[/ANSWER]",
    "The answer is [1, 2].",
    "[ANSWER]assert order([2, 1]) == [1, 2] and True[/ANSWER]",
])
def test_output_non_literal_is_unparsable(instances: dict, response: str) -> None:
    score = OUTPUT.judging.score(instances["output/order"], response, None)
    assert score.verdict == "unparsable" and score.detail


def test_output_answer_is_never_executed(instances: dict, tmp_path: Path) -> None:
    marker = tmp_path / "executed"
    response = f"[ANSWER]__import__('pathlib').Path({str(marker)!r}).touch()[/ANSWER]"
    score = OUTPUT.judging.score(instances["output/order"], response, None)
    assert score.verdict == "unparsable"
    assert not marker.exists()


# --- input prediction -------------------------------------------------------------------

@pytest.mark.parametrize(("response", "answer"), [
    ("[ANSWER]\nassert order([1, 2]) == [1, 2]\n[/ANSWER]", "[1, 2]"),
    ("[ANSWER]order([2, 1])[/ANSWER]", "[2, 1]"),
    ("[ANSWER]order(xs=[2, 1])[/ANSWER]", "xs=[2, 1]"),
])
def test_input_arguments_that_give_the_output_are_correct(
        instances: dict, sandbox: Sandbox, response: str, answer: str) -> None:
    score = INPUT.judging.score(instances["input/order"], response, sandbox)
    assert (score.verdict, score.answer) == ("correct", answer)


def test_input_wrong_arguments_are_incorrect(instances: dict, sandbox: Sandbox) -> None:
    score = INPUT.judging.score(instances["input/order"], "[ANSWER]order([3, 1])[/ANSWER]", sandbox)
    assert score.verdict == "incorrect"
    assert score.detail == "returned [1, 3]"


def test_input_wrong_arity_is_incorrect(instances: dict, sandbox: Sandbox) -> None:
    score = INPUT.judging.score(instances["input/pair"], "[ANSWER]pair(1)[/ANSWER]", sandbox)
    assert score.verdict == "incorrect"
    assert "TypeError" in score.detail


def test_input_arguments_that_loop_forever_time_out(instances: dict, sandbox: Sandbox) -> None:
    score = INPUT.judging.score(instances["input/countdown"], "[ANSWER]countdown(3)[/ANSWER]",
                                sandbox)
    assert score.verdict == "incorrect"
    assert "timeout" in score.detail
    # The sandbox recovers: the next answer is scored normally.
    after = INPUT.judging.score(instances["input/countdown"], "[ANSWER]countdown(6)[/ANSWER]",
                                sandbox)
    assert after.verdict == "correct"


def test_input_given_lambda_repeated_exactly_is_correct(instances: dict,
                                                        sandbox: Sandbox) -> None:
    instance = instances["input/keep"]
    assert instance.data["given"] == [{"position": 1, "text": "lambda x: x < 2"}]
    wrong_order = "[ANSWER]keep([1, 0, 5], lambda x: x < 2)[/ANSWER]"
    right_order = "[ANSWER]keep([0, 1], lambda x:   x<2)[/ANSWER]"
    assert INPUT.judging.score(instance, wrong_order, sandbox).verdict == "incorrect"
    score = INPUT.judging.score(instance, right_order, sandbox)
    assert (score.verdict, score.answer) == ("correct", "[0, 1], lambda x: x < 2")


@pytest.mark.parametrize("response", [
    "[ANSWER]keep([0, 1], lambda x: x < 3)[/ANSWER]",
    "[ANSWER]keep([0, 1], lambda x: __import__('os').system('true') or x < 2)[/ANSWER]",
    "[ANSWER]keep(lambda x: x < 2, [0, 1])[/ANSWER]",
    "[ANSWER]keep([0, 1], pred=lambda x: x < 2)[/ANSWER]",
    "[ANSWER]keep(*[[0, 1], None])[/ANSWER]",
    "[ANSWER]keep(**{'xs': [0, 1], 'pred': None})[/ANSWER]",
    "[ANSWER]assert keep == [0, 1][/ANSWER]",
])
def test_input_anything_but_literals_and_given_text_is_unparsable(
        instances: dict, sandbox: Sandbox, response: str) -> None:
    score = INPUT.judging.score(instances["input/keep"], response, sandbox)
    assert score.verdict == "unparsable" and score.detail


def test_input_non_literal_answer_is_never_executed(instances: dict, sandbox: Sandbox,
                                                    tmp_path: Path) -> None:
    marker = tmp_path / "executed"
    response = f"[ANSWER]order(__import__('pathlib').Path({str(marker)!r}).touch())[/ANSWER]"
    assert INPUT.judging.score(instances["input/order"], response, sandbox).verdict == "unparsable"
    assert not marker.exists()


def test_input_argument_written_as_an_expression_is_stated_as_its_value(
        instances: dict, sandbox: Sandbox) -> None:
    instance = instances["input/scale"]
    # `3 * 19` would be the answer itself; `-(2)` is a literal and keeps its text.
    assert instance.data["given"] == [] and instance.data["stated_args"] == "57, k=-(2)"
    assert "3 * 19" not in ask(INPUT, instance, Protocol(shots=0))[0]["content"]
    assert "57, k=-(2)" in INPUT.asking.reference_response(instance)
    assert INPUT.judging.score(instance, "[ANSWER]scale(3 * 19, k=-2)[/ANSWER]",
                       sandbox).verdict == "unparsable"
    assert INPUT.judging.score(instance, "[ANSWER]scale(-57, k=2)[/ANSWER]", sandbox).correct


def test_input_stated_value_returning_otherwise_is_skipped(sandbox: Sandbox) -> None:
    # `[[]] * 2` holds one list twice; its literal `[[], []]` two lists, so f returns
    # [[1], []] on it, not the [[1], [1]] the prompt would show.
    code = "def grow(xs):\n    xs[0].append(1)\n    return xs\n"
    program = Program(id="hand/grow", source="hand", code=code, entry_point="grow",
                      calls=(Call("[[]] * 2"),))
    trace = sandbox.run(Job(code, "grow", "[[]] * 2"))
    ctx = BuildContext(seed=0, sandbox=sandbox, traced=[(0, trace)])
    with pytest.raises(SkipInstance, match="do not return what"):
        INPUT.building.build(program, 0, trace, ctx)


def test_input_scoring_needs_a_sandbox(instances: dict) -> None:
    with pytest.raises(RuntimeError, match="sandbox"):
        INPUT.judging.score(instances["input/order"], "[ANSWER]order([1, 2])[/ANSWER]", None)


# --- the oracle -------------------------------------------------------------------------

@pytest.mark.parametrize("name", [name for name, _, _ in PROGRAMS])
@pytest.mark.parametrize("task", [OUTPUT, INPUT])
def test_reference_response_scores_correct(instances: dict, sandbox: Sandbox, task: Any,
                                           name: str) -> None:
    instance = instances[f"{task.name}/{name}"]
    score = task.judging.score(instance, task.asking.reference_response(instance), sandbox)
    assert score.verdict == "correct", score.detail


def hand_instance(task: str, **data: Any) -> Instance:
    """An instance of ``task`` about ``f(1)`` with ``f`` the identity, and the given fields."""
    return Instance(id=f"{task}/hand/f/0", task=task, source="hand", program_id="hand/f",
                    call_index=0, code="def f(x):\n    return x\n", entry_point="f", args="1",
                    data=data)


@pytest.mark.parametrize("response", [
    "[ANSWER]\nassert f(1) == 2\n[/ANSWER]\nI put my answer between [ANSWER] and [/ANSWER].",
    "[ANSWER]\n2\n[/ANSWER]\n[ANSWER][/ANSWER]",
    "[ANSWER]\n```python\n2\n```\n[/ANSWER]",
    "`assert f(1) == 2`",
    "[ANSWER]\n2\nBecause the loop body runs twice.\n[/ANSWER]",
])
def test_plausible_answer_shapes_are_read(response: str) -> None:
    instance = hand_instance("output", truth={"value": ["int", 2], "repr": "2"})
    assert get_task("output").judging.score(instance, response, None).verdict == "correct"


def test_a_degenerate_json_answer_is_unparsable_not_a_crash() -> None:
    instance = hand_instance("coverage", truth={"lines": [1], "executable": [1], "blocks": [[1]]})
    score = get_task("coverage").judging.score(instance, "[ANSWER]" + "[" * 5000 + "[/ANSWER]",
                                               None)
    assert score.verdict == "unparsable"


def test_the_input_answer_must_call_the_function_itself() -> None:
    instance = hand_instance("input", given=[], truth={"output": ["int", 1], "output_repr": "1"})
    score = get_task("input").judging.score(instance, "[ANSWER]\nassert g(1) == 1\n[/ANSWER]", None)
    assert score.verdict == "unparsable"


def test_an_answer_too_large_to_record_is_unparsable_not_a_scoring_error() -> None:
    """An output answer past the encoder's item cap reads as a partly ``truncated`` value,
    which has no literal form: it is unparsable, with a detail that says why."""
    instance = hand_instance("output", truth={"value": ["int", 1], "repr": "1"})
    huge = "(" + "2, " * 150_000 + ")"
    score = get_task("output").judging.score(instance, f"[ANSWER]{huge}[/ANSWER]", None)
    assert score.verdict == "unparsable" and "too large" in (score.detail or "")


def test_a_recorded_value_without_its_repr_is_answered_by_its_literal(tmp_path: Path) -> None:
    """A source's recorded trace may give a value without the text the tracer would have
    written: the output instance keeps ``repr: null`` as given, and the oracle's answer
    writes the value itself (it once wrote ``None``, and the build once stopped on it)."""
    from execbench.values import encode

    source = tmp_path / "recorded.jsonl"
    source.write_text(json.dumps({
        "id": "p", "entry_point": "f", "code": "def f(a):\n    return [a, 'x']\n",
        "calls": [{"args": "3", "trace": {"status": "ok", "value": encode([3, "x"])}}]}) + "\n")
    build_suite([str(source)], tmp_path / "suite", BuildOptions(tasks=["output"]))
    _, [instance], _ = load_suite(tmp_path / "suite")
    assert instance.data["truth"]["repr"] is None
    task = get_task("output")
    response = task.asking.reference_response(instance)
    assert "assert f(3) == [3, 'x']" in response
    assert task.judging.score(instance, response, None).correct
