"""The shape of typed JSON, ``["tag", payload...]``, and questions about it that need
no comparison: whether a record is one, whether it was recorded whole, which tags it
holds. Records mix typed values with plain JSON, so whatever shows or checks them asks
here first."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

Encoded = list
"""Typed JSON: ``["int", 1]``, ``["tuple", [["int", 1], ["str", "a"]]]``; a plain list
at run time, named so signatures say which lists are values."""

_ATOMS = {"bool": bool, "int": int, "float": str, "str": str, "bytes": str}
SEQUENCES = ("list", "tuple", "set", "frozenset")


def inner(enc: Encoded) -> list[Encoded]:
    """The values right inside an encoding: a list's, tuple's or set's items, a dict's
    keys and values, an object's attributes."""
    if enc[0] in SEQUENCES:
        return enc[1]
    if enc[0] == "dict":
        return [part for pair in enc[1] for part in pair]
    if enc[0] == "instance":
        return [value for _, value in enc[2]]
    return []


def is_encoding(obj: Any) -> bool:
    """Whether ``obj`` has the shape ``encode`` writes. Records mix typed values with
    plain JSON (a truth's ``value`` beside its ``lines``), so whatever shows them must
    tell the two apart before decoding."""
    if not isinstance(obj, list) or not obj or not isinstance(obj[0], str):
        return False
    tag, rest = obj[0], obj[1:]
    if tag == "none":
        return not rest
    if tag in _ATOMS:
        return len(rest) == 1 and type(rest[0]) is _ATOMS[tag]
    if tag == "complex":
        return len(rest) == 2 and all(isinstance(part, str) for part in rest)
    if tag in SEQUENCES:
        return len(rest) == 1 and isinstance(rest[0], list) and all(map(is_encoding, rest[0]))
    if tag == "dict":
        return len(rest) == 1 and isinstance(rest[0], list) and all(
            isinstance(pair, list) and len(pair) == 2 and all(map(is_encoding, pair))
            for pair in rest[0])
    if tag == "object":
        return len(rest) == 2 and all(isinstance(part, str) for part in rest)
    if tag == "instance":
        return len(rest) == 2 and isinstance(rest[0], str) and isinstance(rest[1], list) \
            and all(isinstance(field, list) and len(field) == 2 and isinstance(field[0], str)
                    and is_encoding(field[1]) for field in rest[1])
    if tag == "ref":
        return len(rest) == 2 and isinstance(rest[0], str) and type(rest[1]) is int
    return tag == "truncated" and len(rest) == 1 and isinstance(rest[0], str)


def is_exact(enc: Encoded) -> bool:
    """True when the value was encoded in full and can be written as a literal."""
    tag = enc[0]
    if tag in ("truncated", "object", "ref"):
        return False
    if tag in ("list", "tuple", "set", "frozenset"):
        return all(is_exact(x) for x in enc[1])
    if tag == "dict":
        return all(is_exact(k) and is_exact(v) for k, v in enc[1])
    if tag == "instance":
        return all(is_exact(value) for _, value in enc[2])
    return True


def parts(enc: Encoded) -> Iterator[Encoded]:
    """The encoding and every value inside it, at any depth (an object's attributes, a
    dict's keys and values)."""
    stack = [enc]
    while stack:
        current = stack.pop()
        yield current
        tag = current[0]
        if tag in SEQUENCES:
            stack.extend(current[1])
        elif tag == "dict":
            stack.extend(part for pair in current[1] for part in pair)
        elif tag == "instance":
            stack.extend(value for _, value in current[2])


def tags(enc: Encoded) -> set[str]:
    """Every tag an encoding holds, at any depth (``"truncated"`` in a list in an object)."""
    return {part[0] for part in parts(enc)}
