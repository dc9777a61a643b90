"""Known bugs: the humaneval source keeps a HumanEvalPack record's bug in the program's
meta, and the calls that reveal it are found by running the buggy module in the sandbox.
Toy records in HumanEvalPack's shape, written for each test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from execbench.program import Program
from execbench.sandbox.pool import Job, Sandbox
from execbench.sources import load_source
from execbench.sources.bugs import (
    NO_RESULT,
    RAISES,
    WRONG_VALUE,
    Bug,
    error_revealing_call,
    revealing_calls,
)
from tests.conftest import QUICK

SANDBOX_LIMITS = QUICK


def record(task_id: str, prompt: str, canonical: str, calls: list[str], entry_point: str,
           buggy: str | None = None) -> dict[str, Any]:
    """A HumanEval record, with HumanEvalPack's bug keys when ``buggy`` is given."""
    test = "def check(candidate):\n" + "".join(f"    assert candidate({c}) is not None\n"
                                               for c in calls)
    found = {"task_id": task_id, "prompt": prompt, "canonical_solution": canonical,
             "test": test, "entry_point": entry_point}
    if buggy is not None:
        found |= {"buggy_solution": buggy, "bug_type": "excess logic",
                  "failure_symptoms": "incorrect output"}
    return found


ADD = ('def add_one(x):\n    """Return x plus one."""\n', "    return x + 1\n")
HALVES = ('def halves(xs):\n    """Half of each number, rounded down."""\n',
          "    return [x // 2 for x in xs]\n")
COUNTDOWN = ('def countdown(n):\n    """How many steps of one lead from n down to 0."""\n',
             "    steps = 0\n    while n > 0:\n        n -= 1\n        steps += 1\n"
             "    return steps\n")
TOYS = [
    # wrong on 2 and 3 only
    record("Toy/0", *ADD, ["0", "1", "2", "3"], "add_one",
           "    if x > 1:\n        return x + 2\n    return x + 1\n"),
    # wrong on [4, 6], raises on [8], right on []
    record("Toy/1", *HALVES, ["[8]", "[4, 6]", "[]"], "halves",
           "    return [x // 2 for x in xs[1:]] if len(xs) != 1 else [xs[9]]\n"),
    # loops forever on 3, right on 0
    record("Toy/2", *COUNTDOWN, ["3", "0"], "countdown",
           "    steps = 0\n    while n != 0:\n        n -= 2\n        steps += 1\n"
           "    return steps\n"),
    record("Toy/3", *ADD, ["5"], "add_one"),                                   # no bug
    record("Toy/4", *ADD, ["5"], "add_one", "    return (x +\n"),             # does not compile
    record("Toy/5", *ADD, ["5"], "add_one",                                    # never revealed
           "    return x + 1 if x < 100 else x\n"),
]


def write_toys(path: Path, records: list[dict[str, Any]] = TOYS) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Program]:
    loaded = load_source(str(write_toys(tmp_path_factory.mktemp("toys") / "toys.jsonl")))
    return {program.meta["task_id"]: program for program in loaded.programs}


def test_a_humanevalpack_bug_is_kept_in_the_meta(programs: dict[str, Program]) -> None:
    bug = Bug.of(programs["Toy/0"])
    assert bug == Bug(ADD[0] + "    if x > 1:\n        return x + 2\n    return x + 1\n",
                      "excess logic", "incorrect output")
    assert programs["Toy/0"].code == ADD[0] + ADD[1]  # the program itself is the canonical one


def test_records_without_a_bug_or_with_a_broken_one_keep_their_program(
        programs: dict[str, Program], tmp_path: Path) -> None:
    assert "bug" not in programs["Toy/3"].meta
    assert "bug" not in programs["Toy/4"].meta
    loaded = load_source(str(write_toys(tmp_path / "toys.jsonl")))
    notes = [item.reason for item in loaded.skipped]
    assert notes == ["the buggy solution is left out: code does not compile: '(' was never "
                     "closed (line 3)"]


def test_a_plain_humaneval_program_is_unchanged() -> None:
    """The packaged HumanEval states no bug: its programs' meta has the same keys as ever."""
    program = load_source("humaneval").programs[0]
    assert set(program.meta) == {"task_id", "prompt", "skipped_calls"}


def _traced(program: Program, sandbox: Sandbox) -> list[tuple[int, Any]]:
    return list(enumerate(sandbox.map(Job(program.code, program.entry_point, call.args)
                                      for call in program.calls)))


@pytest.mark.parametrize(("task_id", "expected"), [
    ("Toy/0", [(2, WRONG_VALUE), (3, WRONG_VALUE)]),
    ("Toy/1", [(0, RAISES), (1, WRONG_VALUE)]),
    ("Toy/2", [(0, NO_RESULT)]),
    ("Toy/5", []),
])
def test_revealing_calls_are_those_where_the_bug_goes_wrong(
        programs: dict[str, Program], sandbox: Sandbox, task_id: str,
        expected: list[tuple[int, str]]) -> None:
    program = programs[task_id]
    found = revealing_calls(program, Bug.of(program), _traced(program, sandbox), sandbox,
                            250_000, {})
    assert [(item.index, item.how) for item in found] == expected


def test_the_chosen_call_prefers_a_wrong_value_and_follows_the_seed(
        programs: dict[str, Program], sandbox: Sandbox) -> None:
    def chosen(task_id: str, seed: int) -> int | None:
        program = programs[task_id]
        found = error_revealing_call(program, Bug.of(program), _traced(program, sandbox),
                                     sandbox, 250_000, seed, {})
        return None if found is None else found.index

    assert {chosen("Toy/1", seed) for seed in range(5)} == {1}  # never the call that raises
    assert {chosen("Toy/0", seed) for seed in range(8)} == {2, 3}
    assert chosen("Toy/0", 3) == chosen("Toy/0", 3)
    assert chosen("Toy/2", 0) == 0
    assert chosen("Toy/5", 0) is None
