"""``execbench harvest --language c``: a small C project written here, built and tested by
its own Makefile inside the jail under GDB; every CodeSense task builds from the harvest,
the oracle is right on all of it, the aliasing truth is what the test program made, and
two harvests give the same bytes. The recorder's lines are checked apart, with no GDB.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from execbench.harvest.channel import REFUSED_CUT, REFUSED_LONG
from execbench.harvest.native import c, shape
from execbench.harvest.native.recording import (
    REFUSED_FUNCTION,
    REFUSED_JAIL,
    REFUSED_LINE,
    REFUSED_NOT_JSON,
    REFUSED_NUMBER,
    REFUSED_OPEN,
    REFUSED_UNKNOWN_CALL,
    RawCall,
    Recording,
)
from execbench.harvest.options import HarvestOptions
from execbench.harvest.project import harvest
from execbench.settings import SettingError
from execbench.sources.debugger_values import NOT_RECORDED
from tests.harvest import native_c_project
from tests.helpers.cli import execbench
from tests.helpers.harvests import (
    CODESENSE_TASKS,
    needs_gdb_and_jail,
    oracle_on_codesense_tasks,
)

OPTIONS = HarvestOptions(language="c", build="make test_lib", test="make test",
                         max_calls=10, timeout=600)


@pytest.fixture(scope="module")
def harvested(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    needs_gdb_and_jail()
    root = tmp_path_factory.mktemp("native-c")
    project = native_c_project.write(root)
    out = root / "harvest.jsonl"
    result = harvest(project, out, OPTIONS, log=root / "run.log")
    records = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    yield {"root": root, "project": project, "out": out, "result": result,
           "records": records}


def test_the_tests_ran_and_the_projects_functions_were_kept(harvested: dict) -> None:
    result = harvested["result"]
    assert result.pytest_exit == 0 and result.tests == (1, 1), (harvested["root"] / "run.log")
    assert sorted(harvested["records"]) == [  # not main, not strlen, not the test program's
        "lib.c:classify", "lib.c:copy_into", "lib.c:fact", "lib.c:fill_sum", "lib.c:heap_sum",
        "lib.c:make_pair", "lib.c:name_len", "lib.c:same", "lib.c:scale", "lib.c:shade",
        "lib.c:sum", "lib.c:tally"]
    assert sum(result.refused.values()) == 0
    assert result.layers["seccomp"].endswith("ptrace allowed, for a debugger tracing the "
                                             "jail's own processes")
    record = harvested["records"]["lib.c:sum"]
    assert record["language"] == "c" and record["code"].startswith("int sum(")
    assert [call["args"] for call in record["calls"]] == ["xs = 1, n = 4", "xs = 1, n = 2"]
    trace = record["calls"][0]["trace"]
    assert trace["value"] == ["int", 10] and trace["text"] == "10"
    assert trace["inputs"] == {"n": ["int", 4]}
    assert trace["loops"] == {} and trace["lines"] == [2, 3, 4, 6]
    scale = harvested["records"]["lib.c:scale"]["calls"][0]
    assert scale["args"] == "p = {x = 1.5, y = 2}, k = 2"  # GDB's way: 2.0 is 2
    assert scale["trace"]["value"] == ["int", 7]
    fact = harvested["records"]["lib.c:fact"]
    assert [call["args"] for call in fact["calls"]] == ["n = 4", "n = 3", "n = 2", "n = 1"]


def test_every_codesense_task_builds_and_the_oracle_is_right(harvested: dict,
                                                             tmp_path: Path) -> None:
    scores = oracle_on_codesense_tasks(harvested["out"], tmp_path)
    assert scores == dict.fromkeys(CODESENSE_TASKS, 1.0)


def _alias(record: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    return [(call["args"], fact["first"]["pointer"], fact["second"]["pointer"],
             fact["aliased"])
            for call in record["calls"] for fact in call["trace"]["facts"]
            if fact["task"] == "alias"]


def test_the_aliasing_truth_is_what_the_test_program_made(harvested: dict) -> None:
    records = harvested["records"]
    assert _alias(records["lib.c:same"]) == [("a = 1, b = 1", "a", "b", True),
                                             ("a = 1, b = 9", "a", "b", False)]
    copy = _alias(records["lib.c:copy_into"])
    assert ("dst = 9, src = 1, n = 4", "dst", "src", False) in copy
    first_d = next(fact for fact in copy if {fact[1], fact[2]} == {"d", "dst"})
    assert first_d[3] is True  # d = dst: the same memory, until d++ moves it
    assert ("dst = 9, src = 1, n = 4", "d", "dst", False) in copy
    assert ("dst = 9, src = 1, n = 4", "s", "src", True) in copy


def test_a_local_is_shown_once_the_program_gave_it_a_value(harvested: dict) -> None:
    """``tally``'s locals are declared without a value and set later; before that they hold
    what ``same`` left on the stack, which is neither a value to ask about nor a pointer
    whose aliasing is known. A local declared in a loop and not yet set hides the outer
    one of its name, which the program cannot see there."""
    [call] = harvested["records"]["lib.c:tally"]["calls"]
    code = harvested["records"]["lib.c:tally"]["code"].split("\n")
    seen: dict[str, int] = {}
    for state in call["trace"]["states"]:
        for name in state["locals"]:
            seen.setdefault(name, state["line"])
    assert {name: code[line - 2].strip() for name, line in seen.items()
            if name not in ("xs", "n")} == {
        "count": "count = 0;", "first": "first = xs;",
        "i": "for (int i = 0; i < n; i++) {", "last": "last = xs + n - 1;"}
    assert all(fact[state]["lines"][0] >= seen[fact[state]["pointer"]]
               for fact in call["trace"]["facts"] if fact["task"] == "alias"
               for state in ("first", "second") if fact[state]["pointer"] in seen)
    assert ("xs = 1, n = 4", "first", "xs", True) in _alias(
        harvested["records"]["lib.c:tally"])
    [shade] = harvested["records"]["lib.c:shade"]["calls"]
    code = harvested["records"]["lib.c:shade"]["code"].split("\n")
    inner = [state["locals"].get("x") for state in shade["trace"]["states"]
             if code[state["line"] - 1].strip() == "x = i * 10;"]
    assert inner == [None, ["int", 0]]  # not the outer x = 1; then the last round's
    assert shade["trace"]["value"] == ["int", 1]


def test_a_struct_returned_in_memory_is_read_without_touching_the_tests(
        harvested: dict) -> None:
    """``make_pair`` returns its struct in memory, which GDB then holds as a value of its
    own: asking it for the address of the struct's ``char`` array made GDB copy the array
    into the tests' memory through their ``malloc``, leaving its own breakpoint byte on
    their stack, and ``fill_sum``'s array read it (-872415168 for 64)."""
    [made] = harvested["records"]["lib.c:make_pair"]["calls"]
    assert made["trace"]["value"] == ["dict", [[["str", "a"], ["int", 3]],
                                               [["str", "b"], ["int", 4]],
                                               [["str", "tag"], ["str", "pair"]]]]
    [filled] = harvested["records"]["lib.c:fill_sum"]["calls"]
    assert filled["trace"]["value"] == ["int", 64]


def test_heap_memory_the_program_has_not_written_is_not_recorded(harvested: dict) -> None:
    """``copy = malloc(...)`` points at memory the C library filled (``MALLOC_PERTURB_``):
    until the loop writes it, ``copy`` (shown by its target) is not recorded, so the
    statement question of the ``malloc`` has no truth and is never asked
    (``test_a_value_nobody_read_is_no_truth_even_published``)."""
    record = harvested["records"]["lib.c:heap_sum"]
    [call] = record["calls"]
    code = record["code"].split("\n")
    shown = [(code[state["line"] - 1].strip(), state["locals"].get("copy"))
             for state in call["trace"]["states"]]
    assert shown[1] == ("int total = 0;", ["object", "unknown", NOT_RECORDED])
    assert ("total += copy[i];", ["int", 1]) in shown  # written: its first element
    statements = {fact["statement"]: fact["value"] for fact in call["trace"]["facts"]
                  if fact["task"] == "statement"}
    assert statements["int *copy = malloc(n * sizeof *copy);"] == [  # no truth: dropped
        "object", "unknown", NOT_RECORDED]
    assert statements["int total = 0;"] == ["int", 0]
    recorder = (Path(c.__file__).with_name("gdb_recorder.py")).read_text()
    assert f"FILL = {c.FILL:#X}".replace("0X", "0x") in recorder


def test_a_second_harvest_gives_the_same_bytes(harvested: dict) -> None:
    again = harvested["root"] / "again.jsonl"
    harvest(harvested["project"], again, OPTIONS)
    assert again.read_bytes() == harvested["out"].read_bytes()


def test_the_cli_harvests_a_c_project(harvested: dict, tmp_path: Path) -> None:
    out = tmp_path / "cli.jsonl"
    done = execbench("harvest", harvested["project"], "--out", out, "--language", "c",
                     "--build", "make test_lib", "--test", "make test", "--max-calls", 10)
    assert done.exit_code == 0, done.stderr
    assert out.read_bytes() == harvested["out"].read_bytes()
    assert "functions: 12 kept" in done.stdout


def test_many_c_projects_are_harvested_and_resumed(harvested: dict, tmp_path: Path) -> None:
    for name in ("one", "two"):
        shutil.copytree(harvested["project"], tmp_path / name)
    args = ("harvest", tmp_path / "one", tmp_path / "two", "--out", tmp_path / "out",
            "--language", "c", "--build", "make test_lib", "--test", "make test",
            "--max-calls", 10)
    done = execbench(*args)
    assert done.exit_code == 0, done.stderr
    merged = [json.loads(line) for line in (tmp_path / "out" / "harvest.jsonl").open()]
    assert sorted({record["id"].split(":")[0] for record in merged}) == ["one", "two"]
    assert all(record["language"] == "c" for record in merged)
    again = execbench(*args)
    assert again.exit_code == 0 and "one: already harvested" in again.stdout, again.stdout


def test_native_settings_are_checked() -> None:
    with pytest.raises(SettingError, match="test"):
        HarvestOptions(language="c")
    with pytest.raises(SettingError, match="language"):
        HarvestOptions(language="cobol", test="make test")
    with pytest.raises(SettingError, match="compiled"):
        HarvestOptions(build="make")


# --------------------------------------------------------------------------- recording

JAIL = {"kind": "jail", "layers": {}, "warnings": []}
CALL = {"kind": "call", "call": 1, "function": "lib.c:f", "file": "lib.c", "name": "f",
        "first": 2, "last": 5, "args": [["p", ["int", 1], "a1"]]}


def _read(*records: Any, raw: bytes = b"") -> tuple[Recording, list[RawCall]]:
    calls: list[RawCall] = []
    reading = Recording({"lib.c": 10}, calls.append, max_line=2000, max_events=3,
                        max_nodes=20)
    reading.feed(b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n"
                          for r in records) + raw)
    reading.finish()
    return reading, calls


def test_a_well_formed_recording_is_read_with_floats_as_gdb_prints_them() -> None:
    reading, calls = _read(JAIL, CALL, {"kind": "line", "call": 1, "line": 3, "locals": [
        ["x", ["float", "2"], None], ["y", ["float", "-nan(0x8000000000000)"], None]]},
        {"kind": "return", "call": 1, "value": ["float", "1.5"], "locals": []},
        {"kind": "end", "tests": [1, 1], "exit": 0})
    assert sum(reading.refused.values()) == 0 and reading.end == {"tests": [1, 1], "exit": 0}
    [call] = calls
    assert call.lines == [(3, [("x", ["int", 2], None), ("y", ["float", "nan"], None)])]
    assert call.value == ["float", "1.5"]


def test_forged_or_broken_lines_are_refused_by_reason_and_crash_nothing() -> None:
    reading, calls = _read(
        JAIL, b"not json", JAIL, CALL,
        {**CALL, "call": 1},                                        # not above the last
        {**CALL, "call": 2, "file": "/etc/passwd", "function": "/etc/passwd:f"},
        {**CALL, "call": 3, "first": 2, "last": 99},                # past the file's end
        {"kind": "line", "call": 1, "line": 9, "locals": []},       # outside the function
        {"kind": "return", "call": 1, "value": None, "locals": []},  # its call was dropped
        {**CALL, "call": 4},
        {"kind": "line", "call": 4, "line": 3, "locals": [["x", ["evil", 1], None]]},
        {**CALL, "call": 5},
        raw=b"x" * 5000 + b"\n" + json.dumps({**CALL, "call": 6}).encode())
    assert calls == []
    assert reading.refused == {REFUSED_NOT_JSON: 1, REFUSED_JAIL: 1, REFUSED_NUMBER: 1,
                               REFUSED_FUNCTION: 2, REFUSED_LINE: 2,
                               REFUSED_UNKNOWN_CALL: 1, REFUSED_LONG: 1, REFUSED_OPEN: 1,
                               REFUSED_CUT: 1}


# --------------------------------------------------------------------------- shape


def test_the_shape_of_a_c_function_reads_headers_loops_and_assignments() -> None:
    code = ("int f(int *xs, int n) {\n    int total = 0; /* ; { */\n"
            "    for (int i = 0; i < n; i++) {\n        total += xs[i];\n    }\n"
            "    if (total > 3)\n        total = g(total);\n    else\n        total++;\n"
            "    while (1) {\n        break;\n    }\n    return total;\n}\n")
    found = shape.analyse(code)
    assert found is not None
    kinds = {line: (s.kind, s.targets) for line, s in found.statements.items()}
    assert kinds == {2: ("constant", ("total",)), 3: (None, ()), 4: ("arithmetic", ("total",)),
                     6: ("branch", ()), 7: ("call", ("total",)),
                     9: ("arithmetic", ("total",)), 10: ("branch", ()), 11: (None, ()),
                     13: (None, ())}
    assert [(loop.line, loop.body) for loop in found.loops] == [(3, (4, 5))]
    assert found.conditional == (4, 7, 9, 11)
    assert shape.analyse("int f(int x) {\n    if (x) {\n    return x;\n") is None
