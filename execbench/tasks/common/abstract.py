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
``summarize_by_kind``, which also serves the CodeSense tasks' concrete questions. What
they record (the truths, the summaries) is typed in ``abstract_payload``, which reports
read; this module names those types too.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from execbench.analysis.shape import function_loc
from execbench.tasks.base import CORRECT, INCORRECT, Instance, Score, TaskOption
from execbench.tasks.common.abstract_payload import (
    CATEGORIES,
    UNFILED,
    AbstractTruth,
    Filing,
    KindSummary,
    Share,
    category_order,
    filed_category,
)
from execbench.tasks.common.answers import EMPTY, string_match, unparsable
from execbench.tasks.common.extract import codesense_answer_text
from execbench.values import Encoded

if TYPE_CHECKING:
    from execbench.json_types import JSON, JSONObject
    from execbench.kept import Kept

__all__ = ["CATEGORIES", "CATEGORY", "DEFINITIONS", "FUNCTION_LINES", "VALUES", "asked", "category",
           "filed", "normalise", "random_category", "read_category", "score", "share",
           "summarize_by_kind", "truth"]

VALUES = TaskOption("values", ("concrete", "abstract"),
                    "ask for the value itself, or its category (CodeSense's Table 6)")

FUNCTION_LINES, CATEGORY = "function_lines", "category"
"""What a score of a question asked in CodeSense's style records of its instance beside the
verdict, for the summary's finer splits: the lines of code of the function the question is
asked in (the CodeSense tasks; ``analysis.shape.function_loc``), and the abstract category
of the value asked for, whichever way it was asked (``filed``)."""


def asked(instance: Instance, kind: str, values: str) -> JSONObject:
    """What every score of a question in CodeSense's style records beside its verdict:
    the question's kind, how its values were asked, and the lines of the function it is
    asked in (the paper splits statement, block, loop, output and input accuracy by it)."""
    return {"kind": kind, "values": values,
            FUNCTION_LINES: function_loc(instance.code, instance.entry_point,
                                         instance.language)}


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


def filed(value: Encoded) -> str | None:
    """The abstract category a summary files a value under (``filed_category``: with its
    type), or None when its type has none."""
    name = category(value)
    return None if name is None else filed_category(value[0], name)


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


def score(response: str | None, truth: AbstractTruth, extra: JSONObject) -> Score:
    """Score an answer naming a category against an abstract question's truth (``truth``
    gives it); ``extra`` is completed with the category asked for (``CATEGORY``, as the
    summary files it) and CodeSense's ``string_match``."""
    text = codesense_answer_text(response)
    extra = {**extra, CATEGORY: filed_category(truth.type, truth.category),
             "string_match": string_match(text, truth.category)}
    if text is None:
        return unparsable(None, EMPTY, extra)
    named = read_category(text)
    if named is None:
        return unparsable(text, "not a category name", extra)
    return Score(CORRECT if named == truth.category else INCORRECT, answer=named,
                 extra=extra)


def share(samples: list[Kept]) -> Share:
    """Strict accuracy over the samples a type-aware verdict exists for (those scored
    ``comparable: False``, published values that are no literal, are left out of it and
    counted in ``not_comparable``: strict is None when none is left); string-match
    accuracy over all."""
    total = len(samples)
    comparable = [s for s in samples if s.added("comparable") is not False]
    strict = sum(s.verdict == CORRECT for s in comparable)
    matched = sum(bool(s.added("string_match")) for s in samples)
    return Share(total, strict / len(comparable) if comparable else None,
                 matched / total if total else None, total - len(comparable))


def _described(samples: list[Kept]) -> dict[str, dict[str, JSON]]:
    """What the scores recorded of each instance (``FUNCTION_LINES``, ``CATEGORY``): a
    failed request is never scored, so its sample takes what another sample of its
    instance recorded."""
    found: dict[str, dict[str, JSON]] = {}
    for sample in samples:
        for key in (FUNCTION_LINES, CATEGORY):
            value = sample.added(key)
            if value is not None and not isinstance(value, bool):
                found.setdefault(sample.instance_id, {}).setdefault(key, value)
    return found


def _size_order(name: str) -> tuple[int, int, str]:
    """Line counts in numeric order, then anything else (``UNFILED``)."""
    return (0, int(name), name) if name.isdigit() else (1, 0, name)


def summarize_by_kind(samples: list[Kept], instances: dict[str, Instance]) -> KindSummary:
    """Strict (type-aware) and string-match accuracy over all samples, per kind, per
    values mode and per language of the code (these come from the instance, so a failed
    request counts); per language and kind where the samples span languages; per size of
    the function and per abstract category of the value asked for, where scores recorded
    them (``FUNCTION_LINES``, ``CATEGORY``); and per sample index where there are several."""
    by_kind: dict[str, list[Kept]] = {}
    by_values: dict[str, list[Kept]] = {}
    by_language: dict[str, list[Kept]] = {}
    by_language_kind: dict[str, dict[str, list[Kept]]] = {}
    by_lines: dict[str, list[Kept]] = {}
    by_category: dict[str, dict[str, list[Kept]]] = {}
    by_sample: dict[str, list[Kept]] = {}
    described = _described(samples)
    recorded = {key for facts in described.values() for key in facts}
    for sample in samples:
        instance = instances[sample.instance_id]
        filing = Filing.of(instance)
        by_kind.setdefault(filing.kind, []).append(sample)
        by_values.setdefault(filing.values, []).append(sample)
        by_language.setdefault(instance.language, []).append(sample)
        by_language_kind.setdefault(instance.language, {}).setdefault(
            filing.kind, []).append(sample)
        by_sample.setdefault(str(sample.sample), []).append(sample)
        facts = described.get(sample.instance_id, {})
        if FUNCTION_LINES in recorded:
            lines = facts.get(FUNCTION_LINES)
            by_lines.setdefault(str(lines) if isinstance(lines, int) else UNFILED,
                                []).append(sample)
        if CATEGORY in recorded:
            filed_as = facts.get(CATEGORY)
            by_category.setdefault(filing.values, {}).setdefault(
                filed_as if isinstance(filed_as, str) else UNFILED, []).append(sample)

    def shares(groups: dict[str, list[Kept]], order: Callable[[str], Any] = str
               ) -> dict[str, Share]:
        return {name: share(groups[name]) for name in sorted(groups, key=order)}

    return KindSummary(
        shares(by_kind), shares(by_values), shares(by_language), share(samples),
        by_language_kind={language: shares(kinds) for language, kinds
                          in sorted(by_language_kind.items())} if len(by_language) > 1
        else {},
        by_function_lines=shares(by_lines, _size_order),
        by_category={values: shares(categories, category_order)
                     for values, categories in sorted(by_category.items())},
        by_sample=shares(by_sample, _size_order) if len(by_sample) > 1 else {})
