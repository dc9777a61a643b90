"""Reading a value from an answer, the unparsable verdict, and CodeSense's string match."""

from __future__ import annotations

import pytest

from execbench.tasks.base import UNPARSABLE
from execbench.tasks.common.answers import EMPTY, read_value, string_match, unparsable
from execbench.values import LiteralError, encode


@pytest.mark.parametrize(("text", "value"), [
    ("(1, 3)", (1, 3)), ("x = 5", 5), ("first, last = 1, 3", (1, 3)),
    ("assert f(2) == 'b'", "b"), ("True", True), ("{'a': [1]}", {"a": [1]}),
])
def test_values_are_read_with_the_literal_parser(text: str, value: object) -> None:
    assert read_value(text, assignment=True) == encode(value)


def test_an_assignment_is_a_value_only_where_the_question_takes_one() -> None:
    assert read_value("assert f(1) == [2]") == encode([2])
    with pytest.raises(LiteralError, match="`assert ... == literal`") as refused:
        read_value("x = 5")
    assert "name = literal" not in str(refused.value)
    with pytest.raises(LiteralError, match=EMPTY):
        read_value(None)


def test_expressions_are_never_evaluated() -> None:
    for text in ("1 + 1", "len([1])", "x"):
        with pytest.raises(LiteralError):
            read_value(text, assignment=True)


def test_the_unparsable_verdict_keeps_the_answer_and_why() -> None:
    score = unparsable("maybe", "not yes or no", {"kind": "branch"})
    assert (score.verdict, score.answer, score.detail) == (UNPARSABLE, "maybe", "not yes or no")
    assert score.extra == {"kind": "branch"} and unparsable(None, EMPTY).extra == {}


def test_string_match_replays_codesense_normalisation() -> None:
    # Lower-cased, stripped, outer quotes trimmed, whitespace runs made one.
    assert string_match("'Hello  World'", "'hello world'")
    assert string_match("hello world", "'hello world'")  # a bare word matches a string
    assert string_match("TRUE", "True")  # where the literal reading differs
    assert not string_match("[1,2]", "[1, 2]")  # where type-aware equality accepts
    assert not string_match(None, "1")
