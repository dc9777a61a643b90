"""What a ``simulation`` instance carries beside the common fields, typed.

The truth is the call's output and, for every property asked about (``sites``), the list
of its values over the run; the compounds Rule 1 checks and those it cannot (``calibrate``)
travel with it. Beside the truth: the annotated program the prompt shows, the worked
example it may show, and what the summaries group by (the program's construct category and
the call's prime-path coverage). Each record is written and read here and nowhere else;
``instances.jsonl`` sorts the keys, so the order fields are written in does not reach a
suite's bytes.

A run's summary sees instances that keep only ``summary_data`` (``ProgramFacts.FIELDS``),
so it reads a ``ProgramFacts`` alone, never a whole question.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from execbench.json_types import JSON, JSONObject
from execbench.tasks.common.json_fields import (
    bool_or_none,
    int_of,
    int_or_none,
    ints_of,
    list_of,
    lists_of,
    object_of,
    objects_of,
    text_of,
    text_or_none,
    texts_of,
)
from execbench.values import Encoded


@dataclass(frozen=True)
class Property:
    """One placeholder: a loop variable, an iterable or one of its parts, a predicate, a
    clause or a branch (``sites.KINDS``) of the site on ``line``."""

    id: str
    """The tag the prompt shows (``3a``)."""
    line: int
    kind: str
    label: str
    """What the placeholder names: the variable, the expression's text, or ``taken``."""
    values: list[Encoded]
    """Its values over the run, in order."""
    at: list[int]
    """Each value's tick in the run's order (the recorder's ``at``)."""
    whole: list[Encoded] | None = None
    """For the iterable of a loop left early: the whole iterable per execution, which an
    answer may state instead of the items taken (``calibrate``)."""

    def to_record(self) -> JSONObject:
        record: JSONObject = {"id": self.id, "line": self.line, "kind": self.kind,
                              "label": self.label, "values": list(self.values),
                              "at": list(self.at)}
        if self.whole is not None:
            record["whole"] = list(self.whole)
        return record

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> Property:
        whole = lists_of(data, "whole") if data.get("whole") is not None else None
        return cls(text_of(data, "id"), int_of(data, "line"), text_of(data, "kind"),
                   text_of(data, "label"), lists_of(data, "values"), list(ints_of(data, "at")),
                   whole)


@dataclass(frozen=True)
class Compound:
    """A property made of others, which Rule 1 re-evaluates on their predicted values."""

    id: str
    of: tuple[str, ...]
    """The tags of its direct sub-properties, in the order ``expression`` reads them."""
    mode: str
    """``iterable`` (a loop's iterable from its parts) or ``condition`` (a truth from the
    operands of an ``and``/``or``)."""
    expression: str
    """The program's expression with each sub-property as ``__eb_get(i)``."""
    early_exit: bool | None = None
    """For an iterable: whether its loop can be left early, so that the items taken may
    be only the first of the whole iterable. None for a condition."""

    def to_record(self) -> JSONObject:
        record: JSONObject = {"id": self.id, "of": list(self.of), "mode": self.mode,
                              "expression": self.expression}
        if self.early_exit is not None:
            record["early_exit"] = self.early_exit
        return record

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> Compound:
        return cls(text_of(data, "id"), texts_of(data, "of"), text_of(data, "mode"),
                   text_of(data, "expression"), bool_or_none(data, "early_exit"))


@dataclass(frozen=True)
class Unchecked:
    """A compound Rule 1 leaves alone, and why."""

    id: str
    reason: str

    def to_record(self) -> JSONObject:
        return {"id": self.id, "reason": self.reason}

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> Unchecked:
        return cls(text_of(data, "id"), text_of(data, "reason"))


@dataclass(frozen=True)
class Coverage:
    """The prime paths a call's run tours (``coverage.coverage``); all None when unknown."""

    digest: str | None
    """A digest of the toured (function, prime path) pairs: equal digests, equal
    coverage."""
    toured: int | None
    prime_paths: int | None

    @property
    def full(self) -> bool:
        """The run tours every prime path of the program."""
        return self.digest is not None and self.toured == self.prime_paths

    def to_record(self) -> JSONObject:
        return {"digest": self.digest, "toured": self.toured, "prime_paths": self.prime_paths}

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> Coverage:
        return cls(text_or_none(data, "digest"), int_or_none(data, "toured"),
                   int_or_none(data, "prime_paths"))


UNKNOWN = Coverage(None, None, None)


@dataclass(frozen=True)
class Example:
    """The worked example a prompt with shots shows (``examples``): the example program
    annotated, its call, and the answer the oracle gives for it."""

    name: str
    annotated: str
    call: str
    answer: str

    def to_record(self) -> JSONObject:
        return {"name": self.name, "annotated": self.annotated, "call": self.call,
                "answer": self.answer}

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> Example:
        return cls(text_of(data, "name"), text_of(data, "annotated"), text_of(data, "call"),
                   text_of(data, "answer"))


@dataclass(frozen=True)
class SimulationTruth:
    """What a simulation is judged against."""

    value: Encoded
    repr: str
    properties: tuple[Property, ...]
    compounds: tuple[Compound, ...]
    """The compounds Rule 1 checks."""
    unchecked: tuple[Unchecked, ...]

    def labels(self) -> dict[str, str]:
        """Tag -> label of every property (what an answer's lines are read by)."""
        return {p.id: p.label for p in self.properties}

    def to_record(self) -> JSONObject:
        return {"value": self.value, "repr": self.repr,
                "properties": [p.to_record() for p in self.properties],
                "compounds": [c.to_record() for c in self.compounds],
                "unchecked": [u.to_record() for u in self.unchecked]}

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> SimulationTruth:
        return cls(list_of(data, "value"), text_of(data, "repr"),
                   tuple(Property.from_record(p) for p in objects_of(data, "properties")),
                   tuple(Compound.from_record(c) for c in objects_of(data, "compounds")),
                   tuple(Unchecked.from_record(u) for u in objects_of(data, "unchecked")))


@dataclass(frozen=True)
class ProgramFacts:
    """What the summaries group samples by."""

    FIELDS: ClassVar[tuple[str, ...]] = ("category", "coverage")

    category: str
    """The program's construct category (``summary_payload.CATEGORIES``)."""
    coverage: Coverage

    def to_record(self) -> JSONObject:
        return {"category": self.category, "coverage": self.coverage.to_record()}

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> ProgramFacts:
        return cls(text_of(data, "category"), Coverage.from_record(object_of(data, "coverage")))


@dataclass(frozen=True)
class SimulationQuestion:
    """A ``simulation`` instance's task fields."""

    truth: SimulationTruth
    annotated: str
    """The program with a placeholder comment on every site line (``annotate``)."""
    facts: ProgramFacts
    example: Example

    def to_record(self) -> JSONObject:
        return {"truth": self.truth.to_record(), "annotated": self.annotated,
                **self.facts.to_record(), "example": self.example.to_record()}

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> SimulationQuestion:
        return cls(SimulationTruth.from_record(object_of(data, "truth")),
                   text_of(data, "annotated"), ProgramFacts.from_record(data),
                   Example.from_record(object_of(data, "example")))
