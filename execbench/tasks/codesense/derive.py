"""Deriving facts (``facts``) from a full run of a call: a trace with variable ``states``,
from the sandbox or a harvest.

Everything is read from the entry point's first frame: the states recorded before each of
its line events, and the marked states of its ``return`` and ``exception`` events (see
``sandbox.tracer``). The state after a statement is the next state of that frame where
another statement starts, or its return (a statement spanning lines reports several of
them, in any order, as one start); a statement followed by an exception did not finish
and gives no fact; with no such state (the states were cut at their bound) there is no
fact either, so a cut trace gives fewer facts, never wrong ones.

* statement: the first execution of each statement ``kinds`` classifies that finished: the
  values of the names it reads before it, and its value after (the assigned names, a
  tuple for several; for a branch, whether the body was entered).
* block: for k = 1, 2, ...: the locals that differ from those at function entry once the
  first k statements have run (each execution of a statement counts, loop headers too).
* loop: for the first run of each loop statement: how many times its body was entered,
  the value after each of its first ``BODY_ITERATIONS`` iterations of each variable the
  loop changes, and their values once the loop is left (when it is left other than by
  ``return`` or an exception from inside it).
* branch: for the first line of each block that runs only on some paths, whether the call
  ran it (in any frame: a recursive call counts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from execbench.tasks.codesense.kinds import Function, Loop

if TYPE_CHECKING:
    from execbench.sandbox.trace import State, Trace

BODY_ITERATIONS = 3
"""In-loop questions are asked about the first iterations only: a long loop would
otherwise give thousands of near-identical facts."""


def entry_states(function: Function, entry_point: str, trace: Trace) -> list[State]:
    """The states of the entry point's first frame, in order."""
    frame = next((index for index, f in enumerate(trace.frames)
                  if f.get("function") == entry_point and f.get("line") == function.first_line),
                 None)
    return [] if frame is None else [s for s in trace.states if s.get("frame") == frame]


def _starts(states: list[State], function: Function) -> dict[int, int]:
    """The states where a statement starts (index -> the statement's first line). A
    multi-line statement may report its lines in any order (``y = [`` reports the line of
    the first item, then comes back to its first line to store the list): the states of
    one statement in a row are one start, at the first of them."""
    starts: dict[int, int] = {}
    inside: int | None = None
    for i, state in enumerate(states):
        if state.get("event") is not None:
            inside = None
            continue
        line = state["line"]
        owner = function.continuation.get(line, line if line in function.statements else None)
        if owner is not None and owner != inside:
            starts[i] = owner
        inside = owner
    return starts


def _after(states: list[State], starts: dict[int, int], i: int) -> int | None:
    """Where the statement starting at ``states[i]`` has finished: the index of the next
    statement's start or of the frame's return; None if it raised or the states stop."""
    for j in range(i + 1, len(states)):
        event = states[j].get("event")
        if event == "exception":
            return None
        if event == "return" or j in starts:
            return j
    return None


def statement_facts(function: Function, states: list[State]) -> list[dict[str, Any]]:
    facts: dict[int, dict[str, Any]] = {}
    starts = _starts(states, function)
    for i, line in starts.items():
        statement = function.statements[line]
        if statement.kind is None or line in facts:
            continue
        j = _after(states, starts, i)
        if j is None:
            continue
        after, before = states[j], states[i]["locals"]
        if statement.kind == "branch":
            value: list | None = ["bool", starts.get(j) == statement.body_line]
        else:
            values = [after["locals"].get(name) for name in statement.targets]
            if any(v is None for v in values):
                continue
            value = values[0] if len(values) == 1 else ["tuple", values]
        facts[line] = {"task": "statement", "line": line, "statement": statement.text,
                       "kind": statement.kind, "value": value,
                       "before": {name: before[name] for name in statement.reads
                                  if name in before}}
    return [facts[line] for line in sorted(facts)]


def _changed(start: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in now.items() if start.get(name) != value}


def block_facts(function: Function, states: list[State], max_block: int
                ) -> list[dict[str, Any]]:
    starts = _starts(states, function)
    if not starts:
        return []
    order = list(starts)
    entry = states[order[0]]["locals"]
    facts = []
    for k in range(1, max_block + 1):
        if k > len(order):
            break
        j = _after(states, starts, order[k - 1])
        if j is None:
            break
        after = states[j]
        changed = _changed(entry, after["locals"])
        if changed:
            facts.append({"task": "block", "size": k,
                          "lines": [starts[i] for i in order[:k]], "after": changed})
        if after.get("event") is not None:  # the frame returned
            break
    return facts


def _where(loop: Loop, state: State) -> str:
    if state.get("event") is not None:
        return state["event"]
    line = state["line"]
    if line in loop.header:
        return "header"
    if loop.body[0] <= line <= loop.body[1]:
        return "body"
    if loop.span[0] <= line <= loop.span[1]:
        return "else"
    return "outside"


def _loop_run(loop: Loop, states: list[State]
              ) -> tuple[State, int, list[State], State | None] | None:
    """The loop's first run: the state as it starts, how many times the body was entered,
    the state after each iteration that finished (not cut by ``return`` or an exception
    from the body), and the state once the loop is left (None when it was left by
    ``return`` from its body or by an exception). None when the run is not seen to its end
    (the loop never ran, or the states stop inside it)."""
    start = next((i for i, s in enumerate(states)
                  if s.get("event") is None and s["line"] == loop.line), None)
    if start is None:
        return None
    entered, ends = 0, []
    previous, in_body, raised = "header", False, False
    for state in states[start + 1:]:
        where = _where(loop, state)
        if where == "exception":
            raised = True  # caught in the body, the loop runs on; if not, the frame ends
            continue
        if in_body and where != "body" and where != "return":
            ends.append(state)
        if where == "body" and previous == "header":
            entered += 1
        in_body = where == "body"
        if where in ("outside", "return"):
            left = where == "outside" or (previous in ("header", "else") and not raised)
            return states[start], entered, ends, state if left else None
        raised = False
        previous = where
    return None


def loop_facts(function: Function, states: list[State]) -> list[dict[str, Any]]:
    facts: list[dict[str, Any]] = []
    for loop in function.loops:
        run = _loop_run(loop, states)
        if run is None:
            continue
        start, entered, ends, after = run
        facts.append({"task": "loop", "line": loop.line, "question": "iterations",
                      "value": ["int", entered]})
        changed: dict[str, None] = {}
        for state in [*ends, *([after] if after else [])]:
            changed.update(dict.fromkeys(_changed(start["locals"], state["locals"])))
        for k, end in enumerate(ends[:BODY_ITERATIONS], 1):
            facts.extend({"task": "loop", "line": loop.line, "question": "body",
                          "variable": name, "iteration": k, "value": end["locals"][name]}
                         for name in changed if name in end["locals"])
        if after is not None:
            facts.extend({"task": "loop", "line": loop.line, "question": "after",
                          "variable": name, "value": after["locals"][name]}
                         for name in changed if name in after["locals"])
    return facts


def branch_facts(function: Function, trace: Trace) -> list[dict[str, Any]]:
    ran = set(trace.lines)
    return [{"task": "branch", "line": line, "executed": line in ran}
            for line in function.conditional]
