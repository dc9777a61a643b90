"""The CodeSense tasks: ``statement``, ``block``, ``loop`` and ``branch``.

Each builds its instances from the call's facts (``facts``): a fact becomes an instance
when the value it asks for is a builtin value (or, with ``-T values=abstract``, has a
category); opaque ones are dropped and, when nothing is left, the call is skipped with
the count by kind. Of what is left, at most ``-T questions=N`` instances per call are
kept, taken in turn from each kind (so that rare kinds are not crowded out) in an order
shuffled with the build's seed, the call and the task: the same build gives the same
instances.

Answers are read by ``answers`` (our ``[ANSWER]`` block or CodeSense's ``<ans>`` tags, with
the literal parser) and compared with type-aware equality; each score also says whether
CodeSense's normalised string comparison would have accepted the answer.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import TYPE_CHECKING, Any

from execbench.sandbox.trace import TraceOptions
from execbench.sandbox.values import LiteralError, equal, is_exact, to_literal
from execbench.tasks.base import (
    CORRECT,
    INCORRECT,
    UNPARSABLE,
    BuildContext,
    Instance,
    Message,
    Metric,
    Score,
    SkipInstance,
    TaskBase,
    TaskOption,
    pass_at_1,
    register,
)
from execbench.tasks.codesense import abstract, answers, prompts
from execbench.tasks.codesense.facts import NoFacts, facts_for
from execbench.tasks.codesense.kinds import KINDS

if TYPE_CHECKING:
    from execbench.program import Program
    from execbench.sandbox.pool import Sandbox
    from execbench.sandbox.trace import Trace

STATES = TraceOptions(states=True)

QUESTIONS = TaskOption("questions", ("5",), "at most N instances per call (CodeSense tasks)",
                       whole=True)
VALUES = TaskOption("values", ("concrete", "abstract"),
                    "ask for the value itself, or its category (CodeSense's Table 6)")
BLOCKS = TaskOption("blocks", ("3",), "ask about the first k = 1..N statements", whole=True)

_NOTHING = {"statement": "no assignment or condition of the function finished running",
            "block": "its first statements change no local variable",
            "loop": "no loop of the function ran to its end",
            "branch": "the function has no block that runs only on some paths"}
"""Why a call gives a task no fact at all."""

_LOOP_QUESTIONS = ("iterations", "body", "after")
_REQUIRED: dict[str, dict[str, type | tuple[type, ...]]] = {
    "statement": {"line": int, "statement": str, "kind": str, "before": dict, "value": list},
    "block": {"size": int, "lines": list, "after": dict},
    "loop": {"line": int, "question": str, "value": list},
    "branch": {"line": int, "executed": bool},
}


def _well_formed(task: str, fact: dict[str, Any]) -> bool:
    if not all(isinstance(fact.get(key), kind) and not (kind is int and isinstance(
            fact.get(key), bool)) for key, kind in _REQUIRED[task].items()):
        return False
    if task == "statement":
        return fact["kind"] in KINDS
    if task == "loop":
        question = fact["question"]
        return question in _LOOP_QUESTIONS and (question == "iterations" or isinstance(
            fact.get("variable"), str)) and (question != "body" or isinstance(
                fact.get("iteration"), int))
    return True


def _mapping(names: dict[str, list]) -> list:
    return ["dict", [[["str", name], value] for name, value in names.items()]]


def _asked(task: str, fact: dict[str, Any]) -> list:
    """The typed-JSON value a fact asks for."""
    if task == "block":
        return _mapping(fact["after"])
    if task == "branch":
        return ["bool", fact["executed"]]
    return fact["value"]


def _kind(task: str, fact: dict[str, Any]) -> str:
    return {"statement": lambda: fact["kind"], "block": lambda: f"block-{fact['size']}",
            "loop": lambda: fact["question"], "branch": lambda: "branch"}[task]()


def _variant(task: str, fact: dict[str, Any]) -> str:
    if task == "block":
        return f"k{fact['size']}"
    if task == "loop" and fact["question"] == "body":
        return f"L{fact['line']}-{fact['variable']}-{fact['iteration']}"
    if task == "loop" and fact["question"] == "after":
        return f"L{fact['line']}-{fact['variable']}-after"
    if task == "loop":
        return f"L{fact['line']}-iterations"
    return f"L{fact['line']}"


def _choose(items: list[tuple[str, Any]], cap: int, rng: random.Random) -> list[int]:
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


def _share(samples: list[dict[str, Any]]) -> dict[str, Any]:
    total = len(samples)
    strict = sum(s["verdict"] == CORRECT for s in samples)
    matched = sum(bool((s.get("extra") or {}).get("string_match")) for s in samples)
    return {"samples": total, "strict": strict / total if total else None,
            "string_match": matched / total if total else None}


def summarize_by_kind(samples: list[dict[str, Any]], instances: dict[str, Instance]
                      ) -> dict[str, Any]:
    """Strict (type-aware) and string-match accuracy over all samples, per kind and per
    values mode (the kind and mode come from the instance, so a failed request counts)."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    by_values: dict[str, list[dict[str, Any]]] = {}
    for sample in samples:
        data = instances[sample["instance_id"]].data
        by_kind.setdefault(data.get("kind", "?"), []).append(sample)
        by_values.setdefault(data.get("values", "concrete"), []).append(sample)
    return {"by_kind": {k: _share(v) for k, v in sorted(by_kind.items())},
            "by_values": {k: _share(v) for k, v in sorted(by_values.items())},
            "all": _share(samples)}


def score_value(task: str, values: str, truth: dict[str, Any], response: str | None,
                extra: dict[str, Any]) -> Score:
    """Score an answer against an instance's truth (a concrete value, a yes/no, a mapping
    or a category); ``extra`` (kind, values) is completed with ``string_match``."""
    text = answers.read_text(response)
    wanted = truth["category"] if values == "abstract" else truth["text"]
    extra = {**extra, "string_match": answers.string_match(text, wanted)}
    if text is None:
        return Score(UNPARSABLE, detail="empty response", extra=extra)
    if values == "abstract":
        named = abstract.read_category(text)
        if named is None:
            return Score(UNPARSABLE, answer=text, detail="not a category name", extra=extra)
        return Score(CORRECT if named == truth["category"] else INCORRECT, answer=named,
                     extra=extra)
    if task == "branch":
        said = answers.read_yes_no(text)
        if said is None:
            return Score(UNPARSABLE, answer=text, detail="not yes or no", extra=extra)
        return Score(CORRECT if said == truth["value"][1] else INCORRECT,
                     answer="yes" if said else "no", extra=extra)
    try:
        value = answers.read_mapping(text) if task == "block" else answers.read_value(text)
    except LiteralError as exc:
        return Score(UNPARSABLE, answer=text, detail=str(exc), extra=extra)
    return Score(CORRECT if equal(value, truth["value"]) else INCORRECT,
                 answer=to_literal(value), extra=extra)


def concrete_truth(task: str, value: list) -> dict[str, Any] | None:
    """The truth of a concrete question (None when the value is not a builtin value)."""
    if not is_exact(value):
        return None
    text = ("yes" if value[1] else "no") if task == "branch" else to_literal(value)
    return {"value": value, "text": text}


class CodeSenseTask(TaskBase):
    """What the four tasks share: facts -> instances, prompts, scoring, summaries."""

    family = "codesense"
    layout = "codesense"
    needs_sandbox = False
    trace_options = STATES
    options: tuple[TaskOption, ...] = (QUESTIONS,)

    def metrics(self) -> tuple[Metric, ...]:
        return (pass_at_1(self.name, description=f"share of {self.name} instances answered "
                          "right (type-aware comparison)"),
                Metric("string match", ("task_metrics", self.name, "all", "string_match"),
                       description="share of samples CodeSense's normalised string "
                       "comparison accepts"))

    def _values(self, ctx: BuildContext) -> str:
        return VALUES.value(ctx) if VALUES in self.options else "concrete"

    def build(self, program: Program, call_index: int, trace: Trace,
              ctx: BuildContext) -> list[dict[str, Any]]:
        blocks = int(BLOCKS.value(ctx)) if BLOCKS in self.options else 0
        try:
            facts = facts_for(self.name, program.code, program.entry_point, trace, blocks)
        except NoFacts as exc:
            raise SkipInstance(str(exc)) from None
        if not facts:
            raise SkipInstance(f"nothing to ask: {_NOTHING[self.name]}")
        values = self._values(ctx)
        usable: list[tuple[str, tuple[dict[str, Any], dict[str, Any]]]] = []
        dropped: Counter[str] = Counter()
        for fact in facts:
            if not _well_formed(self.name, fact):
                dropped["malformed"] += 1
                continue
            asked = _asked(self.name, fact)
            truth = abstract.truth(asked) if values == "abstract" and is_exact(asked) \
                else concrete_truth(self.name, asked) if values == "concrete" else None
            if truth is None:
                dropped[_kind(self.name, fact)] += 1
                continue
            usable.append((_kind(self.name, fact), (fact, truth)))
        if not usable:
            what = "no value a question could ask for" if values == "concrete" \
                else "no value with an abstract category"
            lost = ", ".join(f"{n} {kind}" for kind, n in sorted(dropped.items()))
            raise SkipInstance(f"{what} (dropped: {lost})")
        rng = random.Random(f"{ctx.seed}/{self.name}/{program.id}/{call_index}")
        chosen = _choose(usable, int(QUESTIONS.value(ctx)), rng)
        built, seen = [], Counter()
        for index in chosen:
            kind, (fact, truth) = usable[index]
            variant = _variant(self.name, fact)
            seen[variant] += 1
            if seen[variant] > 1:  # given facts may ask twice about one line
                variant = f"{variant}.{seen[variant]}"
            built.append({"kind": kind, "values": values, "fact": fact, "truth": truth,
                          "variant": variant})
        return built

    def prompt(self, instance: Instance, shots: int) -> list[Message]:
        text = prompts.render(self.name, instance.data["values"], shots, instance.code,
                              instance.call, instance.data["fact"])
        return [{"role": "user", "content": text}]

    def reference_response(self, instance: Instance) -> str:
        truth = instance.data["truth"]
        text = truth["category"] if instance.data["values"] == "abstract" else truth["text"]
        return f"[ANSWER]\n{text}\n[/ANSWER]"

    def score(self, instance: Instance, response: str | None,
              sandbox: Sandbox | None) -> Score:
        return score_value(self.name, instance.data["values"], instance.data["truth"],
                           response, {"kind": instance.data["kind"],
                                      "values": instance.data["values"]})

    def suite_counts(self, instances: list[Instance]) -> dict[str, int] | None:
        counts = Counter(instance.data["kind"] for instance in instances)
        return dict(sorted(counts.items())) or None

    def summarize(self, samples: list[dict[str, Any]],
                  instances: dict[str, Instance]) -> dict[str, Any] | None:
        return summarize_by_kind(samples, instances)


class StatementPrediction(CodeSenseTask):
    name = "statement"
    description = ("predict the value a statement produces from the values before it "
                   "(CodeSense; kinds assignment, arithmetic, constant, branch, call)")
    options = (QUESTIONS, VALUES)


class BlockPrediction(CodeSenseTask):
    name = "block"
    description = "predict the locals changed by the first k statements of a call (CodeSense)"
    options = (QUESTIONS, BLOCKS)


class LoopPrediction(CodeSenseTask):
    name = "loop"
    description = ("predict a loop's iteration count, a variable after the k-th iteration "
                   "and after the loop (CodeSense)")
    options = (QUESTIONS, VALUES)


class BranchPrediction(CodeSenseTask):
    name = "branch"
    description = "predict whether a line runs during a call, yes or no (CodeSense)"


register(StatementPrediction())
register(BlockPrediction())
register(LoopPrediction())
register(BranchPrediction())
