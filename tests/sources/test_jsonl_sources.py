"""JSONL loading on small files written for each test: bad records, gzip, each format."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from execbench.program import Call
from execbench.sources import FORMATS, SourceError, load_source

CODE = "def double(x):\n    return 2 * x\n"


def _generic(record_id: str, code: str = CODE, calls: Any = ("1",), **extra: Any) -> str:
    record = {"id": record_id, "code": code, "entry_point": "double", "calls": list(calls)}
    return json.dumps({**record, **extra})


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def test_each_bad_record_is_skipped_with_its_line(tmp_path: Path) -> None:
    lines = [
        _generic("good", calls=["1", {"args": "x=2", "expected": "4"}, "1"]),
        '{"id": "broken", ',                                     # 2: invalid JSON
        "[1, 2]",                                                # 3: not an object
        json.dumps({"id": "no_code", "entry_point": "double", "calls": ["1"]}),
        "",                                                      # 5: blank, ignored
        _generic("syntax", code="def double(x):\n    return (\n"),
        _generic("unparsable", calls=["1", "1,,2"]),
        _generic("good"),                                        # 8: duplicate id
        _generic("no_entry", code="def other(x):\n    return x\n"),
        _generic("nul", code="def double(x):\n    return '\x00'\n"),
        _generic("bad_expected", calls=[{"args": "1", "expected": "x + 1"}]),
        _generic("no_calls", calls=[]),
        json.dumps({"id": "typed", "code": CODE, "entry_point": "double", "calls": "1"}),
    ]
    path = _write(tmp_path / "mixed.jsonl", lines)
    loaded = load_source(str(path))
    assert loaded.format == "generic"
    assert [p.id for p in loaded.programs] == ["mixed/good"]
    program = loaded.programs[0]
    assert program.calls == (Call("1"), Call("x=2", "4"))  # the repeated "1" is dropped
    where = {s.where.rsplit(":", 1)[1]: s for s in loaded.skipped}
    assert sorted(where, key=int) == ["2", "3", "4", "6", "7", "8", "9", "10", "11", "12", "13"]
    assert all(s.where.startswith(str(path)) for s in loaded.skipped)
    assert all("\n" not in s.reason for s in loaded.skipped)
    assert "invalid JSON" in where["2"].reason
    assert "not a JSON object" in where["3"].reason
    assert where["4"].reason == "missing key 'code'"
    assert where["4"].id == "mixed/no_code"
    assert "does not compile" in where["6"].reason and "line 2" in where["6"].reason
    assert "call 2" in where["7"].reason
    assert where["8"].reason == "duplicate id (first seen at line 1)"
    assert "not defined at module level" in where["9"].reason
    assert "NUL" in where["10"].reason
    assert "not a literal" in where["11"].reason
    assert where["12"].reason == "no calls"
    assert "'calls'" in where["13"].reason


def test_gzip_and_no_final_newline(tmp_path: Path) -> None:
    lines = [_generic("a"), _generic("b", meta={"level": 3})]
    plain = tmp_path / "Mine.JSONL"
    plain.write_text("\n".join(lines))  # no newline after the last record
    packed = tmp_path / "Mine.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    from_plain, from_gzip = load_source(str(plain)), load_source(str(packed))
    assert from_plain.name == from_gzip.name == "mine"
    assert from_gzip.origin == str(packed)
    assert from_gzip.sha256 == hashlib.sha256(packed.read_bytes()).hexdigest()
    assert from_gzip.programs == from_plain.programs
    assert [p.id for p in from_gzip.programs] == ["mine/a", "mine/b"]
    assert from_gzip.programs[1].meta == {"level": 3}


def test_cruxeval_inputs_are_argument_texts(tmp_path: Path) -> None:
    code = "def f(*args):\n    return len(args)\n"
    records = [{"id": "s0", "code": code, "input": "", "output": "0"},
               {"id": "s1", "code": code, "input": "lambda x: x < 2, xs[:]", "output": "2"},
               {"id": "s2", "code": code, "input": "(1", "output": "1"},
               {"id": "s3", "code": "def g():\n    pass\n", "input": "", "output": "None"}]
    path = _write(tmp_path / "crux.jsonl", [json.dumps(r) for r in records])
    loaded = load_source(str(path))
    assert loaded.format == "cruxeval"
    assert [p.calls for p in loaded.programs] == [
        (Call("", "0"),), (Call("lambda x: x < 2, xs[:]", "2"),)]
    assert [s.where for s in loaded.skipped] == [f"{path}:3", f"{path}:4"]


def test_humaneval_reads_written_calls_and_records_built_ones(tmp_path: Path) -> None:
    test = "\n".join([
        "def check(candidate):",
        "    assert candidate(1) == 2",
        "    assert 6 == candidate(3)",
        "    assert candidate(x=list(range(3))) == [0, 1, 2, 0, 1, 2]",
        "    for x in range(3):",
        "        assert candidate(x) == 2 * x",
        "    assert abs(candidate(1.5) - 3.0) < 1e-6",
        "    assert candidate(1) == 2",
        "    print(candidate(-1))",
        "    if False:",
        "        candidate(x + 100)",
    ])
    record = {"task_id": "T/0", "prompt": "def double(x):\n", "entry_point": "double",
              "canonical_solution": "    return 2 * x\n", "test": test}
    # HumanEvalPack's shape: the parameter has the function's name, and the test calls
    # check itself at the end (blanked, so only the recording run calls the function).
    only_loop = {**record, "task_id": "T/1",
                 "test": "def check(double):\n    for x in [[5], [6]]:\n        double(x)\n"
                         "\ncheck(double)\n",
                 "canonical_solution": "    x.append(0)\n    return x\n"}
    many = {**record, "task_id": "T/2",
            "test": "def check(candidate):\n    import random\n    for _ in range(50):\n"
                    "        candidate(random.randint(0, 10**9))\n        assert False\n"}
    no_check = {**record, "task_id": "T/3", "test": "for x in [1]:\n    assert double(x)\n"}
    path = _write(tmp_path / "he.jsonl", [json.dumps(r) for r in (record, only_loop, many,
                                                                   no_check)])
    loaded = load_source(str(path))
    assert loaded.format == "humaneval"
    first, loop, failing = loaded.programs
    assert first.code == "def double(x):\n    return 2 * x\n"
    # Written calls keep their text and asserted output; the loop's calls are recorded
    # in the test's order, in place, and a repeated argument text is dropped.
    assert first.calls == (Call("1", "2"), Call("3", "6"),
                           Call("x=list(range(3))", "[0, 1, 2, 0, 1, 2]"),
                           Call("0"), Call("2"), Call("1.5"), Call("-1"))
    # The arguments as the test passed them, before the function appended to them.
    assert loop.calls == (Call("[5]"), Call("[6]"))
    # A failing assertion ends the test; what it called before that is kept.
    assert len(failing.calls) == 1 and failing.calls[0].args.isdigit()
    assert first.meta["skipped_calls"] == 1
    assert [(s.where, s.id, s.reason) for s in loaded.skipped] == [
        (f"{path}:1", "he/T/0",
         "call 8 uses a test-local name 'x' and the test never reached it"),
        (f"{path}:4", "he/T/3", "no call of double in 'test' could be read or recorded (the "
                                "call on test line 2 uses a test-local name 'x', and the test "
                                "defines no check() to run)"),
    ]
    # The same file gives the same calls (the sandbox reseeds random for every run).
    assert load_source(str(path)).programs == loaded.programs


def test_evalplus_writes_inputs_as_literals(tmp_path: Path) -> None:
    record = {"task_id": "HumanEval/9", "prompt": "def f(x, y):\n",
              "canonical_solution": "    return x\n", "entry_point": "f", "atol": 1e-6,
              "base_input": [[1.5, "a"], [float("nan"), {"k": None}], [1.5, "a"]],
              "plus_input": [[float("inf"), [True]]]}
    mbpp = {**record, "task_id": "Mbpp/9", "prompt": "'''Describe f.'''\n",
            "canonical_solution": "def f(x, y):\n    return y\n", "plus_input": {}}
    path = _write(tmp_path / "plus.jsonl", [json.dumps(record), json.dumps(mbpp)])
    base = load_source(str(path))
    assert base.format == "evalplus"
    assert [p.code for p in base.programs] == ["def f(x, y):\n    return x\n",
                                               "def f(x, y):\n    return y\n"]
    assert base.programs[0].calls == (Call("1.5, 'a'"), Call("float('nan'), {'k': None}"))
    assert base.programs[0].meta == {"task_id": "HumanEval/9", "atol": 1e-6}
    assert base.skipped == []
    plus = load_source(str(path), plus_inputs=True)
    assert plus.programs[0].calls[-1] == Call("float('inf'), [True]")
    assert len(plus.programs[1].calls) == 2
    assert [s.id for s in plus.skipped] == ["plus/Mbpp/9"]


def test_whole_source_errors(tmp_path: Path) -> None:
    unknown = _write(tmp_path / "odd.jsonl", ['{"question": 1, "answer": 2}'])
    with pytest.raises(SourceError, match="answer, question.*--format") as info:
        load_source(str(unknown))
    assert all(name in str(info.value) for name in FORMATS.names())
    with pytest.raises(SourceError, match="no such file"):
        load_source(str(tmp_path / "missing.jsonl"))
    empty = _write(tmp_path / "empty.jsonl", ["not json"])
    with pytest.raises(SourceError, match="no JSON object"):
        load_source(str(empty))
    with pytest.raises(SourceError, match="unknown format"):
        load_source(str(unknown), "csv")
    with pytest.raises(SourceError, match="folder"):
        load_source(str(unknown), "pyfolder")
    with pytest.raises(SourceError, match="folder"):
        load_source(str(tmp_path), "generic")
    assert load_source(str(empty), "generic").skipped[0].reason.startswith("invalid JSON")
