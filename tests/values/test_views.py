"""Dict views as values: encoded as the list of what they hold, and read back from the text
Python prints for them (``dict_keys([1, 2])``) as that list, never evaluated.

The text is outside input, so the reader of views gets the hostile cases every reader of
values gets: malformed forms, deep nesting, long texts, members hashing alike.
"""

from __future__ import annotations

import ast
from collections import OrderedDict
from typing import Any

import pytest

from execbench.sandbox.tracer import result_value
from execbench.tasks.common.answers import read_value
from execbench.values import (
    MAX_LITERAL_CHARS,
    VIEW_NAMES,
    LiteralError,
    encode,
    equal,
    parse_expression,
    parse_literal,
    read_encoded,
    view_name,
)

D = {"a": 1, "b": [2]}


def _views() -> list[tuple[Any, Any]]:
    """(view, what it holds) for each kind of view, of a dict and of an OrderedDict."""
    ordered = OrderedDict(D)
    return [(D.keys(), ["a", "b"]), (D.values(), [1, [2]]), (D.items(), [("a", 1), ("b", [2])]),
            (ordered.keys(), ["a", "b"]), (ordered.values(), [1, [2]]),
            (ordered.items(), [("a", 1), ("b", [2])])]


@pytest.mark.parametrize(("view", "held"), _views())
def test_a_view_encodes_as_the_list_of_what_it_holds(view: Any, held: Any) -> None:
    assert encode(view) == encode(held)
    assert view_name(view) in VIEW_NAMES
    assert view_name(held) is None


@pytest.mark.parametrize(("view", "held"), _views())
def test_a_returned_view_is_shown_as_python_prints_it_and_reads_back(view: Any,
                                                                    held: Any) -> None:
    found = result_value(view)
    assert found["value"] == encode(held)
    assert found["value_repr"] == repr(view)
    assert equal(read_value(found["value_repr"]), found["value"])


def test_a_view_compares_as_its_contents_in_order_with_their_types() -> None:
    """The decision: a view is the list of its items, so the list Python would build from
    it is an equal answer; another order, or pairs written as lists, is not."""
    assert equal(read_value("['a', 'b']"), encode(D.keys()))
    assert not equal(read_value("dict_keys(['b', 'a'])"), encode(D.keys()))
    assert not equal(read_value("('a', 'b')"), encode(D.keys()))
    assert equal(read_value("[('a', 1), ('b', [2])]"), encode(D.items()))
    assert not equal(read_value("[['a', 1], ['b', [2]]]"), encode(D.items()))


def test_a_view_too_large_is_cut_under_its_own_name() -> None:
    big = dict.fromkeys(range(50))
    assert encode(big.keys(), max_nodes=10) == ["truncated", "dict_keys"]
    assert result_value(big.keys()) == {"value": encode(list(range(50))),
                                        "value_repr": repr(big.keys())}


@pytest.mark.parametrize(("text", "held"), [
    ("dict_keys([1, 2])", [1, 2]),
    ("dict_keys([])", []),
    ("dict_values([[1], {2: 3}, None])", [[1], {2: 3}, None]),
    ("dict_items([(1, 'a'), ('b', (2,))])", [(1, "a"), ("b", (2,))]),
    ("odict_keys(['x'])", ["x"]),
    ("odict_items([])", []),
    ("[dict_keys([1]), {'k': dict_values([2])}]", [[1], {"k": [2]}]),
    ("assert f(1) == dict_keys(['a'])", ["a"]),
])
def test_views_read_as_the_list_they_hold(text: str, held: Any) -> None:
    assert equal(read_value(text), encode(held))


@pytest.mark.parametrize("text", [
    "dict_keys()",                    # no items
    "dict_keys([1], [2])",            # two lists
    "dict_keys(items=[1])",           # a keyword
    "dict_keys((1, 2))",              # not the list Python prints
    "dict_keys({1, 2})",
    "dict_keys('ab')",
    "dict_keys(*[1])",
    "dict_keys([*a])",                # unpacking inside
    "dict_keys([x])",                 # a name
    "dict_items([1, 2])",             # items that are no pairs
    "dict_items([(1, 2, 3)])",
    "dict_items([[1, 2]])",
    "dict_items([(1, 2), ...])",      # '...' is no value outside a simulation's lists
    "os.dict_keys([1])",              # a dotted name is no view
    "dict_keys([1])(2)",
    "dict_keys[1]",
])
def test_a_malformed_view_is_refused(text: str) -> None:
    with pytest.raises(LiteralError):
        read_value(text)
    with pytest.raises(LiteralError):
        read_encoded(parse_expression(text))


def test_a_view_is_read_never_called() -> None:
    """A view's name is read from the syntax tree, never looked up: the names are not
    even defined as builtins."""
    import builtins

    assert not any(hasattr(builtins, name) for name in VIEW_NAMES)
    tree = ast.parse("dict_keys([1])", mode="eval").body
    assert isinstance(tree, ast.Call)
    assert parse_literal("dict_keys([1])") == [1]


def test_a_view_holding_an_object_reads_as_its_objects() -> None:
    read = read_encoded(parse_expression("dict_items([(Point(x=1), 2)])"))
    assert read == ["list", [["tuple", [["instance", "Point", [["x", ["int", 1]]]],
                                        ["int", 2]]]]]
    with pytest.raises(LiteralError):
        read_encoded(parse_expression("dict_items([Point(x=1)])"))


def test_a_class_named_as_a_view_is_not_read_as_an_object() -> None:
    """``dict_keys(x=1)`` is a malformed view, never an object of a class so named."""
    with pytest.raises(LiteralError, match="dict_keys"):
        read_encoded(parse_expression("dict_keys(x=1)"))


# --- hostile texts --------------------------------------------------------------------------

def test_views_nested_beyond_the_parser_are_refused_not_a_crash() -> None:
    deep = "dict_keys([" * 5000 + "1" + "])" * 5000
    with pytest.raises(LiteralError):
        read_value(deep)
    nested = "dict_values([" * 60 + "1" + "])" * 60  # deep, but within what Python parses
    found = read_value(nested)
    for _ in range(60):
        assert found[0] == "list" and len(found[1]) == 1
        found = found[1][0]
    assert found == ["int", 1]


def test_a_view_longer_than_the_reader_takes_is_refused() -> None:
    text = "dict_keys([" + "1, " * (MAX_LITERAL_CHARS // 3) + "])"
    with pytest.raises(LiteralError, match="longer than"):
        parse_literal(text)


def test_keys_hashing_alike_are_read_as_a_list_not_built_into_a_set() -> None:
    """A view's members are listed, never hashed together: 10,000 keys that all hash alike
    (more than a set may hold) read at once, in order."""
    alike = 2 ** 61 - 1
    text = "dict_keys([" + ", ".join(str(k * alike) for k in range(10_000)) + "])"
    assert read_value(text) == encode([k * alike for k in range(10_000)])


@pytest.mark.parametrize("text", ["dict_keys([", "dict_keys([1, 2)", "dict_items([(1, 2]))",
                                  "dict_keys([1, 2]", "dict_keys])", "dict_keys(["
                                  + "(" * 300 + "])"])
def test_an_unclosed_view_is_refused(text: str) -> None:
    with pytest.raises(LiteralError):
        read_value(text)
