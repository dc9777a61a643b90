"""What a CodeSense instance carries beside the common fields, typed.

A question asks for the value a fact names (``facts``), either itself (a concrete truth,
compared type-aware and by CodeSense's normalised strings) or its category (an abstract
truth, ``common.abstract``); which one follows from the truth, so the ``values`` field an
instance writes is derived, never stored twice. The output and input tasks ask in this
style too (``prediction_payload.CodeSenseQuestion``) and share the truths. Each record is
written and read here and nowhere else; ``instances.jsonl`` sorts the keys, so the order
fields are written in is not part of a suite's bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from execbench.json_types import JSON, JSONObject
from execbench.tasks.codesense.facts import Fact
from execbench.tasks.common.abstract_payload import AbstractTruth
from execbench.tasks.common.json_fields import list_of, object_of, text_of, text_or_none
from execbench.values import Encoded


@dataclass(frozen=True)
class ConcreteTruth:
    """The value a concrete question asks for, and the text CodeSense compares with."""

    value: Encoded
    text: str
    """What CodeSense's string comparison accepts: our rendering of ``value``, or the
    text the publisher showed (C and Java debuggers' text, a value that is no literal)."""
    answer: str | None = None
    """How a right answer writes the value, where ``text`` does not read back as it (the
    reference answer)."""
    comparable: bool = True
    """False for a published value that is no literal: no type-aware verdict exists, only
    the string comparison."""
    repr: str | None = None
    """The value's repr, which the output task keeps (its plain questions show it)."""

    @property
    def reference(self) -> str:
        """The text a right answer gives."""
        return self.text if self.answer is None else self.answer

    def to_record(self) -> JSONObject:
        record: JSONObject = {"value": self.value, "text": self.text}
        if self.answer is not None:
            record["answer"] = self.answer
        if not self.comparable:
            record["comparable"] = False
        if self.repr is not None:
            record["repr"] = self.repr
        return record

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> ConcreteTruth:
        return cls(list_of(data, "value"), text_of(data, "text"), text_or_none(data, "answer"),
                   data.get("comparable") is not False, text_or_none(data, "repr"))


Truth = ConcreteTruth | AbstractTruth


def values_of(truth: Truth) -> str:
    """The ``values`` mode a question with this truth is asked in (``abstract.VALUES``)."""
    return "abstract" if isinstance(truth, AbstractTruth) else "concrete"


def read_truth(values: str, data: Mapping[str, JSON]) -> Truth:
    """The truth of a question asked in ``values`` mode."""
    return AbstractTruth.from_record(data) if values == "abstract" \
        else ConcreteTruth.from_record(data)


def reference_text(truth: Truth) -> str:
    """What a right answer puts between the answer tags."""
    return truth.category if isinstance(truth, AbstractTruth) else truth.reference


@dataclass(frozen=True)
class FactQuestion:
    """An instance of the statement, block, loop, branch or alias task: one fact of a call,
    the value it asks for, and the variant that tells the call's instances apart."""

    fact: Fact
    """The fact, its record kept as it came (a published one may hold keys we do not
    read, which the suite keeps)."""
    truth: Truth
    variant: str
    objects: bool = False
    """The call's values hold objects shown in their constructor form (``common.objects``)."""

    @property
    def values(self) -> str:
        return values_of(self.truth)

    def to_record(self) -> JSONObject:
        record: JSONObject = {"kind": self.fact.kind, "values": self.values,
                                  "fact": self.fact.record, "truth": self.truth.to_record(),
                                  "variant": self.variant}
        if self.objects:
            record["objects"] = True
        return record

    @classmethod
    def from_record(cls, data: Mapping[str, JSON], fact_type: type[Fact],
                    language: str) -> FactQuestion:
        """The question, its fact read as ``fact_type`` (the task's) in the code's
        ``language``."""
        return cls(fact_type(object_of(data, "fact"), language),
                   read_truth(text_of(data, "values"), object_of(data, "truth")),
                   text_of(data, "variant"), data.get("objects") is True)
