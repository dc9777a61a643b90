"""What the questions asked in CodeSense's style record, typed: the truth of an abstract
question (``AbstractTruth``), where a summary files an instance (``Filing``), and the
summary of a run's samples (``KindSummary``, of ``Share``\\ s), which the CodeSense tasks
and the output and input tasks give (``abstract.summarize_by_kind``) and the ``codesense``
report reads back from ``results.json``.

Each is written to its JSON record and read from it here and nowhere else. A summary's
record is part of ``results.json``'s bytes: its keys and their order are fixed, and
``not_comparable`` is written only where some samples have no type-aware verdict; the
finer splits (by language and kind, by function size, by abstract category, by sample)
only where their samples carry them. It is read tolerantly: a record of an older run
(without ``by_language``, ``not_comparable`` or the finer splits), or one missing a part,
reads as the summary it describes, its missing parts empty.

The categories of abstract values (``CATEGORIES``) are listed here, where a report can read
them in their order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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


CATEGORIES: dict[str, tuple[str, ...]] = {
    "int": ("Negative Large", "Negative Regular", "Zero", "Positive Regular", "Positive Large"),
    "float": ("Negative Large", "Negative Regular", "Negative Small", "Zero", "Positive Small",
              "Positive Regular", "Positive Large"),
    "str": ("Empty String", "Alphabetic String", "Numeric String", "Mixed String"),
    "list": ("Empty List", "Non-Empty List"),
    "tuple": ("Empty Tuple", "Non-Empty Tuple"),
    "dict": ("Empty Dictionary", "Non-Empty Dictionary"),
    "set": ("Empty Set", "Non-Empty Set"),
    "bool": ("True", "False"),
    "none": ("None",),
}
"""The categories of each type (by typed-JSON tag), as the paper's Table 6 lists them."""

UNFILED = "?"
"""The group of a summary's split for samples it cannot file: an instance without the
field (a plain output question has no kind), or, in the splits read from what scoring
recorded, an instance none of whose samples was scored (every request failed) or whose
value has no abstract category."""


def filed_category(value_type: str, category: str) -> str:
    """How a summary files a value's abstract category: with its type (``int: Zero``),
    since several types share a name (an int and a float may both be Zero)."""
    return f"{value_type}: {category}"


def category_order(filed: str) -> tuple[int, int, str]:
    """Sort key of ``filed_category`` names: by type, then category, in ``CATEGORIES``'
    order; anything else after them, by name."""
    value_type, _, category = filed.partition(": ")
    types = list(CATEGORIES)
    if value_type in CATEGORIES and category in CATEGORIES[value_type]:
        return types.index(value_type), CATEGORIES[value_type].index(category), filed
    return len(types), 0, filed


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

    @classmethod
    def combined(cls, shares: Iterable[Share]) -> Share:
        """The share of the groups' samples taken together (a bin of block sizes): the
        right answers each group's accuracy stands for, summed. Unknown (``Share()``) where
        a group does not say how many samples it has, or not how many were right."""
        samples = comparable = strict = matched = 0
        for share in shares:
            if share.samples is None:
                return cls()
            judged = share.samples - share.not_comparable
            if judged and share.strict is None or share.samples and share.string_match is None:
                return cls()
            samples, comparable = samples + share.samples, comparable + judged
            strict += round((share.strict or 0.0) * judged)
            matched += round((share.string_match or 0.0) * share.samples)
        return cls(samples, strict / comparable if comparable else None,
                   matched / samples if samples else None, samples - comparable)


def _groups(record: Mapping[str, JSON], key: str) -> dict[str, Share]:
    """The shares of a group of the summary; a share that is no object reads as none."""
    return {name: Share.from_record(as_object(share))
            for name, share in mapping(record, key).items()}


def _nested(record: Mapping[str, JSON], key: str) -> dict[str, dict[str, Share]]:
    """A split of a split (by language, then kind): each inner split as ``_groups``, one
    that is no object as empty."""
    return {name: {inner: Share.from_record(as_object(share))
                   for inner, share in as_object(split).items()}
            for name, split in mapping(record, key).items()}


def _written(shares: Mapping[str, Share]) -> JSONObject:
    return {name: share.to_record() for name, share in shares.items()}


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
    by_language_kind: Mapping[str, Mapping[str, Share]] = field(default_factory=dict)
    """Per language of the code, a share per kind (the statement kinds per language);
    written only where the samples span languages (with one, ``by_kind`` is it), so empty
    in a summary of one language and in one from before it was recorded."""
    by_function_lines: Mapping[str, Share] = field(default_factory=dict)
    """A share per size of the function the question is asked in, in lines of code
    (``analysis.shape.function_loc``; keys are the line counts, ``UNFILED`` for samples of
    instances no score describes), as scoring records it (the ``function_lines`` a score
    adds); empty where no sample has it (the output and input tasks, and runs scored
    before it was recorded)."""
    by_category: Mapping[str, Mapping[str, Share]] = field(default_factory=dict)
    """Per values mode (concrete, abstract), a share per abstract category of the value
    asked for (``filed_category``: ``int: Zero``; ``UNFILED`` where it has none), as
    scoring records it (the ``category`` a score adds); empty where no sample has it."""
    by_sample: Mapping[str, Share] = field(default_factory=dict)
    """A share per sample index (``0`` is every instance's first sample): written only where
    the run drew several samples of an instance (``-n``), for the spread across them."""

    def to_record(self) -> JSONObject:
        record: JSONObject = {
            "by_kind": _written(self.by_kind), "by_values": _written(self.by_values),
            "by_language": _written(self.by_language), "all": self.overall.to_record()}
        if self.by_language_kind:
            record["by_language_kind"] = {language: _written(kinds) for language, kinds
                                          in self.by_language_kind.items()}
        if self.by_function_lines:
            record["by_function_lines"] = _written(self.by_function_lines)
        if self.by_category:
            record["by_category"] = {values: _written(categories) for values, categories
                                     in self.by_category.items()}
        if self.by_sample:
            record["by_sample"] = _written(self.by_sample)
        if self.balance is not None:
            record[BALANCE] = self.balance.to_record()
        return record

    @classmethod
    def from_record(cls, record: JSON) -> KindSummary:
        """The summary a record states, its missing parts empty (an older run's has no
        ``by_language``, ``balance`` nor the finer splits; none where the entry is no
        object)."""
        found = as_object(record)
        return cls(_groups(found, "by_kind"), _groups(found, "by_values"),
                   _groups(found, "by_language"), Share.from_record(mapping(found, "all")),
                   ClassBalance.from_record(found.get(BALANCE)),
                   _nested(found, "by_language_kind"), _groups(found, "by_function_lines"),
                   _nested(found, "by_category"), _groups(found, "by_sample"))

    def kinds_of(self, language: str) -> Mapping[str, Share] | None:
        """The share per kind of the samples on code in ``language``: the recorded split,
        or ``by_kind`` where every sample is in that language; an empty mapping where none
        is; None where that cannot be told (samples in several languages but no split of
        them by kind, or no split by language at all: a summary from before either was
        recorded)."""
        if self.by_language_kind:
            return self.by_language_kind.get(language, {})
        if set(self.by_language) == {language}:
            return self.by_kind
        if language in self.by_language or not self.by_language and self.by_kind:
            return None
        return {}
