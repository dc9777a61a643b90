"""Generalization tasks: originals against their mutants (the generalization paper, §5).

For each program one call is chosen with the seed and the program is mutated for it
(``mutation``: a single-site mutant that returns normally with a different output,
the one whose executed lines are closest to the original's). A program without such a
mutant yields no instance, so originals and mutants stay paired.

* ``mutation`` (execution prediction): two instances per problem, the original program
  and the mutant, each asking for the call's output. Besides correctness, each sample
  records whether it *reverted*, i.e. gave the other program's output. Metrics: OC/MC
  (correct on original/mutant) and OR/MR (reverted), each the mean over problems of the
  fraction of samples; reversion only over problems whose output is not a boolean.
* ``choice`` (execution choice): both programs, as A and B with no word of mutation,
  asked twice with the order swapped; the model picks one and predicts its output as JSON
  (``chosen_program``, ``assertion``). Metrics: Pref (share of answers choosing the
  original), and OC/OR (MC/MR) over the answers that chose the original (mutant).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from execbench.analysis.shape import bin_order, loc_bin, shape_of
from execbench.mutation import Mutant, mutant_for, mutation_call, mutation_calls
from execbench.tasks.base import (
    CORRECT,
    ERROR,
    INCORRECT,
    Breakdown,
    BuildContext,
    Instance,
    Metric,
    Place,
    Score,
    SkipInstance,
    pass_at_1,
)
from execbench.tasks.common.answers import (
    json_value,
    read_value,
    string_match_metric,
    unparsable,
    value_string_match,
)
from execbench.tasks.common.extract import answer_text
from execbench.tasks.generalization_payload import (
    MUTANT,
    ORDERS,
    ORIGINAL,
    ChoiceMetrics,
    ChoiceQuestion,
    ChoiceSummary,
    M,
    MutationMetrics,
    MutationQuestion,
    MutationSummary,
    Outcome,
    PairFacts,
    Rates,
    Shown,
)
from execbench.tasks.prediction import OutputPrediction, assertion_response
from execbench.tasks.registry import register
from execbench.tasks.roles import Roles, Task
from execbench.tasks.templating import CALL, TemplateVar
from execbench.values import LiteralError, equal, to_literal

if TYPE_CHECKING:
    from execbench.json_types import JSON, JSONObject, Recordable
    from execbench.kept import Kept
    from execbench.program import Program
    from execbench.sandbox.pool import Sandbox
    from execbench.sandbox.trace import Trace
    from execbench.tasks.protocol import Protocol


class _Paired(Roles):
    """Call choice and mutation shared by both tasks."""

    family = "generalization"
    layout = "generalization"
    breakdowns = (Breakdown("mutation operator", ("mutation", "operator")),)
    summary_data: tuple[str, ...] = PairFacts.FIELDS
    asks_inputs = True

    def choose_calls(self, program: Program, traced: list[tuple[int, Trace]],
                     ctx: BuildContext) -> list[int]:
        if ctx.inputs > 1:  # each a problem of its own, as the paper's 3 inputs a program
            return mutation_calls(program, traced, ctx.seed, ctx.inputs)
        index = mutation_call(program, traced, ctx.seed)
        return [] if index is None else [index]

    def _pair(self, program: Program, call_index: int, trace: Trace,
              ctx: BuildContext) -> _Pair:
        found = mutant_for(program, call_index, trace, ctx.sandbox, ctx.seed, ctx.memo)
        if found is None:
            raise SkipInstance("no mutant runs without error and changes the output")
        mutant, mutant_trace = found
        original = _outcome(trace)
        return _Pair(mutant, original, _outcome(mutant_trace), original.value[0] == "bool",
                     shape_of(program.code).loc)

    name: str


@dataclass(frozen=True)
class _Pair:
    """A program and its mutant for one call, as both tasks build on them."""

    mutant: Mutant
    original: Outcome
    changed: Outcome
    boolean: bool
    loc: int

    def facts(self, variant: str) -> PairFacts:
        return PairFacts(variant, self.boolean, self.loc)

    @property
    def mutation(self) -> JSONObject:
        """The common field every instance of the pair sets: the mutation it rests on."""
        return self.mutant.describe()


def _outcome(trace: Trace) -> Outcome:
    assert trace.value is not None and trace.value_repr is not None, \
        "a mutation call returns a value"
    return Outcome(trace.value, trace.value_repr)


def _summary_metric(task: str, key: str, description: str, higher: bool = True) -> Metric:
    return Metric(key, Place.summary(task, "all", key), higher_is_better=higher,
                  headline=True, description=description)


class MutationPrediction(_Paired):
    name = "mutation"
    description = "predict the output of a program and of its mutant; measures reversion"
    needs_sandbox = False
    restated = (("repr", "value"), ("other_repr", "other"))

    def metrics(self) -> tuple[Metric, ...]:
        return (pass_at_1(self.name, headline=False),
                _summary_metric(self.name, "OC", "output right on the original"),
                _summary_metric(self.name, "MC", "output right on the mutant"),
                _summary_metric(self.name, "OR", "the mutant's output given for the "
                                "original", higher=False),
                _summary_metric(self.name, "MR", "the original's output given for the "
                                "mutant (recall, not reasoning)", higher=False),
                string_match_metric(self.name, "all"))
    _output = OutputPrediction()
    template_names = _output.template_names
    template_vars = _output.template_vars

    def build(self, program: Program, call_index: int, trace: Trace,
              ctx: BuildContext) -> list[Recordable]:
        pair = self._pair(program, call_index, trace, ctx)
        return [MutationQuestion(pair.facts(ORIGINAL), pair.original, pair.changed,
                                 pair.mutation),
                MutationQuestion(pair.facts(MUTANT), pair.changed, pair.original,
                                 pair.mutation, pair.mutant.code)]

    def template_of(self, instance: Instance) -> str:
        return self._output.template_of(instance)

    def prompt_vars(self, instance: Instance, protocol: Protocol) -> dict[str, Any]:
        return self._output.prompt_vars(instance, protocol)

    def reference_response(self, instance: Instance) -> str:
        return self._output.reference_response(instance)

    def original_response(self, instance: Instance) -> str:
        """What a model that recalls the unmutated program would answer."""
        return assertion_response(instance,
                                  MutationQuestion.from_record(instance.data).original.repr)

    def score(self, instance: Instance, response: str | None,
              sandbox: Sandbox | None) -> Score:
        question = MutationQuestion.from_record(instance.data)
        extra = question.facts.to_record()
        text = answer_text(response)
        extra["string_match"] = value_string_match(text, question.truth.repr)
        try:
            value = read_value(text)
        except LiteralError as exc:
            return unparsable(text, str(exc), {**extra, "reverted": False})
        extra["reverted"] = equal(value, question.other.value)
        verdict = CORRECT if equal(value, question.truth.value) else INCORRECT
        return Score(verdict, answer=to_literal(value), extra=extra)

    def summarize(self, samples: list[Kept],
                  instances: dict[str, Instance]) -> MutationSummary:
        return MutationSummary(*_by_source(samples, instances, _prediction_metrics))


_CHOICE_EXAMPLE = {
    "call": "f([-1, 0, 3])",
    "code_a": "def f(xs):\n    return [x * 2 for x in xs if x > 0]",
    "code_b": "def f(xs):\n    return [x * 2 for x in xs if x >= 0]",
    "worked": "Program A keeps the items above 0. Of -1, 0 and 3 only 3 is kept, and it is "
              "doubled: the call returns [6].",
    "answer": '[ANSWER]\n{"chosen_program": "A", "assertion": "assert f([-1, 0, 3]) == [6]"}'
              "\n[/ANSWER]"}
"""The worked example ``--shots`` shows (the two programs differ in one comparison)."""


class ExecutionChoice(_Paired):
    name = "choice"
    template_names = ("choice",)
    template_vars = (
        CALL,
        TemplateVar("code_a", "program A (the original or the mutant, in the instance's "
                    "order)"),
        TemplateVar("code_b", "program B"))
    template_needs = (frozenset({"code_a"}), frozenset({"code_b"}))
    description = "choose the original or the mutant (unlabelled) and predict its output"
    needs_sandbox = False

    def metrics(self) -> tuple[Metric, ...]:
        return (pass_at_1(self.name, headline=False),
                _summary_metric(self.name, "Pref", "share of answers choosing the original"),
                _summary_metric(self.name, "MC", "output right when the mutant was chosen"),
                _summary_metric(self.name, "MR", "the original's output given when the "
                                "mutant was chosen", higher=False),
                string_match_metric(self.name, "all"))

    def build(self, program: Program, call_index: int, trace: Trace,
              ctx: BuildContext) -> list[Recordable]:
        pair = self._pair(program, call_index, trace, ctx)
        original = Shown(program.code, pair.original)
        changed = Shown(pair.mutant.code, pair.changed)
        return [ChoiceQuestion(pair.facts(order),
                               *((original, changed) if order == "OM" else (changed, original)),
                               pair.mutation) for order in ORDERS]

    def prompt_vars(self, instance: Instance, protocol: Protocol) -> dict[str, Any]:
        question = ChoiceQuestion.from_record(instance.data)
        return {"call": instance.call, "code_a": question.a.code, "code_b": question.b.code,
                "examples": [_CHOICE_EXAMPLE][:protocol.shots]}

    def worked_call(self, instance: Instance) -> tuple[str, str, str]:
        """The run of program A, the one ``reference_response`` chooses."""
        return ChoiceQuestion.from_record(instance.data).a.code, instance.entry_point, \
            instance.args

    def _response(self, instance: Instance, label: str) -> str:
        call = instance.call
        value = ChoiceQuestion.from_record(instance.data).shown(label).outcome.repr
        answer = {"chosen_program": label, "assertion": f"assert {call} == {value}"}
        return f"[ANSWER]\n{json.dumps(answer)}\n[/ANSWER]"

    def reference_response(self, instance: Instance) -> str:
        return self._response(instance, "A")

    def original_response(self, instance: Instance) -> str:
        return self._response(instance,
                              ChoiceQuestion.from_record(instance.data).original_label)

    def score(self, instance: Instance, response: str | None,
              sandbox: Sandbox | None) -> Score:
        question = ChoiceQuestion.from_record(instance.data)
        extra: JSONObject = {"boolean": question.facts.boolean, "loc": question.facts.loc,
                             "string_match": False}
        text = answer_text(response)
        answer = json_value(text) if text else None
        if not isinstance(answer, dict) or answer.get("chosen_program") not in ("A", "B") \
                or not isinstance(answer.get("assertion"), str):
            return unparsable(text, 'expected {"chosen_program": "A"|"B", "assertion": "..."}',
                              extra)
        label = answer["chosen_program"]
        other = "B" if label == "A" else "A"
        extra["chose"] = ORIGINAL if label == question.original_label else MUTANT
        extra["string_match"] = value_string_match(answer["assertion"],
                                                   question.shown(label).outcome.repr)
        try:
            value = read_value(answer["assertion"])
        except LiteralError as exc:
            return unparsable(answer["assertion"], str(exc), extra)
        extra["reverted"] = equal(value, question.shown(other).outcome.value)
        verdict = CORRECT if equal(value, question.shown(label).outcome.value) else INCORRECT
        return Score(verdict, answer=f"{label}: {to_literal(value)}", extra=extra)

    def summarize(self, samples: list[Kept],
                  instances: dict[str, Instance]) -> ChoiceSummary:
        return ChoiceSummary(*_by_source(samples, instances, _choice_metrics))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _per_instance(samples: list[Kept]) -> dict[str, list[Kept]]:
    grouped: dict[str, list[Kept]] = {}
    for sample in samples:
        grouped.setdefault(sample.instance_id, []).append(sample)
    return grouped


def _facts(instances: dict[str, Instance], sample: Kept) -> PairFacts:
    return PairFacts.from_record(instances[sample.instance_id].data)


def _reverted(sample: Kept) -> bool:
    return bool(sample.added("reverted"))


def _chose(sample: Kept) -> JSON:
    """``original`` or ``mutant``; None where the answer made no readable choice."""
    return sample.added("chose")


def _prediction_metrics(samples: list[Kept],
                        instances: dict[str, Instance]) -> MutationMetrics:
    """OC, OR, MC, MR: per problem the fraction of its samples, averaged over problems.

    A sample whose request failed counts as neither correct nor reverted."""
    rates, problems = [], []
    groups = _per_instance(samples)
    for variant in (ORIGINAL, MUTANT):
        correct, reverted, count = [], [], 0
        for key in sorted(groups):
            group, facts = groups[key], PairFacts.from_record(instances[key].data)
            if facts.variant != variant:
                continue
            count += 1
            correct.append(sum(bool(s.correct) for s in group) / len(group))
            if not facts.boolean:
                reverted.append(sum(_reverted(s) for s in group) / len(group))
        rates.append(Rates(_mean(correct), _mean(reverted)))
        problems.append(count)
    return MutationMetrics(rates[0], rates[1], problems[0], problems[1],
                           _string_matched(samples))


def _choice_metrics(samples: list[Kept],
                    instances: dict[str, Instance]) -> ChoiceMetrics:
    """Pref over answers that made a choice; OC/OR and MC/MR over answers by choice.
    Failed requests and unreadable answers made no choice and are counted apart."""
    chosen = [s for s in samples if _chose(s)]
    errors = sum(s.verdict == ERROR for s in samples)
    rates, answers = [], []
    for side in (ORIGINAL, MUTANT):
        picked = [s for s in chosen if _chose(s) == side]
        rates.append(Rates(_mean([bool(s.correct) for s in picked]),
                           _mean([_reverted(s) for s in picked
                                  if not _facts(instances, s).boolean])))
        answers.append(len(picked))
    return ChoiceMetrics(_mean([_chose(s) == ORIGINAL for s in chosen]), len(samples), errors,
                         len(samples) - len(chosen) - errors, rates[0], rates[1],
                         answers[0], answers[1], _string_matched(samples))


def _string_matched(samples: list[Kept]) -> float | None:
    """The share of samples the lenient string comparison accepts (a failed request is
    not accepted); None with no samples."""
    return _mean([bool(s.added("string_match")) for s in samples])




def _by_source(samples: list[Kept], instances: dict[str, Instance],
               metric: Callable[[list[Kept], dict[str, Instance]], M],
               ) -> tuple[M, dict[str, M], dict[str, M]]:
    """The metrics over all samples, per source (by name) and per lines-of-code bin (in
    ``bin_order``): a summary's parts."""
    sources: dict[str, list[Kept]] = {}
    bins: dict[str, list[Kept]] = {}
    for sample in samples:
        sources.setdefault(sample.source, []).append(sample)
        bins.setdefault(loc_bin(_facts(instances, sample).loc), []).append(sample)
    return (metric(samples, instances),
            {name: metric(group, instances) for name, group in sorted(sources.items())},
            {name: metric(bins[name], instances) for name in sorted(bins, key=bin_order)})


register(Task.of(MutationPrediction()))
register(Task.of(ExecutionChoice()))
