"""The raw recording a native recorder writes, read and checked: the only parser of it.

The recorder runs inside the jail beside the project's tests, so every line is untrusted
input. A line is taken only when it is one of the known kinds (package docstring) with
the right types, within the bounds, and consistent with what came before: call numbers
increase, a ``line`` or ``return`` names a call still open, lines lie inside their
function, the function is one of the project's snapshotted files. Values must be typed
JSON (``values.is_encoding``) within the node bound; a floating-point leaf is GDB's or the
JVM's text of the number, re-read here as the published C and Java values are
(``debugger_values``: an integral double is an int). Anything else is refused and counted
by reason, and a refused line closes nothing: its call is dropped (an incomplete call is
never kept). Nothing a line says can make this reader fail or grow without bound: lines
longer than ``max_line`` are dropped unread, open calls are bounded per function.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from execbench.harvest.channel import Lines
from execbench.sources import debugger_values
from execbench.values import Encoded, LiteralError, is_encoding

Variable = tuple[str, Encoded, str | None]
"""A name, its value, and its pointer token (``a1``...) or None."""

REFUSED_NOT_JSON = "not a record"
REFUSED_JAIL = "a jail report not first on the channel"
REFUSED_AFTER_END = "written after the end of the run"
REFUSED_KIND = "unknown kind"
REFUSED_CALL = "malformed call record"
REFUSED_FUNCTION = "a function outside the project's sources"
REFUSED_NUMBER = "a call number not above the last"
REFUSED_UNKNOWN_CALL = "a line or return of no open call"
REFUSED_LINE = "malformed line record"
REFUSED_RETURN = "malformed return record"
REFUSED_END = "malformed end record"
REFUSED_OPEN = "a call with no return when the channel closed"
REFUSED_TOO_MANY = "more open calls than the bound"
REFUSED_EVENTS = "more line events than the bound"

_NAME = re.compile(r"<return>|[A-Za-z_$][\w$.<>\[\]]{0,199}")
_TOKEN = re.compile(r"a[1-9]\d{0,8}")
_SIGNATURE = re.compile(r"\([\w$.\[\],]{0,400}\)")
MAX_OPEN = 10_000
"""Calls open at once (a deeper recursion is refused past it)."""


@dataclass
class RawCall:
    """One recorded call of a project function, as the recorder saw it."""

    number: int
    function: str
    file: str
    name: str
    first: int
    last: int
    args: list[Variable]
    lines: list[tuple[int, list[Variable]]] = field(default_factory=list)
    value: Encoded | None = None
    final: list[Variable] = field(default_factory=list)
    exception: str | None = None


class Recording(Lines):
    """Lines fed as they arrive; each call, once returned, handed to ``on_call``.

    ``files`` maps each snapshotted source file (relative to the project) to its number
    of lines; ``max_events`` bounds a call's line events (a longer call is refused, as the
    Python harvest drops it); ``max_nodes`` a value's nodes."""

    def __init__(self, files: dict[str, int], on_call: Callable[[RawCall], None], *,
                 max_line: int, max_events: int, max_nodes: int) -> None:
        super().__init__(max_line)
        self.files = files
        self.on_call = on_call
        self.max_events = max_events
        self.max_nodes = max_nodes
        self.jail: dict[str, Any] | None = None
        self.end: dict[str, Any] | None = None
        self.open: dict[int, RawCall] = {}
        self.last_number = 0
        self.calls = 0

    def finish(self) -> None:
        """The channel has closed: a line cut short and calls never returned are refused."""
        self._closed()
        if self.open:
            self.refused[REFUSED_OPEN] += len(self.open)
        self.open.clear()

    def _take(self, line: bytes) -> None:
        try:
            record = json.loads(line)
            kind = record["kind"]
        except (ValueError, TypeError, KeyError, RecursionError):
            self.refused[REFUSED_NOT_JSON] += 1
            return
        if self.lines == 1 and kind == "jail":
            self.jail = record
        elif self.jail is None or kind == "jail":
            self.refused[REFUSED_JAIL] += 1
        elif self.end is not None:
            self.refused[REFUSED_AFTER_END] += 1
        elif kind == "call":
            self._call(record)
        elif kind == "line":
            self._line(record)
        elif kind == "return":
            self._return(record)
        elif kind == "end":
            self._end(record)
        else:
            self.refused[REFUSED_KIND] += 1

    def _call(self, record: dict[str, Any]) -> None:
        number, file, name = record.get("call"), record.get("file"), record.get("name")
        first, last = record.get("first"), record.get("last")
        args = self._variables(record.get("args"))
        if not (_int(number) and isinstance(file, str) and isinstance(name, str)
                and _int(first) and _int(last) and args is not None
                and _is_function_id(record.get("function"), file, name)
                and _NAME.fullmatch(name)):
            self.refused[REFUSED_CALL] += 1
        elif file not in self.files or not 1 <= first <= last <= self.files[file]:
            self.refused[REFUSED_FUNCTION] += 1
        elif number <= self.last_number:
            self.refused[REFUSED_NUMBER] += 1
        elif len(self.open) >= MAX_OPEN:
            self.refused[REFUSED_TOO_MANY] += 1
        else:
            self.last_number = number
            self.open[number] = RawCall(number, record["function"], file, name, first, last,
                                        args)

    def _line(self, record: dict[str, Any]) -> None:
        call = self.open.get(record.get("call"))  # type: ignore[arg-type]
        if call is None:
            self.refused[REFUSED_UNKNOWN_CALL] += 1
            return
        line, variables = record.get("line"), self._variables(record.get("locals"))
        if not _int(line) or not call.first <= line <= call.last or variables is None:
            self.refused[REFUSED_LINE] += 1
            del self.open[call.number]
        elif len(call.lines) >= self.max_events:
            self.refused[REFUSED_EVENTS] += 1
            del self.open[call.number]
        else:
            call.lines.append((line, variables))

    def _return(self, record: dict[str, Any]) -> None:
        call = self.open.pop(record.get("call"), None)  # type: ignore[arg-type]
        if call is None:
            self.refused[REFUSED_UNKNOWN_CALL] += 1
            return
        value = record.get("value")
        final = self._variables(record.get("locals"))
        exception = record.get("exception")
        if value is not None:
            value = self._value(value)
        if final is None or (record.get("value") is not None and value is None) \
                or not (exception is None or isinstance(exception, str)
                        and len(exception) <= 500):
            self.refused[REFUSED_RETURN] += 1
            return
        call.value, call.final, call.exception = value, final, exception
        self.calls += 1
        self.on_call(call)

    def _end(self, record: dict[str, Any]) -> None:
        tests, code = record.get("tests"), record.get("exit")
        if not (isinstance(tests, list) and len(tests) == 2 and all(_int(n) for n in tests)
                and tests[0] <= tests[1] and (code is None or _int(code, low=-(1 << 31)))):
            self.refused[REFUSED_END] += 1
            return
        self.end = {"tests": tests, "exit": code}

    def _variables(self, items: Any) -> list[Variable] | None:
        if not isinstance(items, list) or len(items) > 1000:
            return None
        found: list[Variable] = []
        names = set()
        for item in items:
            if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str)
                    and _NAME.fullmatch(item[0]) and item[0] not in names
                    and (item[2] is None or isinstance(item[2], str)
                         and _TOKEN.fullmatch(item[2]))):
                return None
            value = self._value(item[1])
            if value is None:
                return None
            names.add(item[0])
            found.append((item[0], value, item[2]))
        return found

    def _value(self, value: Any) -> Encoded | None:
        """The value with its float leaves read as the published values are; None when it
        is not a typed value within the bound."""
        try:
            if not is_encoding(value) or _nodes(value) > self.max_nodes + 2:
                return None
            return _normalised(value)
        except (LiteralError, RecursionError):
            return None


def _is_function_id(function: Any, file: str, name: str) -> bool:
    """``FILE:NAME``, or for one of several Java methods of a name (overloads) that and its
    parameter types, ``FILE:NAME(int,int[])``."""
    return isinstance(function, str) and (function == f"{file}:{name}" or (
        function.startswith(f"{file}:{name}(")
        and _SIGNATURE.fullmatch(function[len(file) + len(name) + 1:]) is not None))


def _int(value: Any, low: int = 0) -> TypeGuard[int]:
    return type(value) is int and low <= value < 1 << 62


def _nodes(value: Encoded) -> int:
    stack, count = [value], 0
    while stack:
        item = stack.pop()
        count += 1
        if item[0] in ("list", "tuple", "set", "frozenset"):
            stack.extend(item[1])
        elif item[0] == "dict":
            stack.extend(part for pair in item[1] for part in pair)
    return count


def _normalised(value: Encoded) -> Encoded:
    tag = value[0]
    if tag == "float":
        number = debugger_values.read_text(value[1])
        if number[0] not in ("int", "float"):
            raise LiteralError("not a number")
        return number
    if tag in ("list", "tuple", "set", "frozenset"):
        return [tag, [_normalised(item) for item in value[1]]]
    if tag == "dict":
        return ["dict", [[_normalised(key), _normalised(item)] for key, item in value[1]]]
    if tag in ("instance", "ref", "complex", "bytes"):
        raise LiteralError(f"a recorder writes no {tag} values")
    return value
