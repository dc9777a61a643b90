"""What an output or input instance carries beside the common fields, typed.

Three shapes: the plain output question (the value returned, and its repr), the plain
input question (the value to return, the arguments an answer must repeat, the call's
arguments stated as values), and a question asked in CodeSense's style (abstract values,
or a value a benchmark published), whose truth is CodeSense's. Each is written to and
read from an instance's task fields here and nowhere else; ``instances.jsonl`` sorts the
keys, so the order fields are written in is not part of a suite's bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from execbench import values
from execbench.json_types import JSON, JSONObject
from execbench.tasks.base import Instance
from execbench.tasks.codesense.facts import InputsFact
from execbench.tasks.codesense.payload import Truth, read_truth, values_of
from execbench.tasks.common.abstract_payload import Share
from execbench.tasks.common.answers import Given
from execbench.tasks.common.json_fields import (
    as_object,
    list_of,
    mapping,
    object_of,
    text_of,
    text_or_none,
)
from execbench.values import Encoded

CODESENSE_KINDS = ("output", "input")
"""The ``kind`` of a question asked in CodeSense's style."""


@dataclass(frozen=True)
class OutputQuestion:
    """``assert f(x) == ??``: the value the call returned."""

    value: Encoded
    """The returned value, typed (``values.encode``)."""
    repr: str | None
    """The value's repr as the tracer wrote it; None from a recorded trace that came
    without one (``shown`` writes the value instead)."""
    objects: bool = False
    """The value holds objects shown in their constructor form (``common.objects``)."""

    @property
    def shown(self) -> str:
        return self.repr if self.repr is not None else values.shown(self.value)

    def to_record(self) -> JSONObject:
        record: JSONObject = {"truth": {"repr": self.repr, "value": self.value}}
        if self.objects:
            record["objects"] = True
        return record

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> OutputQuestion:
        truth = object_of(data, "truth")
        return cls(list_of(truth, "value"), text_or_none(truth, "repr"),
                   data.get("objects") is True)


@dataclass(frozen=True)
class InputQuestion:
    """``assert f(??) == y``: arguments that make the call return ``output``."""

    output: Encoded
    output_repr: str | None
    """As ``OutputQuestion.repr``."""
    given: tuple[Given, ...]
    """The call's arguments that are not literals, which an answer repeats verbatim."""
    stated_args: str | None = None
    """The call's arguments with each expression written as the value it traced to, when
    the dataset wrote some as expressions; what the oracle answers."""

    @property
    def output_shown(self) -> str:
        return self.output_repr if self.output_repr is not None else values.shown(self.output)

    def to_record(self) -> JSONObject:
        record: JSONObject = {
            "truth": {"output": self.output, "output_repr": self.output_repr},
            "given": [g.to_record() for g in self.given]}
        if self.stated_args is not None:
            record["stated_args"] = self.stated_args
        return record

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> InputQuestion:
        truth = object_of(data, "truth")
        return cls(list_of(truth, "output"), text_or_none(truth, "output_repr"),
                   Given.listed(data), text_or_none(data, "stated_args"))


@dataclass(frozen=True)
class CodeSenseQuestion:
    """An output or input asked as the CodeSense tasks ask (numbered code, the value alone
    as the answer); its truth is CodeSense's (``codesense.tasks.concrete_truth``, or
    ``common.abstract.truth`` for abstract values), and says which values it is asked in."""

    kind: str
    """``output`` or ``input``."""
    truth: Truth
    fact: InputsFact | None = None
    """The published inputs' fact (an input question of a C or Java program)."""

    @property
    def values(self) -> str:
        return values_of(self.truth)

    def to_record(self) -> JSONObject:
        record: JSONObject = {"kind": self.kind, "values": self.values,
                              "truth": self.truth.to_record()}
        if self.fact is not None:
            record["fact"] = self.fact.record
        return record

    @classmethod
    def from_record(cls, data: Mapping[str, JSON], language: str) -> CodeSenseQuestion:
        """The question, a published inputs' fact read in the code's ``language``."""
        fact = object_of(data, "fact") if data.get("fact") is not None else None
        return cls(text_of(data, "kind"), read_truth(text_of(data, "values"),
                                                     object_of(data, "truth")),
                   None if fact is None else InputsFact(fact, language))


def in_codesense_style(instance: Instance) -> bool:
    """Whether the instance is asked in CodeSense's style; read from ``kind`` alone, which
    the instances a summary holds keep (``summary_data``) without their truths."""
    return instance.data.get("kind") in CODESENSE_KINDS


def codesense_question(instance: Instance) -> CodeSenseQuestion | None:
    """The instance's question when it is asked in CodeSense's style, else None."""
    return CodeSenseQuestion.from_record(instance.data, instance.language) \
        if in_codesense_style(instance) else None


@dataclass(frozen=True)
class ValueSummary:
    """``task_metrics.output`` of a run whose output questions are all plain ones: the
    strict (type-aware) accuracy and the string-match accuracy (``common.answers``), over
    all samples and per source, as ``Share``\\ s. A run with questions asked in
    CodeSense's style keeps CodeSense's summary (``KindSummary``) instead, whose ``all``
    holds the same two numbers. Read leniently: the record of an older run (before the
    output task had a summary) is absent, and a malformed part reads as none."""

    overall: Share = Share()
    """All the samples (the record's ``all``)."""
    by_source: Mapping[str, Share] = field(default_factory=dict)
    """Per source, in name order."""

    def to_record(self) -> JSONObject:
        return {"all": self.overall.to_record(),
                "by_source": {name: share.to_record()
                              for name, share in self.by_source.items()}}

    @classmethod
    def from_record(cls, record: JSON) -> ValueSummary:
        found = as_object(record)
        return cls(Share.from_record(mapping(found, "all")),
                   {name: Share.from_record(as_object(share))
                    for name, share in mapping(found, "by_source").items()})
