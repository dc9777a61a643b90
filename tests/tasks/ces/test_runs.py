"""Runs of the reference models on simulation suites: the oracle coherent and correct
everywhere, the shortcut incoherent wherever a property is asked (whole HumanEval,
CRUXEval and HumanEvalPack, its buggy programs too: slow), and what results.json and the
``ces`` report layout show of them."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from execbench.models.base import ModelError
from execbench.runner import RunConfig, read_samples, run
from execbench.suite import BuildOptions, build_suite, load_suite
from tests.helpers.data import shared_data
from tests.tasks.ces.test_rules import truth
from tests.tasks.ces.test_simulation import execbench


def _classes(tmp_path: Path, model: str) -> tuple[Counter, list[dict]]:
    out = tmp_path / model.replace("/", "-")
    run(RunConfig(suite=str(tmp_path / "suite"), model=model, tasks=["simulation"]), out)
    samples = [s.to_record() for s in read_samples(out / "samples.jsonl").values()]
    return Counter(s["extra"]["class"] for s in samples), samples


@pytest.mark.slow
@pytest.mark.parametrize(("source", "buggy", "programs"), [
    ("humaneval", False, 164), ("cruxeval.jsonl", False, 800),
    ("humanevalpack.jsonl.gz", False, 164), ("humanevalpack.jsonl.gz", True, 156)],
    ids=["humaneval", "cruxeval", "humanevalpack", "humanevalpack-buggy"])
def test_reference_models_on_whole_benchmarks(tmp_path: Path, source: str, buggy: bool,
                                              programs: int) -> None:
    """The oracle is coherent and correct on every instance of every program; the shortcut
    is incoherent (with the right output) on every instance that asks for a property. The
    buggy programs of HumanEvalPack are simulated on the call that reveals the bug (what
    ``ces-vetting`` joins with the bug tasks): 156, those whose call returns a value (in 8
    the bug raises or loops, leaving no output to simulate)."""
    spec = source if source == "humaneval" else str(shared_data(source))
    build_suite([spec], tmp_path / "suite", BuildOptions(tasks=["simulation"], buggy=buggy))
    instances = {i.id: i for i in load_suite(tmp_path / "suite")[1]}
    assert len({i.program_id for i in instances.values()}) == programs
    oracle, _ = _classes(tmp_path, "reference/oracle")
    assert oracle == {"coherent_correct": len(instances)}
    _, samples = _classes(tmp_path, "reference/shortcut")
    asking = [s for s in samples if truth(instances[s["instance_id"]]).properties]
    assert len(asking) > len(samples) / 2
    assert Counter(s["extra"]["class"] for s in asking) == {"incoherent_correct": len(asking)}


def test_runs_report_the_four_classes_and_the_ces_layout(tmp_path: Path) -> None:
    build_suite(["humaneval"], tmp_path / "suite", BuildOptions(
        tasks=["simulation", "output"], limit=15, workers=2))
    oracle, _ = _classes(tmp_path, "reference/oracle")
    assert set(oracle) == {"coherent_correct"}
    shortcut, _ = _classes(tmp_path, "reference/shortcut")
    assert set(shortcut) == {"coherent_correct", "incoherent_correct"}  # Others: no property
    with pytest.raises(ModelError, match="answers only simulation, not output"):
        run(RunConfig(suite=str(tmp_path / "suite"), model="reference/shortcut"),
            tmp_path / "refused")
    results = json.loads((tmp_path / "reference-shortcut" / "results.json").read_text())
    summary = results["task_metrics"]["simulation"]
    assert summary["by_category"]["Others"]["coherent_correct"] == 1.0
    assert summary["by_category"]["LC"]["incoherent_correct"] == 1.0
    assert summary["all"]["rules"]["rule3"] == shortcut["incoherent_correct"]
    declared = {m["name"] for m in results["declared_metrics"] if m["task"] == "simulation"}
    assert {"coherent & correct", "suspicious", "pass@1"} <= declared
    shown = execbench("report", str(tmp_path / "reference-oracle"),
                      str(tmp_path / "reference-shortcut"), "--layout", "ces",
                      "--format", "markdown")
    assert shown.exit_code == 0, shown.output
    assert "| Total (" in shown.output and "reference/shortcut" in shown.output
