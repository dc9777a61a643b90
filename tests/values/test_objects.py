"""Objects as values: instances of classes written in Python kept as their class and
attributes (``Encoder(objects=True)``), written, read back and compared field by field;
objects nothing can show stay opaque, each with its reason."""

from __future__ import annotations

import collections
import dataclasses
import enum
import io
import socket
from typing import Any

import pytest

from execbench.values import (
    Encoder,
    LiteralError,
    encode,
    equal,
    is_encoding,
    is_exact,
    literal_value,
    parse_expression,
    read_encoded,
    shown,
    tags,
    to_literal,
)


class Point:
    def __init__(self, x: Any, y: Any) -> None:
        self.x = x
        self.y = y


class Slotted:
    __slots__ = ("a", "b", "__hidden")

    def __init__(self) -> None:
        self.a = 1
        self.__hidden = "h"  # stored as _Slotted__hidden


class Both(Slotted):
    def __init__(self) -> None:
        super().__init__()
        self.extra = [1]


class Node:
    def __init__(self, value: int) -> None:
        self.value = value
        self.next: Node | None = None


class Tricky:
    """Every way a class could run code when read: none of it may run."""

    ran: list[str] = []

    def __init__(self) -> None:
        self.kept = 1

    def __getattr__(self, name: str) -> Any:
        Tricky.ran.append(f"getattr {name}")
        raise AttributeError(name)

    def __getattribute__(self, name: str) -> Any:
        Tricky.ran.append(f"getattribute {name}")
        return object.__getattribute__(self, name)

    def __repr__(self) -> str:
        Tricky.ran.append("repr")
        return "Tricky!"

    def __eq__(self, other: object) -> bool:
        Tricky.ran.append("eq")
        return True

    __hash__ = object.__hash__

    @property
    def computed(self) -> int:
        Tricky.ran.append("property")
        return 2


@dataclasses.dataclass(frozen=True)
class Frozen:
    name: str
    tags: tuple[str, ...] = ()


Pair = collections.namedtuple("Pair", "left right")


class Counts(dict):
    pass


class Colour(enum.Enum):
    RED = 1


def objects(value: Any, **bounds: Any) -> tuple[list, list[str]]:
    encoder = Encoder(objects=True, **bounds)
    return encoder.encode(value), encoder.opaque


def round_trip(enc: list) -> list:
    """Written as text, read back from its syntax tree (nothing evaluated)."""
    return read_encoded(parse_expression(to_literal(enc)))


def test_a_class_with_attributes_is_its_name_and_fields() -> None:
    enc, opaque = objects(Point(1, "a"))
    assert enc == ["instance", "Point", [["x", ["int", 1]], ["y", ["str", "a"]]]]
    assert not opaque and is_exact(enc) and is_encoding(enc)
    assert to_literal(enc) == "Point(x=1, y='a')"
    assert equal(round_trip(enc), enc)
    # field order does not matter, types and the class name do
    assert equal(read_encoded(parse_expression("Point(y='a', x=1)")), enc)
    assert not equal(read_encoded(parse_expression("Point(x=True, y='a')")), enc)
    assert not equal(read_encoded(parse_expression("Point(x=1)")), enc)
    assert not equal(read_encoded(parse_expression("Pt(x=1, y='a')")), enc)
    assert not equal(read_encoded(parse_expression("{'x': 1, 'y': 'a'}")), enc)
    # without ``objects`` (every built-in source) an object stays opaque, as before
    assert encode(Point(1, 2))[:2] == ["object", "Point"]


def test_slots_are_read_base_classes_first_unset_ones_left_out() -> None:
    enc, _ = objects(Slotted())
    assert enc == ["instance", "Slotted", [["a", ["int", 1]],
                                            ["_Slotted__hidden", ["str", "h"]]]]
    both, _ = objects(Both())
    assert both[2] == [*enc[2], ["extra", ["list", [["int", 1]]]]]
    assert equal(round_trip(both), both)


def test_a_cycle_and_a_shared_object_are_marked_and_never_asked() -> None:
    first, second = Node(1), Node(2)
    first.next, second.next = second, first
    enc, _ = objects(first)
    inner = ["instance", "Node", [["value", ["int", 2]], ["next", ["ref", "Node", 1]]]]
    assert enc == ["instance", "Node", [["value", ["int", 1]], ["next", inner]]]
    assert not is_exact(enc) and "ref" in tags(enc) and is_encoding(enc)
    with pytest.raises(LiteralError):
        to_literal(enc)
    assert shown(enc) == ("Node(value=1, next=Node(value=2, next=<the Node object shown "
                          "above>))")
    shared = Point(1, 2)
    enc, _ = objects([shared, shared])
    assert enc[1][1] == ["ref", "Point", 1] and not is_exact(enc)
    # the same object as two arguments of one call: one encoder marks the second
    encoder = Encoder(objects=True)
    assert encoder.encode(shared)[0] == "instance"
    assert encoder.encode(shared) == ["ref", "Point", 1]


def test_nested_objects_to_a_bounded_depth() -> None:
    enc, _ = objects(Point(Point(1, [Frozen("n", ("t",))]), Pair(1, None)))
    assert to_literal(enc) == ("Point(x=Point(x=1, y=[Frozen(name='n', tags=('t',))]), "
                               "y=Pair(left=1, right=None))")
    assert equal(round_trip(enc), enc)
    chain: Any = 0
    for _ in range(10):
        chain = Point(chain, None)
    deep, _ = objects(chain)
    assert "truncated" in tags(deep) and not is_exact(deep)
    big, _ = objects(Point(list(range(500)), 0), max_nodes=100)
    assert "truncated" in tags(big)


def test_reading_an_object_runs_none_of_its_code() -> None:
    Tricky.ran.clear()
    value = Tricky()
    Tricky.ran.clear()
    enc, opaque = objects(value)
    assert enc == ["instance", "Tricky", [["kept", ["int", 1]]]] and not opaque
    assert Tricky.ran == []
    assert not equal(enc, encode(1))


def test_opaque_values_stay_opaque_with_their_reason(tmp_path) -> None:
    with open(tmp_path / "f", "w") as handle, socket.socket() as sock:
        stream = "a file, stream or socket"
        cases = [(handle, stream), (io.BytesIO(), stream), (sock, stream),
                 (len, "a function, method, class or module"),
                 (Point, "a function, method, class or module"),
                 (iter([1]), "an iterator or generator"),
                 ((x for x in ()), "an iterator or generator"),
                 (Colour.RED, "an enum member"),
                 (collections.OrderedDict(), "an object of a type implemented in C"),
                 (Counts(), "an object of a subclass of a builtin type"),
                 (object(), "an object of a type implemented in C")]
        for value, why in cases:
            enc, opaque = objects(Point(value, 1))
            assert opaque == [why], value
            assert enc[2][0][1][0] == "object" and not is_exact(enc)

    def local() -> Any:
        class Inner:
            pass
        return Inner()

    assert objects(local())[1] == ["an object of a class defined inside a function"]
    weird = Point(1, 2)
    setattr(weird, "not a name", 3)
    assert objects(weird)[1] == ["an object with an attribute whose name is not an identifier"]


@pytest.mark.parametrize("text", [
    "Point(1, 2)",             # positional: which attribute is which is not said
    "Point(x=1, x=2)",         # an attribute twice
    "Point(**{'x': 1})",
    "Point(x=f(1))",           # a call that is not an object's form
    "[Point(x=1), y]",         # a name
    "Point(x=1) + 1",
])
def test_answers_that_are_not_an_objects_form_are_refused(text: str) -> None:
    with pytest.raises(LiteralError):
        read_encoded(parse_expression(text))


def test_literals_without_objects_read_exactly_as_before() -> None:
    for text in ["{1, True}", "[1, (2,)]", "{'a': 1, 'a': 2}", "frozenset({1})", "-0.0",
                 "float('nan')", "set()"]:
        node = parse_expression(text)
        assert read_encoded(node) == encode(literal_value(node))
    # containers of objects: two objects are two members (they compare by identity), a
    # dict's repeated literal keys are one key as in Python (the first key, the last value)
    point = ["instance", "Point", [["x", ["int", 1]]]]
    enc = read_encoded(parse_expression("{Point(x=1), Point(x=1), 1, True}"))
    assert enc == ["set", [point, point, ["int", 1]]]  # in encoding order
    enc = read_encoded(parse_expression("{1: Point(x=1), True: Point(x=2), 2: 'b'}"))
    assert enc == ["dict", [[["int", 1], ["instance", "Point", [["x", ["int", 2]]]]],
                            [["int", 2], ["str", "b"]]]]


def test_c_types_made_at_run_time_stay_opaque() -> None:
    """Most of the standard library's C types are made at run time since 3.12 (and some
    before): without attributes to show they would all read ``Name()`` and any two would
    be equal."""
    import array
    import decimal
    import functools
    import itertools
    import re
    import threading

    for value in [array.array("i", [1]), re.compile("a"), functools.partial(len),
                  collections.deque([1]), decimal.Decimal("1.5"), threading.Lock(),
                  itertools.count(), collections.OrderedDict(a=1)]:
        enc, opaque = objects(value)
        assert enc[0] == "object" and len(opaque) == 1, (value, enc)


def test_a_hostile_class_cannot_run_code_or_stop_the_encoder() -> None:
    ran: list[str] = []

    class Meta(type):
        def __getattribute__(cls, name: str) -> Any:
            ran.append(f"meta {name}")
            raise RuntimeError("boom")

    class Lies:
        @property
        def __dict__(self) -> Any:  # type: ignore[override]
            ran.append("dict property")
            return {"x": 99}

    class Slots:
        __slots__ = ("a",)

    class Iterable:
        def __iter__(self) -> Any:
            ran.append("slots iterated")
            raise KeyboardInterrupt

    Slots.__slots__ = Iterable()  # type: ignore[assignment]

    class Hook(io.RawIOBase):
        @classmethod
        def __subclasshook__(cls, other: type) -> bool:
            ran.append("subclasshook")
            return True

    for klass in (Lies, Slots):
        klass.__qualname__ = klass.__name__  # as if at module level
    plain = Point(1, 2)
    for value, why in [(Meta("M", (), {})(), None),
                       (Meta("D", (dict,), {})(), "a subclass of a builtin type"),
                       (Lies(), "cannot be read"),
                       (Slots(), "cannot be read")]:
        enc, opaque = objects(value)
        assert why is None or (enc[0] == "object" and why in opaque[0]), (enc, opaque)
    assert objects(plain)[0][0] == "instance" and Hook  # a hook elsewhere changes nothing
    assert ran == []


def test_every_exact_object_encoding_reads_back_as_itself() -> None:
    """to_literal then read_encoded is the identity on exact encodings, sets and dict
    keys of objects with equal attributes included."""
    import random

    rng = random.Random(7)

    def value(depth: int) -> Any:
        kind = rng.randrange(9 if depth else 4)
        if kind == 0:
            return rng.choice([0, 1, True, False, -0.0, 2.5, "s", None, b"x"])
        if kind == 1:
            return Point(rng.randrange(3), rng.choice([True, 1, "1"]))
        if kind == 2:
            return Frozen("n", ("t",))
        if kind == 3:
            return Pair(1, None)
        if kind == 4:
            return [value(depth - 1) for _ in range(rng.randrange(3))]
        if kind == 5:
            return tuple(value(depth - 1) for _ in range(rng.randrange(3)))
        if kind == 6:
            return {Point(1, 1), Point(1, 1), rng.randrange(3)}
        if kind == 7:
            return frozenset({Point(0, 0), 1})
        return {rng.choice([1, True, "k"]): value(depth - 1), Point(1, 2): 0}

    checked = 0
    for _ in range(2000):
        enc, _ = objects(value(3))
        if is_exact(enc):
            assert equal(round_trip(enc), enc), enc
            checked += 1
    assert checked > 1000


def test_reading_a_deep_answer_holding_objects_takes_linear_time() -> None:
    import time

    text = "[" * 150 + ", ".join(["Point(x=1)"] * 2000) + "]" * 150
    start = time.perf_counter()
    enc = read_encoded(parse_expression(text))
    assert enc[0] == "list" and time.perf_counter() - start < 5
