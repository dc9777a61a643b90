"""The CodeSense tasks: ``statement``, ``block``, ``loop``, ``branch`` and ``alias``.

Each builds its instances from the call's facts (``facts``): a fact becomes an instance
when the value it asks for is a builtin value (or, with ``-T values=abstract``, has a
category); opaque ones are dropped and, when nothing is left, the call is skipped with
the count by kind. Of what is left, at most ``-T questions=N`` instances per call are
kept, taken in turn from each kind (so that rare kinds are not crowded out) in an order
shuffled with the build's seed, the call and the task: the same build gives the same
instances.

A recorded call with no fact of a task's kind is not that task's (``NotApplicable``), unless
its record could have asked one and says why not (``trace.extra["unasked"]``, by task: a
CodeSense statement record that asks no block question): then it is a skip with that
reason.

Each task asks about one kind of fact (``fact_type``), which decides the question, the
answer format and how an answer is read. Answers are read from our ``[ANSWER]`` block or
CodeSense's ``<ans>`` tags, with the literal parser, and compared with type-aware equality;
each score also says whether CodeSense's normalised string comparison would have accepted
the answer.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from execbench.sandbox.trace import TraceOptions
from execbench.sources.debugger_values import PLACEHOLDERS
from execbench.tasks.base import (
    CORRECT,
    INCORRECT,
    Breakdown,
    BuildContext,
    Instance,
    Metric,
    NotApplicable,
    Score,
    SkipInstance,
    TaskOption,
    pass_at_1,
)
from execbench.tasks.codesense import prompts
from execbench.tasks.codesense.facts import (
    AliasFact,
    BlockFact,
    BranchFact,
    Fact,
    LoopFact,
    NoFacts,
    StatementFact,
    YesNoFact,
    facts_for,
)
from execbench.tasks.codesense.payload import ConcreteTruth, FactQuestion, Truth, reference_text
from execbench.tasks.common import abstract
from execbench.tasks.common.abstract import CATEGORY, VALUES
from execbench.tasks.common.abstract_payload import SUMMARY_DATA, AbstractTruth, Filing, KindSummary
from execbench.tasks.common.answers import (
    EMPTY,
    string_match,
    string_match_metric,
    unparsable,
)
from execbench.tasks.common.balance import balance_metrics, class_balance, yes_no
from execbench.tasks.common.extract import codesense_answer_text
from execbench.tasks.common.objects import holds_objects, unshown
from execbench.tasks.registry import register
from execbench.tasks.roles import Roles, Task
from execbench.values import Encoded, LiteralError, equal, is_exact

if TYPE_CHECKING:
    from execbench.json_types import JSONObject, Recordable
    from execbench.kept import Kept
    from execbench.program import Program
    from execbench.sandbox.pool import Sandbox
    from execbench.sandbox.trace import Trace
    from execbench.tasks.protocol import Protocol

STATES = TraceOptions(states=True)

QUESTIONS = TaskOption("questions", ("5",), "at most N instances per call (CodeSense tasks)",
                       whole=True)
BLOCKS = TaskOption("blocks", ("3",), "ask about the first k = 1..N statements", whole=True)


def _choose(items: Sequence[tuple[str, object]], cap: int, rng: random.Random) -> list[int]:
    """Indices of at most ``cap`` items, taken in turn from each kind in a seeded order,
    returned in the items' order."""
    groups: dict[str, list[int]] = {}
    for index, (kind, _) in enumerate(items):
        groups.setdefault(kind, []).append(index)
    for members in groups.values():
        rng.shuffle(members)
    chosen: list[int] = []
    while len(chosen) < cap and any(groups.values()):
        for members in groups.values():
            if members and len(chosen) < cap:
                chosen.append(members.pop(0))
    return sorted(chosen)


def score_concrete(fact: Fact, truth: ConcreteTruth, response: str | None,
                   extra: JSONObject) -> Score:
    """Score an answer against a concrete question's truth (a value, a yes/no or a
    mapping, as ``fact`` reads it); ``extra`` (kind, values) is completed with the abstract
    category of the value (``abstract.CATEGORY``, where it has one and is no yes or no,
    which the class balance covers) and ``string_match``.
    A truth that is not comparable (a published value that is no
    literal) is judged by the string comparison alone, the only one it allows."""
    text = codesense_answer_text(response)
    matched = string_match(text, truth.text)
    filed = abstract.filed(truth.value) \
        if truth.comparable and not isinstance(fact, YesNoFact) else None
    extra = {**extra, **({CATEGORY: filed} if filed is not None else {}),
             "string_match": matched}
    if text is None:
        return unparsable(None, EMPTY, extra)
    if not truth.comparable:
        extra["comparable"] = False
        return Score(CORRECT if matched else INCORRECT, answer=text, extra=extra)
    try:
        value = fact.read_answer(text)
    except LiteralError as exc:
        return unparsable(text, str(exc), extra)
    return Score(CORRECT if equal(value, truth.value) else INCORRECT,
                 answer=fact.answer_text(value), extra=extra)


def concrete_truth(fact: Fact, value: Encoded, *, published: bool = False
                   ) -> ConcreteTruth | None:
    """The truth of a concrete question (None when the value is not a builtin value).

    With ``published`` (the fact came with a recorded trace), a value the publisher wrote
    only as text, not a literal (``["object", "unknown", text]``, as ``sources.codesense``
    reads it), is kept as they showed it: ``text`` is their text, compared as CodeSense
    compares answers (normalised strings), and ``comparable`` False says that no
    type-aware verdict exists for it. An object our tracer recorded (its type known) is
    still dropped: its repr is no answer anyone published, and so is a value that is only
    a placeholder for one nobody read (``debugger_values.PLACEHOLDERS``: ``<not recorded>``
    as an answer key would mark every real answer wrong).

    A fact that brings the published text of a value (``text``: C and Java, where the
    debugger's text is richer than the value, ``0x72995f "abc"``) is string-compared with
    that text; when the text does not read back as the value, ``answer`` is how a right
    answer writes it (the reference answer)."""
    published_text = fact.record.get("text") if published else None
    if is_exact(value):
        if not isinstance(published_text, str):
            return ConcreteTruth(value, fact.answer_text(value))
        try:
            reads_back = equal(fact.read_answer(published_text), value)
        except LiteralError:
            reads_back = False
        return ConcreteTruth(value, published_text,
                             None if reads_back else fact.answer_text(value))
    if published and value[:2] == ["object", "unknown"] and isinstance(value[-1], str) \
            and value[-1] not in PLACEHOLDERS:
        return ConcreteTruth(value, value[-1], comparable=False)
    return None


class CodeSenseTask(Roles):
    """What the four tasks share: facts -> instances, prompts, scoring, summaries."""

    family = "codesense"
    layout: str | None = "codesense"
    breakdowns: tuple[Breakdown, ...] = (Breakdown("kind", ("kind",)),)
    summary_data: tuple[str, ...] = SUMMARY_DATA
    needs_sandbox = False
    trace_options = STATES
    options: tuple[TaskOption, ...] = (QUESTIONS,)
    restated = (("text", "value"),)
    fact_type: type[Fact]
    """The kind of fact the task asks about."""
    template_names = ("codesense",)
    template_vars = prompts.TEMPLATE_VARS

    def metrics(self) -> tuple[Metric, ...]:
        """pass@1 and the string-match share (a headline: the default report and the
        leaderboard show it beside pass@1); for a yes/no task, the suite's majority class
        rate and the balanced accuracy too (``common.balance``)."""
        found = (pass_at_1(self.name, description=f"share of {self.name} instances answered "
                           "right (type-aware comparison)"),
                 string_match_metric(self.name, "all"))
        return (*found, *balance_metrics(self.name)) if self._yes_no else found

    @property
    def _yes_no(self) -> bool:
        """Whether the task's answers are yes or no (``branch``, ``alias``)."""
        return issubclass(self.fact_type, YesNoFact)

    def _values(self, ctx: BuildContext) -> str:
        return VALUES.value(ctx) if VALUES in self.options else "concrete"

    def build(self, program: Program, call_index: int, trace: Trace,
              ctx: BuildContext) -> list[Recordable]:
        blocks = int(BLOCKS.value(ctx)) if BLOCKS in self.options else 0
        try:
            records = facts_for(self.fact_type, program.code, program.entry_point, trace,
                                blocks)
        except NoFacts as exc:
            raise SkipInstance(str(exc)) from None
        if not records:
            unasked = trace.extra.get("unasked")
            reason = unasked.get(self.name) if isinstance(unasked, dict) else None
            if isinstance(reason, str) and program.calls[call_index].recorded is not None:
                raise SkipInstance(f"the record holds no {self.name} question: "
                                   f"{reason[:300]}")
            given = trace.extra.get("facts")
            asked = sorted({str(fact.get("task")) for fact in given or []
                            if isinstance(fact, dict)})
            raise NotApplicable(f"the recorded questions are {', '.join(asked)} "
                                f"questions, none a {self.name} one" if asked
                                else f"nothing to ask: {self.fact_type.nothing}")
        values = self._values(ctx)
        published = program.calls[call_index].recorded is not None
        usable: list[tuple[str, tuple[Fact, Truth]]] = []
        dropped: Counter[str] = Counter()
        for record in records:
            fact = self.fact_type.read(record, program.language)
            if fact is None:
                dropped["malformed"] += 1
                continue
            asked = fact.asked
            truth: Truth | None = abstract.truth(asked) \
                if values == "abstract" and is_exact(asked) \
                else concrete_truth(fact, asked, published=published) if values == "concrete" \
                else None
            if truth is None or unshown(asked, trace):
                dropped[fact.kind] += 1
                continue
            usable.append((fact.kind, (fact, truth)))
        if not usable:
            what = "no value a question could ask for" if values == "concrete" \
                else "no value with an abstract category"
            lost = ", ".join(f"{n} {kind}" for kind, n in sorted(dropped.items()))
            raise SkipInstance(f"{what} (dropped: {lost})")
        objects = holds_objects(trace)
        rng = random.Random(f"{ctx.seed}/{self.name}/{program.id}/{call_index}")
        chosen = _choose(usable, int(QUESTIONS.value(ctx)), rng)
        built: list[Recordable] = []
        seen: Counter[str] = Counter()
        for index in chosen:
            fact, truth = usable[index][1]
            variant = fact.variant
            seen[variant] += 1
            if seen[variant] > 1:  # given facts may ask twice about one line
                variant = f"{variant}.{seen[variant]}"
            built.append(FactQuestion(fact, truth, variant, objects))
        return built

    def _question(self, instance: Instance) -> FactQuestion:
        return FactQuestion.from_record(instance.data, self.fact_type, instance.language)

    def example_kind(self, instance: Instance) -> str:
        """The kind of fact asked (a statement's kind, a loop's question, a block's
        size): CodeSense's same-kind examples."""
        return self._question(instance).fact.kind

    def prompt_vars(self, instance: Instance, protocol: Protocol) -> dict[str, Any]:
        question = self._question(instance)
        return prompts.variables(question.fact, question.values, protocol,
                                 instance.code, instance.call, objects=question.objects)

    def reference_response(self, instance: Instance) -> str:
        return f"[ANSWER]\n{reference_text(self._question(instance).truth)}\n[/ANSWER]"

    def score(self, instance: Instance, response: str | None,
              sandbox: Sandbox | None) -> Score:
        question = self._question(instance)
        extra = abstract.asked(instance, question.fact.kind, question.values)
        if isinstance(question.truth, AbstractTruth):
            return abstract.score(response, question.truth, extra)
        return score_concrete(question.fact, question.truth, response, extra)

    def suite_counts(self, instances: list[Instance]) -> dict[str, int] | None:
        counts = Counter(Filing.of(instance).kind for instance in instances)
        return dict(sorted(counts.items())) or None

    def summarize(self, samples: list[Kept], instances: dict[str, Instance]) -> KindSummary:
        """Strict and string-match accuracy by kind, values and language, and by the
        finer splits ``abstract.summarize_by_kind`` makes (each score records the size of
        the function asked about and the category of the value); for a yes/no
        task, with the class balance of its samples (each filed under its instance's
        truth, which ``summary_data`` keeps, so a failed request counts too)."""
        summary = abstract.summarize_by_kind(samples, instances)
        if not self._yes_no:
            return summary
        return replace(summary, balance=class_balance(
            samples, lambda s: yes_no(instances[s.instance_id].data.get("truth"))))


class StatementPrediction(CodeSenseTask):
    fact_type = StatementFact
    name = fact_type.task
    description = ("predict the value a statement produces from the values before it "
                   "(CodeSense; kinds assignment, arithmetic, constant, branch, call)")
    options: tuple[TaskOption, ...] = (QUESTIONS, VALUES)


class BlockPrediction(CodeSenseTask):
    fact_type = BlockFact
    name = fact_type.task
    description = "predict the locals changed by the first k statements of a call (CodeSense)"
    options: tuple[TaskOption, ...] = (QUESTIONS, BLOCKS)


class LoopPrediction(CodeSenseTask):
    fact_type = LoopFact
    name = fact_type.task
    description = ("predict a loop's iteration count, a variable after the k-th iteration "
                   "and after the loop (CodeSense)")
    options: tuple[TaskOption, ...] = (QUESTIONS, VALUES)


class BranchPrediction(CodeSenseTask):
    fact_type = BranchFact
    name = fact_type.task
    summary_data: tuple[str, ...] = (*SUMMARY_DATA, "truth")
    description = "predict whether a line runs during a call, yes or no (CodeSense)"


class AliasPrediction(CodeSenseTask):
    fact_type = AliasFact
    name = fact_type.task
    summary_data: tuple[str, ...] = (*SUMMARY_DATA, "truth")
    description = ("predict whether two pointers, each at a statement, point to the same "
                   "memory, yes or no (CodeSense; published C records only)")


register(Task.of(StatementPrediction()))
register(Task.of(BlockPrediction()))
register(Task.of(LoopPrediction()))
register(Task.of(BranchPrediction()))
register(Task.of(AliasPrediction()))
