"""Judging a simulation: which properties are right, whether the simulation is coherent
(the paper's three rules), and where a coherent but wrong one first left the real run.

* **Right or wrong**: a property is right when its stated list matches the true one
  (``answers.matches``, position by position; with ``...`` only the stated ends count). A
  property left out, or unreadable, is wrong. The iterable of a loop that can be left
  early may be stated, per execution, as the items the loop took or as the whole iterable
  (CES's truth, which Rule 1 accepts too), where the build found the whole one
  (``calibrate``: the property's ``whole`` values).
* **Rule 1**: a compound property must be what the program's own expression gives when
  its direct sub-properties take the predicted values: ``zip(evens, odds)`` is
  re-evaluated on the predicted ``evens`` and ``odds``, ``a and (b or c)`` on the
  predicted truths of its operands, which must also be stated ``None`` exactly where the
  combination skips them. The expression text comes from the program (``sites``), the
  values are literals read from the answer, and the evaluation runs in the sandbox, in
  the program's module namespace (its helper functions and imports). A compound whose
  true sub-values do not give its true value that way (a helper that reads state the
  run had changed, a slice bound that is not a part) was found at build time and is not
  checked. Values are compared per execution; lists of different known lengths fire.
* **Rule 2**: on every evaluation of a condition, the predicted branch must follow the
  truth of the predicted predicate.
* **Rule 3**: the output is right although some loop variable, iterable, predicate or
  branch is wrong (sub-properties are left to Rule 1, as in the paper): the wrong state
  could not have produced the right output.

A sample is coherent when no rule fires. The **divergence point** of a coherent sample with
a wrong output is its first wrong value in execution order (the recorder's ticks, then the
order within one statement: operands, value, branch), named by the paper's kinds; with
every property right the output itself is where it went wrong (``output``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from execbench.tasks.ces.answers import Pattern, is_full, matches, sequence
from execbench.tasks.ces.sites import QUADRUPLE, order_key
from execbench.tasks.ces.summary_payload import AT_OUTPUT, Divergence
from execbench.values import Encoded, LiteralError, decode, equal, to_literal

if TYPE_CHECKING:
    from execbench.sandbox.pool import Sandbox
    from execbench.tasks.ces.payload import Compound, Property, SimulationTruth

TOP_KINDS = frozenset({"loop_variable", "iterable", "predicate", "branch"})
"""The properties Rule 3 looks at (a sub-property's error is Rule 1's business)."""
MAX_LISTED = 10_000
EVALUATOR_NAME = "__execbench_rule1__"
EVALUATOR = f'''

def {EVALUATOR_NAME}(checks):
    import itertools
    plain = (list, tuple, str, dict, set, frozenset, bytes)
    results = []
    for text, values, iterable in checks:
        read = set()
        def get(index, values=values, read=read):
            read.add(index)
            return values[index]
        try:
            value = eval(text, {{**globals(), "__eb_get": get}})
            listed = iterable and type(value) not in plain
            if listed:
                value = list(itertools.islice(value, {MAX_LISTED}))
            elif not iterable:
                value = bool(value)
        except Exception as exc:
            results.append(("raised", type(exc).__name__, sorted(read), False))
        else:
            results.append(("value", value, sorted(read), listed))
    return results
'''
"""Appended to the program: evaluates expression texts (the program's own, see ``sites``)
on given values in the module's namespace. An iterable that is not a plain value is
listed, as the task asks it to be written; a condition gives its truth."""


@dataclass(frozen=True)
class Stated:
    """A placeholder's predicted list: its first and last items (both the whole list when
    ``whole``)."""

    head: list[Pattern]
    tail: list[Pattern]
    whole: bool

    @property
    def least(self) -> int:
        """The fewest values the list can have."""
        return len(self.head) if self.whole else len(self.head) + len(self.tail)


def stated(text: str | None) -> Stated | None:
    found = None if text is None else sequence(text)
    return None if found is None else Stated(*found)


def wrong_positions(given: Stated | None, prop: Property) -> list[int]:
    """Positions of the property's true list the prediction gets wrong; ``len(truth)``
    stands for a missing or extra value past the true ones. Empty when the property is
    right. Where the property has ``whole`` values, either value of a position is right."""
    truth = prop.values
    whole = truth if prop.whole is None else prop.whole
    n = len(truth)
    if given is None:
        return list(range(n)) or [n]

    def right(item: Pattern, k: int) -> bool:
        return matches(item, truth[k]) or matches(item, whole[k])

    head = given.head
    wrong = [k for k in range(min(len(head), n)) if not right(head[k], k)]
    if given.whole:
        if len(head) != n:
            wrong.append(min(len(head), n))
        return wrong
    if given.least > n:
        return [*wrong, n]
    start = n - len(given.tail)
    return wrong + [start + j for j, item in enumerate(given.tail)
                    if not right(item, start + j)]


def aligned(lists: list[Stated]) -> tuple[list[tuple[Pattern, ...]], bool]:
    """Values of several lists of one statement taken at the same executions: the rows
    every list states, from the front and (for elided lists) from the back; and whether
    their lengths cannot agree."""
    exact = {s.least for s in lists if s.whole}
    clash = len(exact) > 1 or bool(exact) and min(exact) < max(s.least for s in lists)
    front = min(len(s.head) for s in lists)
    rows = [tuple(s.head[k] for s in lists) for k in range(front)]
    if not all(s.whole for s in lists):
        back = min(len(s.tail) if not s.whole else len(s.head) for s in lists)
        rows += [tuple((s.tail if not s.whole else s.head)[-1 - j] for s in lists)
                 for j in range(back)]
    return rows, clash


@dataclass
class Check:
    """One Rule 1 evaluation: compound ``id``, its predicted value, its operands' values."""

    id: str
    mode: str
    expression: str
    value: Pattern
    operands: list[Pattern]
    early_exit: bool = False


@dataclass
class Verdict:
    """Everything ``judge`` found."""

    right: dict[str, bool]
    fired: dict[str, list[str]] = field(default_factory=dict)
    """Rule name -> the tags it fired on."""
    unchecked: str | None = None
    """Why Rule 1 could not be decided (the sandbox run failed), if it could not."""

    @property
    def coherent(self) -> bool:
        return not any(self.fired.values())


def rule1_checks(compounds: Sequence[Compound], given: dict[str, Stated | None]
                 ) -> tuple[list[Check], list[str]]:
    """The evaluations Rule 1 needs, and the compounds that fire without one (lists of
    clashing lengths; a skipped condition operand whose own operands are stated)."""
    checks: list[Check] = []
    fired: list[str] = []
    for compound in compounds:
        lists = [given.get(compound.id), *(given.get(tag) for tag in compound.of)]
        if any(s is None for s in lists):
            continue
        rows, clash = aligned(lists)  # type: ignore[arg-type]
        if clash:
            fired.append(compound.id)
            continue
        for value, *operands in rows:
            if not all(is_full(o) for o in operands):
                continue
            if compound.mode == "condition" and is_full(value) and value == ["none"]:
                if any(o != ["none"] for o in operands):
                    fired.append(compound.id)
                continue
            checks.append(Check(compound.id, compound.mode, compound.expression,
                                value, operands, compound.early_exit is True))
    return checks, fired


def evaluate(code: str, checks: list[Check], sandbox: Sandbox) -> list[bool] | None:
    """Run the checks in the sandbox; per check, whether the compound agrees with its
    operands. None when the run itself failed (timeout, crash)."""
    results = run_checks(code, checks, sandbox)
    if results is None:
        return None
    return [agrees(check, result) for check, result in zip(checks, results, strict=True)]


def run_checks(code: str, checks: list[Check], sandbox: Sandbox
               ) -> list[list[Encoded]] | None:
    """Each check's evaluation as the evaluator returns it (typed JSON items: outcome,
    value, operands read, whether the value was listed); None when the run failed."""
    from execbench.sandbox.pool import Job, new_unit
    from execbench.sandbox.trace import RESULT_ONLY

    args = "[" + ", ".join(
        f"({c.expression!r}, [{', '.join(to_literal(o) for o in c.operands)}], "
        f"{c.mode == 'iterable'})" for c in checks) + "]"
    trace = sandbox.run(Job(code + EVALUATOR, EVALUATOR_NAME, args, RESULT_ONLY,
                           unit=new_unit()))
    if trace.status != "ok" or trace.value is None or trace.value[0] != "list":
        return None
    return [result[1] for result in trace.value[1]]


def agrees(check: Check, result: list[Encoded]) -> bool:
    """Whether the compound's stated value is what its expression gave (``run_checks``)."""
    outcome, value, read, listed = result
    if outcome[1] != "value":
        return False
    if check.mode == "condition":
        stated_operands = [k for k, o in enumerate(check.operands) if o != ["none"]]
        if [r[1] for r in read[1]] != stated_operands:
            return False
        try:
            return bool(decode(check.value)) is value[1] if is_full(check.value) else False
        except LiteralError:
            return False
    if matches(check.value, value):
        return True
    # A loop that can leave early takes only the first items of an iterator.
    return listed[1] and check.early_exit and is_full(check.value) and \
        check.value[0] == "list" and len(check.value[1]) <= len(value[1]) and \
        equal(check.value, ["list", value[1][:len(check.value[1])]])


def judge(code: str, truth: SimulationTruth, given: dict[str, Stated | None],
          output_right: bool, sandbox: Sandbox | None) -> Verdict:
    """Right/wrong per property and the rules that fire (see the module doc); ``code`` is
    the program the compounds are evaluated in."""
    properties = truth.properties
    verdict = Verdict(right={p.id: not wrong_positions(given.get(p.id), p)
                             for p in properties})
    checks, fired = rule1_checks(truth.compounds, given)
    if checks:
        if sandbox is None:
            raise RuntimeError("the simulation task needs a sandbox to check Rule 1")
        agreed = evaluate(code, checks, sandbox)
        if agreed is None:
            verdict.unchecked = "the Rule 1 evaluation did not finish"
        else:
            fired += [c.id for c, ok in zip(checks, agreed, strict=True) if not ok]
    verdict.fired["rule1"] = sorted(set(fired))
    verdict.fired["rule2"] = _rule2(properties, given)
    verdict.fired["rule3"] = sorted(p.id for p in properties if output_right
                                    and p.kind in TOP_KINDS and not verdict.right[p.id])
    return verdict


def _rule2(properties: Sequence[Property], given: dict[str, Stated | None]) -> list[str]:
    by_line: dict[int, dict[str, str]] = {}
    for prop in properties:
        if prop.kind in ("predicate", "branch"):
            by_line.setdefault(prop.line, {})[prop.kind] = prop.id
    fired = []
    for tags in by_line.values():
        predicate, branch = given.get(tags.get("predicate", "")), given.get(tags.get("branch", ""))
        if predicate is None or branch is None:
            continue
        rows, clash = aligned([predicate, branch])
        if clash or any(_disagree(p, b) for p, b in rows):
            fired.append(tags["branch"])
    return sorted(fired)


def _disagree(predicate: Pattern, branch: Pattern) -> bool:
    if not (is_full(predicate) and is_full(branch)) or branch[0] != "bool":
        return False
    try:
        return bool(decode(predicate)) is not branch[1]
    except LiteralError:
        return False


def divergence(properties: Sequence[Property], given: dict[str, Stated | None]
               ) -> Divergence:
    """The first wrong value in execution order, with the paper's kind and the state of
    the four kinds at that statement (``T`` right, ``F`` wrong, ``-`` not applicable), as
    a sample's ``extra`` records it."""
    first: tuple[tuple[float, int], int, Property] | None = None
    for order, prop in enumerate(properties):
        for position in wrong_positions(given.get(prop.id), prop):
            key = order_key(prop, position)
            if first is None or (key, order) < (first[0], first[1]):
                first = (key, order, prop)
    if first is None:
        return AT_OUTPUT
    prop = first[2]
    return Divergence(QUADRUPLE[prop.kind], prop.id, prop.line,
                      _quadruple(properties, prop.line, given), label=prop.label)


def _quadruple(properties: Sequence[Property], line: int,
               given: dict[str, Stated | None]) -> str:
    marks = []
    for kind in ("loop variable", "iterable", "predicate", "branch"):
        here = [p for p in properties if p.line == line and QUADRUPLE[p.kind] == kind]
        marks.append("-" if not here else "T" if all(
            not wrong_positions(given.get(p.id), p) for p in here) else "F")
    return "".join(marks)
