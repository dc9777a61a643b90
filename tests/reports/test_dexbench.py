"""The DexBench layout's table of forward against backward on the same call, with the
numbers a run of known answers must give stated by hand."""

from __future__ import annotations

from pathlib import Path

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
