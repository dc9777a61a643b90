"""``execbench.text_safety``, the rules every writer of outside text shares, on any text
hypothesis draws (every code point, lone surrogates included, and the hostile pieces of
``test_odd_text``): its output is UTF-8, holds nothing a terminal acts on, keeps a JSON
value, and leaves ordinary text as it was."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from execbench.text_safety import csv_cell, each_text, encodable, json_text, visible
from tests.reports.test_odd_text import PIECES, UNSAFE

pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ODD_TEXT = st.lists(st.one_of(st.text(st.characters()), st.sampled_from(PIECES))).map("".join)
"""Any text: every code point (lone surrogates included) and the hostile pieces."""
QUICK = settings(max_examples=300, deadline=None, database=None)


@QUICK
@given(ODD_TEXT)
def test_visible_text_is_utf8_with_nothing_a_terminal_acts_on(text: str) -> None:
    for lines in (True, False):
        shown = visible(text, lines)
        shown.encode("utf-8")
        assert UNSAFE.search(shown) is None
        assert visible(shown, lines) == shown
    assert "\n" not in visible(text, lines=False) and "\t" not in visible(text, lines=False)
    if UNSAFE.search(text) is None:
        assert visible(text) == text  # ordinary text as it was


@QUICK
@given(ODD_TEXT)
def test_json_text_keeps_the_value(text: str) -> None:
    record = {"response": text, "parts": [text, None, 1.5], text: "key"}
    written = json_text(json.dumps(record, ensure_ascii=False, indent=2))
    written.encode("utf-8")
    assert UNSAFE.search(written) is None
    assert json.loads(written) == json.loads(json.dumps(record))  # as ASCII JSON reads
    if UNSAFE.search(text) is None:
        assert written == json.dumps(record, ensure_ascii=False, indent=2)


@QUICK
@given(ODD_TEXT)
def test_encodable_changes_lone_surrogates_only(text: str) -> None:
    fixed = encodable(text)
    fixed.encode("utf-8")
    if not re.search("[\ud800-\udfff]", text):
        assert fixed is text or fixed == text
    dumped = json.dumps({"truth": text}, ensure_ascii=False)
    assert json.loads(encodable(dumped)) == json.loads(json.dumps({"truth": text}))
    assert each_text({"a": [text, (text, 3)]}, encodable) == {"a": [fixed, [fixed, 3]]}


@QUICK
@given(ODD_TEXT)
def test_csv_cells_are_no_formulas(text: str) -> None:
    cell = csv_cell(text)
    assert UNSAFE.search(cell) is None and "\n" not in cell
    assert len(cell) < 2 or not cell.startswith(("=", "+", "-", "@"))
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow([cell, "x"])
    assert next(csv.reader(io.StringIO(buffer.getvalue()))) == [cell, "x"]
