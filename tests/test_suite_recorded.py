"""Calls that bring their own recorded trace: the suite takes it as the ground truth
instead of running the call, and says so in the instances and the manifest."""

from __future__ import annotations

import json
from pathlib import Path

from execbench.rundir import read_samples
from execbench.runner import RunConfig, run
from execbench.suite import MANIFEST, BuildOptions, build_suite, load_suite

# ``TABLE`` lives in the project this function came from: run alone, the call fails.
CODE = "def lookup(key):\n    return TABLE[key] * 2\n"
RECORDED = {"status": "ok", "value": ["int", 6], "value_repr": "6", "lines": [2],
            "stdout": "", "cpu_time": 0.001, "locals_seen": 3}


def _source(tmp_path: Path, *calls: object) -> Path:
    path = tmp_path / "project.jsonl"
    path.write_text(json.dumps({"id": "lookup", "code": CODE, "entry_point": "lookup",
                                "calls": list(calls)}) + "\n")
    return path


def test_a_recorded_trace_is_the_ground_truth_and_is_never_run(tmp_path: Path) -> None:
    source = _source(tmp_path, {"args": "'a'", "trace": RECORDED}, "'b'")
    manifest = build_suite([str(source)], tmp_path / "suite",
                           BuildOptions(tasks=["output"], workers=1))
    _, instances, _ = load_suite(tmp_path / "suite")

    # The recorded call gives an instance with the recorded value; the other call, run
    # here, raises NameError (no TABLE) and gives none.
    [instance] = instances
    assert (instance.id, instance.recorded) == ("output/project/lookup/0", True)
    assert instance.data["truth"] == {"value": ["int", 6], "repr": "6"}
    assert manifest.recorded_instances == ["output/project/lookup/0"]
    [skip] = [s for s in manifest.skipped if s.task == "output"]
    assert skip.where == "project/lookup#1" and "NameError" in skip.reason

    record = json.loads((tmp_path / "suite" / "instances.jsonl").read_text())
    assert record["recorded"] is True
    on_disk = json.loads((tmp_path / "suite" / MANIFEST).read_text())
    assert on_disk["recorded_instances"] == ["output/project/lookup/0"]

    results = run(RunConfig(suite=str(tmp_path / "suite"), model="reference/oracle"),
                  tmp_path / "run")
    assert results["metrics"]["output"]["all"]["pass@1"] == 1.0


def test_a_suite_of_traced_calls_says_nothing_of_recorded_ones(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    path.write_text(json.dumps({"id": "double", "code": "def double(x):\n    return 2 * x\n",
                                "entry_point": "double", "calls": ["3"]}) + "\n")
    manifest = build_suite([str(path)], tmp_path / "suite", BuildOptions(tasks=["output"]))
    assert "recorded_instances" not in manifest.to_record()
    assert "recorded" not in (tmp_path / "suite" / "instances.jsonl").read_text()
    _, [instance], _ = load_suite(tmp_path / "suite")
    assert instance.recorded is False


def test_a_malformed_recorded_trace_skips_the_record_with_its_reason(tmp_path: Path) -> None:
    good = _source(tmp_path, {"args": "'a'", "trace": RECORDED})
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "lookup", "code": CODE, "entry_point": "lookup",
                               "calls": [{"args": "'a'", "trace": {"status": "fine"}}]}) + "\n")
    warnings: list[str] = []
    manifest = build_suite([str(bad), str(good)], tmp_path / "suite",
                           BuildOptions(tasks=["output"], workers=1), warn=warnings.append)
    [reason] = [s.reason for s in manifest.skipped if s.where.startswith(str(bad))]
    assert reason == "key 'calls': item 1: recorded trace: unknown trace status 'fine'"
    assert any(reason in w for w in warnings)
    assert manifest.recorded_instances == ["output/project/lookup/0"]


def test_unicode_line_breaks_in_records_survive_the_suite_and_sample_files(
        tmp_path: Path) -> None:
    # U+0085 and U+2028 are written raw (not escaped) and end a line for str.splitlines;
    # CodeSense's published code has them. A recorded value carries them to both files.
    text = "a\x85b\u2028c"
    trace = {**RECORDED, "value": ["str", text], "value_repr": f"'{text}'"}
    build_suite([str(_source(tmp_path, {"args": "'a'", "trace": trace}))], tmp_path / "suite",
                BuildOptions(tasks=["output"], workers=1))
    assert text in (tmp_path / "suite" / "instances.jsonl").read_text(encoding="utf-8")
    _, [instance], _ = load_suite(tmp_path / "suite")
    assert instance.data["truth"]["value"] == ["str", text]

    for _ in range(2):  # the second run reads the logged samples back, and resumes on them
        results = run(RunConfig(suite=str(tmp_path / "suite"), model="reference/oracle"),
                      tmp_path / "run")
        assert results["metrics"]["output"]["all"]["pass@1"] == 1.0
    assert text in (tmp_path / "run" / "samples.jsonl").read_text(encoding="utf-8")
    assert len(read_samples(tmp_path / "run" / "samples.jsonl")) == 1
