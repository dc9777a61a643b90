"""Abstract categories (CodeSense, Table 6), bool before int."""

from __future__ import annotations

import random

import pytest

from execbench.tasks.common.abstract import (
    CATEGORIES,
    category,
    random_category,
    read_category,
    truth,
)
from execbench.values import encode


@pytest.mark.parametrize(("value", "expected"), [
    (True, "True"), (False, "False"), (None, "None"),
    (0, "Zero"), (1, "Positive Regular"), (10, "Positive Regular"), (11, "Positive Large"),
    (-10, "Negative Regular"), (-11, "Negative Large"),
    (0.0, "Zero"), (0.5, "Positive Small"), (1.0, "Positive Small"),
    (1.5, "Positive Regular"), (10.5, "Positive Large"), (-1.0, "Negative Small"),
    (-1.5, "Negative Regular"), (-10.0, "Negative Regular"), (-10.5, "Negative Large"),
    (float("inf"), "Positive Large"),
    ("", "Empty String"), ("abc", "Alphabetic String"), ("123", "Numeric String"),
    ("a1", "Mixed String"), (" ", "Mixed String"),
    ([], "Empty List"), ([0], "Non-Empty List"), ((), "Empty Tuple"), ((1,), "Non-Empty Tuple"),
    ({}, "Empty Dictionary"), ({1: 2}, "Non-Empty Dictionary"), (set(), "Empty Set"),
    ({1}, "Non-Empty Set"),
])
def test_each_value_gets_its_category(value: object, expected: str) -> None:
    assert category(encode(value)) == expected


def test_bool_is_checked_before_int() -> None:
    # The paper's mapping code tests int first and files True under Positive Regular.
    assert category(encode(True)) == "True" and category(encode(1)) == "Positive Regular"
    assert truth(encode(True)).to_record() == {"category": "True", "type": "bool"}


def test_types_without_categories_and_nan_have_none() -> None:
    for value in (b"x", 1j, frozenset({1}), float("nan")):
        assert category(encode(value)) is None and truth(encode(value)) is None


def test_answers_name_a_category_in_any_case_and_quoting() -> None:
    assert read_category("  'positive   REGULAR'. ") == "Positive Regular"
    assert read_category("non-empty list") == "Non-Empty List"
    assert read_category("true") == "True"
    assert read_category("Positive") is None


def test_the_random_baseline_draws_from_the_value_type_only() -> None:
    rng = random.Random(0)
    drawn = {random_category("list", rng) for _ in range(50)}
    assert drawn == set(CATEGORIES["list"])
