"""Execution simulation (CES): the ``simulation`` task.

The prompt shows the program with every loop and condition line annotated with ``??``
placeholders (``sites``, ``annotate``), the call, and, with ``--shots 1``, one worked
example picked by construct mix (``examples``). The answer fills every placeholder with the
list of its values over the run and states the return value (``answers``). The build
evaluates the compounds on their true parts once (``calibrate``): which ones Rule 1 can
check, and the whole iterable of a loop left early, an answer as right as the items taken.
Scoring (``rules``) marks each property right or wrong, applies the three coherence rules and puts
the sample in one of four classes: coherent with the right output (the only ``correct``
verdict), coherent with a wrong output (with its divergence point), incoherent with the
right output (suspiciously correct), incoherent with a wrong output.

Build: a call qualifies when it returns normally with a literal value and its run's
properties were recorded in full (every other call is listed in the manifest's skips with
why); ``-T tests=K`` calls per program are taken (``coverage``).
Each instance records its program's construct category (CO/LO/LC/Others, the paper's
Table 1: statement-level ``if``/``for``/``while``) and its call's prime-path coverage.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from execbench.analysis.shape import shape_of
from execbench.sandbox.trace import TraceOptions
from execbench.tasks.base import (
    CORRECT,
    INCORRECT,
    Breakdown,
    BuildContext,
    Instance,
    Metric,
    Place,
    Score,
    SkipInstance,
    TaskOption,
    pass_at_1,
)
from execbench.tasks.ces import coverage, examples
from execbench.tasks.ces.annotate import annotate
from execbench.tasks.ces.answers import OUTPUT, read_answer, stated_output
from execbench.tasks.ces.calibrate import calibrate
from execbench.tasks.ces.payload import (
    Coverage,
    Example,
    ProgramFacts,
    Property,
    SimulationQuestion,
    SimulationTruth,
)
from execbench.tasks.ces.rules import Stated, divergence, judge, stated
from execbench.tasks.ces.sites import properties_of, properties_problem
from execbench.tasks.ces.summary import summarize
from execbench.tasks.ces.summary_payload import CATEGORIES, CLASSES, SimulationSummary
from execbench.tasks.common.answers import (
    EMPTY,
    read_value,
    string_match,
    string_match_metric,
    unparsable,
)
from execbench.tasks.common.extract import answer_text
from execbench.tasks.common.returns import no_value
from execbench.tasks.registry import register
from execbench.tasks.roles import Roles, Task
from execbench.tasks.templating import CALL, TemplateVar
from execbench.values import Encoded, LiteralError, equal, to_literal

if TYPE_CHECKING:
    from execbench.json_types import JSONObject, Recordable
    from execbench.kept import Kept
    from execbench.program import Program
    from execbench.sandbox.pool import Sandbox
    from execbench.sandbox.trace import Trace
    from execbench.tasks.protocol import Protocol

PROPERTIES = TraceOptions(recorder="properties")

TESTS = TaskOption("tests", (str(coverage.DEFAULT_TESTS),), "calls per program, those "
                   "touring different prime paths first", whole=True)


def _tests(ctx: BuildContext) -> int:
    return int(TESTS.value(ctx))


def answer_lines(properties: Sequence[Property], values: dict[str, str], output: str) -> str:
    """An answer in the format ``score`` reads: one line per placeholder, then the output."""
    lines = [f"[{prop.id}] = {values[prop.id]}" for prop in properties]
    return "[ANSWER]\n" + "\n".join([*lines, f"[{OUTPUT}] = {output}"]) + "\n[/ANSWER]"


def _listed(values: list[Encoded]) -> str:
    return "[" + ", ".join(to_literal(v) for v in values) + "]"


class Simulation(Roles):
    name = "simulation"
    template_names = ("simulation",)
    template_vars = (
        TemplateVar("annotated", "the code, each line a placeholder is asked on ending with "
                    "a comment that lists its tags (`# [3a] word = ??`)"),
        CALL)
    template_needs = (frozenset({"annotated"}),)
    description = ("simulate a run: values at every loop and condition, and the output; "
                   "scored for coherence (CES)")
    needs_sandbox = True
    family = "ces"
    layout = "ces"
    breakdowns = (Breakdown("construct", ("category",)),)
    summary_data: tuple[str, ...] = ProgramFacts.FIELDS
    trace_options = PROPERTIES
    options = (TESTS,)
    restated = (("repr", "value"),)

    def metrics(self) -> tuple[Metric, ...]:
        def share(key: str) -> Place:
            return Place.summary(self.name, "all", key)

        return (
            Metric("coherent & correct", share("coherent_correct"), headline=True,
                   description="share of samples with a coherent simulation and the right "
                   "output (the only success)"),
            Metric("suspicious", share("incoherent_correct"), higher_is_better=False,
                   headline=True, description="share of samples with the right output "
                   "after an incoherent simulation"),
            Metric("output right", share("output_right"), headline=True,
                   description="share of samples whose [output] is the value returned "
                   "(type-aware comparison), coherent or not"),
            string_match_metric(self.name, "all", name="output string match",
                                key="output_string_match"),
            Metric("coherent & wrong", share("coherent_incorrect"), higher_is_better=False,
                   description="share of samples simulated coherently to a wrong output"),
            Metric("incoherent & wrong", share("incoherent_incorrect"),
                   higher_is_better=False, description="share of samples incoherent with a "
                   "wrong output"),
            Metric("strong consistency", Place.summary(self.name, "consistency", "strong"),
                   description="share of programs simulated right on all calls, covering "
                   "different prime paths"),
            pass_at_1(self.name, headline=False),
        )

    def unusable(self, trace: Trace) -> str | None:
        """A call that raised or returned no literal has no output to simulate to; one
        whose properties were not all recorded has no complete truth."""
        return no_value(trace) or properties_problem(trace)

    def choose_calls(self, program: Program, traced: list[tuple[int, Trace]],
                     ctx: BuildContext) -> list[int]:
        digests = {index: self._coverage(program, index, trace, ctx).digest
                   for index, trace in traced}
        return coverage.choose(sorted(digests), digests, _tests(ctx),
                               random.Random(f"{ctx.seed}/{program.id}/ces"))

    @staticmethod
    def _coverage(program: Program, index: int, trace: Trace, ctx: BuildContext
                  ) -> Coverage:
        """A call's coverage, worked out once per build (choosing calls needs it too)."""
        key = ("ces-coverage", program.id, index)
        if key not in ctx.memo:
            ctx.memo[key] = coverage.coverage(program.code, trace)
        return ctx.memo[key]

    def build(self, program: Program, call_index: int, trace: Trace,
              ctx: BuildContext) -> list[Recordable]:
        properties, compounds = properties_of(program.code, trace)
        try:
            annotated = annotate(program.code, properties)
        except ValueError as exc:
            raise SkipInstance(str(exc)) from None
        found = calibrate(program.code, properties, compounds, ctx.sandbox)
        assert trace.value is not None and trace.value_repr is not None  # else ``unusable``
        truth = SimulationTruth(
            trace.value, trace.value_repr,
            tuple(replace(p, whole=found.whole.get(p.id)) for p in properties),
            found.checked, found.unchecked)
        facts = ProgramFacts(shape_of(program.code).category,
                             self._coverage(program, call_index, trace, ctx))
        return [SimulationQuestion(truth, annotated, facts, _example(program.code, ctx))]

    def suite_counts(self, instances: list[Instance]) -> dict[str, int]:
        """Programs per construct category (the paper's Table 1 rows)."""
        category = {i.program_id: ProgramFacts.from_record(i.data).category for i in instances}
        return {name: sum(c == name for c in category.values()) for name in CATEGORIES}

    def prompt_vars(self, instance: Instance, protocol: Protocol) -> dict[str, Any]:
        question = SimulationQuestion.from_record(instance.data)
        example = question.example
        shown = {"annotated": example.annotated, "call": example.call, "worked": "",
                 "answer": example.answer}
        return {"annotated": question.annotated, "call": instance.call,
                "examples": [shown] if protocol.shots else []}

    def reference_response(self, instance: Instance) -> str:
        truth = _truth(instance)
        values = {p.id: _listed(p.values) for p in truth.properties}
        return answer_lines(truth.properties, values, truth.repr)

    def shortcut_response(self, instance: Instance) -> str:
        """The right output after a simulation whose every property is wrong: what a
        model that recalls the answer without simulating might write."""
        truth = _truth(instance)
        values = {p.id: "[None]" if not p.values else "[]" for p in truth.properties}
        return answer_lines(truth.properties, values, truth.repr)

    def score(self, instance: Instance, response: str | None,
              sandbox: Sandbox | None) -> Score:
        question = SimulationQuestion.from_record(instance.data)
        extra: JSONObject = {"category": question.facts.category}
        text = answer_text(response)
        if text is None:
            return unparsable(None, EMPTY, extra)
        truth = question.truth
        labels = truth.labels()
        found = read_answer(text, labels)
        extra["output_string_match"] = string_match(found.get(OUTPUT) or stated_output(text),
                                                    truth.repr)
        if OUTPUT not in found:
            return unparsable(None, _format_missed(found), extra)
        try:
            output = read_value(found[OUTPUT])
        except LiteralError as exc:
            return unparsable(found[OUTPUT], f"no readable [{OUTPUT}] line: {exc}", extra)
        given: dict[str, Stated | None] = {tag: stated(found.get(tag)) for tag in labels}
        output_right = equal(output, truth.value)
        verdict = judge(instance.code, truth, given, output_right, sandbox)
        name = CLASSES[(verdict.coherent, output_right)]
        right = sum(verdict.right.values()) + output_right
        fired = {rule: tags for rule, tags in verdict.fired.items() if tags}
        extra.update({"class": name, "output_right": output_right, "rules": list(fired),
                      "fired": {rule: list(tags) for rule, tags in fired.items()},
                      "properties": len(verdict.right),
                      "properties_right": sum(verdict.right.values()),
                      "unread": [tag for tag in sorted(given) if given[tag] is None]})
        if verdict.unchecked:
            extra["rule1_unchecked"] = verdict.unchecked
        if verdict.coherent and not output_right:
            extra["divergence"] = divergence(truth.properties, given).to_record()
        return Score(CORRECT if name == "coherent_correct" else INCORRECT,
                     answer=to_literal(output), score=right / (len(verdict.right) + 1),
                     detail=None if verdict.coherent else "incoherent: " + ", ".join(fired),
                     extra=extra, stated=given)

    def summarize(self, samples: list[Kept],
                  instances: dict[str, Instance]) -> SimulationSummary:
        return summarize(samples, instances)


def _format_missed(found: dict[str, str]) -> str:
    """What an answer without a readable output line should have been: an answer in
    another format (annotated code, prose) is told the format, not called empty."""
    return (f"expected one `[tag] = [values]` line per placeholder and `[{OUTPUT}] = VALUE`, "
            f"between [ANSWER] and [/ANSWER]; found no readable `[{OUTPUT}]` line"
            + ("" if found else " nor any placeholder's"))


def _truth(instance: Instance) -> SimulationTruth:
    return SimulationQuestion.from_record(instance.data).truth


def _example(code: str, ctx: BuildContext) -> Example:
    """The worked example for a program, traced once per build (see ``examples``)."""
    from execbench.sandbox.pool import Job

    chosen = examples.pick(code)
    key = ("ces-example", chosen.name)
    if key not in ctx.memo:
        trace = ctx.sandbox.run(Job(chosen.code, chosen.entry_point, chosen.args, PROPERTIES))
        if trace.status != "ok":
            raise RuntimeError(f"the worked example {chosen.name!r} did not run: {trace}")
        properties, _ = properties_of(chosen.code, trace)
        values = {p.id: _listed(p.values) for p in properties}
        ctx.memo[key] = Example(chosen.name, annotate(chosen.code, properties),
                                f"{chosen.entry_point}({chosen.args})",
                                answer_lines(properties, values, trace.value_repr or ""))
    return ctx.memo[key]


register(Task.of(Simulation()))
