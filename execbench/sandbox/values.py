"""Values crossing the sandbox boundary and coming back from models.

Three jobs, all without ever executing text as code or calling a user-defined method
on the comparison path:

* ``encode`` turns any Python object into *typed JSON* (a nested list such as
  ``["tuple", [["int", 1], ["str", "a"]]]``) so that ``1``, ``True``, ``1.0`` and
  ``(1,)`` vs ``[1]`` stay distinct after a round trip through a JSON file.
* ``parse_literal`` / ``parse_call`` read a model's answer with an AST walk that accepts
  literals only (plus ``set()``, ``frozenset(...)``, ``float('nan')`` and friends that
  ``repr`` produces but ``ast.literal_eval`` refuses).
* ``equal`` compares two typed-JSON values structurally: NaN equals NaN, ``-0.0`` differs
  from ``0.0``, containers compare element-wise with their exact types, and dict/set
  order does not matter.
"""

from __future__ import annotations

import ast
import json
import math
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

Encoded = list  # typed JSON: ["tag", payload...]

MAX_LITERAL_CHARS = 1_000_000
_FLOAT_WORDS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "infinity": math.inf,
                "-infinity": -math.inf, "+inf": math.inf}


class LiteralError(ValueError):
    """The text is not a literal we are willing to read."""


# --------------------------------------------------------------------------- encode


class _Budget:
    """Bounds the size of one encoded value so a huge return value cannot flood a record."""

    def __init__(self, nodes: int, chars: int) -> None:
        self.nodes = nodes
        self.chars = chars

    def spend(self, nodes: int = 1, chars: int = 0) -> bool:
        self.nodes -= nodes
        self.chars -= chars
        return self.nodes >= 0 and self.chars >= 0


def _float_text(x: float) -> str:
    return repr(x)  # 'nan', 'inf', '-inf', '-0.0' all round-trip through float()


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _safe_repr(obj: Any, limit: int = 200) -> str:
    """``repr`` of a foreign object; only ever called inside the sandbox, and never trusted."""
    try:
        text = repr(obj)
    except BaseException as exc:  # noqa: BLE001 - a user __repr__ may raise anything
        text = f"<unrepresentable {type(obj).__qualname__}: {type(exc).__name__}>"
    if not isinstance(text, str):
        text = f"<{type(obj).__qualname__}>"
    text = _ADDRESS.sub(" at 0x?", text)  # addresses differ run to run; records must not
    return text if len(text) <= limit else text[: limit - 3] + "..."


def encode(obj: Any, *, max_nodes: int = 100_000, max_chars: int = 10_000_000,
           max_depth: int = 100) -> Encoded:
    """Encode ``obj`` as typed JSON.

    Only exact builtin types are encoded structurally (``type(x) is int``, never
    ``isinstance``), so a subclass with a forged ``__eq__`` or ``__hash__`` becomes an opaque
    ``object`` record that equals nothing. Values over the budget become ``truncated``.
    """
    return _encode(obj, _Budget(max_nodes, max_chars), max_depth)


def _encode(obj: Any, budget: _Budget, depth: int) -> Encoded:
    t = type(obj)
    if depth < 0 or not budget.spend():
        return ["truncated", t.__qualname__]
    if obj is None:
        return ["none"]
    if t is bool:
        return ["bool", obj]
    if t is int:
        if obj.bit_length() > 4 * 3300:  # str(int) limit is 4300 digits
            return ["truncated", "int"]
        return ["int", obj]
    if t is float:
        return ["float", _float_text(obj)]
    if t is str:
        if not budget.spend(chars=len(obj)):
            return ["truncated", "str"]
        return ["str", obj]
    if t is bytes:
        if not budget.spend(chars=2 * len(obj)):
            return ["truncated", "bytes"]
        return ["bytes", obj.hex()]
    if t is complex:
        return ["complex", _float_text(obj.real), _float_text(obj.imag)]
    if t in (list, tuple, set, frozenset):
        items = []
        for x in obj:
            if budget.nodes <= 0:  # the rest is cut, and marked once
                return ["truncated", t.__name__]
            items.append(_encode(x, budget, depth - 1))
        if t in (set, frozenset):
            items.sort(key=_key)
        return [t.__name__, items]
    if t is dict:
        pairs = []
        for k, v in obj.items():
            if budget.nodes <= 0:
                return ["truncated", "dict"]
            pairs.append([_encode(k, budget, depth - 1), _encode(v, budget, depth - 1)])
        return ["dict", pairs]
    return ["object", t.__qualname__, _safe_repr(obj)]


def _key(enc: Encoded) -> str:
    return json.dumps(enc, separators=(",", ":"), ensure_ascii=False)


_ATOMS = {"bool": bool, "int": int, "float": str, "str": str, "bytes": str}
_SEQUENCES = ("list", "tuple", "set", "frozenset")


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
    if tag in _SEQUENCES:
        return len(rest) == 1 and isinstance(rest[0], list) and all(map(is_encoding, rest[0]))
    if tag == "dict":
        return len(rest) == 1 and isinstance(rest[0], list) and all(
            isinstance(pair, list) and len(pair) == 2 and all(map(is_encoding, pair))
            for pair in rest[0])
    if tag == "object":
        return len(rest) == 2 and all(isinstance(part, str) for part in rest)
    return tag == "truncated" and len(rest) == 1 and isinstance(rest[0], str)


def is_exact(enc: Encoded) -> bool:
    """True when the value was encoded in full and can be written as a literal."""
    tag = enc[0]
    if tag in ("truncated", "object"):
        return False
    if tag in ("list", "tuple", "set", "frozenset"):
        return all(is_exact(x) for x in enc[1])
    if tag == "dict":
        return all(is_exact(k) and is_exact(v) for k, v in enc[1])
    return True


# --------------------------------------------------------------------------- equality


def canonical(enc: Encoded) -> str:
    """A string that two encodings share exactly when the values are equal.

    Dict and set orders are normalised; everything else (types, float text) is kept.
    ``truncated`` and ``object`` values get a marker that can never match an answer.
    """
    return _key(_canon(enc))


def _canon(enc: Encoded) -> Any:
    tag = enc[0]
    if tag in ("list", "tuple"):
        return [tag, [_canon(x) for x in enc[1]]]
    if tag in ("set", "frozenset"):
        return [tag, sorted((_canon(x) for x in enc[1]), key=_key)]
    if tag == "dict":
        return [tag, sorted(([_canon(k), _canon(v)] for k, v in enc[1]), key=_key)]
    if tag in ("truncated", "object"):
        return ["\x00opaque", id(enc)]
    return enc


def equal(a: Encoded, b: Encoded) -> bool:
    """Type-aware equality of two typed-JSON values (``True != 1``, ``[1] != (1,)``)."""
    return canonical(a) == canonical(b)


# --------------------------------------------------------------------------- decode


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
        return {_decode(x) for x in enc[1]}
    if tag == "frozenset":
        return frozenset(_decode(x) for x in enc[1])
    if tag == "dict":
        return {_decode(k): _decode(v) for k, v in enc[1]}
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
    raise LiteralError(f"a {tag} value has no literal form")


def _float_literal(text: str) -> str:
    if text in ("nan", "inf", "-inf"):
        return f"float('{text}')"
    return text


# --------------------------------------------------------------------------- parse


def parse_expression(text: str) -> ast.expr:
    """Parse ``text`` as one Python expression (not evaluated)."""
    if len(text) > MAX_LITERAL_CHARS:
        raise LiteralError(f"answer longer than {MAX_LITERAL_CHARS} characters")
    try:
        return ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise LiteralError(f"not a Python expression: {type(exc).__name__}") from None


def parse_literal(text: str) -> Any:
    """Read a literal value from text; raises ``LiteralError`` for anything else."""
    return literal_value(parse_expression(text))


def literal_value(node: ast.AST) -> Any:
    """The value of a literal AST node; refuses names, calls (but a few), operators."""
    try:
        return _value(node)
    except RecursionError:
        raise LiteralError("literal nested too deeply") from None
    except LiteralError:
        raise
    except (TypeError, ValueError) as exc:  # unhashable key; dict('ab'); float('x')
        raise LiteralError(str(exc)) from None


def _value(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        if node.value is Ellipsis:
            raise LiteralError("'...' is not a value")
        return node.value
    if isinstance(node, ast.List):
        return [_value(x) for x in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_value(x) for x in node.elts)
    if isinstance(node, ast.Set):
        return {_value(x) for x in node.elts}
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise LiteralError("'**' in a dict literal")
        return {_value(k): _value(v) for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _value(node.operand)
        if type(operand) in (int, float, complex):
            return -operand if isinstance(node.op, ast.USub) else +operand
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        left, right = _value(node.left), _value(node.right)
        if type(left) in (int, float) and type(right) is complex:
            return left + right if isinstance(node.op, ast.Add) else left - right
    if isinstance(node, ast.Call):
        return _constructor(node)
    raise LiteralError(f"not a literal: {type(node).__name__}")


_CONSTRUCTORS = {"set": set, "frozenset": frozenset, "tuple": tuple, "list": list, "dict": dict}


def _constructor(node: ast.Call) -> Any:
    name = node.func.id if isinstance(node.func, ast.Name) else None
    if node.keywords or len(node.args) > 2:
        raise LiteralError(f"not a literal: call of {name}")
    args = [_value(a) for a in node.args]
    if name in _CONSTRUCTORS and len(args) <= 1:
        if args and not isinstance(args[0], str | bytes | list | tuple | set | frozenset | dict):
            raise LiteralError(f"not a literal: {name}() of a {type(args[0]).__name__}")
        return _CONSTRUCTORS[name](*args)
    if name == "float" and len(args) == 1 and type(args[0]) is str:
        word = args[0].strip().lower()
        if word in _FLOAT_WORDS:
            return _FLOAT_WORDS[word]
    if name == "complex" and len(args) == 2 and all(type(a) in (int, float) for a in args):
        return complex(*args)
    raise LiteralError(f"not a literal: call of {name}")


def parse_call_nodes(text: str) -> tuple[list[ast.expr], list[ast.keyword]]:
    """Split an argument-list text (``"'abc', 2, k=3"``) into its AST nodes, unevaluated."""
    if len(text) > MAX_LITERAL_CHARS:
        raise LiteralError(f"arguments longer than {MAX_LITERAL_CHARS} characters")
    try:
        call = ast.parse(f"_({text}\n)", mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise LiteralError(f"not an argument list: {type(exc).__name__}") from None
    # Text such as "1), (2" parses, but not as one call of ``_``: refuse it.
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and call.func.id == "_" and call.func.col_offset == 0):
        raise LiteralError("not an argument list: unbalanced brackets")
    return list(call.args), list(call.keywords)
