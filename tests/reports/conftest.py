"""Runs of every task family on one small suite, shared by the report tests: two models
(``reference/oracle`` with two samples, ``reference/constant`` with one), so tables have
several rows, several k and every verdict kind the reports count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from execbench.runner import RunConfig, run
from execbench.suite import BuildOptions, build_suite
from tests.helpers.programs import REPORTED as PROGRAMS

TASKS = ["output", "input", "coverage", "counterfactual", "mutation", "choice", "statement",
         "simulation"]


@pytest.fixture(scope="session")
def report_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The run folders: oracle (n=2) and constant (n=1), on a suite of every task."""
    folder = tmp_path_factory.mktemp("report-runs")
    source = folder / "small.jsonl"
    source.write_text("".join(json.dumps(record) + "\n" for record in PROGRAMS))
    suite = folder / "suite"
    build_suite([str(source)], suite, BuildOptions(tasks=TASKS, workers=1))
    runs = []
    for model, n in (("reference/oracle", 2), ("reference/constant", 1)):
        out = folder / model.split("/")[1]
        run(RunConfig(suite=str(suite), model=model, n=n), out)
        runs.append(out)
    return runs
