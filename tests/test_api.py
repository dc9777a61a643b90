"""The Python API (``execbench.api``): the example in docs/python-api.md, run as written, and the
same refusals as the command line's, each setting named by its field."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from execbench.api import BuildConfig, ReportConfig, RunConfig, checked_run, report, run
from execbench.models.base import GenerateConfig
from execbench.rundir import Results
from execbench.settings import SettingError
from execbench.suite import SuiteFile

API_PAGE = Path(__file__).resolve().parents[1] / "docs" / "python-api.md"


def documented_example() -> str:
    """The Python block of the API page."""
    found = re.search(r"```python\n(.*?)```", API_PAGE.read_text(encoding="utf-8"), re.S)
    assert found is not None, "the API page shows no example"
    return found.group(1)


def test_the_documented_example_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    names: dict[str, object] = {}
    exec(compile(documented_example(), str(API_PAGE), "exec"), names)
    suite, results, shown = names["suite"], names["results"], names["shown"]
    assert isinstance(suite, SuiteFile) and isinstance(results, Results)
    assert suite.folder == Path("suites/humaneval-3")
    assert {instance.program_id for instance in suite.instances()} == {
        f"humaneval/HumanEval/{i}" for i in range(3)}
    assert results.counts.samples == suite.manifest.counts.instances
    assert results.counts.verdicts == {"correct": results.counts.samples}
    assert (tmp_path / "runs" / "oracle" / "results.json").is_file()
    printed = capsys.readouterr().out.splitlines()
    assert printed[:2] == [f"{suite.manifest.counts.instances} instances, sha256 "
                           f"{suite.sha256[:12]}", "output pass@1: 1.0"]
    assert printed[2].startswith("prediction: headline metrics (%) {'run': 'reference/oracle'")
    # the same run again resumes it: nothing left to ask, the same results
    again = run(RunConfig(suite=str(suite.folder), model="reference/oracle"), out="runs/oracle")
    assert again.counts == results.counts and again.metrics == results.metrics
    assert report(ReportConfig(runs=["runs/oracle"], fmt="json")).text == shown.text


def test_settings_are_refused_by_field_as_the_command_refuses_them_by_flag(
        tmp_path: Path) -> None:
    def refused(config: BuildConfig) -> str:
        with pytest.raises(SettingError) as error:
            config.options()
        return str(error.value)

    out = tmp_path / "suite"
    assert refused(BuildConfig(["dsl"], out, limit=0)) == "limit must be at least 1, not 0"
    assert refused(BuildConfig(["humaneval"], out, count=3)) == (
        "count sets how many programs the dsl source samples, and no source is dsl")
    assert refused(BuildConfig(["dsl"], out, tasks="outptu")).startswith(
        "unknown task 'outptu'; did you mean 'output'?")
    assert refused(BuildConfig(["dsl"], out, tasks=" ,")).startswith(
        "tasks names no task; known tasks: ")
    assert refused(BuildConfig(["dsl"], out, fmt="cruxevl")).startswith(
        "unknown format 'cruxevl'; did you mean 'cruxeval'?")
    assert refused(BuildConfig(["dsl"], out, after="{2024}")) == (
        "after: '{2024}' is not a date (write it as YYYY-MM-DD, or an ISO date and time)")
    (out).mkdir()
    (out / "run.json").write_text("{}")
    assert refused(BuildConfig(["dsl"], out)) == (
        f"{out} holds a run (it has run.json); add overwrite to replace it with a suite, "
        "or choose another out")
    options = BuildConfig(["dsl"], out, tasks=["prediction"], overwrite=True).options()
    assert options.tasks == ["input", "output"]  # a family stands for its tasks

    fresh = tmp_path / "fresh"
    with pytest.raises(SettingError, match="^n must be at least 1, not 0$"):
        checked_run(RunConfig(suite="s", model="reference/oracle", n=0), fresh)
    checked = checked_run(RunConfig(suite="s", model="openai/gpt-4o",
                                    tasks=["prediction", "x"]), fresh)
    assert checked.tasks == ["input", "output", "x"]  # the tasks its suite lacks stay named
    assert checked.generate.temperature == 0.0  # one sample each: greedy, said
    with pytest.raises(SettingError, match="^n above 1 or top_p needs temperature: 0.2 "):
        checked_run(RunConfig(suite="s", model="openai/gpt-4o", n=5), fresh)
    with pytest.raises(SettingError, match="^n above 1 or top_p needs temperature"):
        checked_run(RunConfig(suite="s", model="openai/gpt-4o",
                              generate=GenerateConfig(top_p=0.9)), fresh)
    # models that take no temperature but their own keep none, whatever n
    for model, options in (("reference/oracle", {}), ("openai/o3", {}),
                           ("openai-api/x/gpt-5-mini", {}),
                           ("anthropic/claude-x", {"thinking": '{"type": "enabled"}'})):
        kept = checked_run(RunConfig(suite="s", model=model, n=5, model_args=options), fresh)
        assert kept.generate.temperature is None, model
    assert checked_run(RunConfig(suite="s", model="anthropic/claude-x", model_args={
        "thinking": '{"type": "disabled"}'})).generate.temperature == 0.0
    # a folder whose run.json is no run's: nothing pinned is read from it (the run itself
    # then says what is wrong with the folder)
    broken = tmp_path / "broken"
    broken.mkdir()
    for text in ("{", "[1]", '{"pinned": 3}'):
        (broken / "run.json").write_text(text)
        assert checked_run(RunConfig(suite="s", model="openai/gpt-4o"),
                           broken).generate.temperature == 0.0

    with pytest.raises(SettingError, match="^figure needs a layout that has a figure "):
        report(ReportConfig(runs=[tmp_path], figure=True))
    with pytest.raises(SettingError, match="^no run with results to report; "
                                           f"{re.escape(str(tmp_path))} is not a run folder"):
        report(ReportConfig(runs=[tmp_path]))


def test_importing_execbench_imports_none_of_the_api() -> None:
    code = ("import json, sys, execbench; print(json.dumps(sorted(m for m in sys.modules "
            "if m.partition('.')[0] == 'execbench')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert json.loads(done.stdout) == ["execbench"]


def test_the_api_is_reached_from_the_package() -> None:
    """``execbench.report`` is the function even once every report module is imported
    (the layouts' package is ``execbench.reports``)."""
    import execbench
    import execbench.api
    import execbench.reports.layouts  # noqa: F401

    assert (execbench.build, execbench.run, execbench.report) == (
        execbench.api.build, execbench.api.run, execbench.api.report)
    assert execbench.ReportConfig is ReportConfig and "report" in dir(execbench)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        execbench.nothing  # noqa: B018
