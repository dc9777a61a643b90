"""Text from outside made safe for where it is written: one set of rules for every writer.

Model replies (response, reasoning, answer, the verdict's detail, an endpoint's error
message), dataset text (ids, source names, code, truths) and other people's run folders
(``results.json``, ``run.json``) reach the terminal, a page, a spreadsheet and data files.
Some characters in them are hazards there:

* control characters drive a terminal: ``ESC [2J`` clears it, ``ESC ]0;`` retitles the
  window, ``ESC ]8;`` plants a link, a carriage return overwrites what was shown, NUL
  and the C1 controls (``\\x9b`` is ESC ``[`` to some terminals) likewise;
* bidi controls, line separators and the BOM reorder or hide what is read;
* a lone surrogate (a reply's ``"\\ud800"`` escape reads as one) has no UTF-8 form, so
  writing it stops the writer with ``UnicodeEncodeError``.

:func:`visible` shows them as Python escapes (``\\x1b``, ``\\u202e``, ``\\ud800``), so a
reader sees what the model wrote and nothing acts on it; :func:`json_text` writes them as
JSON escapes, so JSON keeps its value; :func:`csv_cell` adds the spreadsheet formula
guard; :func:`encodable` changes lone surrogates only, for files whose text must stay as
it was but be UTF-8 (parquet).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_HAZARDS = ("\x00-\x08\x0b-\x1f"  # C0 controls but tab and newline
            "\x7f-\x9f"  # DEL and the C1 controls
            "\ud800-\udfff"  # lone surrogates
            "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidi marks and controls
            "\u2028\u2029\ufeff")  # line and paragraph separators, BOM
_SHOWN = re.compile(f"[{_HAZARDS}]")
_ONE_LINE = re.compile(f"[{_HAZARDS}\t\n]")
_SURROGATE = re.compile("[\ud800-\udfff]")

FORMULA_START = ("=", "+", "-", "@")
"""What makes a spreadsheet read a CSV cell as a formula (a tab or carriage return does
too, but :func:`visible` has already written those as escapes)."""


def _escape(found: re.Match[str]) -> str:
    return ascii(found.group())[1:-1]


def visible(text: str, lines: bool = True) -> str:
    """``text`` with every hazard (see the module) written as its Python escape; with
    ``lines`` False, newlines and tabs too (a table cell is one line). Linear in the text,
    and text without hazards comes back as it was. A reply that holds the four characters
    ``\\x1b`` reads the same as one that holds ESC: a viewer's price for plain text."""
    return (_SHOWN if lines else _ONE_LINE).sub(_escape, text)


def _json_escape(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"


def json_text(text: str) -> str:
    """JSON text (as ``json.dumps(..., ensure_ascii=False)`` writes it) with every hazard
    written as a ``\\uXXXX`` escape: the same value to any JSON reader, lone surrogates
    included, and UTF-8 text a terminal shows without acting on (``json.dumps`` already
    escapes the C0 controls; the hazards only ever stand inside strings)."""
    return _SHOWN.sub(_json_escape, text)


def encodable(text: str) -> str:
    """``text`` with each lone surrogate written as its ``\\uXXXX`` escape, nothing else
    changed: the one change a file that must hold UTF-8 (parquet) needs. In JSON text this
    is the JSON escape, so the value stays the same."""
    return _SURROGATE.sub(_json_escape, text)


def csv_cell(text: str) -> str:
    """A text cell for CSV: :func:`visible` on one line, and a leading ``'`` where the
    text would start with a formula character, so a spreadsheet shows it rather than runs
    it (``=HYPERLINK(...)``, ``=cmd|...``). A lone sign is no formula (the ``-`` a table
    shows for nothing stays), and numbers are no text cells (``-1.5`` stays a number)."""
    shown = visible(text, lines=False)
    return "'" + shown if len(shown) > 1 and shown.startswith(FORMULA_START) else shown


def each_text(value: Any, fix: Callable[[str], str]) -> Any:
    """``value`` (JSON-like: dicts, lists, tuples, scalars) with ``fix`` applied to every
    string in it, keys included."""
    if isinstance(value, str):
        return fix(value)
    if isinstance(value, dict):
        return {each_text(key, fix): each_text(item, fix) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [each_text(item, fix) for item in value]
    return value
