"""Programs and the calls to run them with: what every source yields.

A call keeps its arguments as *source text* taken from the dataset (``"'abc', 2"``). That
text is trusted benchmark data, so the sandbox may evaluate it in the program's namespace
(CRUXEval has inputs like ``lambda x: x < 2`` or ``range(100, 120)``). A model's answer is
never treated this way: tasks read answers with the literal parser in ``execbench.values``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from execbench.sandbox.script import STDIN as STDIN  # the mark of a stdin program, here too

if TYPE_CHECKING:
    from execbench.sandbox.trace import Trace


@dataclass(frozen=True)
class Call:
    """One invocation of a program's entry point."""

    args: str
    """Argument-list source text, e.g. ``"[1, 2], k=3"``."""
    expected: str | None = None
    """The output the source claims for this call (a literal text), if it has one."""
    recorded: Trace | None = field(default=None, compare=False)
    """The call's trace as recorded where it ran (a project's own test run, a published
    task file), for calls that cannot be re-run alone: the suite takes it as the ground
    truth instead of running the call in the sandbox."""


PYTHON = "python"
LANGUAGES = {"python": "Python", "c": "C", "java": "Java"}
"""The languages a program may be written in (key -> the name prompts use). Only Python
is ever run; a program in another language comes with every call's trace recorded where it
ran (a published task file), and tasks that must run code skip it, saying so."""


@dataclass(frozen=True)
class Program:
    """A module with one entry-point function: self-contained Python, or a function in
    another language whose calls were all recorded where they ran."""

    id: str
    """Stable identifier, ``"<source>/<record id>"``."""
    source: str
    code: str
    entry_point: str
    calls: tuple[Call, ...]
    meta: dict[str, Any] = field(default_factory=dict)
    language: str = PYTHON
    """A key of ``LANGUAGES``."""


def stdin_call(text: str) -> str:
    """The call that feeds ``text`` to a program that reads standard input (``STDIN``): a
    string literal, so that the text, an answer's or a dataset's, is never code."""
    return repr(text)


def literal_text(literal: str) -> str:
    """The text a string literal holds: a stdin program's call (the text it is fed) or
    its stated output, as ``stdin_call`` and the sources write them."""
    text = ast.literal_eval(literal)
    if not isinstance(text, str):
        raise ValueError("a stdin program's call and output are string literals")
    return text


_LINE_END_BLANKS = " \t\r"
"""What a judge drops at the end of a line: spaces, tabs, and the carriage return of a
``\r\n`` line end. Nothing else: Python's ``str.rstrip`` would also drop a no-break or
ideographic space, which a program prints as any other character."""


def printed_lines(text: str) -> list[str]:
    """Printed text as a judge compares it: stripped at both ends (an answer block is read
    so), split at ``\n`` alone, each line without its trailing spaces. ``str.splitlines``
    would also split at a form feed, a file separator or U+2028, so an answer that wrote
    those for line breaks would match output the program never printed."""
    return [line.rstrip(_LINE_END_BLANKS) for line in text.strip().split("\n")]


def printed_alike(first: str, second: str) -> bool:
    """Whether two printed texts are the same output, as most judges take it: line by
    line, trailing spaces, ``\r\n`` line ends and blank lines at either end aside."""
    return printed_lines(first) == printed_lines(second)
