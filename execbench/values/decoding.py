"""Typed JSON back into something else: a Python value (builtins only), the literal a
model would write for it, or the text a person reads in a report. The literal form is
what ``literals`` reads back, so each answer format stays a round trip."""

from __future__ import annotations

from typing import TYPE_CHECKING

from execbench.values.alike import dict_of, distinct
from execbench.values.errors import LiteralError

if TYPE_CHECKING:
    from typing import Any

    from execbench.values.shape import Encoded


def decode(enc: Encoded) -> Any:
    """Rebuild a Python value from typed JSON (builtins only; opaque values raise). A
    malformed encoding (a runner's result is a program's to forge) is a ``LiteralError``
    too, never an ``IndexError`` that would stop a build."""
    try:
        return _decode(enc)
    except LiteralError:
        raise
    except (IndexError, KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        raise LiteralError(f"malformed value encoding: {type(exc).__name__}") from None


def _decode(enc: Encoded) -> Any:
    tag = enc[0]
    if tag == "none":
        return None
    if tag in ("bool", "int", "str"):
        return enc[1]
    if tag == "float":
        return float(enc[1])
    if tag == "bytes":
        return bytes.fromhex(enc[1])
    if tag == "complex":
        return complex(float(enc[1]), float(enc[2]))
    if tag == "list":
        return [_decode(x) for x in enc[1]]
    if tag == "tuple":
        return tuple(_decode(x) for x in enc[1])
    if tag == "set":
        return distinct(_decode(x) for x in enc[1])
    if tag == "frozenset":
        return frozenset(distinct(_decode(x) for x in enc[1]))
    if tag == "dict":
        return dict_of((_decode(k), _decode(v)) for k, v in enc[1])
    raise LiteralError(f"cannot rebuild a {tag} value")


def to_literal(enc: Encoded) -> str:
    """Python source text for an encoded value, readable back by ``parse_literal``."""
    tag = enc[0]
    if tag == "none":
        return "None"
    if tag in ("bool", "int", "str"):
        return repr(enc[1])
    if tag == "float":
        return _float_literal(enc[1])
    if tag == "bytes":
        return repr(bytes.fromhex(enc[1]))
    if tag == "complex":
        return f"complex({_float_literal(enc[1])}, {_float_literal(enc[2])})"
    if tag == "list":
        return "[" + ", ".join(to_literal(x) for x in enc[1]) + "]"
    if tag == "tuple":
        items = [to_literal(x) for x in enc[1]]
        return "(" + items[0] + ",)" if len(items) == 1 else "(" + ", ".join(items) + ")"
    if tag == "set":
        return "{" + ", ".join(to_literal(x) for x in enc[1]) + "}" if enc[1] else "set()"
    if tag == "frozenset":
        inner = "{" + ", ".join(to_literal(x) for x in enc[1]) + "}" if enc[1] else ""
        return f"frozenset({inner})"
    if tag == "dict":
        return "{" + ", ".join(f"{to_literal(k)}: {to_literal(v)}" for k, v in enc[1]) + "}"
    if tag == "instance":
        return enc[1] + "(" + ", ".join(f"{name}={to_literal(value)}"
                                        for name, value in enc[2]) + ")"
    raise LiteralError(f"a {tag} value has no literal form")


def shown(enc: Encoded) -> str:
    """A value as a person reads it: its literal where it has one, else with each part
    that has none written as what was recorded of it (an object's ``repr``, a value too
    large to record, an object met before)."""
    try:
        return to_literal(enc)
    except LiteralError:
        pass
    tag = enc[0]
    if tag == "object":
        return str(enc[2])
    if tag == "truncated":
        return f"<{enc[1]} too large to record>"
    if tag == "ref":
        return f"<the {enc[1]} object shown above>"
    if tag == "instance":
        return enc[1] + "(" + ", ".join(f"{name}={shown(value)}" for name, value in enc[2]) \
            + ")"
    if tag == "dict":
        return "{" + ", ".join(f"{shown(key)}: {shown(item)}" for key, item in enc[1]) + "}"
    items = ", ".join(shown(item) for item in enc[1])
    if tag == "tuple":
        return f"({items}{',' if len(enc[1]) == 1 else ''})"
    return {"list": f"[{items}]", "set": f"{{{items}}}",
            "frozenset": f"frozenset({{{items}}})"}[tag]


def _float_literal(text: str) -> str:
    if text in ("nan", "inf", "-inf"):
        return f"float('{text}')"
    return text
