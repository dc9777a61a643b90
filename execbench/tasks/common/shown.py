"""Ground truths as a person reads them (``execbench show``, the HTML page).

A truth is stored as JSON in which values travel typed (``["str", ""]``) so that ``1``,
``True`` and ``1.0`` stay apart; shown as stored, an empty string would read
``{"output": ["str", ""]}``. Shown here, each typed value is written as Python prints it
(``output: ''``) and other fields as plain Python values. A task names the fields of its
truth that only restate a typed value beside them (the ``repr`` of ``value``), which a
reader would otherwise see twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from execbench.values import is_encoding, shown


def shown_truth(truth: Any, restated: Mapping[str, str]) -> str:
    """The truth as lines ``field: value``, leaving out each field of ``restated`` (field
    -> the field it restates) whose original holds a typed value; a truth that is one
    value, as that value."""
    if not isinstance(truth, dict) or is_encoding(truth):
        return "" if truth is None else _top(truth)
    return "\n".join(f"{key}: {_top(value)}" for key, value in truth.items()
                     if not (key in restated and is_encoding(truth.get(restated[key]))))


def _top(value: Any) -> str:
    """A field's value: text as it is (it is prose or code), anything else as Python
    writes it."""
    return value if isinstance(value, str) else _python(value)


def _python(value: Any) -> str:
    """JSON holding typed values, as Python source text."""
    if is_encoding(value):
        return shown(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(_python, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key!r}: {_python(item)}" for key, item in value.items()) + "}"
    return repr(value)
