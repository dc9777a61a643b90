"""CodeSense's Python block questions, read from statement records of the published shape:
each record that can ask one adds a block fact beside its statement fact; the others say
why not. Records and expected facts are written by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from execbench.program import Program
from execbench.sources import Loaded, load_source

TALLY = ('def tally(words, limit):\n'
         '    """Count the long words."""\n'
         '    # start empty\n'
         '    seen = []\n'
         '\n'
         '    for word in words:\n'
         '        if len(word) > limit:\n'
         '            seen.append(word)\n'
         '    count = len(seen)\n'
         '    return count\n'
         '\n'
         "tally(words=['ox', 'cat', 'bird'], limit=2)")
"""Code lines after the ``def``: 4 (block size 1), 6, 7, 8, 9 (size 5), 10; line 2 is the
docstring, 3 a comment, 5 blank."""

LONG = "def long_one(a0):\n" + "".join(f"    a{n} = a{n - 1} + 1\n" for n in range(1, 12)) \
    + "    return a11\n"
"""Line n + 1 assigns a{n}: block size n."""

TWICE = "def twice(x):\n    x = x + 1\n    x = x + 1\n    return x\n"

INPUT = {"words": "['ox', 'cat', 'bird']", "limit": "2"}


def statement(idx: int, kind: str, selected: str, value: str, *, code: str = TALLY,
              given: dict[str, str] | None = None, **changes: Any) -> dict[str, Any]:
    """A record of CodeSense's Python statement file."""
    record = {"idx": idx, "Programming Language": "Python", "Statement Type": kind,
              "Source Code": code, "Selected Statement": selected,
              "Function Input": INPUT if given is None else given,
              "Variable Values Before Statement": {},
              "Value After Statement Execution": value,
              "Variable States During Runtime": {},
              "Program Information": "Project Name: acme+words"}
    return {**record, **changes}


RECORDS = [
    statement(1, "Constant Assignment", "seen = []", "[]"),
    statement(2, "API", "count = len(seen)", "2",
              **{"Variable Values Before Statement": {"seen": "['cat', 'bird']"}}),
    statement(3, "Branch", "if len(word) > limit:", "Yes"),
    statement(4, "API", "count = len(seen)", "2", given={**INPUT, "self.cache": "{}"}),
    statement(5, "API", "count = len(seen)", "2", given={**INPUT, "limit": "REPR FAILED"}),
    statement(6, "Arithmetic Assignment", "a10 = a9 + 1", "10", code=LONG,
              given={"a0": "0"}),
    statement(7, "Arithmetic Assignment", "a11 = a10 + 1", "11", code=LONG,
              given={"a0": "0"}),
    statement(8, "Arithmetic Assignment", "x = x + 1", "1", code=TWICE, given={"x": "0"}),
]
BLOCKS = {
    "1": {"task": "block", "size": 1, "line": 4, "statement": "seen = []",
          "value": ["list", []]},
    "2": {"task": "block", "size": 5, "line": 9, "statement": "count = len(seen)",
          "value": ["int", 2]},
    "6": {"task": "block", "size": 10, "line": 11, "statement": "a10 = a9 + 1",
          "value": ["int", 10]},
}
SKIPPED = {
    "3": "a condition: block questions ask for the value a statement assigns or a call "
         "gives",
    "4": "the call cannot show the object's recorded attributes (self.x), and a block "
         "question is asked from the inputs alone",
    "5": "an input was recorded as a text that is no Python syntax, which the call cannot "
         "show, and a block question is asked from the inputs alone",
    "7": "the statement is past code line 10 of the function, where CodeSense's Python "
         "block questions stop",
    "8": "the statement's text is on several lines, each with its own block size",
}


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def _loaded(tmp_path: Path, records: list[dict[str, Any]]) -> Loaded:
    return load_source(str(write(tmp_path / "statement_prediction_dataset.jsonl", records)))


def _facts(program: Program) -> list[dict[str, Any]]:
    trace = program.calls[0].recorded
    assert trace is not None
    return trace.extra["facts"]


def test_each_statement_record_adds_its_block_question_or_says_why_not(
        tmp_path: Path) -> None:
    loaded = _loaded(tmp_path, RECORDS)
    assert loaded.skipped == []
    programs = {program.id.rsplit("/", 1)[1]: program for program in loaded.programs}
    assert sorted(programs) == [str(n) for n in range(1, 9)]
    for idx, program in programs.items():
        facts = _facts(program)
        assert facts[0]["task"] == "statement"  # the record's own question comes first
        trace = program.calls[0].recorded
        assert trace is not None
        if idx in BLOCKS:
            assert facts[1:] == [BLOCKS[idx]], idx
            assert "unasked" not in trace.extra
        else:
            assert len(facts) == 1, idx
            assert trace.extra["unasked"] == {"block": SKIPPED[idx]}, idx
    # the call a block question is asked with is the recorded input, by name
    assert programs["1"].calls[0].args == "words=['ox', 'cat', 'bird'], limit=2"


def test_a_quantized_record_adds_no_block_question(tmp_path: Path) -> None:
    """The quantized file repeats the plain file's statement questions with categories;
    its records ask no block question of their own, and give no reason either (the block
    task has no abstract values)."""
    record = {**RECORDS[0], "quantized value": "Empty List"}
    [program] = _loaded(tmp_path, [record]).programs
    assert [fact["task"] for fact in _facts(program)] == ["statement"]
    trace = program.calls[0].recorded
    assert trace is not None and "unasked" not in trace.extra
