"""Any Python object as typed JSON, inside the sandbox.

Exact builtin types are kept with their types (``1``, ``True``, ``1.0`` and ``(1,)``
stay apart after a trip through a JSON file). With ``objects`` (harvested projects,
whose values are mostly instances) an instance of a class written in Python is kept as
its class and attributes, an object met again as a ``ref`` to its number, and what
nothing can show (files, functions, C types) as opaque with its reason. Nothing here
calls a method the value's class defines: the values are a program's, and this code
runs next to it."""

from __future__ import annotations

import keyword
import re
import types
from collections import OrderedDict
from typing import TYPE_CHECKING

from execbench.values.texts import Texts

if TYPE_CHECKING:
    from typing import Any

    from execbench.values.shape import Encoded


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
_VIEWS = frozenset({type({}.keys()), type({}.values()), type({}.items()),
                    type(OrderedDict().keys()), type(OrderedDict().values()),
                    type(OrderedDict().items())})
"""Dict views (``dict_keys`` and the others, and ``OrderedDict``'s ``odict_keys`` ...),
encoded as the list of what iterating them gives, in order (a ``dict_items`` as its
``(key, value)`` tuples): Python prints ``dict_keys([1, 2])``, which says everything the
view holds, and an answer written so is read as that list (``literals``), so a view is
compared as its contents. Iterating one runs no code of the program's classes."""
VIEW_NAMES = frozenset(_QUALNAME.__get__(view) for view in _VIEWS)
_RESERVED_NAMES = frozenset({"set", "frozenset", "tuple", "list", "dict", "float", "complex",
                             "None", "True", "False", *VIEW_NAMES})
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
        self.texts: Texts | None = None
        """Made at the first set met: the texts its members were sorted by (``Texts``)."""

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
        if t in (list, tuple, set, frozenset) or t in _VIEWS:
            items = []
            for x in obj:
                if budget.nodes <= 0:  # the rest is cut, and marked once
                    return ["truncated", _QUALNAME.__get__(t)]
                items.append(self._encode(x, budget, depth - 1, objects))
            if t in (set, frozenset):
                self.texts = self.texts or Texts()
                items = self.texts.sorted(items)
            # a view's items, in order, under the tag ``list`` (see ``_VIEWS``)
            return self._noted(["list" if t in _VIEWS else t.__name__, items])
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


def view_name(value: Any) -> str | None:
    """The class name of a dict view (``dict_keys``, ``odict_items``, ...), None for any
    other value: a returned view's repr is written as Python prints it,
    ``dict_keys([1, 2])``, around the literal of the list it encodes as."""
    t = type(value)
    return _QUALNAME.__get__(t) if t in _VIEWS else None


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
