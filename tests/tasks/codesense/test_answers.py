"""Reading CodeSense answers (ours and ``<ans>`` tags) and CodeSense's string comparison."""

from __future__ import annotations

import pytest

from execbench.sandbox.values import LiteralError, encode
from execbench.tasks.codesense.answers import (
    read_mapping,
    read_text,
    read_value,
    read_yes_no,
    string_match,
)


def test_ans_tags_win_and_the_first_one_is_taken() -> None:
    assert read_text("think... <ans>[1, 2]</ans> or maybe <ans>3</ans>") == "[1, 2]"
    assert read_text("<think><ans>9</ans></think>[ANSWER]\n4\n[/ANSWER]") == "4"
    assert read_text("[ANSWER]\n'a'\n[/ANSWER]") == "'a'"
    assert read_text(None) is None and read_text("<ans> </ans>") is None


@pytest.mark.parametrize(("text", "value"), [
    ("(1, 3)", (1, 3)), ("x = 5", 5), ("first, last = 1, 3", (1, 3)),
    ("assert f(2) == 'b'", "b"), ("True", True), ("{'a': [1]}", {"a": [1]}),
])
def test_values_are_read_with_the_literal_parser(text: str, value: object) -> None:
    assert read_value(text) == encode(value)


def test_expressions_are_never_evaluated() -> None:
    for text in ("1 + 1", "len([1])", "x"):
        with pytest.raises(LiteralError):
            read_value(text)


def test_mappings_are_a_dict_literal_or_name_value_lines() -> None:
    wanted = encode({"t": 5, "a": [9, 7]})
    assert read_mapping("{'t': 5, 'a': [9, 7]}") == wanted
    assert read_mapping("t = 5\na = [9, 7]\n") == wanted
    with pytest.raises(LiteralError, match="name = value"):
        read_mapping("t = 5\nthe rest is prose")


def test_yes_and_no() -> None:
    assert read_yes_no("Yes.") is True and read_yes_no("no") is False
    assert read_yes_no("False") is False and read_yes_no("maybe") is None


def test_string_match_replays_codesense_normalisation() -> None:
    # Lower-cased, stripped, outer quotes trimmed, whitespace runs made one.
    assert string_match("'Hello  World'", "'hello world'")
    assert string_match("hello world", "'hello world'")  # a bare word matches a string
    assert string_match("TRUE", "True")  # where the literal reading differs
    assert not string_match("[1,2]", "[1, 2]")  # where type-aware equality accepts
    assert not string_match(None, "1")
