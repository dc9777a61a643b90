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

Each fact is a typed value (``StatementRun``, ``BlockRun``, ``LoopRun``, ``BranchRun``)
whose ``to_record`` is the fact's JSON object as ``facts`` describes it, key order
included: what a suite keeps of it (``facts.Fact.record``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from execbench.tasks.codesense.kinds import Function, Loop
from execbench.values import Encoded

if TYPE_CHECKING:
    from execbench.json_types import JSONObject
    from execbench.sandbox.trace import State, Trace

Locals = Mapping[str, Encoded]
"""Variables by name, each a typed-JSON value (a frame's locals, or some of them)."""


def _values(named: Locals) -> JSONObject:
    return {name: value for name, value in named.items()}


@dataclass(frozen=True)
class StatementRun:
    """A statement's first finished execution: the values the names it reads held just
    before it, and its value once it ran."""

    line: int
    statement: str
    kind: str
    value: Encoded
    before: Locals

    def to_record(self) -> JSONObject:
        return {"task": "statement", "line": self.line, "statement": self.statement,
                "kind": self.kind, "value": self.value, "before": _values(self.before)}


@dataclass(frozen=True)
class BlockRun:
    """The locals that differ from those at the call's start once the first ``size``
    statements (first lines ``lines``, in the order they ran) have run."""

    size: int
    lines: tuple[int, ...]
    after: Locals

    def to_record(self) -> JSONObject:
        return {"task": "block", "size": self.size, "lines": list(self.lines),
                "after": _values(self.after)}


LoopQuestion = Literal["iterations", "body", "after"]


@dataclass(frozen=True)
class LoopRun:
    """One question about a loop's first run: how many times its body was entered
    (``iterations``), a ``variable`` after its ``iteration``-th iteration (``body``), or
    once the loop is left (``after``)."""

    line: int
    question: LoopQuestion
    value: Encoded
    variable: str | None = None
    iteration: int | None = None

    def to_record(self) -> JSONObject:
        record: JSONObject = {"task": "loop", "line": self.line, "question": self.question}
        if self.variable is not None:
            record["variable"] = self.variable
        if self.iteration is not None:
            record["iteration"] = self.iteration
        record["value"] = self.value
        return record


@dataclass(frozen=True)
class BranchRun:
    """Whether the call ran ``line``, the first line of a block that runs only on some
    paths."""

    line: int
    executed: bool

    def to_record(self) -> JSONObject:
        return {"task": "branch", "line": self.line, "executed": self.executed}


Derived = StatementRun | BlockRun | LoopRun | BranchRun
"""A fact derived from a run."""

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


def statement_facts(function: Function, states: list[State]) -> list[StatementRun]:
    facts: dict[int, StatementRun] = {}
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
            value: Encoded = ["bool", starts.get(j) == statement.body_line]
        else:
            assigned = [after["locals"].get(name) for name in statement.targets]
            values = [v for v in assigned if v is not None]
            if len(values) < len(assigned):
                continue
            value = values[0] if len(values) == 1 else ["tuple", values]
        facts[line] = StatementRun(line, statement.text, statement.kind, value,
                                   {name: before[name] for name in statement.reads
                                    if name in before})
    return [facts[line] for line in sorted(facts)]


def _changed(start: Locals, now: Locals) -> dict[str, Encoded]:
    """The variables of ``now`` whose value differs from that in ``start`` (or that
    ``start`` lacks)."""
    return {name: value for name, value in now.items() if start.get(name) != value}


def block_facts(function: Function, states: list[State], max_block: int
                ) -> list[BlockRun]:
    starts = _starts(states, function)
    if not starts:
        return []
    order = list(starts)
    entry = states[order[0]]["locals"]
    facts: list[BlockRun] = []
    for k in range(1, max_block + 1):
        if k > len(order):
            break
        j = _after(states, starts, order[k - 1])
        if j is None:
            break
        after = states[j]
        changed = _changed(entry, after["locals"])
        if changed:
            facts.append(BlockRun(k, tuple(starts[i] for i in order[:k]), changed))
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


def loop_facts(function: Function, states: list[State]) -> list[LoopRun]:
    facts: list[LoopRun] = []
    for loop in function.loops:
        run = _loop_run(loop, states)
        if run is None:
            continue
        start, entered, ends, after = run
        facts.append(LoopRun(loop.line, "iterations", ["int", entered]))
        changed: dict[str, None] = {}
        for state in [*ends, *([after] if after else [])]:
            changed.update(dict.fromkeys(_changed(start["locals"], state["locals"])))
        for k, end in enumerate(ends[:BODY_ITERATIONS], 1):
            facts.extend(LoopRun(loop.line, "body", end["locals"][name], name, k)
                         for name in changed if name in end["locals"])
        if after is not None:
            facts.extend(LoopRun(loop.line, "after", after["locals"][name], name)
                         for name in changed if name in after["locals"])
    return facts


def branch_facts(function: Function, trace: Trace) -> list[BranchRun]:
    ran = set(trace.lines)
    return [BranchRun(line, line in ran) for line in function.conditional]
