"""Reading the values a model writes, without evaluating them.

An AST walk accepts literals only, plus the few calls ``repr`` writes that
``ast.literal_eval`` refuses (``set()``, ``frozenset({...})``, ``float('nan')``,
``complex(1, 2)``, and dict views: ``dict_keys([1, 2])``, ``dict_values([...])``,
``dict_items([(k, v), ...])`` and ``OrderedDict``'s ``odict_keys`` ..., each read as the
list it holds, as the tracer encodes a view); ``read_encoded`` also reads an object
written ``Point(x=1)`` as its encoding, with nothing looked up, imported or called. The
text is a model's, so its size and its sets' hashes are bounded before anything is
built."""

from __future__ import annotations

import ast
import math
from typing import TYPE_CHECKING

from execbench.values.alike import Alike, dict_of, distinct
from execbench.values.decoding import decode
from execbench.values.encoding import VIEW_NAMES, encode
from execbench.values.errors import LiteralError
from execbench.values.shape import inner
from execbench.values.texts import Texts

if TYPE_CHECKING:
    from typing import Any

    from execbench.values.shape import Encoded

MAX_LITERAL_CHARS = 1_000_000
_FLOAT_WORDS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "infinity": math.inf,
                "-infinity": -math.inf, "+inf": math.inf}


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
        return distinct(_value(x) for x in node.elts)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise LiteralError("'**' in a dict literal")
        return dict_of((_value(k), _value(v))
                        for k, v in zip(node.keys, node.values, strict=True)
                        if k is not None)  # None is refused just above
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
    if name in VIEW_NAMES:
        return [_value(item) for item in view_items(node)]
    if node.keywords or len(node.args) > 2:
        raise LiteralError(f"not a literal: call of {name}")
    args = [_value(a) for a in node.args]
    if name in _CONSTRUCTORS and len(args) <= 1:
        if args and not isinstance(args[0], str | bytes | list | tuple | set | frozenset | dict):
            raise LiteralError(f"not a literal: {name}() of a {type(args[0]).__name__}")
        if args and type(args[0]) in (list, tuple):
            _hold_alike(name, args[0])
        return _CONSTRUCTORS[name](*args)
    if name == "float" and len(args) == 1 and type(args[0]) is str:
        word = args[0].strip().lower()
        if word in _FLOAT_WORDS:
            return _FLOAT_WORDS[word]
    if name == "complex" and len(args) == 2 and all(type(a) in (int, float) for a in args):
        return complex(*args)
    raise LiteralError(f"not a literal: call of {name}")


def view_items(node: ast.Call) -> list[ast.expr]:
    """The item nodes of a dict view written as Python prints one, ``NAME([item, ...])``
    (one list display, no keyword), each item of a ``*_items`` view a ``(key, value)``
    tuple display (or ``...``); ``LiteralError`` for any other form. Only the form is
    checked here, on the nodes, before any item is read: a view is its list of items. The
    caller has checked that ``NAME`` is a view's (``is_view``)."""
    name = _dotted(node.func)
    if node.keywords or len(node.args) != 1 or not isinstance(node.args[0], ast.List):
        raise LiteralError(f"a {name} is written {name}([item, ...])")
    items = node.args[0].elts
    if name is not None and name.endswith("_items") and not all(
            isinstance(item, ast.Tuple) and len(item.elts) == 2 or _elided(item)
            for item in items):
        raise LiteralError(f"each item of a {name} is a (key, value) pair")
    return items


def _elided(node: ast.expr) -> bool:
    """``...``, which a simulation answer may write for items left out (the reader of
    values refuses it where it reads it)."""
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def is_view(node: ast.AST) -> bool:
    """Whether ``node`` is a call of a dict view's name (``dict_keys(...)``)."""
    return isinstance(node, ast.Call) and _dotted(node.func) in VIEW_NAMES


_ITERABLE = (list, tuple, str, bytes, set, frozenset, dict)


def _hold_alike(name: str | None, items: list[Any] | tuple[Any, ...]) -> None:
    """Refuse ``set``, ``frozenset`` or ``dict`` of a list or tuple whose members (a dict's
    keys) would hash alike beyond ``MAX_ALIKE``, before the constructor builds it. For
    ``dict`` the check stops at the first item that is not a pair: ``dict`` raises there."""
    alike = Alike()
    if name in ("set", "frozenset"):
        for member in items:
            alike.add(member)
    elif name == "dict":
        for pair in items:
            if type(pair) not in _ITERABLE or len(pair) != 2:
                break
            alike.add(next(iter(pair)))


def read_encoded(node: ast.AST) -> Encoded:
    """The typed JSON a literal AST node states, reading ``Name(attr=value, ...)`` (the
    way ``to_literal`` writes an object) as an ``instance`` of class ``Name``: nothing is
    looked up, imported or called. Without such a part it is ``encode(literal_value(node))``
    exactly."""
    try:
        holding = _holding_objects(node)
        if not holding:
            return encode(literal_value(node))
        return _ObjectReader(holding).read(node)
    except RecursionError:
        raise LiteralError("literal nested too deeply") from None


def _holding_objects(node: ast.AST) -> set[int]:
    """``id`` of every node that is, or holds, an object's form: one pass over the tree."""
    holding: set[int] = set()
    stack: list[tuple[ast.AST, bool]] = [(node, False)]
    while stack:
        current, done = stack.pop()
        if done:
            if _names_object(current) or any(id(child) in holding
                                             for child in ast.iter_child_nodes(current)):
                holding.add(id(current))
            continue
        stack.append((current, True))
        stack.extend((child, False) for child in ast.iter_child_nodes(current))
    return holding


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _names_object(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and (name := _dotted(node.func)) is not None \
        and name not in _CONSTRUCTORS and name not in ("float", "complex") \
        and name not in VIEW_NAMES


class _ObjectReader:
    """Reads a tree that holds objects' forms; parts without one go to the literal reader.
    Sets and dict keys keep Python's rules for their literal members (``1`` and ``True``
    are one key, the last value stays) and keep every object apart (objects compare by
    identity, so two with the same attributes are two members)."""

    def __init__(self, holding: set[int]) -> None:
        self.holding = holding
        self.objects: dict[int, Encoded] = {}
        """The encodings read that are or hold an object (by ``id``; kept referenced)."""
        self.texts = Texts()

    def read(self, node: ast.AST) -> Encoded:
        """The encoding of ``node``, noted in ``objects`` when it holds an object."""
        if id(node) not in self.holding:
            return encode(literal_value(node))
        read = self.texts.noted(self._read(node))
        if read[0] == "instance" or any(id(part) in self.objects for part in inner(read)):
            self.objects[id(read)] = read
        return read

    def _read(self, node: ast.AST) -> Encoded:
        if _names_object(node):
            assert isinstance(node, ast.Call)
            if node.args or any(kw.arg is None for kw in node.keywords):
                raise LiteralError("an object is written Name(attribute=value, ...)")
            names = [kw.arg for kw in node.keywords]
            if len(set(names)) != len(names):
                raise LiteralError("an attribute is given twice")
            return ["instance", _dotted(node.func),
                    [[kw.arg, self.read(kw.value)] for kw in node.keywords]]
        if isinstance(node, ast.List | ast.Tuple):
            return ["list" if isinstance(node, ast.List) else "tuple",
                    [self.read(item) for item in node.elts]]
        if isinstance(node, ast.Set):
            return ["set", self._members(node.elts)]
        if isinstance(node, ast.Call) and is_view(node):
            return ["list", [self.read(item) for item in view_items(node)]]
        if isinstance(node, ast.Call) and _dotted(node.func) == "frozenset" \
                and len(node.args) == 1 and not node.keywords \
                and isinstance(node.args[0], ast.Set | ast.List | ast.Tuple):
            return ["frozenset", self._members(node.args[0].elts)]
        if isinstance(node, ast.Dict) and all(key is not None for key in node.keys):
            pairs: dict[Any, list[Encoded]] = {}
            alike = Alike()
            for index, (key, value) in enumerate(zip(node.keys, node.values, strict=True)):
                assert key is not None
                read = self.read(key)
                slot = self._identity(read, index, alike)
                kept = pairs[slot][0] if slot in pairs else read  # the first key stays
                pairs[slot] = [kept, self.read(value)]              # with the last value
            return ["dict", list(pairs.values())]
        raise LiteralError(f"not a literal: {type(node).__name__} holding an object")

    def _members(self, nodes: list[ast.expr]) -> list[Encoded]:
        kept: dict[Any, Encoded] = {}
        alike = Alike()
        for index, node in enumerate(nodes):
            read = self.read(node)
            kept.setdefault(self._identity(read, index, alike), read)
        return self.texts.sorted(list(kept.values()))

    def _identity(self, read: Encoded, index: int, alike: Alike) -> Any:
        """What makes two members one: a literal's Python value, an object's place. The
        values are held to ``MAX_ALIKE`` alike (``distinct``)."""
        if id(read) in self.objects:
            return ("object", index)
        try:
            value = decode(read)
            hash(value)
        except (LiteralError, TypeError):
            raise LiteralError("an unhashable member of a set or key of a dict") from None
        alike.add(value)
        return ("value", value)


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
