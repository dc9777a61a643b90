"""Runs that answered different instances are compared with a warning, on one line of
stderr, whatever the layout or format."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from execbench.cli import app
from execbench.reports.comparable import coverage_warning
from execbench.results import TaskMetrics
from execbench.rundir import Results
from execbench.runner import RunConfig, load_run_config, run
from tests.helpers.cli import said
from tests.helpers.results import group, make_results


def results(suite: str, **instances: int) -> Results:
    return make_results(suite=suite, metrics={task: TaskMetrics(group(count), {})
                                              for task, count in instances.items()})


def test_the_warning_names_the_tasks_answered_on_other_instances() -> None:
    assert coverage_warning([results("a", output=800, input=800),
                             results("a", output=800, coverage=5)]) is None
    said = coverage_warning([results("he", output=1166, input=1166),
                             results("crux", output=20, input=1166),
                             results("crux", coverage=3)])
    assert said == ("the runs compared do not cover the same instances (input: 1166 each; "
                    "output: 1166 vs 20 instances; suites differ), so their numbers do not "
                    "compare like with like")
    assert coverage_warning([results("a", output=20), results("a", output=10)]) == (
        "the runs compared do not cover the same instances (output: 20 vs 10 instances), so "
        "their numbers do not compare like with like")


def test_report_warns_on_one_line(report_runs: list[Path], tmp_path: Path) -> None:
    suite = load_run_config(report_runs[0]).suite
    cut = tmp_path / "cut"
    run(RunConfig(suite=suite, model="reference/oracle", tasks=["output"], limit=2), cut)
    for args in ((), ("--layout", "leaderboard", "--format", "json")):
        done = CliRunner().invoke(app, ["report", str(cut), *map(str, report_runs), *args])
        assert done.exit_code == 0, done.stderr
        assert said(done.stderr) == ["warning: the runs compared do not cover the same "
                                     "instances (output: 5 vs 2 instances), so their numbers "
                                     "do not compare like with like"]
    alike = CliRunner().invoke(app, ["report", *map(str, report_runs)])
    assert alike.exit_code == 0 and said(alike.stderr) == []
