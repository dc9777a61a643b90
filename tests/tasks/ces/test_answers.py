"""Reading simulation answers: tags among reasoning text, labels repeated, values over
several lines, the last readable value of a tag, and lists elided with ``...``."""

from __future__ import annotations

import pytest

from execbench.tasks.ces.answers import Elided, matches, parse_pattern, read_answer, sequence
from execbench.values import LiteralError, encode

LABELS = {"3a": "i", "3b": "range(1, n + 1)", "4a": "x == 0"}


def test_tags_are_found_among_reasoning_text() -> None:
    text = """Let me think. The loop variable [3a] will take 1, 2 and 3.
First iteration: i = 1 ...
[3a] = [1, 2, 3]
Some more thoughts: [3b] is a range, so I list its items.
[3b] range(1, n + 1) = [1,
    2, 3]
**[4a]** x == 0 = [False, False, False]
[9z] = [1]
[output] = 'done'"""
    assert read_answer(text, LABELS) == {"3a": "[1, 2, 3]", "3b": "[1,\n    2, 3]",
                                         "4a": "[False, False, False]", "output": "'done'"}


def test_the_last_readable_value_of_a_tag_wins() -> None:
    text = "[3a] = [1, 2]\n[3a] = [1, 2, 3]  # corrected\n[3a] = not sure\n[output]: 4"
    assert read_answer(text, LABELS) == {"3a": "[1, 2, 3]  # corrected", "output": "4"}


def test_a_tag_without_a_value_is_not_read() -> None:
    assert read_answer("[3a] i\n[3b] ??\n[output] = ", LABELS) == {}


def test_an_elided_list_keeps_its_ends() -> None:
    head, tail, whole = sequence("[0, 1, ..., 98, 99]")
    assert (head, tail, whole) == ([encode(0), encode(1)], [encode(98), encode(99)], False)
    assert sequence("[1, 2]") == ([encode(1), encode(2)], [encode(1), encode(2)], True)
    assert sequence("(1, 2)") is None and sequence("[1, 2") is None


def test_elided_values_match_on_the_items_they_state() -> None:
    truth = encode([[1, 2, 3, 4], (5, 6)])
    assert matches(parse_pattern("[[1, ..., 4], (5, 6)]"), truth)
    assert matches(parse_pattern("[[1, 2, ..., 3, 4], (5, ..., 6)]"), truth)
    assert not matches(parse_pattern("[[1, ..., 3], (5, 6)]"), truth)  # wrong last item
    assert not matches(parse_pattern("[[1, 2, 3, ..., 3, 4], (5, 6)]"), truth)  # too many
    assert not matches(parse_pattern("[[1, ..., 4], [5, 6]]"), truth)  # a list, not a tuple
    assert isinstance(parse_pattern("[True, ..., False]"), Elided)


@pytest.mark.parametrize("text", ["[..., 1]", "[1, ...]", "[1, ..., 2, ..., 3]", "...",
                                  "{1: ...}", "[f(1), ..., 2]"])
def test_dots_must_stand_inside_a_list_between_stated_items(text: str) -> None:
    with pytest.raises(LiteralError):
        parse_pattern(text)


def test_values_are_type_aware() -> None:
    assert not matches(parse_pattern("[1, 1]"), encode([True, 1]))
    assert matches(parse_pattern("[True, 1]"), encode([True, 1]))
