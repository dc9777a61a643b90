"""CodeSense's C and Java files as sources: small records of each shape made here, and the
five published files (kept counts, the oracle, nothing run)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from execbench.sources import load_source
from execbench.suite import BuildOptions, build_suite
from tests.helpers.cli import execbench
from tests.helpers.data import SHARED_DATA, needs_shared_data
from tests.helpers.oracle import direct_oracle

DATA = SHARED_DATA / "codesense"
needs_data = needs_shared_data("codesense/aliasing_dataset_c.jsonl.gz")

C_CODE = ("int\nclamp(struct box *b, int limit)\n{\n\tint n = b->n; // the count\n"
          "\tif (n > limit)\n\t\tn = limit;\n\tb->last = b->name;\n\treturn n;\n}")


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def _statement(idx: int, selected: str, answer: Any, kind: str = "Assignment") -> dict:
    return {"idx": idx, "Programming Language": "C", "Statement Type": kind,
            "Source Code": C_CODE, "Selected Statement": selected,
            "Function Input": {"b": {"value": {"type_category": "pointer", "address": "0x10",
                                               "value": {"type_category": "struct",
                                                         "value": {"n": {"value": "7"}}}}},
                               "limit": {"value": "5"}},
            "Variable Values Before Statement": {"b->n": "7"},
            "Value After Statement Execution": answer, "Project Information": "demo"}


def test_c_statement_records_become_programs_that_are_never_run(tmp_path: Path) -> None:
    source = _write(tmp_path / "statement_c.jsonl", [
        _statement(0, "int n = b->n;", "7"),
        _statement(1, "if (n > limit)", "Yes", "Branch"),
        _statement(2, "b->last = b->name;", "0x4005f0 \"box\""),
        _statement(3, "int n = b->n;", "0x55555564e5c0 <main>"),   # an address
        _statement(4, "n = n * 2;", "14"),                           # not in the code
        _statement(5, "n = limit;", "int"),             # the recorder wrote a type
    ])
    loaded = load_source(str(source))
    assert loaded.format == "codesense"
    assert [s.reason.split(" (")[0] for s in loaded.skipped] == [
        "the value asked for is an address", "the statement 'n = n * 2;' is nowhere in the "
        "function"]
    first, branch, pointer, typed = loaded.programs
    assert first.language == "c" and first.entry_point == "clamp"
    assert first.calls[0].args == "b = {n = 7}, limit = 5"    # no address shown
    fact = first.calls[0].recorded.extra["facts"][0]
    assert fact == {"task": "statement", "line": 4, "statement": "int n = b->n;",
                    "kind": "assignment", "before": {"b->n": ["int", 7]},
                    "value": ["int", 7], "text": "7"}
    assert branch.calls[0].recorded.extra["facts"][0]["value"] == ["bool", True]
    assert pointer.calls[0].recorded.extra["facts"][0]["value"] == ["str", "box"]
    assert typed.calls[0].recorded.extra["facts"][0]["value"] == ["object", "unknown", "int"]

    suite = tmp_path / "suite"
    manifest = build_suite([str(source)], suite, BuildOptions(tasks=None, workers=1))
    assert manifest.counts.by_task == {"statement": 4}
    records = [json.loads(line) for line in (suite / "instances.jsonl").open()]
    assert {record["language"] for record in records} == {"c"}
    # tasks that must run code say why they cannot, and build nothing
    other = build_suite([str(source)], tmp_path / "other",
                        BuildOptions(tasks=["output", "input", "coverage"], workers=1))
    assert other.counts.by_task == {"output": 0, "input": 0, "coverage": 0}
    reasons = {skip.task: skip.reason for skip in other.skipped if skip.task}
    assert set(reasons) == {"output", "input", "coverage"}, reasons
    assert "never run" in reasons["input"]


def test_block_alias_and_input_output_records(tmp_path: Path) -> None:
    block = {"Programming Language": "C", "Source Code": C_CODE, "Block_Size": 3,
             "Selected Statement": "n = limit;", "Function Input": {"limit": {"value": "5"}},
             "Variable Values Before Statement": {"limit": "5"},
             "Value After Statement Execution": "5"}
    alias = {"idx": 0, "Programming Language": "C", "Source Code": C_CODE,
             "Selected Statement": "\tb->last = b->name;  // keep it\n", "Selected Pointer": "b",
             "Compared Statement": "clamp(box, 3);\n", "Compared Pointer": "box",
             "Aliasing": "Yes", "Function Input": {}}
    c_io = {"idx": 0, "code": C_CODE, "input": "{'b': 'NULL', 'limit': '5'}",
            "basic_input": "{'limit': {'type': 'int', 'value': '5'}}",
            "output": "{'type': 'int', 'value': '5'}", "cyclomatic_complexity": 2,
            "code_length": 9}
    java_io = {"idx": 0, "code": "    public int twice(int x) {\\n        return 2 * x;\\n    }",
               "basic_input": [{"name": "x", "type": "int", "value": "4"}],
               "output": [{"name": "unknown", "type": "int", "value": "8"}],
               "cyclomatic_complexity": 1, "code_length": 3, "category": "Easy"}
    for name, records, tasks in [("block", [block, block], {"block": 2}),
                                 ("alias", [alias], {"alias": 1}),
                                 ("c_io", [c_io], {"input": 1, "output": 1}),
                                 ("java_io", [java_io], {"input": 1, "output": 1})]:
        source = _write(tmp_path / f"{name}.jsonl", records)
        loaded = load_source(str(source))
        assert not loaded.skipped, (name, loaded.skipped)
        manifest = build_suite([str(source)], tmp_path / name, BuildOptions(tasks=None,
                                                                             workers=1))
        assert manifest.counts.by_task == tasks, name
    java = load_source(str(tmp_path / "java_io.jsonl")).programs[0]
    assert java.language == "java" and java.entry_point == "twice"
    assert java.code == "    public int twice(int x) {\n        return 2 * x;\n    }\n"
    fact = load_source(str(tmp_path / "alias.jsonl")).programs[0].calls[0].recorded.extra
    assert fact["facts"][0]["first"] == {"pointer": "b", "statement": "b->last = b->name;",
                                         "lines": [7]}
    assert fact["facts"][0]["second"]["lines"] == []     # in a caller, quoted instead


def test_a_non_python_program_never_reaches_the_sandbox(tmp_path: Path) -> None:
    """A generic record may say its language; without a recorded trace it is refused, since
    nothing but Python is run."""
    source = _write(tmp_path / "g.jsonl", [
        {"id": "a", "code": "int f(int x) { return x; }", "entry_point": "f",
         "language": "c", "calls": ["x = 1"]},
        {"id": "b", "code": "int f(int x) { return x; }", "entry_point": "f",
         "language": "c", "calls": [{"args": "x = 1", "trace": {"status": "ok",
                                                                "value": ["int", 1]}}]},
        {"id": "c", "code": "def f(): pass", "entry_point": "f", "language": "cobol",
         "calls": [""]},
    ])
    loaded = load_source(str(source))
    assert [s.reason for s in loaded.skipped] == [
        "a C program is never run: its code must be text and every call must bring its "
        "recorded trace", "unknown language 'cobol'"]
    assert loaded.programs[0].language == "c"


PUBLISHED = {  # file: (records, kept, tasks the file holds)
    "statement_prediction_dataset_C": (498, 482, {"statement": 482}),
    "block_analysis_c": (731, 700, {"block": 700}),
    "input_output_dataset_c": (93, 92, {"input": 92, "output": 92}),
    "input_output_dataset_java": (74, 73, {"input": 69, "output": 73}),
    "aliasing_dataset_c": (49, 49, {"alias": 49}),
}


@needs_data
@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_each_published_c_and_java_file_builds_and_the_oracle_scores_full_marks(
        tmp_path: Path, name: str) -> None:
    records, kept, tasks = PUBLISHED[name]
    path = DATA / f"{name}.jsonl.gz"
    with gzip.open(path, "rt") as fh:
        assert sum(1 for line in fh if line.strip()) == records
    loaded = load_source(str(path))
    assert len(loaded.programs) == kept >= 0.9 * records
    assert all(skip.reason for skip in loaded.skipped)
    suite, run = tmp_path / "suite", tmp_path / "run"
    done = execbench("build", path, "--out", suite)
    assert done.exit_code == 0, done.stderr
    manifest = json.loads((suite / "manifest.json").read_text())
    assert manifest["counts"]["by_task"] == tasks
    assert len(manifest["skipped"]) == records - kept + sum(kept - n for n in tasks.values())
    done = execbench("run", "--suite", suite, "--model", "reference/oracle", "--out", run)
    assert done.exit_code == 0, done.stderr
    direct_oracle(suite, tmp_path / "direct")
    results = json.loads((run / "results.json").read_text())
    for task in tasks:
        assert results["metrics"][task]["all"]["pass@1"] == 1.0, task
        by_language = results["task_metrics"][task]["by_language"]
        assert set(by_language) == {"java" if "java" in name else "c"}
