"""The error taxonomy: one label per wrong answer, worked out from the trace at scoring
time, and the source line it rests on.

DexBench and CES sorted their models' errors by hand. Here the answer is aligned with
the recorded run, the **first divergence** (the first stated value, or line, that the
run does not bear out, in run order) is found, and it is labelled by what the statement
there does (``analysis.operations``: a condition, a library call, an operation, a move):

=================  ==========================================================================
label              rule
=================  ==========================================================================
``null``           no answer text at all (an empty or missing response, an empty block)
``format``         an answer nothing could be read from (or over the answer cap), or, in a
                   simulation, the first divergence is a placeholder the answer left out
``control_flow``   the divergence is a condition's value or a branch taken (a predicate,
                   clause or branch of a simulation; a CodeSense ``if``/``while`` statement or
                   ``branch`` question), a number of executions (a loop variable, iterable
                   or condition stated more or fewer times than the run took it; a loop's
                   iteration count), or which lines ran (``coverage``: the innermost
                   ``if``/``for``/``while`` that ran around the first wrong line, or that
                   line itself where none did or the answer states part of its block)
``api_behaviour``  a wrong value made by a statement that calls the builtins or the standard
                   library (``sorted``, ``range``, ``s.split``, ``math.floor``)
``hallucination``  a line no statement starts on (``coverage``), or a wrong value that the
                   statement only carries (a name, a subscript, a literal) and that no value
                   of the known run holds anywhere, nested ones included (for ``output``,
                   whose instances keep no variable states: a value whose type no part of
                   the arguments or the returned value has)
``computation``    any other wrong value: made by an operator, a comprehension or the
                   program's own function, or carried by a statement while the run did
                   hold it elsewhere (the right kind of value in the wrong place)
=================  ==========================================================================

Where the tasks find the divergence:

* ``simulation``: the first wrong value of a property in run order (the recorder's ticks,
  as CES's divergence point); a loop variable is judged by its ``for``'s iterable (a
  ``while``'s by the loop's assignments to it); with every property right, the entry
  point's ``return`` statements (a label where they all have one kind, the line where
  there is one). The known run is every property's values and the output.
* ``coverage``: the stated and executed line sets, which the instance keeps without their
  order: the first divergent line by the line of what decides it, source order, which is
  run order within one function's structured code.
* ``loop`` (CodeSense): an iteration count is ``control_flow`` at the loop; a variable's
  value in or after the loop is labelled by the loop's statements that set it (assign it,
  or call a method on it), the strongest kind winning, where that kind is not a move (the
  instance keeps no other values to tell a made-up value from a misplaced one).
* ``statement`` (CodeSense): the statement asked about, the values it reads just before
  being the known run; ``branch`` (CodeSense): the innermost ``if``/``for``/``while``
  around the line.
* ``output``: only ``hallucination`` (by type, above) can be decided without variable
  states; other wrong outputs get no label.

Any other task's wrong answers get ``null`` or ``format`` where unreadable, and no label
where read and wrong. A label is stored in the sample's ``extra`` (``error_label``,
``error_line``); results count the labels per task (``Group.errors``), ``execbench show``
prints them, and the ``error-taxonomy`` report layout tabulates and charts them.

The answer is untrusted: nothing here parses its text again. It reads what the task's
scoring already read with its linear, bounded readers (``Score.stated``, or the answer a
score states, which is the task's own literal), and its own work is linear in the run's
recorded values.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from execbench.analysis.operations import (
    CONDITION,
    LIBRARY,
    MOVE,
    OPERATION,
    RANK,
    Program,
    Statement,
    program_of,
    statement_kind,
)
from execbench.tasks.base import INCORRECT, UNPARSABLE
from execbench.tasks.common.answers import EMPTY
from execbench.tasks.common.taxonomy_payload import (
    API_BEHAVIOUR,
    COMPUTATION,
    CONTROL_FLOW,
    FORMAT,
    HALLUCINATION,
    LABEL_KEY,
    LINE_KEY,
    NULL,
)
from execbench.values import LiteralError, canonical, is_exact, parse_call_nodes, read_encoded
from execbench.values.shape import parts

if TYPE_CHECKING:
    from execbench.tasks.base import Instance, Score
    from execbench.values import Encoded

MAX_PARTS = 200_000
"""The most values of a run indexed to tell whether a stated value occurs in it; a run
with more (the recorders bound it well below) is not searched further, and a value
past the bound counts as not seen."""
_BY_KIND = {CONDITION: CONTROL_FLOW, LIBRARY: API_BEHAVIOUR, OPERATION: COMPUTATION}
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_DECIDERS = (ast.If, *_LOOPS)


@dataclass(frozen=True)
class Slip:
    """A wrong answer's label and the line it rests on (None where there is no line)."""

    label: str
    line: int | None


def labelled(instance: Instance, response: str | None, score: Score) -> Score:
    """``score`` with its label and line in ``extra`` when it is a wrong or unreadable
    answer that a rule labels (see the module doc); otherwise ``score`` itself."""
    slip = diagnose(instance, response, score)
    if slip is None:
        return score
    return replace(score, extra={**score.extra, LABEL_KEY: slip.label, LINE_KEY: slip.line})


def diagnose(instance: Instance, response: str | None, score: Score) -> Slip | None:
    """The label of one scored answer, or None (a right answer, a failed request, an
    answer no rule decides)."""
    if score.verdict == UNPARSABLE:
        empty = response is None or not response.strip() or score.detail == EMPTY \
            or score.extra.get("failure") == "null_response"
        return Slip(NULL if empty else FORMAT, None)
    if score.verdict != INCORRECT:
        return None
    rule = DIAGNOSERS.get(instance.task)
    if rule is None:
        return None
    try:
        return rule(instance, score)
    except (LiteralError, ValueError, KeyError, RecursionError):
        return None  # a record this execbench cannot read: no label rather than a guess


class Seen:
    """The values a run is known to have held, nested ones included, by canonical text;
    indexed on first use, since most labels are decided without them."""

    def __init__(self, values: Iterable[Encoded]) -> None:
        self._values: Iterable[Encoded] | None = values
        self._texts: set[str] = set()
        self._tags: set[str] = set()

    def _index(self) -> None:
        values, self._values = self._values, None
        for value in values or ():
            for part in parts(value):
                if len(self._texts) >= MAX_PARTS:
                    return
                self._texts.add(canonical(part))
                self._tags.add(part[0])

    def holds(self, value: Encoded) -> bool:
        self._index()
        return canonical(value) in self._texts

    def has_type(self, tag: str) -> bool:
        """Whether some value held has this type (typed JSON's tag)."""
        self._index()
        return tag in self._tags


def _value_slip(kind: str, line: int | None, stated: Any, seen: Seen | None) -> Slip | None:
    """The label of a wrong value stated for a statement of ``kind``; a move is told apart
    only where the run's values are known (``seen``) and the stated value is whole."""
    if kind != MOVE:
        return Slip(_BY_KIND[kind], line)
    if seen is None or not isinstance(stated, list):
        return None
    return Slip(COMPUTATION if seen.holds(stated) else HALLUCINATION, line)


def _strongest(statements: list[Statement]) -> Statement | None:
    """The first statement of the strongest kind (``operations.RANK``)."""
    if not statements:
        return None
    best = max(RANK.get(s.kind, 0) for s in statements)
    return next(s for s in statements if RANK.get(s.kind, 0) == best)


def _function(program: Program, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    found = [node for node in program.tree.body
             if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name]
    return found[-1] if found else None


def _returns(program: Program, entry_point: str) -> list[Statement]:
    """The entry point's own ``return`` statements with a value (not those of functions
    defined inside it)."""
    function = _function(program, entry_point)
    if function is None:
        return []
    found: list[Statement] = []
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return) and node.value is not None:
            found.append(Statement(node.lineno, statement_kind(node, program.names), node))
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
                            | ast.Lambda):
            stack.extend(ast.iter_child_nodes(node))
    return sorted(found, key=lambda s: s.line)


def _at_return(program: Program, entry_point: str, stated: Any, seen: Seen) -> Slip | None:
    """A wrong output whose run agreed everywhere else: the entry point's returns, where
    they all have one kind (the line where there is one return)."""
    returns = _returns(program, entry_point)
    kinds = {s.kind for s in returns}
    if len(kinds) != 1:
        return None
    return _value_slip(kinds.pop(), returns[0].line if len(returns) == 1 else None,
                       stated, seen)


def _decider(program: Program, line: int, ran: set[int] | None = None) -> int:
    """The innermost ``if``/``for``/``while`` around ``line`` (one that ran, where
    ``ran`` is given); ``line`` itself where there is none."""
    for node in program.enclosing(line):
        if isinstance(node, _DECIDERS) and (ran is None or node.lineno in ran):
            return node.lineno
    return line


# --- simulation ------------------------------------------------------------------------

def _simulation(instance: Instance, score: Score) -> Slip | None:
    from execbench.tasks.ces.payload import SimulationQuestion
    from execbench.tasks.ces.rules import Stated, wrong_positions
    from execbench.tasks.ces.sites import order_key

    given = score.stated
    program = program_of(instance.code)
    if not isinstance(given, dict) or program is None:
        return None
    truth = SimulationQuestion.from_record(instance.data).truth
    properties = truth.properties
    first = None
    for order, prop in enumerate(properties):
        for position in wrong_positions(given.get(prop.id), prop):
            key = (order_key(prop, position), order)
            if first is None or key < first[0]:
                first = (key, prop, position)
    seen = Seen([truth.value, *(v for p in properties for v in (*p.values, *(p.whole or ())))])
    if first is None:
        return _at_return(program, instance.entry_point, _read(score.answer), seen)
    _, prop, position = first
    stated: Stated | None = given.get(prop.id)
    if stated is None:
        return Slip(FORMAT, prop.line)
    n = len(prop.values)
    if position >= n or prop.kind in ("predicate", "clause", "branch"):
        return Slip(CONTROL_FLOW, prop.line)
    if stated.whole and len(stated.head) != n:
        return Slip(CONTROL_FLOW, prop.line)  # values shifted by a count that differs
    item = _stated_at(stated, position, n)
    site = program.statement(prop.line)
    if site is None:
        return None
    if prop.kind == "iterable_part":
        try:
            kind = _part_kind(prop.label, program)
        except SyntaxError:
            kind = site.kind
        return _value_slip(kind, prop.line, item, seen)
    if isinstance(site.node, ast.While):  # a loop variable: set by the loop's body
        end = site.node.end_lineno or site.line
        setter = _strongest(program.assignments(prop.label, (site.line + 1, end)))
        if setter is None:
            return None
        return _value_slip(setter.kind, setter.line, item, seen)
    return _value_slip(site.kind, prop.line, item, seen)


def _part_kind(text: str, program: Program) -> str:
    from execbench.analysis.operations import expression_kind

    return expression_kind(ast.parse(text, mode="eval"), program.names)


def _stated_at(stated: Any, position: int, n: int) -> Any:
    """The stated value at ``position`` of a true list of ``n``: from the head, or from
    the tail of an elided list; None where the answer states none there."""
    if position < len(stated.head):
        return stated.head[position]
    if not stated.whole:
        at = position - (n - len(stated.tail))
        if 0 <= at < len(stated.tail):
            return stated.tail[at]
    return None


def _read(answer: str | None) -> Encoded | None:
    """A value the task wrote as its answer (``to_literal``): trusted text, read back."""
    from execbench.tasks.common.answers import read_value

    return None if answer is None else read_value(answer)


# --- coverage --------------------------------------------------------------------------

def _coverage(instance: Instance, score: Score) -> Slip | None:
    from execbench.tasks.dexbench_payload import CoverageQuestion

    program = program_of(instance.code)
    stated = json.loads(score.answer or "null")
    if program is None or not isinstance(stated, list):
        return None
    question = CoverageQuestion.from_record(instance.data)
    said, ran = set(stated), set(question.lines)
    made_up = sorted(said - set(question.executable))
    if made_up:
        return Slip(HALLUCINATION, made_up[0])
    divergent = said ^ ran
    if not divergent:
        return None
    blocks = [set(block) for block in question.blocks]

    def decided_at(line: int) -> int:
        own = next((block for block in blocks if line in block), {line})
        if line in ran and (own - {line}) & said:
            return line  # its block was stated to run, this statement left out
        return _decider(program, line, ran)

    return Slip(CONTROL_FLOW, min((decided_at(line), line) for line in divergent)[0])


# --- CodeSense questions ---------------------------------------------------------------

def _fact_question(instance: Instance, fact_type: Any) -> Any:
    from execbench.tasks.codesense.payload import FactQuestion

    return FactQuestion.from_record(instance.data, fact_type, instance.language)


def _concrete(question: Any, score: Score) -> Encoded | None:
    """The value a concrete answer stated, read back from the task's own answer text."""
    from execbench.tasks.codesense.payload import ConcreteTruth

    if not isinstance(question.truth, ConcreteTruth) or score.answer is None:
        return None
    return question.fact.read_answer(score.answer)


def _loop(instance: Instance, score: Score) -> Slip | None:
    from execbench.tasks.codesense.facts import LoopFact

    fact = _fact_question(instance, LoopFact).fact
    line = fact.record["line"]
    if fact.kind == "iterations":
        return Slip(CONTROL_FLOW, line)
    program = program_of(instance.code) if instance.language == "python" else None
    node = None if program is None else program.statements.get(line)
    variable = fact.record.get("variable")
    if program is None or not isinstance(node, _LOOPS) or not isinstance(variable, str):
        return None
    span = (line, node.end_lineno or line)
    setters = program.assignments(variable, span) + _mutations(program, variable, span)
    setter = _strongest(sorted(setters, key=lambda s: s.line))
    if setter is None or setter.kind == MOVE:
        return None
    return Slip(_BY_KIND[setter.kind], setter.line)


def _mutations(program: Program, name: str, span: tuple[int, int]) -> list[Statement]:
    """Statements in ``span`` that call a method on ``name`` (``xs.append(x)``)."""
    found = []
    for node in program.every:
        line = node.lineno
        if span[0] <= line <= span[1] and isinstance(node, ast.Expr) \
                and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, ast.Attribute) \
                and isinstance(node.value.func.value, ast.Name) \
                and node.value.func.value.id == name:
            found.append(Statement(line, statement_kind(node, program.names), node))
    return found


_FACT_KINDS = {"branch": CONDITION, "arithmetic": OPERATION, "call": LIBRARY,
               "constant": MOVE, "assignment": MOVE}
"""CodeSense's statement kinds, for code this interpreter cannot parse (C, Java), where
a call is taken as CodeSense's ``API`` kind."""


def _statement(instance: Instance, score: Score) -> Slip | None:
    from execbench.tasks.codesense.facts import StatementFact

    question = _fact_question(instance, StatementFact)
    fact = question.fact
    line = fact.record["line"]
    program = program_of(instance.code) if instance.language == "python" else None
    site = None if program is None else program.statement(line)
    kind = site.kind if site is not None else _FACT_KINDS.get(fact.kind, MOVE)
    if kind != MOVE:
        return Slip(_BY_KIND[kind], line)
    before = fact.record.get("before")
    seen = Seen(v for v in before.values() if isinstance(v, list)) \
        if isinstance(before, dict) else None
    return _value_slip(kind, line, _concrete(question, score), seen)


def _branch(instance: Instance, score: Score) -> Slip | None:
    from execbench.tasks.codesense.facts import BranchFact

    line = _fact_question(instance, BranchFact).fact.record["line"]
    program = program_of(instance.code) if instance.language == "python" else None
    return Slip(CONTROL_FLOW, line if program is None else _decider(program, line))


# --- output ----------------------------------------------------------------------------

def _output(instance: Instance, score: Score) -> Slip | None:
    from execbench.tasks.prediction_payload import OutputQuestion, in_codesense_style

    if in_codesense_style(instance) or instance.language != "python":
        return None
    stated = _read(score.answer)
    if stated is None or not is_exact(stated):
        return None
    truth = OutputQuestion.from_record(instance.data).value
    seen = Seen([truth, *_arguments(instance.args)])
    return None if seen.has_type(stated[0]) else Slip(HALLUCINATION, None)


def _arguments(args: str) -> list[Encoded]:
    """The call's arguments that are literals (a lambda argument is left out)."""
    nodes, keywords = parse_call_nodes(args)
    found = []
    for node in [*nodes, *(keyword.value for keyword in keywords)]:
        try:
            found.append(read_encoded(node))
        except LiteralError:
            continue
    return found


DIAGNOSERS: dict[str, Callable[[Instance, Score], Slip | None]] = {
    "simulation": _simulation, "coverage": _coverage, "loop": _loop,
    "statement": _statement, "branch": _branch, "output": _output}
"""The tasks whose wrong answers are aligned with the run, by task name."""
