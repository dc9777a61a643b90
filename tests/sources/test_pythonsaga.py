"""The ``pythonsaga`` format on a file written here in the published records' shape (none of
the published records is shipped: their licence is unstated)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from execbench.sources import generic, load_source
from execbench.sources.jsonl import MAX_RECORD_BYTES
from tests.helpers.cli import execbench

METADATA = "\nMETADATA = {\n    'author': 'me',\n    'dataset': 'test'\n}\n\n\n"

GRADE = {  # a flush-left body under the prompt's def; reads math without importing it
    "task_id": "PythonSaga/0", "entry_point": "grade",
    "prompt": 'def grade(score: float) -> str:\n    """A letter for a score."""\n',
    "canonical_solution": "\nif score < 0:\n    return 'error'\nif math.sqrt(score) >= 9:\n"
                          "    return 'A'\nreturn 'B'",
    "test": METADATA + "def check(candidate):\n    assert candidate(81) == 'A'\n"
                       "    assert candidate(4) == 'B'\n    assert candidate(-1) == 'error'\n"}
EVENS = {  # a solution that is the whole module; the test calls the function by name
    "task_id": "PythonSaga/1", "entry_point": "evens",
    "prompt": "\nfrom typing import List\n\ndef evens(xs: List[int]) -> List[int]:\n"
              '    """The even numbers of xs."""\n',
    "canonical_solution": "\ndef is_even(x):\n    return x % 2 == 0\n\n"
                          "def evens(xs: List[int]) -> List[int]:\n    out = []\n"
                          "    for x in xs:\n        if is_even(x):\n            out.append(x)\n"
                          "    return out\n",
    "test": METADATA + "def check(candidate):\n    assert evens([1, 3]) == []\n"
                       "    assert evens([2, 5]) == [2]\n"}
SIGN = {  # the prompt ends mid-line; one assertion of the test does not parse
    "task_id": "PythonSaga/2", "entry_point": "sign",
    "prompt": 'def sign(n: int) -> int:\n    """-1, 0 or 1."""',
    "canonical_solution": "if n > 0:\n    return 1\nif n < 0:\n    return -1\nreturn 0",
    "test": "def check(candidate):\n    assert candidate(5) == 1\n"
            "    assert candidate(1 2) == 0\n    assert candidate(-3) == -1\n"}
EMPTY = {**GRADE, "task_id": "PythonSaga/3", "canonical_solution": ""}
LOCAL = {**GRADE, "task_id": "PythonSaga/5",  # its only call reads a name the test makes
         "test": "def check(candidate):\n    score = 16\n    assert candidate(score) == 'B'\n"}
BROKEN = '{"task_id": "PythonSaga/4", "prompt": "def f(x):\\n", \n'

GRADE_CODE = '''import math

def grade(score: float) -> str:
    """A letter for a score."""

    if score < 0:
        return 'error'
    if math.sqrt(score) >= 9:
        return 'A'
    return 'B'
'''
EVENS_CODE = '''from typing import List


def is_even(x):
    return x % 2 == 0

def evens(xs: List[int]) -> List[int]:
    out = []
    for x in xs:
        if is_even(x):
            out.append(x)
    return out
'''
SIGN_CODE = '''def sign(n: int) -> int:
    """-1, 0 or 1."""
    if n > 0:
        return 1
    if n < 0:
        return -1
    return 0
'''


def _write(path: Path, lines: list[dict[str, Any] | str]) -> Path:
    path.write_text("".join(line if isinstance(line, str) else json.dumps(line) + "\n"
                            for line in lines))
    return path


def test_programs_and_calls_are_built_as_the_dexbench_authors_build_them(
        tmp_path: Path) -> None:
    path = _write(tmp_path / "saga.jsonl", [GRADE, EVENS, SIGN, EMPTY, BROKEN, LOCAL])
    loaded = load_source(str(path), "pythonsaga")
    grade, evens, sign = loaded.programs
    assert [p.id for p in loaded.programs] == ["saga/PythonSaga/0", "saga/PythonSaga/1",
                                               "saga/PythonSaga/2"]
    assert grade.code == GRADE_CODE and grade.entry_point == "grade"
    assert [(c.args, c.expected) for c in grade.calls] == [("81", "'A'"), ("4", "'B'"),
                                                          ("-1", "'error'")]
    assert grade.meta == {"task_id": "PythonSaga/0", "prompt": GRADE["prompt"],
                          "skipped_calls": 0}
    assert evens.code == EVENS_CODE
    assert [(c.args, c.expected) for c in evens.calls] == [("[1, 3]", "[]"), ("[2, 5]", "[2]")]
    assert sign.code == SIGN_CODE
    assert [(c.args, c.expected) for c in sign.calls] == [("5", "1"), ("-3", "-1")]
    assert sign.meta["skipped_calls"] == 1
    said = [(s.where, s.kind, s.reason) for s in loaded.skipped]
    assert said[0] == (f"{path}:3", "call", "test line 3 does not parse: its call is left out")
    assert said[1] == (f"{path}:4", "record",
                       "key 'canonical_solution' is empty: there is no program to run")
    assert said[2][:2] == (f"{path}:5", "record") and said[2][2].startswith("invalid JSON")
    assert said[3] == (f"{path}:6", "record",
                       "no call of grade in 'test' could be read (call 1 uses the test-local "
                       "name 'score': left out)")
    assert len(said) == 4


def test_a_dexbench_build_on_it_poses_each_program_once_and_the_oracle_is_right(
        tmp_path: Path) -> None:
    source = _write(tmp_path / "saga.jsonl", [GRADE, EVENS, SIGN, EMPTY, BROKEN, LOCAL])
    suite, run = tmp_path / "suite", tmp_path / "run"
    done = execbench("build", source, "--format", "pythonsaga", "--out", suite,
                     "--tasks", "coverage,counterfactual", "-T", "test=first")
    assert done.exit_code == 0, done.stderr
    instances = [json.loads(line) for line in (suite / "instances.jsonl").open()]
    posed = sorted((i["task"], i["program_id"], i["args"]) for i in instances)
    assert posed == [("counterfactual", "saga/PythonSaga/0", "81"),
                     ("counterfactual", "saga/PythonSaga/1", "[1, 3]"),
                     ("counterfactual", "saga/PythonSaga/2", "5"),
                     ("coverage", "saga/PythonSaga/0", "81"),
                     ("coverage", "saga/PythonSaga/1", "[1, 3]"),
                     ("coverage", "saga/PythonSaga/2", "5")]
    grade = next(i for i in instances
                 if i["task"] == "coverage" and i["program_id"].endswith("/0"))
    assert grade["truth"]["lines"] == [1, 3, 6, 8, 9]  # the docstring is no statement
    manifest = json.loads((suite / "manifest.json").read_text())
    assert manifest["counts"]["skipped"]["records"] == 3
    done = execbench("run", "--suite", suite, "--model", "reference/oracle", "--out", run)
    assert done.exit_code == 0, done.stderr
    results = json.loads((run / "results.json").read_text())
    assert results["metrics"] and all(block["all"]["pass@1"] == 1.0
                                      for block in results["metrics"].values())


def test_hostile_records_are_skipped_each_with_its_reason(tmp_path: Path) -> None:
    many = generic.MAX_PARSED_TOKENS + 1
    huge_test = "def check(candidate):\n    assert candidate(1) == 'B'\n" + "a\n" * (many // 2)
    deep = "1" + "+1" * 50_000
    hostile: list[dict[str, Any] | str] = [
        {**GRADE, "task_id": "huge-test", "test": huge_test},
        {**GRADE, "task_id": "deep-test", "test": f"assert candidate({deep}) == 1\n"},
        {**GRADE, "task_id": "deep-line",
         "test": f"assert candidate(1 2)\nassert candidate({deep}) == 1\n"},
        {**GRADE, "task_id": "deep-body", "canonical_solution": f"return {deep}"},
        {**GRADE, "task_id": "huge-body",
         "canonical_solution": "x = 1\n" * (generic.MAX_PARSED_CHARS // 6 + 1)},
        {**GRADE, "task_id": "typed", "prompt": 7},
        {**GRADE, "task_id": "listed", "test": ["assert candidate(1) == 'B'"]},
        {**GRADE, "task_id": "nul", "canonical_solution": "return 'A'\x00"},
        {**GRADE, "task_id": "no-def", "prompt": '"""Only a docstring."""\n'},
        json.dumps({**GRADE, "task_id": "over", "prompt": "#" * MAX_RECORD_BYTES}) + "\n",
        GRADE]
    loaded = load_source(str(_write(tmp_path / "bad.jsonl", hostile)), "pythonsaga")
    assert [p.id for p in loaded.programs] == ["bad/PythonSaga/0"]
    reasons = {s.id or s.where: s.reason for s in loaded.skipped}
    words = generic.count_tokens(huge_test)
    over = f"over the bound of {generic.MAX_PARSED_TOKENS}"
    assert reasons.pop("bad/huge-test") == f"key 'test' of {words} words and symbols, {over}"
    assert reasons.pop("bad/deep-test") == "key 'test' does not parse: RecursionError"
    assert reasons.pop("bad/deep-line") == (
        "no call of grade in 'test' could be read (test line 1 does not parse: its call is "
        "left out; test line 2 does not parse: its call is left out)")
    assert reasons.pop("bad/deep-body") == "code does not compile: RecursionError"
    assert reasons.pop("bad/huge-body").startswith("code of ")
    assert reasons.pop("bad/typed") == "key 'prompt' should be a string, not int"
    assert reasons.pop("bad/listed") == "key 'test' should be a string, not list"
    assert reasons.pop("bad/nul") == "code contains a NUL byte"
    assert reasons.pop("bad/no-def") == \
        "key 'prompt' has no def for the solution's body to go under"
    assert reasons == {f"{tmp_path / 'bad.jsonl'}:10":
                       f"record over {MAX_RECORD_BYTES} bytes, skipped"}


def test_a_pythonsaga_file_is_never_taken_for_another_format_without_being_named(
        tmp_path: Path) -> None:
    """Its keys are HumanEval's, so detection reads it as HumanEval: the body, flush left,
    does not compile there, and only ``--format pythonsaga`` builds it."""
    path = _write(tmp_path / "saga.jsonl", [GRADE])
    as_detected = load_source(str(path))
    assert as_detected.format == "humaneval" and not as_detected.programs
    assert load_source(str(path), "pythonsaga").programs[0].code == GRADE_CODE
