"""The manifest's typed records: one recipe definition, and suites written before the
manifest grew fields still read."""

from __future__ import annotations

import json
from pathlib import Path

from execbench import SCHEMA_VERSION
from execbench.manifest import Manifest, Recipe, Skip, SkipCounts
from execbench.sandbox.pool import Limits
from execbench.suite import BuildOptions, load_suite

OLD_MANIFEST = {
    # as the first builds wrote it: no mutate, count, buggy, skip kinds, programs_by_task
    "schema_version": SCHEMA_VERSION, "execbench_version": "0.1.0", "python": "3.12.3",
    "seed": 0, "tasks": ["output"], "task_options": {}, "limit": None, "max_calls": None,
    "plus_inputs": False, "limits": {"cpu_seconds": 2.0, "wall_seconds": 10.0,
                                     "memory_mb": 1024, "stdout_bytes": 1000000,
                                     "file_bytes": 10000000, "recursion_limit": 1000},
    "sources": [{"name": "toy", "format": "generic", "origin": "toy.jsonl", "sha256": "ab",
                 "programs": 1, "skipped": 1}],
    "counts": {"programs": 1, "calls": 1, "instances": 1, "by_task": {"output": 1},
               "skipped": 2},
    "expected_output_mismatches": [],
    "skipped": [{"where": "toy.jsonl:2", "id": None, "reason": "no code"},
                {"where": "toy/f#1", "task": "output", "reason": "nothing to ask"}],
    "instances_sha256": "cd"}
INSTANCE = {"schema_version": SCHEMA_VERSION, "id": "output/toy/f/0", "task": "output",
            "source": "toy", "program_id": "toy/f", "call_index": 0,
            "code": "def f():\n    return 1\n", "entry_point": "f", "args": "",
            "truth": "1"}


def test_an_old_manifest_reads_and_writes_back_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps(OLD_MANIFEST))
    (tmp_path / "instances.jsonl").write_text(json.dumps(INSTANCE) + "\n")
    manifest, instances, _ = load_suite(tmp_path)
    assert manifest.recipe == Recipe(seed=0, tasks=["output"], task_options={}, limit=None,
                                     max_calls=None, plus_inputs=False)
    assert manifest.skipped[1] == Skip(where="toy/f#1", kind=None, reason="nothing to ask",
                                       task="output")
    # Limits made before steps were counted take the step limit their CPU limit implies.
    limits = {**OLD_MANIFEST["limits"], "max_steps": 2_000_000}
    assert manifest.to_record() == {**OLD_MANIFEST, "mutate": False, "count": 100,
                                    "limits": limits}
    assert [instance.id for instance in instances] == ["output/toy/f/0"]


def test_the_recipe_is_what_the_build_options_say_and_buggy_only_when_set() -> None:
    options = BuildOptions(tasks=["output"], seed=4, max_calls=2, workers=3, overwrite=True)
    record = options.recipe().to_record()
    assert "buggy" not in record and record["seed"] == 4 and record["max_calls"] == 2
    assert record["limits"] == {"cpu_seconds": 2.0, "wall_seconds": 10.0, "memory_mb": 1024,
                                "stdout_bytes": 1000000, "file_bytes": 10000000,
                                "recursion_limit": 1000, "max_steps": 2_000_000}
    buggy = BuildOptions(tasks=["output"], buggy=True).recipe()
    assert buggy.to_record()["buggy"] is True
    assert buggy.differences(options.recipe().to_record()) == ["seed", "max_calls", "buggy"]
    # a field the manifest lacks differs, unless the recipe's value is None (or unset buggy)
    assert options.recipe().differences({}) == [
        "seed", "tasks", "task_options", "max_calls", "plus_inputs", "mutate", "count", "limits"]
    assert Recipe.from_record(buggy.to_record()) == buggy
    assert BuildOptions(tasks=["output"], limits=Limits(memory_mb=512)).recipe().differences(
        options.recipe().to_record()) == ["seed", "max_calls", "limits"]
    dated = BuildOptions(tasks=["output"], after="2024-01-01", before="2025-01-01").recipe()
    assert {"after": "2024-01-01", "before": "2025-01-01"}.items() <= dated.to_record().items()
    assert "after" not in record and "before" not in record
    assert dated.differences(BuildOptions(tasks=["output"]).recipe().to_record()) == [
        "after", "before"]
    assert Recipe.from_record(dated.to_record()) == dated


def test_skips_keep_the_keys_their_kind_writes() -> None:
    from_source = Skip(where="a.jsonl:3", kind="record", reason="bad", from_source=True)
    assert from_source.to_record() == {"where": "a.jsonl:3", "kind": "record", "reason": "bad",
                                       "id": None}
    instance = Skip(where="p#0", kind="instance", reason="none", task="output")
    assert instance.to_record() == {"where": "p#0", "kind": "instance", "reason": "none",
                                    "task": "output"}
    for skip in (from_source, instance):
        assert Skip.from_record(skip.to_record()) == skip
    assert SkipCounts.of([from_source, instance, instance]) == SkipCounts(
        records=1, programs=0, calls=0, instances={"output": 2})


def test_a_manifest_round_trips(tmp_path: Path) -> None:
    record = {**OLD_MANIFEST, "mutate": False, "count": 100, "buggy": True,
              "limits": {**OLD_MANIFEST["limits"], "max_steps": 1_000},
              "recorded_instances": ["output/toy/f/0"], "task_counts": {"output": {"a": 1}}}
    assert Manifest.from_record(record).to_record() == record
