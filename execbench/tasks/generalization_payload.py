"""What a ``mutation`` or ``choice`` instance carries beside the common fields, typed.

Both tasks pair a program with its mutant for one call. A ``mutation`` instance asks for
one of the two programs' output and keeps the other's, so an answer that *reverts* to the
other program can be told; a ``choice`` instance shows both, under the labels A and B.
Each shape is written to and read from an instance's task fields here and nowhere else;
``instances.jsonl`` sorts the keys, so the order fields are written in does not reach a
suite's bytes.

A run's summary sees instances that keep only ``summary_data`` (``PairFacts.FIELDS``),
so what it reads is a ``PairFacts`` alone, never a whole question. The summaries
(``MutationSummary``, ``ChoiceSummary``: ``results.json``'s ``task_metrics.mutation`` and
``task_metrics.choice``) are typed here too, so that the generalization report reads them
back through the same classes that wrote them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar, Generic, TypeVar

from execbench.json_types import JSON, JSONObject
from execbench.tasks.common.json_fields import (
    as_object,
    bool_of,
    count,
    int_of,
    list_of,
    mapping,
    number,
    object_of,
    text_of,
)
from execbench.values import Encoded

ORIGINAL, MUTANT = "original", "mutant"
"""The ``variant`` of a ``mutation`` instance."""
ORDERS = {"OM": ("A", "B"), "MO": ("B", "A")}
"""The ``variant`` of a ``choice`` instance (which program comes first), with the labels
the original and the mutant get in it."""


@dataclass(frozen=True)
class PairFacts:
    """What the summaries group and filter samples by."""

    FIELDS: ClassVar[tuple[str, ...]] = ("variant", "boolean", "loc")

    variant: str
    """``original``/``mutant`` for ``mutation``; ``OM``/``MO`` (``ORDERS``) for ``choice``."""
    boolean: bool
    """The original returns a boolean: a wrong answer is then the other program's output
    by chance half the time, so reversion is not measured on it."""
    loc: int
    """The original program's lines of code (the lines-of-code bins)."""

    def to_record(self) -> JSONObject:
        return {"variant": self.variant, "boolean": self.boolean, "loc": self.loc}

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> PairFacts:
        return cls(text_of(data, "variant"), bool_of(data, "boolean"), int_of(data, "loc"))


@dataclass(frozen=True)
class Outcome:
    """What a call returned in one program of the pair."""

    value: Encoded
    repr: str


@dataclass(frozen=True)
class MutationQuestion:
    """``assert f(x) == ??`` on the original or the mutant; ``other`` is what the other
    program returns (what a reverting answer gives)."""

    facts: PairFacts
    truth: Outcome
    other: Outcome
    mutation: JSONObject | None = None
    """The mutation the pair rests on (``Mutant.describe``), as the build poses the
    question: a common field, which the instance keeps apart (``Instance.mutation``), so a
    question read back from an instance's data has None here and in ``code``."""
    code: str | None = None
    """The module asked about where it is not the program's own (the mutant), as the
    build poses the question: the instance's ``code``."""

    @property
    def original(self) -> Outcome:
        """The original program's outcome, whichever program is asked about."""
        return self.truth if self.facts.variant == ORIGINAL else self.other

    def to_record(self) -> JSONObject:
        record: JSONObject = {
            **self.facts.to_record(),
            "truth": {"value": self.truth.value, "repr": self.truth.repr,
                      "other": self.other.value, "other_repr": self.other.repr}}
        return _posed(record, self.mutation, self.code)

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> MutationQuestion:
        truth = object_of(data, "truth")
        return cls(PairFacts.from_record(data),
                   Outcome(list_of(truth, "value"), text_of(truth, "repr")),
                   Outcome(list_of(truth, "other"), text_of(truth, "other_repr")))


@dataclass(frozen=True)
class Shown:
    """One program of a choice, as labelled in the prompt, with the call's outcome in it."""

    code: str
    outcome: Outcome

    def to_record(self) -> JSONObject:
        return {"code": self.code, "value": self.outcome.value, "repr": self.outcome.repr}

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> Shown:
        return cls(text_of(data, "code"), Outcome(list_of(data, "value"), text_of(data, "repr")))


@dataclass(frozen=True)
class ChoiceQuestion:
    """Programs A and B (the original and the mutant in the order ``facts.variant`` says);
    the model picks one and predicts its output."""

    facts: PairFacts
    a: Shown
    b: Shown
    mutation: JSONObject | None = None
    """The mutation the pair rests on, as the build poses the question (see
    ``MutationQuestion.mutation``)."""

    @property
    def original_label(self) -> str:
        return ORDERS[self.facts.variant][0]

    def shown(self, label: str) -> Shown:
        """The program labelled ``label`` (``A`` or ``B``)."""
        return self.a if label == "A" else self.b

    def to_record(self) -> JSONObject:
        record: JSONObject = {
            **self.facts.to_record(), "original_label": self.original_label,
            "programs": {"A": self.a.to_record(), "B": self.b.to_record()}}
        return _posed(record, self.mutation, None)

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> ChoiceQuestion:
        programs = object_of(data, "programs")
        return cls(PairFacts.from_record(data), Shown.from_record(object_of(programs, "A")),
                   Shown.from_record(object_of(programs, "B")))


def _posed(record: JSONObject, mutation: JSONObject | None, code: str | None) -> JSONObject:
    """A question's record with the common fields its build sets, after the task's own
    (``Instance.build`` takes them out)."""
    if mutation is not None:
        record["mutation"] = mutation
    if code is not None:
        record["code"] = code
    return record


# --- the summaries ----------------------------------------------------------------------

@dataclass(frozen=True)
class Rates:
    """Over the samples on (``mutation``), or the answers choosing (``choice``), one of
    the two programs: the share right and the share that gave the other program's output
    (reversion, measured over non-boolean problems only); None where there are none."""

    correct: float | None
    reverted: float | None


@dataclass(frozen=True)
class MutationMetrics:
    """OC, OR, MC, MR: for each program, the fraction of each problem's samples right
    (reverted), averaged over problems; and the problems each rests on. ``string_match``:
    the share of all samples whose answer the lenient string comparison accepts
    (``common.answers``; None with no samples, or in a record from before it)."""

    original: Rates
    mutant: Rates
    original_problems: int
    mutant_problems: int
    string_match: float | None = None

    def to_record(self) -> JSONObject:
        record: JSONObject = {"OC": self.original.correct, "OR": self.original.reverted,
                              "O_problems": self.original_problems,
                              "MC": self.mutant.correct, "MR": self.mutant.reverted,
                              "M_problems": self.mutant_problems}
        return _with_string_match(record, self.string_match)

    @classmethod
    def from_record(cls, record: Mapping[str, JSON]) -> MutationMetrics:
        return cls(Rates(number(record, "OC"), number(record, "OR")),
                   Rates(number(record, "MC"), number(record, "MR")),
                   count(record, "O_problems"), count(record, "M_problems"),
                   number(record, "string_match"))


@dataclass(frozen=True)
class ChoiceMetrics:
    """Pref (the share of answers that chose the original, of those that chose), the
    answers counted apart, and OC/OR (MC/MR) over the answers choosing the original
    (mutant). ``string_match``: the share of all answers whose stated output the lenient
    string comparison accepts for the program they chose (``common.answers``; an answer
    that made no readable choice is not accepted; None with no answers, or in a record
    from before it)."""

    preference: float | None
    answers: int
    errors: int
    """Failed requests: no choice."""
    unparsable: int
    """Answers that made no readable choice."""
    original: Rates
    mutant: Rates
    original_answers: int
    mutant_answers: int
    string_match: float | None = None

    def to_record(self) -> JSONObject:
        record: JSONObject = {"Pref": self.preference, "answers": self.answers,
                              "errors": self.errors, "unparsable": self.unparsable,
                              "OC": self.original.correct, "OR": self.original.reverted,
                              "O_answers": self.original_answers,
                              "MC": self.mutant.correct, "MR": self.mutant.reverted,
                              "M_answers": self.mutant_answers}
        return _with_string_match(record, self.string_match)

    @classmethod
    def from_record(cls, record: Mapping[str, JSON]) -> ChoiceMetrics:
        return cls(number(record, "Pref"), count(record, "answers"), count(record, "errors"),
                   count(record, "unparsable"),
                   Rates(number(record, "OC"), number(record, "OR")),
                   Rates(number(record, "MC"), number(record, "MR")),
                   count(record, "O_answers"), count(record, "M_answers"),
                   number(record, "string_match"))


def _with_string_match(record: JSONObject, share: float | None) -> JSONObject:
    """``record`` with the string-match share last, where there is one (a group with
    samples): the records of groups without keep the keys they always had."""
    if share is not None:
        record["string_match"] = share
    return record


M = TypeVar("M", MutationMetrics, ChoiceMetrics)


@dataclass(frozen=True)
class _Grouped(Generic[M]):
    """A task's metrics over all its samples, per source, and per lines-of-code bin
    (``analysis.shape.loc_bin``, in ``bin_order``)."""

    all: M
    by_source: dict[str, M]
    by_loc: dict[str, M]

    def to_record(self) -> JSONObject:
        return {"all": self.all.to_record(),
                "by_source": {name: group.to_record() for name, group in self.by_source.items()},
                "by_loc": {name: group.to_record() for name, group in self.by_loc.items()}}


def _grouped(record: Mapping[str, JSON],
             read: Callable[[Mapping[str, JSON]], M]) -> tuple[M, dict[str, M], dict[str, M]]:
    """A grouped summary's parts, in its record's order; a missing group reads empty."""

    def groups(key: str) -> dict[str, M]:
        return {name: read(as_object(group)) for name, group in mapping(record, key).items()}

    return read(mapping(record, "all")), groups("by_source"), groups("by_loc")


@dataclass(frozen=True)
class MutationSummary(_Grouped[MutationMetrics]):
    """``task_metrics.mutation``."""

    @classmethod
    def from_record(cls, record: JSON) -> MutationSummary:
        """The summary a ``task_metrics.mutation`` entry states (none where it is no
        object)."""
        return cls(*_grouped(as_object(record), MutationMetrics.from_record))


@dataclass(frozen=True)
class ChoiceSummary(_Grouped[ChoiceMetrics]):
    """``task_metrics.choice``."""

    @classmethod
    def from_record(cls, record: JSON) -> ChoiceSummary:
        """The summary a ``task_metrics.choice`` entry states (none where it is no
        object)."""
        return cls(*_grouped(as_object(record), ChoiceMetrics.from_record))
