"""Typed-JSON values: the literal parser, encode/decode round trips and type-aware equality.

These are the pieces that read a model's answer and compare it with a traced value, so the
tests lean on what a careless implementation gets wrong: ``True == 1``, ``1 == 1.0``,
``[1] == (1,)``, ``nan != nan``, ``-0.0 == 0.0``, and user code running during a comparison.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from execbench.values import (
    MAX_LITERAL_CHARS,
    LiteralError,
    canonical,
    decode,
    encode,
    equal,
    is_encoding,
    is_exact,
    parse_call_nodes,
    parse_literal,
    to_literal,
)


def _same(a: Any, b: Any) -> bool:
    return equal(encode(a), encode(b))


# --------------------------------------------------------------------------- parse_literal


@pytest.mark.parametrize(("text", "expected"), [
    ("None", None),
    ("True", True),
    ("-3", -3),
    ("--3", 3),
    ("0x10", 16),
    ("2.5e-3", 0.0025),
    ("'a' 'b'", "ab"),
    ("b'\\x00'", b"\x00"),
    ("set()", set()),
    ("{1, 2}", {1, 2}),
    ("frozenset()", frozenset()),
    ("frozenset({1})", frozenset({1})),
    ("tuple([1])", (1,)),
    ("float('nan')", math.nan),
    ("float(' NaN ')", math.nan),
    ("float('inf')", math.inf),
    ("-float('inf')", -math.inf),
    ("-0.0", -0.0),
    ("1+2j", 1 + 2j),
    ("-1-2j", -1 - 2j),
    ("complex(1, 2)", 1 + 2j),
    ("complex(float('nan'), -0.0)", complex(math.nan, -0.0)),
    ("{1: 2, 1: 3}", {1: 3}),
    ("[(1, {'a': {2, 3}}), None, {(): frozenset({4})}, [[], ()]]",
     [(1, {"a": {2, 3}}), None, {(): frozenset({4})}, [[], ()]]),
])
def test_parse_literal_accepts_literals_and_repr_forms(text: str, expected: Any) -> None:
    assert _same(parse_literal(text), expected)


@pytest.mark.parametrize("text", [
    "x",
    "f()",
    "print('hi')",
    "__import__('os')",
    "open('/etc/passwd')",
    "type(1)",
    "().__class__",
    "os.path",
    "lambda: 1",
    "...",
    "[1, ...]",
    "1 + 2",
    "'a' * 3",
    "not 1",
    "-True",
    "+'a'",
    "{**d}",
    "[*xs]",
    "f'{1}'",
    "(x := 1)",
    "[i for i in range(3)]",
    "{1: 2}[1]",
    "float('1.5')",
    "complex(1)",
    "set([x])",
    "{[1]: 2}",
    "{[1]}",
    "frozenset([[1]])",
    "1; 2",
    "",
])
def test_parse_literal_refuses_everything_else(text: str) -> None:
    with pytest.raises(LiteralError):
        parse_literal(text)


@pytest.mark.parametrize("text", [
    "[" * 100_000 + "]" * 100_000,
    "(" * 5_000 + "1" + ",)" * 5_000,
    "-" * 2_000 + "1",
    "-" * 100_000 + "1",
    "1+" * 300_000 + "1",
    "a." * 300_000 + "a",
    "not " * 200_000 + "1",
    "[" + "0," * (MAX_LITERAL_CHARS // 2) + "]",
    " " * MAX_LITERAL_CHARS + "1",
])
def test_oversized_or_deeply_nested_input_is_refused_without_crashing(text: str) -> None:
    with pytest.raises(LiteralError):
        parse_literal(text)


def test_moderate_nesting_still_parses() -> None:
    assert parse_literal("[" * 150 + "]" * 150) is not None
    assert parse_literal("-" * 500 + "1") == 1


def test_constructor_failures_are_literal_errors() -> None:
    with pytest.raises(LiteralError):
        parse_literal("dict('ab')")


# --------------------------------------------------------------------------- parse_call_nodes


@pytest.mark.parametrize("text", ["1), (2", "1)(2", "1) + (2", "1)[0](2", "1) #", "1)\n(2"])
def test_parse_call_nodes_refuses_text_that_escapes_the_call(text: str) -> None:
    with pytest.raises(LiteralError):
        parse_call_nodes(text)


def test_parse_call_nodes_splits_an_argument_list_without_evaluating_it() -> None:
    args, keywords = parse_call_nodes("'abc', lambda x: x < 2, *rest, k=[1, 2]")
    assert len(args) == 3
    assert [kw.arg for kw in keywords] == ["k"]
    assert parse_call_nodes("") == ([], [])
    with pytest.raises(LiteralError):
        parse_call_nodes("1, " * (MAX_LITERAL_CHARS // 3 + 1))


# --------------------------------------------------------------------------- round trips

ROUND_TRIP = [
    None, True, False, 0, -7, 10**40, 1.5, -0.0, math.nan, math.inf, -math.inf, 2 - 3j,
    complex(math.nan, -0.0), "", "a'b\"c\n\u00e9\U0001f600", b"", b"\x00\xff", [], (), (1,),
    set(), frozenset(), {}, {1, "a", (2, 3)}, frozenset({1.5, None}),
    {"k": [1, (2.0, {3: frozenset({4})})], 5: None, (6,): b"x"},
    [[[[]]]], [math.nan, {"inner": {True, 1.0 + 0j}}],
]


@pytest.mark.parametrize("value", ROUND_TRIP,  # ids by position: a set's repr varies
                         ids=[f"{type(v).__name__}-{i}" for i, v in enumerate(ROUND_TRIP)])
def test_encode_decode_and_literal_round_trips(value: Any) -> None:
    enc = encode(value)
    assert is_exact(enc)
    through_json = json.loads(json.dumps(enc))
    assert equal(through_json, enc)
    assert equal(encode(decode(through_json)), enc)
    assert type(decode(enc)) is type(value)
    assert equal(encode(parse_literal(to_literal(enc))), enc)


def test_typed_json_is_told_from_plain_json() -> None:
    for encoded in [*map(encode, [*ROUND_TRIP, object()]), encode("x" * 100, max_chars=10)]:
        assert is_encoding(json.loads(json.dumps(encoded))), encoded
    for plain in ([[1], [2]], ["str"], ["int", True], ["list", [1]], [1, 2], "str", {"a": 1},
                  ["dict", [[["int", 1]]]], ["tuple", [["int", 1]], "extra"], None, []):
        assert not is_encoding(plain), plain


def test_encoding_keeps_types_apart() -> None:
    assert encode(True) == ["bool", True]
    assert encode(1) == ["int", 1]
    assert encode(1.0) == ["float", "1.0"]
    assert encode((1,)) == ["tuple", [["int", 1]]]
    assert encode(-0.0) == ["float", "-0.0"]


def test_over_budget_and_too_deep_values_are_truncated() -> None:
    deep: list = []
    tip = deep
    for _ in range(200):
        tip.append([])
        tip = tip[0]
    for enc in (encode(deep), encode(10**20000), encode("x" * 100, max_chars=10),
                encode(list(range(20)), max_nodes=5)):
        assert not is_exact(enc)
        assert not equal(enc, json.loads(json.dumps(enc)))
        with pytest.raises(LiteralError):
            to_literal(enc)
        with pytest.raises(LiteralError):
            decode(enc)


def test_encoded_size_is_bounded_by_the_node_budget() -> None:
    enc = encode(list(range(100_000)), max_nodes=200)
    assert len(json.dumps(enc)) < 10_000


# --------------------------------------------------------------------------- equality


@pytest.mark.parametrize(("a", "b"), [
    (True, 1),
    (False, 0),
    (1, 1.0),
    (1.0, 1 + 0j),
    ([1], (1,)),
    (set(), frozenset()),
    ({1: 2}, [(1, 2)]),
    ("1", 1),
    (b"a", "a"),
    (-0.0, 0.0),
    (complex(0.0, -0.0), complex(0.0, 0.0)),
    (None, ()),
    ([1, 2], [2, 1]),
    ({"a": [True]}, {"a": [1]}),
    ({(1, 2): {1.0}}, {(1, 2): {1}}),
])
def test_equal_is_type_aware(a: Any, b: Any) -> None:
    assert not _same(a, b)
    assert canonical(encode(a)) != canonical(encode(b))


@pytest.mark.parametrize(("a", "b"), [
    (math.nan, float("nan")),
    ([math.nan, (math.nan,)], [float("nan"), (float("nan"),)]),
    ({3, 1, 2}, {2, 3, 1}),
    ({"b": 1, "a": 2}, {"a": 2, "b": 1}),
    ({"x": [{2: {5, 4}}, frozenset({(1, 2), (3,)})]},
     {"x": [{2: {4, 5}}, frozenset({(3,), (1, 2)})]}),
    (1 + 2j, complex(1, 2)),
])
def test_equal_ignores_order_and_treats_nan_as_itself(a: Any, b: Any) -> None:
    assert _same(a, b)


USER_CALLS: list[str] = []
"""Every forged dunder below records itself here; a comparison must leave this empty."""


class _ForgedInt(int):
    def __eq__(self, other: object) -> bool:
        USER_CALLS.append("__eq__")
        return True

    def __hash__(self) -> int:
        USER_CALLS.append("__hash__")
        return 0


class _Forged:
    def __eq__(self, other: object) -> bool:
        USER_CALLS.append("__eq__")
        return True

    def __hash__(self) -> int:
        USER_CALLS.append("__hash__")
        return 0


def test_forged_eq_is_opaque_and_equals_nothing() -> None:
    USER_CALLS.clear()
    forged, forged_int = encode(_Forged()), encode(_ForgedInt(1))
    assert forged[:2] == ["object", "_Forged"]
    assert forged_int[:2] == ["object", "_ForgedInt"]
    for enc in (forged, forged_int, encode([_ForgedInt(1)]), encode({"k": _Forged()})):
        assert not is_exact(enc)
        assert not equal(enc, json.loads(json.dumps(enc)))
        assert not equal(enc, encode(1))
        assert not equal(enc, encode([1]))
        assert not equal(encode(1), enc)
    assert USER_CALLS == []
