"""Numbered code, as every family's prompts show it."""

from __future__ import annotations

from execbench.tasks.common.code import numbered


def test_numbers_are_right_aligned_to_the_widest() -> None:
    assert numbered("a\nb").splitlines() == ["1  a", "2  b"]
    lines = numbered("\n".join("x" * 10)).splitlines()
    assert lines[0] == " 1  x" and lines[9] == "10  x"
