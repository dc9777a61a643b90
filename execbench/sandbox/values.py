"""Values crossing the sandbox boundary and coming back from models.

Three jobs, all without ever executing text as code or calling a user-defined method
on the comparison path:

* ``encode`` turns any Python object into *typed JSON* (a nested list such as
  ``["tuple", [["int", 1], ["str", "a"]]]``) so that ``1``, ``True``, ``1.0`` and
  ``(1,)`` vs ``[1]`` stay distinct after a round trip through a JSON file. With
  ``objects`` (the harvest of real projects, whose code is mostly methods) an instance of
  a class written in Python is kept as its class and attributes,
  ``["instance", "Point", [["x", ["int", 1]], ...]]``, written ``Point(x=1, ...)``; an
  object met a second time in the same value (a cycle, a shared reference) is marked
  ``["ref", "Point", n]`` (the n-th object met), and objects nothing can show (files,
  functions, C types) stay opaque, each with its reason.
* ``parse_literal`` / ``parse_call`` read a model's answer with an AST walk that accepts
  literals only (plus ``set()``, ``frozenset(...)``, ``float('nan')`` and friends that
  ``repr`` produces but ``ast.literal_eval`` refuses); ``read_encoded`` also reads the
  ``Point(x=1)`` form of an object, as its encoding (nothing is called or imported).
* ``equal`` compares two typed-JSON values structurally: NaN equals NaN, ``-0.0`` differs
  from ``0.0``, containers compare element-wise with their exact types, and dict/set
  order does not matter; objects compare by class name and attribute by attribute, in
  any order.
"""

from __future__ import annotations

import ast
import json
import keyword
import math
import re
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any

Encoded = list  # typed JSON: ["tag", payload...]

MAX_LITERAL_CHARS = 1_000_000
_FLOAT_WORDS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "infinity": math.inf,
                "-infinity": -math.inf, "+inf": math.inf}


MAX_ALIKE = 64
"""The most distinct members of one set, or keys of one dict, sharing one hash value that
a value read from outside text (an answer, a runner's result) may hold. Python's hashes of
numbers and tuples are not keyed (``hash(k * (2**61 - 1)) == 0`` for every int ``k``,
``hash(-1) == hash(-2)``), so a text of many members hashing alike would make building the
set quadratic; such a text is refused instead (``distinct``). Honest values come nowhere
near: numbers collide only when they differ by a multiple of 2**61 - 1, and tuples of -1
and -2 in 2**6 ways."""


class LiteralError(ValueError):
    """The text is not a literal we are willing to read."""


class _Alike:
    """The distinct members met so far, grouped by hash, each group at most ``MAX_ALIKE``
    long: a new member is compared with its group only (``in`` compares by identity, then
    ``==``, as a set does), so adding n members costs at most n * ``MAX_ALIKE``
    comparisons whatever their hashes."""

    def __init__(self) -> None:
        self.groups: dict[int, list[Any]] = {}

    def add(self, member: Any) -> None:
        """Note ``member``; ``TypeError`` when it is unhashable, as a set would raise."""
        group = self.groups.setdefault(hash(member), [])
        if member not in group:
            if len(group) >= MAX_ALIKE:
                raise LiteralError(f"more than {MAX_ALIKE} members of a set, or keys of a "
                                   "dict, hash alike")
            group.append(member)


def distinct(members: Iterable[Any]) -> set[Any]:
    """``set(members)``, built in time linear in their number: ``LiteralError`` when more
    than ``MAX_ALIKE`` distinct ones share a hash (see there)."""
    alike, kept = _Alike(), []
    for member in members:
        alike.add(member)
        kept.append(member)
    return set(kept)


def _dict_of(pairs: Iterable[tuple[Any, Any]]) -> dict[Any, Any]:
    """``dict(pairs)`` (the last value of a key wins, its first form stays), its keys held
    to ``MAX_ALIKE`` alike as ``distinct`` holds a set's members."""
    alike, kept = _Alike(), []
    for key, value in pairs:
        alike.add(key)
        kept.append((key, value))
    return dict(kept)


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
        text = f"<unrepresentable {_QUALNAME.__get__(type(obj))}: {type(exc).__name__}>"
    if not isinstance(text, str):
        text = f"<{_QUALNAME.__get__(type(obj))}>"
    text = _ADDRESS.sub(" at 0x?", text)  # addresses differ run to run; records must not
    return text if len(text) <= limit else text[: limit - 3] + "..."


MAX_OBJECT_DEPTH = 4
"""Objects nested in objects that an encoding follows; a deeper one is ``truncated``."""
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: made at run time (a class statement, or C)
_IMMUTABLE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: what C types made at run time set
_CODE_LIKE = frozenset({types.FunctionType, types.BuiltinFunctionType, types.MethodType, type,
                        types.ModuleType, types.CodeType, types.FrameType,
                        types.MethodWrapperType, types.WrapperDescriptorType, staticmethod,
                        classmethod, property})
_STREAM_MODULES = frozenset({"io", "_io", "socket", "_socket", "ssl", "_ssl", "tempfile"})
_CLASS_DICT = type.__dict__["__dict__"]
_CLASS_MRO = type.__dict__["__mro__"]
_FLAGS = type.__dict__["__flags__"]
_QUALNAME = type.__dict__["__qualname__"]
_NAME = type.__dict__["__name__"]
_MODULE = type.__dict__["__module__"]
_RESERVED_NAMES = frozenset({"set", "frozenset", "tuple", "list", "dict", "float", "complex",
                             "None", "True", "False"})
"""Names an answer's ``Name(...)`` cannot mean as a class (``read_encoded``)."""
_OBJECT_ATTRIBUTES = (AttributeError, TypeError, ValueError, LookupError, RecursionError)


class Encoder:
    """Encodes values one after another, objects among them when ``objects`` is set.

    Every value gets its own size budget; the objects already met are shared by all the
    values one encoder encodes (a call's arguments: ``f(p, p)`` marks the second ``p``),
    and ``opaque`` collects, in order, why each opaque value could not be shown.

    Reading an object's attributes never calls its class's code: the instance dictionary
    and slots are read through ``object``'s and the slot descriptors' own accessors, and
    class attributes (``__slots__``, a named tuple's ``_fields``) through ``type``'s, so a
    ``__getattr__``, a property or a metaclass is never run."""

    def __init__(self, *, max_nodes: int = 100_000, max_chars: int = 10_000_000,
                 max_depth: int = 100, objects: bool = False) -> None:
        self.max_nodes, self.max_chars, self.max_depth = max_nodes, max_chars, max_depth
        self.objects = objects
        self.seen: dict[int, int] = {}
        """``id`` of each object met (kept alive by the values encoded) -> its number."""
        self.opaque: list[str] = []
        self.texts: _Texts | None = None
        """Made at the first set met: the texts its members were sorted by (``_Texts``)."""

    def encode(self, obj: Any) -> Encoded:
        return self._encode(obj, _Budget(self.max_nodes, self.max_chars), self.max_depth,
                            MAX_OBJECT_DEPTH)

    def _encode(self, obj: Any, budget: _Budget, depth: int, objects: int) -> Encoded:
        t = type(obj)
        if depth < 0 or not budget.spend():
            return ["truncated", _QUALNAME.__get__(t)]
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
                items.append(self._encode(x, budget, depth - 1, objects))
            if t in (set, frozenset):
                self.texts = self.texts or _Texts()
                items = self.texts.sorted(items)
            return self._noted([t.__name__, items])
        if t is dict:
            pairs = []
            for k, v in obj.items():
                if budget.nodes <= 0:
                    return ["truncated", "dict"]
                pairs.append([self._encode(k, budget, depth - 1, objects),
                              self._encode(v, budget, depth - 1, objects)])
            return self._noted(["dict", pairs])
        if self.objects:
            return self._object(obj, t, budget, depth, objects)
        return ["object", _QUALNAME.__get__(t), _safe_repr(obj)]

    def _noted(self, enc: Encoded) -> Encoded:
        """``enc``, noted by the texts when it is or holds a set (none before one is met)."""
        return enc if self.texts is None else self.texts.noted(enc)

    def _object(self, obj: Any, t: type, budget: _Budget, depth: int,
                objects: int) -> Encoded:
        """An instance of a class written in Python as its attributes, else opaque."""
        try:
            attributes, why = _attributes(obj, t)
        except _OBJECT_ATTRIBUTES:  # a class odd enough to defeat the reading
            attributes, why = None, "an object whose attributes cannot be read"
        if attributes is None:
            self.opaque.append(why)
            return ["object", _QUALNAME.__get__(t), _safe_repr(obj)]
        name = _QUALNAME.__get__(t)
        known = self.seen.get(id(obj))
        if known is not None:
            return ["ref", name, known]
        if objects <= 0:
            return ["truncated", name]
        self.seen[id(obj)] = len(self.seen) + 1
        fields = []
        for attribute, value in attributes:
            if budget.nodes <= 0:
                return ["truncated", name]
            fields.append([attribute, self._encode(value, budget, depth - 1, objects - 1)])
        return self._noted(["instance", name, fields])


def opaque_reason(t: type) -> str | None:
    """Why an object of class ``t`` cannot be shown as its attributes, or None when it
    can (a class written in Python, or a named tuple). It depends on the class alone, so
    a caller that meets many objects may keep the answer per class. Everything about the
    class is read through ``type``'s own descriptors: no metaclass, ``__subclasshook__``
    or class attribute of the project's runs."""
    try:
        return _opaque_reason(t)
    except _OBJECT_ATTRIBUTES:
        return "an object whose attributes cannot be read"


def _opaque_reason(t: type) -> str | None:
    mro = _CLASS_MRO.__get__(t)
    if any(klass in _CODE_LIKE for klass in mro):
        return "a function, method, class or module"
    if any(_MODULE.__get__(klass) in _STREAM_MODULES for klass in mro):
        return "a file, stream or socket"
    if not _written_in_python(t):
        if any("__next__" in _CLASS_DICT.__get__(klass) for klass in mro):
            return "an iterator or generator"
        return "an object of a type implemented in C"
    if any(_MODULE.__get__(klass) == "enum" and _NAME.__get__(klass) == "Enum"
           for klass in mro):
        return "an enum member"
    qualname = _QUALNAME.__get__(t)
    if not all(part.isidentifier() and not keyword.iskeyword(part)
               for part in qualname.split(".")) or qualname in _RESERVED_NAMES:
        return "an object of a class defined inside a function"
    builtin = next(k for k in mro if not _written_in_python(k))  # object at the latest
    if builtin is tuple and _named_fields(t) is not None:
        return None
    if builtin is not object:
        return "an object of a subclass of a builtin type"
    return None


def _written_in_python(klass: type) -> bool:
    """Made by a class statement: made at run time and not marked immutable (C types made
    at run time, most of the standard library's since 3.12, are)."""
    flags = _FLAGS.__get__(klass)
    return bool(flags & _HEAPTYPE) and not flags & _IMMUTABLE


def _named_fields(t: type) -> tuple[str, ...] | None:
    fields = _class_attribute(t, "_fields")
    if type(fields) is tuple and all(type(name) is str for name in fields):
        return fields
    return None


def _attributes(obj: Any, t: type) -> tuple[list[tuple[str, Any]] | None, str]:
    """An object's attributes (name, value), or None and why it stays opaque."""
    why = opaque_reason(t)
    if why is not None:
        return None, why
    unreadable = "an object whose attributes cannot be read"
    mro = _CLASS_MRO.__get__(t)
    fields = _named_fields(t) if tuple in mro else None
    if fields is not None:
        if len(fields) != tuple.__len__(obj):
            return None, unreadable
        pairs: list[tuple[str, Any]] | None = [
            *zip(fields, tuple.__iter__(obj), strict=True), *(_instance_dict(obj, mro) or [])]
    else:
        pairs = _instance_attributes(obj, mro)
    if pairs is None or len({name for name, _ in pairs}) != len(pairs):
        return None, unreadable
    if not all(name.isidentifier() and not keyword.iskeyword(name) for name, _ in pairs):
        return None, "an object with an attribute whose name is not an identifier"
    return pairs, ""


def _instance_attributes(obj: Any, mro: tuple[type, ...]) -> list[tuple[str, Any]] | None:
    """Slots (base classes first) then the instance dictionary, read without running the
    class's code; None when a class declares its slots or its ``__dict__`` oddly."""
    pairs: list[tuple[str, Any]] = []
    for klass in reversed(mro):
        namespace = _CLASS_DICT.__get__(klass)
        declared = namespace.get("__slots__")
        if declared is None:
            continue
        names = [declared] if type(declared) is str else declared
        if type(names) not in (list, tuple) or not all(type(n) is str for n in names):
            return None
        for name in names:
            if name in ("__dict__", "__weakref__"):
                continue
            stored = f"_{_NAME.__get__(klass).lstrip('_')}{name}" \
                if name.startswith("__") and not name.endswith("__") else name
            slot = namespace.get(stored)
            if type(slot) is not types.MemberDescriptorType:
                return None
            try:
                pairs.append((stored, slot.__get__(obj, klass)))
            except AttributeError:  # a slot never set has no value
                continue
    held = _instance_dict(obj, mro)
    return None if held is None else pairs + held


def _instance_dict(obj: Any, mro: tuple[type, ...]) -> list[tuple[str, Any]] | None:
    """The instance dictionary's items ([] when it has none), read through the genuine
    ``__dict__`` descriptor only: a class that puts anything else there (a property)
    gets None."""
    for klass in mro:
        found = _CLASS_DICT.__get__(klass).get("__dict__")
        if found is None:
            continue
        if type(found) is not types.GetSetDescriptorType or klass is type:
            return None
        held = found.__get__(obj, klass)
        if type(held) is not dict or not all(type(name) is str for name in held):
            return None
        return list(held.items())
    return []


def _class_attribute(t: type, name: str) -> Any:
    """``name`` looked up on ``t``'s classes in order, without any class's own code."""
    for klass in _CLASS_MRO.__get__(t):
        namespace = _CLASS_DICT.__get__(klass)
        if name in namespace:
            return namespace[name]
    return None


def encode(obj: Any, *, max_nodes: int = 100_000, max_chars: int = 10_000_000,
           max_depth: int = 100, objects: bool = False) -> Encoded:
    """Encode ``obj`` as typed JSON.

    Only exact builtin types are encoded structurally (``type(x) is int``, never
    ``isinstance``), so a subclass with a forged ``__eq__`` or ``__hash__`` becomes an opaque
    ``object`` record that equals nothing (with ``objects``, an ``instance`` compared by
    its attributes, its ``__eq__`` never called). Values over the budget become
    ``truncated``.
    """
    return Encoder(max_nodes=max_nodes, max_chars=max_chars, max_depth=max_depth,
                   objects=objects).encode(obj)


def _key(enc: Encoded | str) -> str:
    return json.dumps(enc, separators=(",", ":"), ensure_ascii=False)


def _joined(tag: str, parts: Iterable[str]) -> str:
    """``_key([tag, items])`` from the texts of the items."""
    return "[" + _key(tag) + ",[" + ",".join(parts) + "]]"


def _pair(first: str, second: str) -> str:
    return "[" + first + "," + second + "]"


class _Texts:
    """``_key`` of encodings, for sorting the members of sets. A sorted member's text is
    kept until the set's own text is needed (as a member of a set around it), and the
    text of an encoding holding a sorted set (``noted``) is composed from its parts'
    texts, so nested sets write each part once instead of once per level above them;
    any other encoding is written whole by ``json``. An encoding kept or noted stays
    referenced, so that its ``id`` is never another's meanwhile."""

    def __init__(self) -> None:
        self.kept: dict[int, tuple[Encoded, str]] = {}
        self.holding: dict[int, Encoded] = {}
        """The encodings that are or hold a set sorted here."""

    def noted(self, enc: Encoded) -> Encoded:
        """``enc``, noted when it is a set or holds one sorted here."""
        if enc[0] in ("set", "frozenset") or self._holds(_inner(enc)):
            self.holding[id(enc)] = enc
        return enc

    def _holds(self, parts: list[Encoded]) -> bool:
        return bool(self.holding) and any(id(part) in self.holding for part in parts)

    def sorted(self, members: list[Encoded]) -> list[Encoded]:
        """``sorted(members, key=_key)``. Members holding a set are sorted by composed
        texts, kept for the set's own; others by ``json``'s, as always."""
        if not self._holds(members):
            return sorted(members, key=_key)
        texts = [self.text(member) for member in members]
        order = sorted(range(len(members)), key=texts.__getitem__)
        for index in order:
            self.kept[id(members[index])] = (members[index], texts[index])
        return [members[index] for index in order]

    def text(self, enc: Encoded) -> str:
        """``_key(enc)``: a kept text is handed over (each is asked for once at most)."""
        found = self.kept.pop(id(enc), None)
        if found is not None:
            return found[1]
        if id(enc) not in self.holding:
            return _key(enc)
        tag = enc[0]
        if tag in _SEQUENCES:
            return _joined(tag, [self.text(item) for item in enc[1]])
        if tag == "dict":
            return _joined(tag, [_pair(self.text(key), self.text(value))
                                 for key, value in enc[1]])
        if tag == "instance":
            return "[" + _key(tag) + "," + _key(enc[1]) + "," + _joined_fields(
                (name, self.text(value)) for name, value in enc[2]) + "]"
        return _key(enc)


def _inner(enc: Encoded) -> list[Encoded]:
    """The values right inside an encoding: a list's, tuple's or set's items, a dict's
    keys and values, an object's attributes."""
    if enc[0] in _SEQUENCES:
        return enc[1]
    if enc[0] == "dict":
        return [part for pair in enc[1] for part in pair]
    if enc[0] == "instance":
        return [value for _, value in enc[2]]
    return []


def _joined_fields(fields: Iterable[tuple[str, str]]) -> str:
    """An object's attributes as ``_key`` writes them, from their values' texts."""
    return "[" + ",".join(_pair(_key(name), text) for name, text in fields) + "]"


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
        if tag in _SEQUENCES:
            stack.extend(current[1])
        elif tag == "dict":
            stack.extend(part for pair in current[1] for part in pair)
        elif tag == "instance":
            stack.extend(value for _, value in current[2])


def tags(enc: Encoded) -> set[str]:
    """Every tag an encoding holds, at any depth (``"truncated"`` in a list in an object)."""
    return {part[0] for part in parts(enc)}


# --------------------------------------------------------------------------- equality


def canonical(enc: Encoded) -> str:
    """A string that two encodings share exactly when the values are equal.

    Dict and set orders are normalised; everything else (types, float text) is kept.
    ``truncated`` and ``object`` values get a marker that can never match an answer.
    It is the JSON text of the value with its dicts and sets sorted (an object's
    attributes by name), each part written once and its text reused by the part around
    it: writing the whole of each part anew would take the value's size times its depth.
    """
    if _small(enc):  # few parts: one ``json`` call on a sorted copy is the cheaper way
        return _key(_sorted_copy(enc))
    text = _canonical(enc)
    return _key(enc) if text is None else text


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
        return [tag, sorted((_sorted_copy(x) for x in enc[1]), key=_key)]
    if tag == "dict":
        return [tag, sorted(([_sorted_copy(k), _sorted_copy(v)] for k, v in enc[1]), key=_key)]
    if tag == "instance":
        return [tag, enc[1], sorted([name, _sorted_copy(value)] for name, value in enc[2])]
    if tag in ("truncated", "object"):
        return ["\x00opaque", id(enc)]
    return enc


_PLAIN = frozenset({"none", "bool", "int", "float", "str", "bytes", "complex", "ref"})


def _canonical(enc: Encoded) -> str | None:
    """``canonical(enc)``, or None when that is ``_key(enc)`` (nothing in it to sort or
    mark), which ``json`` then writes whole, faster than in parts."""
    tag = enc[0]
    if tag in _PLAIN:
        return None
    if tag in ("list", "tuple"):
        texts = [_canonical(x) for x in enc[1]]
        if not any(texts):
            return None
        return _joined(tag, _or_key(texts, enc[1]))
    if tag in ("set", "frozenset"):
        return _joined(tag, sorted(_or_key([_canonical(x) for x in enc[1]], enc[1])))
    if tag == "dict":
        return _joined(tag, sorted(_pair(*_or_key([_canonical(k), _canonical(v)], [k, v]))
                                   for k, v in enc[1]))
    if tag == "instance":
        return "[" + _key(tag) + "," + _key(enc[1]) + "," + _joined_fields(
            sorted((name, canonical(value)) for name, value in enc[2])) + "]"
    if tag in ("truncated", "object"):
        return _key(["\x00opaque", id(enc)])
    return None


def _or_key(texts: list[str | None], parts: list[Encoded]) -> list[str]:
    return [_key(part) if text is None else text for text, part in zip(texts, parts,
                                                                       strict=True)]


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
        return distinct(_decode(x) for x in enc[1])
    if tag == "frozenset":
        return frozenset(distinct(_decode(x) for x in enc[1]))
    if tag == "dict":
        return _dict_of((_decode(k), _decode(v)) for k, v in enc[1])
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
        return distinct(_value(x) for x in node.elts)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise LiteralError("'**' in a dict literal")
        return _dict_of((_value(k), _value(v))
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


_ITERABLE = (list, tuple, str, bytes, set, frozenset, dict)


def _hold_alike(name: str | None, items: list[Any] | tuple[Any, ...]) -> None:
    """Refuse ``set``, ``frozenset`` or ``dict`` of a list or tuple whose members (a dict's
    keys) would hash alike beyond ``MAX_ALIKE``, before the constructor builds it. For
    ``dict`` the check stops at the first item that is not a pair: ``dict`` raises there."""
    alike = _Alike()
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
        and name not in _CONSTRUCTORS and name not in ("float", "complex")


class _ObjectReader:
    """Reads a tree that holds objects' forms; parts without one go to the literal reader.
    Sets and dict keys keep Python's rules for their literal members (``1`` and ``True``
    are one key, the last value stays) and keep every object apart (objects compare by
    identity, so two with the same attributes are two members)."""

    def __init__(self, holding: set[int]) -> None:
        self.holding = holding
        self.objects: dict[int, Encoded] = {}
        """The encodings read that are or hold an object (by ``id``; kept referenced)."""
        self.texts = _Texts()

    def read(self, node: ast.AST) -> Encoded:
        """The encoding of ``node``, noted in ``objects`` when it holds an object."""
        if id(node) not in self.holding:
            return encode(literal_value(node))
        read = self.texts.noted(self._read(node))
        if read[0] == "instance" or any(id(part) in self.objects for part in _inner(read)):
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
        if isinstance(node, ast.Call) and _dotted(node.func) == "frozenset" \
                and len(node.args) == 1 and not node.keywords \
                and isinstance(node.args[0], ast.Set | ast.List | ast.Tuple):
            return ["frozenset", self._members(node.args[0].elts)]
        if isinstance(node, ast.Dict) and all(key is not None for key in node.keys):
            pairs: dict[Any, list[Encoded]] = {}
            alike = _Alike()
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
        alike = _Alike()
        for index, node in enumerate(nodes):
            read = self.read(node)
            kept.setdefault(self._identity(read, index, alike), read)
        return self.texts.sorted(list(kept.values()))

    def _identity(self, read: Encoded, index: int, alike: _Alike) -> Any:
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
