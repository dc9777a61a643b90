"""What a question needs to know about the language of the code it shows: the name and tag
a prompt uses, how a value is written, and how an answer's value is read.

Python values are Python literals, read by the literal parser. C and Java values are
written as their debuggers print them (GDB, JDB) and read back by ``debugger_values``,
the reader that read the published truth: an answer and the truth go through the same
reader, so the comparison is the type-aware one of ``execbench.values`` either way. Nothing
here runs code.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from execbench.program import LANGUAGES, PYTHON
from execbench.sources import debugger_values
from execbench.tasks.common.answers import read_value
from execbench.values import Encoded, LiteralError, shown

_PYTHON_VALUE = ("Write the value as a Python literal (no variables, calls or "
                 "expressions).")
_DEBUGGER_VALUE = ("Write the value as {tool} prints it: a number as a number, a character "
                   "as its code or in quotes ('A'), a string in double quotes, {null} for a "
                   "null pointer, true or false, an array as {{1, 2}} and {record} as "
                   "{{field = value, ...}}. Addresses are never asked for.")
_ASSIGNED = re.compile(r"\s*(?P<target>[A-Za-z_][\w.\->\[\]*]*)\s*=(?!=)(?P<value>.*)", re.S)


@dataclass(frozen=True)
class Language:
    key: str
    tag: str
    """The tag around code in a prompt (``[C]`` ... ``[/C]``)."""
    value_format: str
    """How a prompt asks a value to be written."""
    _read: Callable[[str], Encoded]
    _show: Callable[[Encoded], str]

    @property
    def name(self) -> str:
        return LANGUAGES[self.key]

    def read(self, text: str) -> Encoded:
        """The value an answer states; ``LiteralError`` says what was expected."""
        return self._read(text)

    def show(self, value: Encoded) -> str:
        """A value as a prompt or a reference answer writes it; an opaque value is the
        text it was published as."""
        try:
            return self._show(value)
        except (LiteralError, ValueError):
            return str(value[-1])

    def code(self, text: str) -> str:
        return f"[{self.tag}]\n{text}\n[/{self.tag}]"


def _read_native(text: str) -> Encoded:
    """A C or Java answer: a value, or ``target = value;`` (the statement's own form)."""
    try:
        return debugger_values.read_text(text.strip().rstrip(";"))
    except LiteralError:
        assigned = _ASSIGNED.fullmatch(text)
        if assigned is None:
            raise
        return debugger_values.read_text(assigned["value"].strip().rstrip(";"))


def assigned_name(text: str) -> str | None:
    """The name an answer written as ``name = value`` assigns, if it is written so."""
    assigned = _ASSIGNED.fullmatch(text)
    return assigned["target"] if assigned else None


def _native(key: str, tool: str, null: str, record: str) -> Language:
    return Language(key, key.upper(),
                    _DEBUGGER_VALUE.format(tool=tool, null=null, record=record),
                    _read_native, lambda value: debugger_values.show(value, key))


_ALL = {
    PYTHON: Language(PYTHON, "PYTHON", _PYTHON_VALUE,
                     lambda text: read_value(text, assignment=True), shown),
    "c": _native("c", "GDB", "NULL", "a struct"),
    "java": _native("java", "JDB", "null", "an object"),
}


def language(key: str) -> Language:
    return _ALL[key]
