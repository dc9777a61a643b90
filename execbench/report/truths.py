"""Ground truths as a person reads them.

An instance's truth is JSON in which values travel as typed JSON (``["str", ""]``) so
that ``1``, ``True`` and ``1.0`` stay apart; shown as it is stored, an empty string reads
``{"output": ["str", ""]}``. Here each value is written as Python would print it
(``output: ''``), the other fields as plain Python values, and a stored text that only
restates a value beside it (``repr``, ``output_repr``, CodeSense's ``text``) is left out.
"""

from __future__ import annotations

from typing import Any

from execbench.values import is_encoding, shown


def truth_text(truth: Any) -> str:
    """The truth as lines ``field: value``; a truth that is one value, as that value."""
    if not isinstance(truth, dict) or is_encoding(truth):
        return "" if truth is None else _top(truth)
    return "\n".join(f"{key}: {_top(value)}" for key, value in truth.items()
                     if not _restates(key, truth))


def _restates(key: str, truth: dict[str, Any]) -> bool:
    """Whether the field is the text of a typed value the truth also holds."""
    if key in ("repr", "text"):
        return is_encoding(truth.get("value"))
    return key.endswith("_repr") and is_encoding(truth.get(key.removesuffix("_repr")))


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
