"""What a ``mutation`` or ``choice`` instance carries beside the common fields, typed.

Both tasks pair a program with its mutant for one call. A ``mutation`` instance asks for
one of the two programs' output and keeps the other's, so an answer that *reverts* to the
other program can be told; a ``choice`` instance shows both, under the labels A and B.
Each shape is written to and read from an instance's task fields here and nowhere else;
``instances.jsonl`` sorts the keys, so the order fields are written in does not reach a
suite's bytes.

A run's summary sees instances that keep only ``summary_data`` (``PairFacts.FIELDS``),
so what it reads is a ``PairFacts`` alone, never a whole question.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

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

    def to_record(self) -> dict[str, Any]:
        return {"variant": self.variant, "boolean": self.boolean, "loc": self.loc}

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> PairFacts:
        return cls(data["variant"], data["boolean"], data["loc"])


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

    @property
    def original(self) -> Outcome:
        """The original program's outcome, whichever program is asked about."""
        return self.truth if self.facts.variant == ORIGINAL else self.other

    def to_record(self) -> dict[str, Any]:
        return {**self.facts.to_record(),
                "truth": {"value": self.truth.value, "repr": self.truth.repr,
                          "other": self.other.value, "other_repr": self.other.repr}}

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> MutationQuestion:
        truth = data["truth"]
        return cls(PairFacts.from_record(data), Outcome(truth["value"], truth["repr"]),
                   Outcome(truth["other"], truth["other_repr"]))


@dataclass(frozen=True)
class Shown:
    """One program of a choice, as labelled in the prompt, with the call's outcome in it."""

    code: str
    outcome: Outcome

    def to_record(self) -> dict[str, Any]:
        return {"code": self.code, "value": self.outcome.value, "repr": self.outcome.repr}

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> Shown:
        return cls(data["code"], Outcome(data["value"], data["repr"]))


@dataclass(frozen=True)
class ChoiceQuestion:
    """Programs A and B (the original and the mutant in the order ``facts.variant`` says);
    the model picks one and predicts its output."""

    facts: PairFacts
    a: Shown
    b: Shown

    @property
    def original_label(self) -> str:
        return ORDERS[self.facts.variant][0]

    def shown(self, label: str) -> Shown:
        """The program labelled ``label`` (``A`` or ``B``)."""
        return self.a if label == "A" else self.b

    def to_record(self) -> dict[str, Any]:
        return {**self.facts.to_record(), "original_label": self.original_label,
                "programs": {"A": self.a.to_record(), "B": self.b.to_record()}}

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> ChoiceQuestion:
        programs = data["programs"]
        return cls(PairFacts.from_record(data), Shown.from_record(programs["A"]),
                   Shown.from_record(programs["B"]))
