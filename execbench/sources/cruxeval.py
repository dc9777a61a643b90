"""CRUXEval: one function ``f`` per record with a single input and its output.

Records are ``{"id", "code", "input", "output"}``. ``input`` is the text of an argument
list (``"'abc', 2"``; some are expressions such as ``lambda x: x < 2``, one is empty) and
``output`` the literal text of the result, so each record maps to exactly one call.
"""

from __future__ import annotations

from execbench.program import Call, Program
from execbench.sources.generic import build_program
from execbench.sources.jsonl import Record

ID_KEY = "id"
ENTRY_POINT = "f"


def build(record: Record) -> Program:
    """A program from one CRUXEval record."""
    call = Call(args=record.get("input"), expected=record.get("output"))
    return build_program(record, record.get("code"), ENTRY_POINT, [call], {})
