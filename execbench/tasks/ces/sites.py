"""What a simulation asks about: the properties of a program's loops and conditions, read
statically from its syntax tree, and their true values read from one traced run.

A **site** is a ``for``, ``if``/``elif`` or ``while`` statement (the statements the
``properties`` recorder instruments; comprehensions and conditional expressions are not
statements and are not asked about). Each site gives properties, each with a tag made of
its line and a letter (``3a``, ``3b``, ...), and each property's value is the list of its
values over the run, in the order they occurred:

* ``for``: each loop variable (a name in the target; one value per iteration, over every
  execution of the loop), the iterable (one value per execution of the loop statement)
  and the iterable's direct non-literal sub-expressions, its *parts* (one value per
  execution). An iterable that is a plain value (a list, string, dict, ...) is asked as it
  was when the loop started; any other (a range, zip, enumerate, a generator, a dict view)
  as the list of the items the loop took from it, since its own ``repr`` says nothing.
* ``if``/``elif``/``while``: the predicate (whether the condition held: ``True`` or
  ``False``, whatever value Python computed, since the statement decides on its truth),
  every ``and``/``or`` operand, a *clause* (its truth, or ``None`` where short-circuiting
  skipped it), and whether the branch was taken (for ``while``: whether the body ran once
  more). A ``while`` also asks for its loop variables: the names its condition reads on
  every evaluation (a name read only after an ``and``/``or`` may go unread, and is not
  asked). ``else`` branches are not asked: they are decided by the chain's last condition.

A property whose values cannot all be written as literals (an object, a value cut at the
recorder's size bound) is not asked at all: no answer could state it. Each value also
carries its place in the run's order (the recorder's ``at`` ticks), so that properties of
different lines can be put in execution order.

Compound properties (an iterable and its parts; a predicate or clause and the operands
of its ``and``/``or``) get a ``compound`` record: the program's own expression text with
each direct sub-property replaced by ``__eb_get(i)``, which coherence Rule 1 evaluates on
predicted sub-values.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass
from string import ascii_lowercase
from typing import TYPE_CHECKING, Any, TypedDict

from execbench.sandbox.properties import clauses_of, names_of, parts_of
from execbench.tasks.base import SkipInstance
from execbench.tasks.ces.payload import Compound, Property
from execbench.values import Encoded, LiteralError, decode, encode, is_exact

if TYPE_CHECKING:
    from execbench.sandbox.trace import Trace

KINDS = ("loop_variable", "iterable", "iterable_part", "predicate", "clause", "branch")
RANK = {"loop_variable": 0, "iterable_part": 0, "iterable": 1, "clause": 1, "predicate": 2,
        "branch": 3}
"""Order of properties decided at the same tick: a condition's operands before its value
and its value before the branch; a loop's parts before its iterable."""
QUADRUPLE = {"loop_variable": "loop variable", "iterable": "iterable",
             "iterable_part": "iterable", "predicate": "predicate", "clause": "predicate",
             "branch": "branch"}
"""The paper's four kinds of property (sub-properties count as their compound's kind)."""
GETTER = "__eb_get"


class LoopRecord(TypedDict):
    """One execution of a ``for`` statement as the ``properties`` recorder writes it."""

    at: int
    """The tick the loop started at."""
    iterable: Encoded | None
    """The iterable as the loop started; None for one that is its own iterator, whose
    value is the items the loop took."""
    parts: list[Encoded | None]
    """The iterable's parts (``parts_of``); None for one never evaluated."""
    items: list[Encoded]
    """The items the loop took (at most the recorder's bound)."""
    items_at: list[int]
    """Each item's tick."""
    items_truncated: bool
    """The loop took more items than were recorded."""


class ConditionRecord(TypedDict):
    """One evaluation of an ``if``/``elif``/``while`` condition as the ``properties``
    recorder writes it."""

    at: int
    """The tick the condition was decided at."""
    value: Encoded
    """The condition's value, as Python computed it."""
    taken: bool
    """Whether the branch was taken (the loop body ran once more)."""
    clauses: list[Encoded | None]
    """Each ``and``/``or`` operand (``clauses_of``); None where short-circuiting skipped it."""
    names: list[Encoded | None]
    """For ``while``: each variable the condition reads (``names_of``), as it read it."""


@dataclass
class Site:
    """One ``for``/``if``/``elif``/``while`` statement."""

    line: int
    statement: str
    node: ast.For | ast.If | ast.While


def sites_of(code: str) -> list[Site]:
    """Every site of the program, in line order."""
    tree = ast.parse(code)
    lines = code.splitlines()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.For):
            found.append(Site(node.lineno, "for", node))
        elif isinstance(node, ast.While):
            found.append(Site(node.lineno, "while", node))
        elif isinstance(node, ast.If):
            text = lines[node.lineno - 1][node.col_offset:]
            found.append(Site(node.lineno, "elif" if text.startswith("elif") else "if", node))
    return sorted(found, key=lambda site: site.line)


def properties_of(code: str, trace: Trace) -> tuple[list[Property], list[Compound]]:
    """The properties asked about (with their true values) and the compounds among them.

    Raises ``SkipInstance`` when the trace has no complete property record."""
    problem = properties_problem(trace)
    if problem is not None:
        raise SkipInstance(problem)
    # line -> its records: a ``for``'s ``LoopRecord``s, a condition's ``ConditionRecord``s
    recorded = trace.extra["properties"]
    properties: list[Property] = []
    compounds: list[Compound] = []
    for site in sites_of(code):
        records = recorded.get(str(site.line), [])
        builder = _Builder(site)
        if site.statement == "for":
            builder.loop(records)
        else:
            builder.condition(records)
        properties += builder.properties
        compounds += builder.compounds
    return properties, compounds


def properties_problem(trace: Trace) -> str | None:
    """Why the trace has no complete property record to ask about, or None."""
    if not isinstance(trace.extra.get("properties"), dict):
        return "the trace has no recorded properties (recorder 'properties')"
    if trace.extra.get("properties_truncated"):
        return "the run has more properties than the recorder keeps"
    return None


class _Builder:
    """The properties of one site; ``add`` names them ``<line><letter>`` in order."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.properties: list[Property] = []
        self.compounds: list[Compound] = []

    def add(self, kind: str, label: str, values: list[Encoded | None] | None,
            at: list[int]) -> str | None:
        """Add a property if every value is exact; returns its tag (None if not asked)."""
        exact = [v for v in values or () if v is not None and is_exact(v)]
        if values is None or len(exact) != len(values):
            return None
        tag = f"{self.site.line}{_letters(len(self.properties))}"
        self.properties.append(Property(tag, self.site.line, kind, label, exact, at))
        return tag

    def compound(self, tag: str | None, node: ast.expr, children: list[ast.expr],
                 tags: list[str | None], mode: str, early_exit: bool | None = None) -> None:
        if tag is None or not children:
            return
        of = tuple(t for t in tags if t is not None)
        if len(of) == len(tags):
            self.compounds.append(Compound(tag, of, mode, _substituted(node, children),
                                           early_exit))

    def loop(self, records: list[LoopRecord]) -> None:
        node = self.site.node
        assert isinstance(node, ast.For)
        starts = [r["at"] for r in records]
        variables = _bind_all(node.target, records)
        for name, values in variables.items():
            at = [at for r in records for at in r["items_at"]]
            self.add("loop_variable", name, values, at)
        iterable = self.add("iterable", ast.unparse(node.iter),
                            [_iterable_value(r) for r in records], starts)
        parts = parts_of(node.iter)
        tags = [self.add("iterable_part", ast.unparse(part),
                         [r["parts"][i] for r in records], starts)
                for i, part in enumerate(parts)]
        early = any(isinstance(inner, ast.Break | ast.Return | ast.Raise)
                    for stmt in node.body for inner in ast.walk(stmt))
        self.compound(iterable, node.iter, parts, tags, "iterable", early_exit=early)

    def condition(self, records: list[ConditionRecord]) -> None:
        node = self.site.node
        assert isinstance(node, ast.If | ast.While)
        at = [r["at"] for r in records]
        if isinstance(node, ast.While):
            names = names_of(node.test)
            always = _always_read(node.test)
            for index, name in enumerate(names):
                if name in always:
                    self.add("loop_variable", name, [r["names"][index] for r in records], at)
        taken: list[Encoded | None] = [["bool", r["taken"]] for r in records]
        predicate = self.add("predicate", ast.unparse(node.test), taken, at)
        clauses = clauses_of(node.test)
        tags = [self.add("clause", ast.unparse(clause),
                         [_truth(r["clauses"][i]) for r in records], at)
                for i, clause in enumerate(clauses)]
        self.add("branch", "taken", taken, at)
        by_node = dict(zip(map(id, clauses), tags, strict=True))
        for compound, tag in [(node.test, predicate), *zip(clauses, tags, strict=True)]:
            children = _direct_clauses(compound)
            self.compound(tag, compound, children, [by_node[id(c)] for c in children],
                          "condition")


def _letters(index: int) -> str:
    """a, b, ..., z, ba, bb, ... (never empty, never a digit: tags stay unambiguous)."""
    text = ""
    while True:
        index, digit = divmod(index, 26)
        text = ascii_lowercase[digit] + text
        if not index:
            return text


def _iterable_value(record: LoopRecord) -> Encoded | None:
    """The iterable as asked (see the module doc); None when it cannot be stated."""
    value = record["iterable"]
    if value is not None and value[0] != "object":
        return value if is_exact(value) else None
    if record["items_truncated"]:
        return None
    return ["list", record["items"]]


def _truth(value: Encoded | None) -> Encoded | None:
    """A clause's recorded value as asked: its truth, or None (JSON ``["none"]``) where it
    was not evaluated; None (not asked) when its truth cannot be known outside the run."""
    if value is None:
        return ["none"]
    try:
        return ["bool", bool(decode(value))]
    except LiteralError:
        return None


def _bind_all(target: ast.expr, records: list[LoopRecord]
              ) -> dict[str, list[Encoded | None] | None]:
    """Each target name's value per iteration, by unpacking the recorded items as the
    ``for`` statement does; a name maps to None when some item cannot be unpacked here
    (an opaque value, an attribute or subscript target)."""
    names = [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
    values: dict[str, list[Encoded | None] | None] = {name: [] for name in names}
    for record in records:
        for item in record["items"]:
            try:
                bound: dict[str, object] = {}
                _bind(target, decode(item), bound)
            except (LiteralError, ValueError, TypeError):
                return dict.fromkeys(names)
            for name in names:
                found = values[name]
                if found is not None:
                    found.append(encode(bound[name]))
    return values


def _bind(target: ast.expr, value: Any, out: dict[str, object]) -> None:
    if isinstance(target, ast.Name):
        out[target.id] = value
        return
    if not isinstance(target, ast.Tuple | ast.List):
        raise ValueError("only names, tuples and lists are unpacked here")
    items = list(value)
    stars = [i for i, e in enumerate(target.elts) if isinstance(e, ast.Starred)]
    if not stars:
        if len(items) != len(target.elts):
            raise ValueError("wrong number of values to unpack")
        for element, item in zip(target.elts, items, strict=True):
            _bind(element, item, out)
        return
    star = stars[0]
    after = len(target.elts) - star - 1
    if len(items) < star + after:
        raise ValueError("not enough values to unpack")
    for element, item in zip(target.elts[:star], items[:star], strict=True):
        _bind(element, item, out)
    starred = target.elts[star]
    assert isinstance(starred, ast.Starred)
    _bind(starred.value, items[star:len(items) - after], out)
    for element, item in zip(target.elts[star + 1:], items[len(items) - after:], strict=True):
        _bind(element, item, out)


def _always_read(test: ast.expr) -> set[str]:
    """Names a condition reads on every evaluation: not behind an ``and``/``or`` operand
    other than the first, a conditional expression's branches, or a lambda/comprehension."""
    found: set[str] = set()
    stack: list[ast.AST] = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.BoolOp):
            stack.append(node.values[0])
        elif isinstance(node, ast.IfExp):
            stack.append(node.test)
        elif not isinstance(node, ast.Lambda | ast.ListComp | ast.SetComp | ast.DictComp
                            | ast.GeneratorExp):
            stack.extend(ast.iter_child_nodes(node))
    return found


def _direct_clauses(node: ast.expr) -> list[ast.expr]:
    """The ``and``/``or`` operands a condition (or clause) combines directly, through any
    ``not``: what Rule 1 combines to check its value."""
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        node = node.operand
    return list(node.values) if isinstance(node, ast.BoolOp) else []


def _substituted(node: ast.expr, children: list[ast.expr]) -> str:
    """The text of ``node`` with each of ``children`` replaced by ``__eb_get(i)`` (a deep
    copy whose memo already holds the replacements, so the tree itself is untouched)."""
    memo: dict[int, ast.expr] = {id(child): ast.Call(ast.Name(GETTER, ast.Load()),
                                                     [ast.Constant(index)], [])
                                 for index, child in enumerate(children)}
    return ast.unparse(copy.deepcopy(node, memo))


def order_key(prop: Property, index: int) -> tuple[float, int]:
    """Where the ``index``-th value of a property falls in the run: its tick, then its
    rank among properties decided at the same tick; a value past the true ones (a
    predicted extra iteration) right after the property's last true one."""
    at = prop.at
    if index < len(at):
        return (at[index], RANK[prop.kind])
    return ((at[-1] + 0.5) if at else float("inf"), RANK[prop.kind])
