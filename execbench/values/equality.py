"""Type-aware equality of typed JSON, by canonical text: NaN equals NaN, ``-0.0`` is not
``0.0``, containers compare element by element with their exact types, dict and set
order does not matter, objects compare by class name and attributes. Comparing texts
means no user ``__eq__`` can ever take part in a verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING

from execbench.values.texts import joined, joined_fields, pair_text, text_of

if TYPE_CHECKING:
    from typing import Any

    from execbench.values.shape import Encoded


def canonical(enc: Encoded) -> str:
    """A string that two encodings share exactly when the values are equal.

    Dict and set orders are normalised; everything else (types, float text) is kept.
    ``truncated`` and ``object`` values get a marker that can never match an answer.
    It is the JSON text of the value with its dicts and sets sorted (an object's
    attributes by name), each part written once and its text reused by the part around
    it: writing the whole of each part anew would take the value's size times its depth.
    """
    if _small(enc):  # few parts: one ``json`` call on a sorted copy is the cheaper way
        return text_of(_sorted_copy(enc))
    text = _canonical(enc)
    return text_of(enc) if text is None else text


SMALL_PARTS = 64
"""Up to this many parts, a value's canonical text is its sorted copy written at once:
the same text, and faster for the small values most answers are; the cost of sorting by
each member's whole text (size times depth) is bounded by the count."""


def _small(enc: Encoded) -> bool:
    """Whether ``enc`` has at most ``SMALL_PARTS`` parts (counted with an early stop)."""
    left, stack = SMALL_PARTS, [enc]
    while stack:
        part = stack.pop()
        left -= 1
        if left < 0:
            return False
        tag = part[0]
        if tag in ("list", "tuple", "set", "frozenset"):
            stack.extend(part[1])
        elif tag == "dict":
            for key, value in part[1]:
                stack += (key, value)
        elif tag == "instance":
            stack.extend(value for _, value in part[2])
    return True


def _sorted_copy(enc: Encoded) -> Any:
    """``enc`` with its dicts and sets sorted by their members' texts, and opaque values
    marked as ``_canonical`` marks them."""
    tag = enc[0]
    if tag in ("list", "tuple"):
        return [tag, [_sorted_copy(x) for x in enc[1]]]
    if tag in ("set", "frozenset"):
        return [tag, sorted((_sorted_copy(x) for x in enc[1]), key=text_of)]
    if tag == "dict":
        return [tag, sorted(([_sorted_copy(k), _sorted_copy(v)] for k, v in enc[1]), key=text_of)]
    if tag == "instance":
        return [tag, enc[1], sorted([name, _sorted_copy(value)] for name, value in enc[2])]
    if tag in ("truncated", "object"):
        return ["\x00opaque", id(enc)]
    return enc


_PLAIN = frozenset({"none", "bool", "int", "float", "str", "bytes", "complex", "ref"})


def _canonical(enc: Encoded) -> str | None:
    """``canonical(enc)``, or None when that is ``text_of(enc)`` (nothing in it to sort or
    mark), which ``json`` then writes whole, faster than in parts."""
    tag = enc[0]
    if tag in _PLAIN:
        return None
    if tag in ("list", "tuple"):
        texts = [_canonical(x) for x in enc[1]]
        if not any(texts):
            return None
        return joined(tag, _or_text(texts, enc[1]))
    if tag in ("set", "frozenset"):
        return joined(tag, sorted(_or_text([_canonical(x) for x in enc[1]], enc[1])))
    if tag == "dict":
        return joined(tag, sorted(pair_text(*_or_text([_canonical(k), _canonical(v)], [k, v]))
                                   for k, v in enc[1]))
    if tag == "instance":
        return "[" + text_of(tag) + "," + text_of(enc[1]) + "," + joined_fields(
            sorted((name, canonical(value)) for name, value in enc[2])) + "]"
    if tag in ("truncated", "object"):
        return text_of(["\x00opaque", id(enc)])
    return None


def _or_text(texts: list[str | None], parts: list[Encoded]) -> list[str]:
    return [text_of(part) if text is None else text for text, part in zip(texts, parts,
                                                                       strict=True)]


def equal(a: Encoded, b: Encoded) -> bool:
    """Type-aware equality of two typed-JSON values (``True != 1``, ``[1] != (1,)``)."""
    return canonical(a) == canonical(b)
