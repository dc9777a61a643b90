"""Reading the answers only CodeSense questions take: mappings and yes or no."""

from __future__ import annotations

import pytest

from execbench.tasks.codesense.answers import read_mapping, read_yes_no
from execbench.values import LiteralError, encode


def test_mappings_are_a_dict_literal_or_name_value_lines() -> None:
    wanted = encode({"t": 5, "a": [9, 7]})
    assert read_mapping("{'t': 5, 'a': [9, 7]}") == wanted
    assert read_mapping("t = 5\na = [9, 7]\n") == wanted
    with pytest.raises(LiteralError, match="name = value"):
        read_mapping("t = 5\nthe rest is prose")


def test_yes_and_no() -> None:
    assert read_yes_no("Yes.") is True and read_yes_no("no") is False
    assert read_yes_no("False") is False and read_yes_no("maybe") is None
