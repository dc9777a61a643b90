"""``execbench ls`` lists what the command line accepts: every name it prints is taken
where that kind of name is given (``--model``, ``--format``, ``--tasks``, ``--layout``),
and every name the registries hold is printed."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from execbench.cli import app
from execbench.cli.app import task_list
from execbench.models import MODELS, ModelError, get_model
from execbench.models.reference import REFERENCES
from execbench.reports.layouts import LAYOUTS
from execbench.sources import FORMATS, GENERATED, SourceError, load_source
from execbench.tasks.registry import TASKS

STANDIN = f"{sys.executable} -c pass"
"""An engine command: a managed model is made, not started, so it is never run."""


def listed(what: str) -> list[str]:
    """The names ``execbench ls WHAT`` prints: the first word of each unindented line."""
    done = CliRunner().invoke(app, ["ls", what])
    assert done.exit_code == 0, done.output
    return [line.split()[0] for line in done.output.splitlines() if line[:1].strip()]


def a_name(pattern: str) -> str:
    """A model name that matches a listed pattern (``openai-api/<name>/<model>``; the first
    word of ``hf/<hub id or path>`` is ``hf/<hub``, its hole cut short)."""
    return re.sub(r"<[^>]+>?", lambda hole: "local" if hole[0] == "<name>" else "m", pattern)


def test_every_listed_model_is_made_by_get_model(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no ./.env of the developer's
    for var, value in {"OPENAI_API_KEY": "sk", "ANTHROPIC_API_KEY": "ak",
                       "LOCAL_BASE_URL": "http://127.0.0.1:9/v1",
                       "EXECBENCH_VLLM_COMMAND": STANDIN,
                       "EXECBENCH_SGLANG_COMMAND": STANDIN, "HF_HUB_OFFLINE": "1"}.items():
        monkeypatch.setenv(var, value)
    names = listed("models")
    assert "reference/shortcut" in names
    # replay/<file> reads its file when made: replay/m is the one written here
    (tmp_path / "m").write_text('{"instance_id": "x", "response": "1"}\n')
    for pattern in names:
        # hf/ loads its model when made: a folder that is not there, so nothing is fetched
        name = f"hf/{tmp_path / 'no-model'}" if pattern.startswith("hf/") else a_name(pattern)
        try:
            model = get_model(name)
        except ModelError as exc:  # hf/ took the name: without its extra, or no such model
            assert pattern.startswith("hf/") and ("hf extra" in str(exc)
                                                  or f"cannot load {name}" in str(exc)), exc
            continue
        assert model.name == name


def test_every_model_the_registry_makes_is_listed() -> None:
    names = listed("models")
    for provider in MODELS.names():
        assert any(name.startswith(f"{provider}/") for name in names), provider
    assert {f"reference/{name}" for name in REFERENCES.names()} <= set(names)
    assert {name.partition("/")[0] for name in names} == set(MODELS.names())


def test_formats_listed_are_the_formats_accepted(tmp_path: Path) -> None:
    names = listed("formats")
    assert names == [*FORMATS.names(), GENERATED]
    for name in FORMATS.names():
        with pytest.raises(SourceError, match="no such file or folder"):
            load_source(str(tmp_path / "nowhere"), name)
    assert load_source(GENERATED, count=2).programs
    with pytest.raises(SourceError, match="unknown format 'cruxevl'; did you mean 'cruxeval'?"):
        load_source(str(tmp_path / "nowhere"), "cruxevl")


def test_tasks_listed_are_the_tasks_accepted(tmp_path: Path) -> None:
    listing = listed("tasks")
    split = listing.index("families")
    names, grouped = listing[:split], listing[split + 1:]
    assert names == TASKS.names()
    assert task_list(",".join(names)) == names
    # a family's name stands for its tasks (issue #23), each named once
    assert sorted(grouped) == sorted({TASKS.get(name).family for name in names})
    for family in grouped:
        assert task_list(family) == [n for n in names if TASKS.get(n).family == family]
    assert task_list("output,prediction,dexbench") == ["output", "input", "counterfactual",
                                                       "coverage"]
    done = CliRunner().invoke(app, ["build", "dsl", "--out", str(tmp_path / "suite"),
                                    "--tasks", "outptu,input"])
    assert done.exit_code == 2
    assert "unknown task 'outptu'; did you mean 'output'? known tasks: " in done.output


def test_layouts_listed_are_the_layouts_report_takes(tmp_path: Path) -> None:
    names = listed("layouts")
    assert names == LAYOUTS.names()
    for name in names:
        done = CliRunner().invoke(app, ["report", str(tmp_path), "--layout", name])
        assert "no run with results to report" in done.output, (name, done.output)
    done = CliRunner().invoke(app, ["report", str(tmp_path), "--layout", "leaderbord"])
    assert "unknown layout 'leaderbord'; did you mean 'leaderboard'?" in done.output
