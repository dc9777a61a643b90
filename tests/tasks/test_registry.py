"""A new task is one class and one registration: it then shows in ``execbench ls tasks``,
in ``results.json`` (its pass@k, its own summary, its declared metrics) and in the reports,
with no other change anywhere."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from execbench.cli import app
from execbench.json_types import JSONObject
from execbench.kept import Kept
from execbench.runner import RunConfig, run
from execbench.suite import BuildOptions, build_suite
from execbench.tasks import registry
from execbench.tasks.base import Breakdown, Instance, Metric, Place, Score, SkipInstance, pass_at_1
from execbench.tasks.common.extract import answer_text
from execbench.tasks.protocol import Protocol
from execbench.tasks.roles import Roles, Task
from execbench.values import decode
from tests.helpers.results import make_results


@dataclass(frozen=True)
class Even:
    """The toy's payload: whether the call's result is even."""

    truth: bool

    def to_record(self) -> JSONObject:
        return {"truth": self.truth}


@dataclass(frozen=True)
class SaidEven:
    """The toy's summary: the share of samples that said yes."""

    share: float

    def to_record(self) -> JSONObject:
        return {"said even": self.share}


class Parity(Roles):
    """Is the call's result even? (A toy: the point is what it does not need.)"""

    name = "toy-parity"
    description = "say whether a call returns an even number"
    needs_sandbox = False
    family = "toy"
    breakdowns = (Breakdown("arguments", ("args",)),)

    def build(self, program, call_index, trace, ctx) -> list[Even]:
        if trace.status != "ok" or trace.value is None or trace.value[0] != "int":
            raise SkipInstance("the call does not return an int")
        return [Even(decode(trace.value) % 2 == 0)]

    def prompt(self, instance: Instance, protocol: Protocol) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"{instance.code}\nIs "
                 f"{instance.entry_point}({instance.args}) even? "
                 "Answer yes or no in [ANSWER][/ANSWER]."}]

    def reference_response(self, instance: Instance) -> str:
        return f"[ANSWER]{'yes' if instance.data['truth'] else 'no'}[/ANSWER]"

    def score(self, instance: Instance, response: str | None, sandbox: Any) -> Score:
        said = (answer_text(response) or "").strip().lower()
        if said not in ("yes", "no"):
            return Score("unparsable", answer=said)
        right = (said == "yes") == instance.data["truth"]
        return Score("correct" if right else "incorrect", answer=said, extra={"said": said})

    def metrics(self) -> tuple[Metric, ...]:
        return (pass_at_1(self.name),
                Metric("said even", Place.summary(self.name, "said even"), headline=True))

    def summarize(self, samples: list[Kept], instances: dict[str, Instance]) -> SaidEven:
        said = [sample.added("said") for sample in samples]
        return SaidEven(said.count("yes") / len(samples))


@pytest.fixture()
def toy() -> Iterator[Task]:
    task = registry.register(Task.of(Parity()))
    yield task
    registry.TASKS.unregister(task.name)


def test_a_registered_task_appears_in_ls_results_and_reports(toy: Task,
                                                              tmp_path: Path) -> None:
    cli = CliRunner()
    listed = cli.invoke(app, ["ls", "tasks"])
    assert listed.exit_code == 0 and "toy-parity" in listed.output and "[toy]" in listed.output

    source = tmp_path / "programs.jsonl"
    source.write_text("".join(json.dumps(record) + "\n" for record in [
        {"id": "double", "code": "def f(x):\n    return 2 * x\n", "entry_point": "f",
         "calls": ["3", "4"]},
        {"id": "name", "code": "def g():\n    return 'odd'\n", "entry_point": "g",
         "calls": [""]},
    ]))
    build_suite([str(source)], tmp_path / "suite",
                BuildOptions(tasks=["output", "toy-parity"], workers=1))
    results = run(RunConfig(suite=str(tmp_path / "suite"), model="reference/oracle"),
                  tmp_path / "run")
    assert results["metrics"]["toy-parity"]["all"]["pass@1"] == 1.0
    assert results["metrics"]["toy-parity"]["all"]["instances"] == 2  # g returns a str
    assert results["task_metrics"]["toy-parity"] == {"said even": 1.0}
    by_arguments = results["metrics"]["toy-parity"]["breakdowns"]["arguments"]
    assert {name: group["instances"] for name, group in by_arguments.items()} == {"3": 1, "4": 1}
    assert "breakdowns" not in results["metrics"]["output"]
    declared = {(m["task"], m["name"]) for m in results["declared_metrics"]}
    assert {("toy-parity", "pass@1"), ("toy-parity", "said even"), ("output", "pass@1")} \
        <= declared

    table = cli.invoke(app, ["report", str(tmp_path / "run"), "--format", "markdown"])
    assert table.exit_code == 0 and "### toy: headline metrics (%)" in table.output
    assert "| toy-parity pass@1 n=2 | toy-parity said even n=2 |" in table.output
    board = cli.invoke(app, ["report", str(tmp_path / "run"), "--layout", "leaderboard",
                             "--format", "csv"])
    assert board.exit_code == 0, board.output
    header, row = board.output.strip().splitlines()[-2:]
    assert "toy: toy-parity said even (%)" in header and row.endswith(",100.0")


def test_declared_metrics_read_their_place_in_results() -> None:
    metric = Metric("said even", Place.summary("toy", "said even"))
    assert metric.read(make_results(task_metrics={"toy": {"said even": 0.25}}, declared=())) == 0.25
    assert metric.read(make_results()) is None
    assert metric.read(make_results(task_metrics={"toy": {"said even": True}}, declared=())) is None
    assert metric.read_interval(make_results()) is None
    samples = [{"instance_id": f"toy/s/p/{i}", "task": "toy", "source": "s", "sample": 0,
                "verdict": verdict, "correct": verdict == "correct"}
               for i, verdict in enumerate(["correct", "incorrect"])]
    results = make_results(samples=samples, declared=())
    assert pass_at_1("toy").read(results) == 0.5
    low, high = pass_at_1("toy").read_interval(results) or (None, None)
    assert low is not None and high is not None and low <= 0.5 <= high


def test_families_declare_the_breakdowns_reports_chart() -> None:
    from execbench.tasks import get_task

    declared = {name: [b.name for b in get_task(name).reporting.breakdowns]
                for name in ("statement", "loop", "mutation", "choice", "simulation")}
    assert declared == {"statement": ["kind"], "loop": ["kind"],
                        "mutation": ["mutation operator"], "choice": ["mutation operator"],
                        "simulation": ["construct"]}


def test_every_built_in_task_declares_a_family_and_a_headline_metric() -> None:
    from execbench.reports.layouts import layouts
    from execbench.tasks import get_task, task_names

    for name in task_names():
        task = get_task(name)
        assert task.family != "other" and any(m.headline for m in task.reporting.metrics()), name
        assert task.reporting.layout is None or task.reporting.layout in layouts(), name
    assert {p.name for p in registry.pairings().values()} == {"dual"}


class Disturbed(Parity):
    """The toy, whose first ``disturbed`` scorings meet CPython's AST race."""

    name = "toy-disturbed"

    def __init__(self, disturbed: int) -> None:
        self.left = disturbed

    def score(self, instance: Instance, response: str | None, sandbox: Any) -> Score:
        if self.left:
            self.left -= 1
            raise SystemError(f"{registry.AST_RACE} (before=51, after=48)")
        return super().score(instance, response, sandbox)


@pytest.mark.parametrize(("disturbed", "verdict"), [(1, "correct"), (3, "correct"),
                                                    (4, "scoring_error")])
def test_a_scoring_that_meets_the_ast_race_is_judged_again(disturbed: int,
                                                           verdict: str) -> None:
    """CPython 3.11 counts ast recursion per interpreter (gh-106905): a parse in one
    scoring thread can make one in another raise SystemError. Three retries, then the
    scoring error as for any other exception."""
    task = registry.register(Task.of(Disturbed(disturbed)))
    try:
        instance = Instance(id="toy-disturbed/p/0", task=task.name, source="s",
                            program_id="p", call_index=0, code="def f(x):\n    return x\n",
                            entry_point="f", args="2", data={"truth": True})
        assert registry.judge(instance, "[ANSWER]yes[/ANSWER]", None).verdict == verdict
    finally:
        registry.TASKS.unregister(task.name)


@pytest.mark.parametrize("failure", [TypeError("a rule's own bug"),
                                     SystemError(f"{registry.AST_RACE} (before=51, after=48)")])
def test_a_labelling_that_fails_leaves_the_verdict_unlabelled(
        failure: Exception, monkeypatch: pytest.MonkeyPatch) -> None:
    """The error label is read after the verdict: a rule that raises (its own bug, or the
    AST race every time) keeps the verdict and leaves it without a label; a race met once
    is labelled on the next try."""
    task = registry.register(Task.of(Parity()))
    tries: list[int] = []

    def failing(instance: Instance, response: str | None, score: Score) -> Score:
        tries.append(1)
        if isinstance(failure, SystemError) and len(tries) > 4:
            raise AssertionError("labelled again past the retries")
        raise failure

    try:
        instance = Instance(id="toy/p/0", task=task.name, source="s", program_id="p",
                            call_index=0, code="def f(x):\n    return x\n", entry_point="f",
                            args="2", data={"truth": True})
        monkeypatch.setattr(registry, "labelled", failing)
        judged = registry.judge(instance, "[ANSWER]no[/ANSWER]", None)
        assert judged.verdict == "incorrect" and "error_label" not in judged.extra
        assert len(tries) == (4 if isinstance(failure, SystemError) else 1)

        def once(instance: Instance, response: str | None, score: Score) -> Score:
            if not tries.pop():
                raise failure
            return replace(score, extra={**score.extra, "error_label": "computation"})

        tries[:] = [1, 0]  # the first try fails, the second labels
        monkeypatch.setattr(registry, "labelled", once)
        if isinstance(failure, SystemError):
            judged = registry.judge(instance, "[ANSWER]no[/ANSWER]", None)
            assert judged.extra["error_label"] == "computation"
    finally:
        registry.TASKS.unregister(task.name)
