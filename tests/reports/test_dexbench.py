"""The DexBench layout's table of forward against backward on the same call, with the
numbers a run of known answers must give stated by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from execbench.api import ReportConfig, report
from execbench.runner import RunConfig, run
from execbench.suite import BuildOptions, build_suite, load_suite


def test_the_quadrant_table_places_every_call(tmp_path: Path) -> None:
    """The oracle is right on both tasks of every call; a model that answers `[]` to
    everything is right on neither (no call executes no line, and on these twelve
    programs `[]` as the arguments reaches no counterfactual target)."""
    build_suite(["humaneval"], tmp_path / "suite",
                BuildOptions(tasks=["coverage", "counterfactual"], limit=12))
    calls = sum(1 for i in load_suite(tmp_path / "suite")[1] if i.task == "coverage")
    run(RunConfig(suite=str(tmp_path / "suite"), model="reference/oracle"), tmp_path / "o")
    run(RunConfig(suite=str(tmp_path / "suite"), model="reference/constant",
                  model_args={"answer": "[ANSWER]\n[]\n[/ANSWER]"}), tmp_path / "c")
    made = report(ReportConfig(runs=[tmp_path / "o", tmp_path / "c"], layout="dexbench"))
    [table] = [t for t in made.tables if t.title.startswith("Forward and backward")]
    rows = {row[0]: row[2:] for row in table.rows}
    assert rows["reference/oracle"] == [calls, 100.0, 0.0, 0.0, 0.0]
    assert rows["reference/constant"] == [calls, 0.0, 0.0, 0.0, 100.0]
    pytest.importorskip("matplotlib")
    drawn = report(ReportConfig(runs=[tmp_path / "o", tmp_path / "c"], layout="dexbench",
                                figure=True)).figure
    assert drawn is not None and drawn.startswith(b"\x89PNG")


def test_forward_only_and_backward_only_are_not_swapped(tmp_path: Path) -> None:
    """Answers chosen per call by its place in the suite (k-th call: k % 4 == 0 both right,
    1 forward only, 2 backward only, 3 neither), so each quadrant holds a share this test
    counts itself: a table that swapped two quadrants, or paired a call's coverage with
    another call's counterfactual, fails."""
    import json

    from execbench.rundir import iter_samples

    build_suite(["humaneval"], tmp_path / "suite",
                BuildOptions(tasks=["coverage", "counterfactual"], limit=12))
    instances = load_suite(tmp_path / "suite")[1]
    run(RunConfig(suite=str(tmp_path / "suite"), model="reference/oracle"), tmp_path / "o")
    right = {s.instance_id: s.response for s in iter_samples(tmp_path / "o" / "samples.jsonl")}
    calls = sorted({(i.program_id, i.call_index) for i in instances if i.task == "coverage"}
                   & {(i.program_id, i.call_index) for i in instances
                      if i.task == "counterfactual"})
    place = {call: k % 4 for k, call in enumerate(calls)}
    wrong = "[ANSWER]\n[]\n[/ANSWER]"
    lines = []
    for instance in instances:
        kind = place.get((instance.program_id, instance.call_index))
        if kind is None:
            continue
        forward_right, backward_right = kind in (0, 1), kind in (0, 2)
        is_right = forward_right if instance.task == "coverage" else backward_right
        lines.append(json.dumps({"instance_id": instance.id,
                                 "response": right[instance.id] if is_right else wrong}))
    (tmp_path / "answers.jsonl").write_text("\n".join(lines) + "\n")
    run(RunConfig(suite=str(tmp_path / "suite"), model=f"replay/{tmp_path / 'answers.jsonl'}"),
        tmp_path / "r")
    made = report(ReportConfig(runs=[tmp_path / "r"], layout="dexbench"))
    [table] = [t for t in made.tables if t.title.startswith("Forward and backward")]
    [row] = table.rows
    counted = [sum(1 for kind in place.values() if kind == q) for q in range(4)]
    assert len(calls) >= 4 and all(counted)
    assert row[2] == len(calls)
    assert row[3:] == [pytest.approx(100 * n / len(calls)) for n in counted]
