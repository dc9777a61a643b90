"""Abstract values (CodeSense, Table 6): a coarse category in place of a concrete value.

Each builtin type has its own categories (an int is Zero, Positive Regular, ...; a string
is Empty, Alphabetic, Numeric or Mixed). A bool is checked before an int: ``True`` is the
category "True", never "Positive Regular" (the paper's mapping code tests ``int`` first,
and since ``bool`` is a subclass of ``int`` it files ``True`` under Positive Regular; we
do not copy that). Types without categories (bytes, complex, frozenset) and opaque values
have none: no abstract question is asked about them.

An answer is one category name, read case-insensitively and ignoring surrounding quotes,
spaces and a trailing full stop; it is right when it names the value's category.

The CodeSense tasks and the output task ask for categories with ``-T values=abstract``
(``VALUES``); both score such answers with ``score`` and sum their samples up with
``summarize_by_kind``, which also serves the CodeSense tasks' concrete questions.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from execbench.tasks.base import CORRECT, INCORRECT, Instance, Score, TaskOption
from execbench.tasks.common.answers import EMPTY, string_match, unparsable
from execbench.tasks.common.extract import codesense_answer_text
from execbench.values import Encoded

VALUES = TaskOption("values", ("concrete", "abstract"),
                    "ask for the value itself, or its category (CodeSense's Table 6)")

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

DEFINITIONS = """\
- int: Zero (v == 0); Positive Regular (0 < v <= 10); Positive Large (v > 10); \
Negative Regular (-10 <= v < 0); Negative Large (v < -10).
- float: Zero (v == 0.0); Positive Small (0.0 < v <= 1.0); Positive Regular \
(1.0 < v <= 10.0); Positive Large (v > 10.0); Negative Small (-1.0 <= v < 0.0); \
Negative Regular (-10.0 <= v < -1.0); Negative Large (v < -10.0).
- str: Empty String (no characters); Alphabetic String (only letters); Numeric String \
(only digits); Mixed String (anything else).
- list: Empty List or Non-Empty List. tuple: Empty Tuple or Non-Empty Tuple. dict: Empty \
Dictionary or Non-Empty Dictionary. set: Empty Set or Non-Empty Set.
- bool: True or False (a bool is never filed as a number). None: None."""
"""The definitions every abstract prompt gives, in our words."""


def _number(v: float, small: float | None) -> str:
    if v == 0:
        return "Zero"
    sign = "Positive" if v > 0 else "Negative"
    size = abs(v)
    if small is not None and size <= small:
        return f"{sign} Small"
    if size <= 10:
        return f"{sign} Regular"
    return f"{sign} Large"


def _string(s: str) -> str:
    if not s:
        return "Empty String"
    if s.isalpha():
        return "Alphabetic String"
    if s.isdigit():
        return "Numeric String"
    return "Mixed String"


_SIZED = {"list": "List", "tuple": "Tuple", "dict": "Dictionary", "set": "Set"}


def category(value: list) -> str | None:
    """The category of a typed-JSON value, or None when its type has none."""
    tag = value[0]
    if tag == "bool":  # before int, on purpose (see the module docstring)
        return "True" if value[1] else "False"
    if tag == "none":
        return "None"
    if tag == "int":
        return _number(value[1], None)
    if tag == "float":
        number = float(value[1])
        if number != number:  # NaN is in no range
            return None
        return _number(number, 1.0)
    if tag == "str":
        return _string(value[1])
    if tag in _SIZED:
        return f"{'Non-Empty' if value[1] else 'Empty'} {_SIZED[tag]}"
    return None


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

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"category": self.category, "type": self.type}
        if self.value is not None:
            record["value"] = self.value
        if self.repr is not None:
            record["repr"] = self.repr
        return record

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> AbstractTruth:
        return cls(data["category"], data["type"], data.get("value"), data.get("repr"))

    @classmethod
    def asked(cls, instance: Instance) -> AbstractTruth | None:
        """The truth of an instance asked with abstract values, of whichever task asks in
        categories (output, statement, loop); None for one asked for a value."""
        data = instance.data
        return cls.from_record(data["truth"]) if data.get("values") == "abstract" else None


def truth(value: Encoded) -> AbstractTruth | None:
    """The ground truth of an abstract question about ``value`` (None if it has none)."""
    name = category(value)
    return None if name is None else AbstractTruth(name, value[0])


def normalise(text: str) -> str:
    return " ".join(text.strip().rstrip(".").strip("'\"`").split()).lower()


def read_category(text: str) -> str | None:
    """The category an answer names (its canonical spelling), or None."""
    wanted = normalise(text)
    for names in CATEGORIES.values():
        for name in names:
            if normalise(name) == wanted:
                return name
    return None


def random_category(value_type: str, rng: random.Random) -> str:
    """A category drawn uniformly from those of ``value_type`` (the random baseline)."""
    return rng.choice(CATEGORIES[value_type])


def score(response: str | None, truth: AbstractTruth, extra: dict[str, Any]) -> Score:
    """Score an answer naming a category against an abstract question's truth (``truth``
    gives it); ``extra`` is completed with CodeSense's ``string_match``."""
    text = codesense_answer_text(response)
    extra = {**extra, "string_match": string_match(text, truth.category)}
    if text is None:
        return unparsable(None, EMPTY, extra)
    named = read_category(text)
    if named is None:
        return unparsable(text, "not a category name", extra)
    return Score(CORRECT if named == truth.category else INCORRECT, answer=named,
                 extra=extra)


def _share(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Strict accuracy over the samples a type-aware verdict exists for (those scored
    ``comparable: False``, published values that are no literal, are left out of it and
    counted in ``not_comparable``: strict is None when none is left); string-match
    accuracy over all."""
    total = len(samples)
    comparable = [s for s in samples if (s.get("extra") or {}).get("comparable") is not False]
    strict = sum(s["verdict"] == CORRECT for s in comparable)
    matched = sum(bool((s.get("extra") or {}).get("string_match")) for s in samples)
    share = {"samples": total, "strict": strict / len(comparable) if comparable else None,
             "string_match": matched / total if total else None}
    if len(comparable) < total:
        share["not_comparable"] = total - len(comparable)
    return share


SUMMARY_DATA: tuple[str, ...] = ("kind", "values")
"""What :func:`summarize_by_kind` reads of an instance's data (``Task.summary_data``)."""


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
        return cls(data.get("kind", cls.kind), data.get("values", cls.values))


def summarize_by_kind(samples: list[dict[str, Any]], instances: dict[str, Instance]
                      ) -> dict[str, Any]:
    """Strict (type-aware) and string-match accuracy over all samples, per kind, per
    values mode and per language of the code (these come from the instance, so a failed
    request counts)."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    by_values: dict[str, list[dict[str, Any]]] = {}
    by_language: dict[str, list[dict[str, Any]]] = {}
    for sample in samples:
        instance = instances[sample["instance_id"]]
        filing = Filing.of(instance)
        by_kind.setdefault(filing.kind, []).append(sample)
        by_values.setdefault(filing.values, []).append(sample)
        by_language.setdefault(instance.language, []).append(sample)
    return {"by_kind": {k: _share(v) for k, v in sorted(by_kind.items())},
            "by_values": {k: _share(v) for k, v in sorted(by_values.items())},
            "by_language": {k: _share(v) for k, v in sorted(by_language.items())},
            "all": _share(samples)}
