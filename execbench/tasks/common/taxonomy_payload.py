"""The error labels scoring gives wrong answers (``taxonomy``), as the records and the
reports that read them name them: what a report or ``show`` needs, without the rules."""

from __future__ import annotations

from typing import Any

COMPUTATION = "computation"
CONTROL_FLOW = "control_flow"
API_BEHAVIOUR = "api_behaviour"
HALLUCINATION = "hallucination"
FORMAT = "format"
NULL = "null"
LABELS = (COMPUTATION, CONTROL_FLOW, API_BEHAVIOUR, HALLUCINATION, FORMAT, NULL)
"""Every label, in the order reports show them."""
LABEL_KEY, LINE_KEY = "error_label", "error_line"
"""Where a sample's ``extra`` keeps its label and line."""


def error_label(extra: Any) -> str | None:
    """A logged sample's label and line as ``execbench show`` prints them (``control_flow
    at line 5``), or None where it has none. The log is outside input: a label or a line
    of another type is not shown."""
    if not isinstance(extra, dict) or not isinstance(label := extra.get(LABEL_KEY), str):
        return None
    line = extra.get(LINE_KEY)
    return f"{label} at line {line}" if type(line) is int else label
