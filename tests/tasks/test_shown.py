"""Truths are shown as Python prints values, never as the typed JSON they are stored in,
and each task leaves out the fields of its truth that only restate a value."""

from __future__ import annotations

from execbench.tasks.common.shown import shown_truth
from execbench.tasks.registry import get_task, truth_shown
from execbench.values import encode


def test_values_read_as_python_prints_them() -> None:
    assert truth_shown("input", {"output": encode(""), "output_repr": "''"}) == \
        "any input that gives ''"
    assert get_task("output").reporting.show_truth(
        {"value": encode([(4, 1), {2.0}]), "repr": "[(4, 1), {2.0}]"}) == \
        "value: [(4, 1), {2.0}]"
    assert shown_truth(encode(frozenset({1})), {}) == "frozenset({1})"
    assert shown_truth(None, {}) == ""


def test_a_restatement_is_kept_where_no_typed_value_stands_beside_it() -> None:
    assert truth_shown("statement", {"text": "7"}) == "text: 7"
    assert truth_shown("statement", {"value": encode(7), "text": "7"}) == "value: 7"


def test_plain_fields_and_values_inside_them() -> None:
    truth = {"lines": [1, 3], "witness": "'+'", "kind": "if",
             "properties": [{"label": "n", "values": [encode(1), encode("a")]}]}
    assert truth_shown("counterfactual", truth).splitlines() == [
        "lines: [1, 3]", "witness: '+'", "kind: if",
        "properties: [{'label': 'n', 'values': [1, 'a']}]"]


def test_a_task_not_installed_here_shows_every_field() -> None:
    truth = {"value": encode(1), "repr": "1"}
    assert truth_shown("no-such-task", truth).splitlines() == ["value: 1", "repr: 1"]


def test_values_without_a_literal_show_what_was_recorded() -> None:
    opaque = ["object", "Path", "PosixPath('/tmp')"]
    assert truth_shown("statement", {"value": opaque, "text": "PosixPath('/tmp')"}) == \
        "value: PosixPath('/tmp')"
    assert shown_truth(["tuple", [opaque]], {}) == "(PosixPath('/tmp'),)"
    assert shown_truth(["dict", [[encode("k"), ["truncated", "str"]]]], {}) == \
        "{'k': <str too large to record>}"
