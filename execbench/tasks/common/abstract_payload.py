"""What the questions asked in CodeSense's style record, typed: the truth of an abstract
question (``AbstractTruth``), where a summary files an instance (``Filing``), and the
summary of a run's samples (``KindSummary``, of ``Share``\\ s), which the CodeSense tasks
and the output and input tasks give (``abstract.summarize_by_kind``) and the ``codesense``
report reads back from ``results.json``.

Each is written to its JSON record and read from it here and nowhere else. A summary's
record is part of ``results.json``'s bytes: its keys and their order are fixed, and
``not_comparable`` is written only where some samples have no type-aware verdict. It is
read tolerantly: a record of an older run (without ``by_language`` or ``not_comparable``),
or one missing a part, reads as the summary it describes, its missing parts empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from execbench.tasks.common.balance import BALANCE, ClassBalance
from execbench.tasks.common.json_fields import (
    as_object,
    count,
    mapping,
    number,
    object_of,
    optional_count,
    text_of,
    text_or_none,
)

if TYPE_CHECKING:
    from execbench.json_types import JSON, JSONObject
    from execbench.tasks.base import Instance
    from execbench.values import Encoded


@dataclass(frozen=True)
class AbstractTruth:
    """The truth of an abstract question: the category an answer must name."""

    category: str
    type: str
    """The value's typed-JSON tag, whose categories the random baseline draws from."""
    value: Encoded | None = None
    """The value itself, which the output task keeps beside its category (so that a
    report can show it); the CodeSense tasks keep it in their fact."""
    repr: str | None = None

    def to_record(self) -> JSONObject:
        record: JSONObject = {"category": self.category, "type": self.type}
        if self.value is not None:
            record["value"] = self.value
        if self.repr is not None:
            record["repr"] = self.repr
        return record

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> AbstractTruth:
        value = data.get("value")
        return cls(text_of(data, "category"), text_of(data, "type"),
                   value if isinstance(value, list) else None, text_or_none(data, "repr"))

    @classmethod
    def asked(cls, instance: Instance) -> AbstractTruth | None:
        """The truth of an instance asked with abstract values, of whichever task asks in
        categories (output, statement, loop); None for one asked for a value."""
        data = instance.data
        return cls.from_record(object_of(data, "truth")) \
            if data.get("values") == "abstract" else None


SUMMARY_DATA: tuple[str, ...] = ("kind", "values")
"""What a summary reads of an instance's data (``Task.summary_data``): its ``Filing``."""


@dataclass(frozen=True)
class Filing:
    """Where a summary files an instance's samples. Read from the ``SUMMARY_DATA`` fields
    alone, since those are all the instances a summary holds keep; an instance not asked
    in CodeSense's style (a plain output question beside published ones) has neither."""

    kind: str = "?"
    values: str = "concrete"

    @classmethod
    def of(cls, instance: Instance) -> Filing:
        data = instance.data
        kind, values = data.get("kind", cls.kind), data.get("values", cls.values)
        return cls(kind if isinstance(kind, str) else cls.kind,
                   values if isinstance(values, str) else cls.values)


@dataclass(frozen=True)
class Share:
    """The accuracy of one group of samples: ``strict`` (the type-aware verdict) over
    the samples that have one, None when none has; ``string_match`` (CodeSense's
    normalised string comparison) over all, None when there are none."""

    samples: int | None = None
    """None only in a partial record that does not say."""
    strict: float | None = None
    string_match: float | None = None
    not_comparable: int = 0
    """The samples left out of ``strict``: published values that are no literal, which
    only the string comparison can judge."""

    def to_record(self) -> JSONObject:
        record: JSONObject = {"samples": self.samples, "strict": self.strict,
                              "string_match": self.string_match}
        if self.not_comparable:
            record["not_comparable"] = self.not_comparable
        return record

    @classmethod
    def from_record(cls, record: Mapping[str, JSON]) -> Share:
        """The share a record states; a missing or malformed field reads as none."""
        return cls(optional_count(record, "samples"), number(record, "strict"),
                   number(record, "string_match"), count(record, "not_comparable"))


def _groups(record: Mapping[str, JSON], key: str) -> dict[str, Share]:
    """The shares of a group of the summary; a share that is no object reads as none."""
    return {name: Share.from_record(as_object(share))
            for name, share in mapping(record, key).items()}


@dataclass(frozen=True)
class KindSummary:
    """A task's summary of its samples (``results.json``: ``task_metrics.TASK``): a share
    per kind of question, per values mode (concrete or abstract), per language of the
    code, and over all samples; groups in name order."""

    by_kind: Mapping[str, Share] = field(default_factory=dict)
    by_values: Mapping[str, Share] = field(default_factory=dict)
    by_language: Mapping[str, Share] = field(default_factory=dict)
    """Empty in a summary from before runs were split by language."""
    overall: Share = Share()
    """All the samples (the record's ``all``)."""
    balance: ClassBalance | None = None
    """For a yes/no task (``branch``, ``alias``), the majority class rate and balanced
    accuracy (``common.balance``); written only there, so other tasks' records keep
    their bytes."""

    def to_record(self) -> JSONObject:
        def groups(shares: Mapping[str, Share]) -> JSONObject:
            return {name: share.to_record() for name, share in shares.items()}

        record: JSONObject = {
            "by_kind": groups(self.by_kind), "by_values": groups(self.by_values),
            "by_language": groups(self.by_language), "all": self.overall.to_record()}
        if self.balance is not None:
            record[BALANCE] = self.balance.to_record()
        return record

    @classmethod
    def from_record(cls, record: JSON) -> KindSummary:
        """The summary a record states, its missing parts empty (an older run's has no
        ``by_language`` nor ``balance``; none where the entry is no object)."""
        found = as_object(record)
        return cls(_groups(found, "by_kind"), _groups(found, "by_values"),
                   _groups(found, "by_language"), Share.from_record(mapping(found, "all")),
                   ClassBalance.from_record(found.get(BALANCE)))
