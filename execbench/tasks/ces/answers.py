"""Reading a simulation answer: one line per placeholder, ``[3a] = [0, 1, 2]``, and
``[output] = VALUE``.

Reasoning text is tolerated around and between those lines: a line that does not start
with a known tag is ignored, a tag may be followed by its label as the prompt showed it
(``[3a] i = [0, 1]``), a value may run over several lines, and when a tag is given more
than once the last readable value wins (a model drafting, then correcting). Values are read
with the literal parser only. A list may elide its middle with ``...`` (at any depth, once
per list, with at least one item on each side): the items stated before and after it
must then match the first and last items of the true list, which must be long enough to
hold them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from execbench.sandbox.values import LiteralError, encode, equal, literal_value, parse_expression

OUTPUT = "output"
_TAG = re.compile(r"^\s*[`*]*\[(\w+)\][`*]*\s*(.*)$")


@dataclass(frozen=True)
class Elided:
    """A list or tuple written with ``...``: its first and last items."""

    kind: str
    head: tuple[Any, ...]
    tail: tuple[Any, ...]


Pattern = Any
"""A predicted value: typed JSON (``values.encode``), or an ``Elided`` (whose items are
patterns), or a ("list"/"tuple", [patterns]) pair for a container with an elided part."""


def read_answer(text: str, labels: dict[str, str]) -> dict[str, str]:
    """The value text given for each tag (``labels``: tag -> label; ``output`` is always
    known), the last readable one where a tag appears more than once."""
    found: dict[str, str] = {}
    lines = text.splitlines()
    for number, line in enumerate(lines):
        match = _TAG.match(line)
        if not match or (match.group(1) not in labels and match.group(1) != OUTPUT):
            continue
        tag = match.group(1)
        rest = _after_label(match.group(2), labels.get(tag))
        if rest is None:
            continue
        following = []
        for extra in lines[number + 1:]:
            if _TAG.match(extra):
                break
            following.append(extra)
        value = _first_readable(rest, following)
        if value is not None:
            found[tag] = value
    return found


def _after_label(rest: str, label: str | None) -> str | None:
    """The text after ``=`` (or ``:``), skipping the label if it was repeated."""
    squeezed = rest.replace(" ", "")
    if label is not None and squeezed.startswith(label.replace(" ", "")):
        kept = 0
        for position, char in enumerate(rest):
            if char != " ":
                kept += 1
            if kept == len(label.replace(" ", "")):
                rest = rest[position + 1:]
                break
    rest = rest.strip()
    if rest[:1] in ("=", ":"):
        return rest[1:].strip()
    return None


def _first_readable(first: str, following: list[str]) -> str | None:
    """The shortest run of lines from ``first`` on that reads as one value."""
    text = first
    for extra in [None, *following]:
        if extra is not None:
            text += "\n" + extra
        try:
            parse_pattern(text.strip())
        except LiteralError:
            continue
        return text.strip()
    return None


def parse_pattern(text: str) -> Pattern:
    """A predicted value from its text (see the module doc); ``LiteralError`` otherwise."""
    return _pattern(parse_expression(text))


def _pattern(node: ast.expr) -> Pattern:
    if isinstance(node, ast.List | ast.Tuple) and _has_ellipsis(node):
        kind = "list" if isinstance(node, ast.List) else "tuple"
        dots = [i for i, e in enumerate(node.elts) if _is_ellipsis(e)]
        if not dots:
            return (kind, [_pattern(e) for e in node.elts])
        if len(dots) > 1 or dots[0] in (0, len(node.elts) - 1):
            raise LiteralError("'...' must stand once inside a list, between stated items")
        head = tuple(_pattern(e) for e in node.elts[:dots[0]])
        tail = tuple(_pattern(e) for e in node.elts[dots[0] + 1:])
        return Elided(kind, head, tail)
    if _has_ellipsis(node):
        raise LiteralError("'...' may only stand for items of a list or tuple")
    return encode(literal_value(node))


def _is_ellipsis(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def _has_ellipsis(node: ast.AST) -> bool:
    return any(_is_ellipsis(inner) for inner in ast.walk(node))


def is_full(pattern: Pattern) -> bool:
    """True when nothing in the value is elided: it is plain typed JSON."""
    return isinstance(pattern, list)


def matches(pattern: Pattern, truth: list) -> bool:
    """Does a predicted value agree with a true (typed JSON) one? Type-aware equality
    (``values.equal``) for stated values; elided ones as the module doc says."""
    if isinstance(pattern, list):
        return equal(pattern, truth)
    if isinstance(pattern, Elided):
        if truth[0] != pattern.kind:
            return False
        items = truth[1]
        if len(items) < len(pattern.head) + len(pattern.tail):
            return False
        tail = items[len(items) - len(pattern.tail):]
        return all(matches(p, t) for p, t in zip(pattern.head, items, strict=False)) and \
            all(matches(p, t) for p, t in zip(pattern.tail, tail, strict=True))
    kind, items = pattern
    return truth[0] == kind and len(truth[1]) == len(items) and \
        all(matches(p, t) for p, t in zip(items, truth[1], strict=True))


def sequence(text: str) -> tuple[list[Pattern], list[Pattern], bool] | None:
    """A placeholder's list of values over the run as (first items, last items, whole):
    for a list without a top-level ``...`` both are the whole list. None if the text is
    not a list."""
    try:
        pattern = parse_pattern(text)
    except LiteralError:
        return None
    if isinstance(pattern, Elided) and pattern.kind == "list":
        return list(pattern.head), list(pattern.tail), False
    if isinstance(pattern, tuple) and pattern[0] == "list":
        return list(pattern[1]), list(pattern[1]), True
    if isinstance(pattern, list) and pattern[0] == "list":
        return list(pattern[1]), list(pattern[1]), True
    return None
