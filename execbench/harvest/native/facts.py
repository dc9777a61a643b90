"""A recorded native call as the generic format's call: its argument text and a recorded
trace whose ``extra["facts"]`` brings every CodeSense question ready-made.

The trace's states are the line events (``line``, frame 0, the locals just before the line
runs; the last one the ``return`` with the final locals), its lines those that ran;
statement, loop and branch facts are derived from them by the same code that derives a
Python call's (``tasks.codesense.derive``), over the function's shape read from its text
(``shape``); block facts take the published C shape (``_block_facts``). Lines are numbered
from 1 in the function's code (its header line). The output is the returned value with its
text as the debugger shows it (``debugger_values.show``) and the basic-typed arguments as
the inputs, as the published C and Java files give them. Alias facts pair the pointers
(and references) live at the first line event where both are set, and again wherever their
relation changes: equal tokens alias. Pointers appear in the call's text by their targets'
values only, never by their tokens, so the text does not give the answer away.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

from execbench.harvest.native.recording import RawCall, Variable
from execbench.sandbox.trace import Trace
from execbench.sources.debugger_values import show
from execbench.tasks.codesense import derive
from execbench.tasks.codesense.kinds import Function
from execbench.values import Encoded, is_exact

MAX_BLOCK = 3
"""Block facts for the first 1..3 statements the call runs, as the block task's default."""
MAX_ALIAS = 16
"""Alias facts per call: the pairs first met."""
_BASIC = ("int", "float", "bool")


def call_record(call: RawCall, function: Function, code: str, language: str
                ) -> dict[str, Any]:
    """The generic call (``{"args", "trace"}``) of a recorded call of ``code``."""
    offset = call.first - 1
    states: list[dict[str, Any]] = [
        {"line": line - offset, "frame": 0, "locals": _locals(variables)}
        for line, variables in call.lines]
    states.append({"line": call.last - offset, "frame": 0, "locals": _locals(call.final),
                   "event": "exception" if call.exception else "return"})
    lines = sorted({line - offset for line, _ in call.lines})
    events = [[line - offset, 0] for line, _ in call.lines]
    trace = Trace(status="exception" if call.exception else "ok", lines=lines,
                  events=events, frames=[{"function": call.name, "line": 1}],
                  states=states)  # type: ignore[arg-type]
    entry = trace.states
    statements = [fact.to_record() for fact in derive.statement_facts(function, entry)]
    facts = [*statements, *_block_facts(statements, call, function, offset)]
    facts += [fact.to_record() for fact in derive.loop_facts(function, entry)]
    facts += [fact.to_record() for fact in derive.branch_facts(function, trace)]
    facts += _alias_facts(call, function, code, offset)
    trace.extra["facts"] = facts
    if call.exception:
        trace.exception = {"type": "exception", "message": call.exception[:500]}
    elif call.value is not None:
        trace.value = call.value
        trace.value_repr = show(call.value, language)
        trace.extra["text"] = trace.value_repr
        inputs = {name: value for name, value, token in call.args
                  if token is None and value[0] in _BASIC}
        if inputs and all(is_exact(value) for value in inputs.values()):
            trace.extra["inputs"] = inputs
    return {"args": arguments(call.args, language), "trace": trace.to_dict()}


def _block_facts(statements: list[dict[str, Any]], call: RawCall, function: Function,
                 offset: int) -> list[dict[str, Any]]:
    """Block facts of the published shape (CodeSense's C block file): the value the k-th
    statement the call runs gives (k up to ``MAX_BLOCK``), asked from the call's inputs.
    The derived shape (a mapping of changed locals) is Python's answer format, which the
    C and Java value syntax does not write."""
    by_line = {fact["line"]: fact for fact in statements if fact["kind"] != "branch"}
    order: list[int] = []
    for line, _ in call.lines:
        at = line - offset
        owner = function.continuation.get(at, at if at in function.statements else None)
        if owner is not None and (not order or order[-1] != owner):
            order.append(owner)
        if len(order) >= MAX_BLOCK:
            break
    facts = []
    for size, line in enumerate(order[:MAX_BLOCK], 1):
        fact = by_line.get(line)
        if fact is not None and line not in order[:size - 1]:
            facts.append({"task": "block", "size": size, "line": line,
                          "statement": fact["statement"], "value": fact["value"]})
    return facts


def arguments(args: list[Variable], language: str) -> str:
    """The call's text: each argument as ``name = value``, a pointer by its target."""
    return ", ".join(f"{name} = {show(value, language)}" for name, value, _ in args)


def _locals(variables: list[Variable]) -> dict[str, Encoded]:
    return {name: value for name, value, _ in variables if not name.startswith("<")}


def _alias_facts(call: RawCall, function: Function, code: str, offset: int
                 ) -> list[dict[str, Any]]:
    """Pairs of pointers set at once, asked where first seen together and where their
    relation changes."""
    code_lines = code.split("\n")
    known: dict[tuple[str, str], bool] = {}
    facts: list[dict[str, Any]] = []
    for line, variables in call.lines:
        at = line - offset
        pointers = sorted((name, token) for name, _, token in variables
                          if token is not None and not name.startswith("<"))
        for (a, token_a), (b, token_b) in combinations(pointers, 2):
            aliased = token_a == token_b
            if known.get((a, b)) == aliased:
                continue
            known[a, b] = aliased
            statement = _statement_text(function, code_lines, at)
            facts.append({"task": "alias",
                          "first": {"pointer": a, "statement": statement, "lines": [at]},
                          "second": {"pointer": b, "statement": statement, "lines": [at]},
                          "aliased": aliased})
            if len(facts) >= MAX_ALIAS:
                return facts
    return facts


def _statement_text(function: Function, code_lines: list[str], line: int) -> str:
    statement = function.statements.get(line)
    if statement is not None:
        return statement.text
    return code_lines[line - 1].strip() if 0 < line <= len(code_lines) else ""
