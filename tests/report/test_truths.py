"""Truths are shown as Python prints values, never as the typed JSON they are stored in."""

from __future__ import annotations

from execbench.report.truths import truth_text
from execbench.values import encode


def test_values_read_as_python_prints_them() -> None:
    assert truth_text({"output": encode(""), "output_repr": "''"}) == "output: ''"
    assert truth_text({"value": encode([(4, 1), {2.0}]), "repr": "[(4, 1), {2.0}]"}) == \
        "value: [(4, 1), {2.0}]"
    assert truth_text(encode(frozenset({1}))) == "frozenset({1})"
    assert truth_text(None) == ""


def test_plain_fields_and_values_inside_them() -> None:
    truth = {"lines": [1, 3], "witness": "'+'", "kind": "if",
             "properties": [{"label": "n", "values": [encode(1), encode("a")]}]}
    assert truth_text(truth).splitlines() == [
        "lines: [1, 3]", "witness: '+'", "kind: if",
        "properties: [{'label': 'n', 'values': [1, 'a']}]"]


def test_values_without_a_literal_show_what_was_recorded() -> None:
    opaque = ["object", "Path", "PosixPath('/tmp')"]
    assert truth_text({"value": opaque, "text": "PosixPath('/tmp')"}) == \
        "value: PosixPath('/tmp')"
    assert truth_text(["tuple", [opaque]]) == "(PosixPath('/tmp'),)"
    assert truth_text(["dict", [[encode("k"), ["truncated", "str"]]]]) == \
        "{'k': <str too large to record>}"
