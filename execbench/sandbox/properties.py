"""The ``properties`` recorder: the values at a program's decision points, for execution
simulation tasks, recorded where the program computes them.

For each ``for`` loop, per execution of the loop statement: the iterable's value, the
values of its direct sub-expressions that are not literals (the arguments of a call and
the object of a method call, the operands of an operator, the value and index of a
subscript, the items of a display), and the item each iteration assigns to the loop target. For each
``if``/``elif``/``while`` condition, per evaluation: the predicate's value, whether the
branch was taken (the loop entered), the value of each operand of every ``and``/``or`` in
it (``None``, not evaluated, when short-circuiting skipped it), and for ``while`` the value
of each variable the condition reads (its loop variables), as the condition read it.

How, and why each choice keeps the run as it would have been:

* The tree is instrumented before compiling (``prepare``): the expression is wrapped in
  calls to recording functions, so each sub-expression is evaluated exactly once, by the
  program, in its own order, with short-circuiting intact; nothing is re-evaluated and no
  statement or line is added, so line events, lines and branch outcomes are those of the
  plain program (the tests check they are identical).
* A condition's truth is taken once (``bool`` of the value, the call the ``if`` itself
  would make) and the statement gets that ``bool``: a user ``__bool__`` runs once.
* A loop's iterable is replaced by an iterator over ``iter(iterable)`` (what the ``for``
  statement would call) that records each item as the loop takes it. An iterable that is
  its own iterator (a generator, ``zip``, ``map``) is not materialised ahead of the loop,
  which would run its code early; its value is the list of items the loop took, recorded
  as it took them (first ``max_items``). So is a dict view's, though it encodes as the
  list of its items (``values.encoding``): a simulation asks a view's items as the loop
  took them, as for a ``range``. Any other iterable is recorded as it was when the loop
  started.
* Values are typed JSON (``values.encode``), bounded by ``max_value_nodes``; recording stops
  after ``max_properties`` records per run (``properties_truncated``).
* Records are grouped per statement line and, within a line, per execution (loops) or
  evaluation (conditions), in the order they were completed. Each record also carries
  ``at``, its place in the run's order over all lines (one clock ticks when a condition
  is decided, when a loop starts and when a loop takes an item; ``items_at`` gives each
  item's tick), so a task can put properties of different lines in execution order.
  Evaluations of the same line that nest (a recursive call inside a condition) each get
  their own record. An evaluation an exception cuts short leaves no record (the statement
  did not complete); if such an exception is caught inside an enclosing evaluation of the
  same line, the values the enclosing one reads after it may be lost (recorded as not
  evaluated).

The recorded fields go to the trace's ``extra``: ``properties`` (line -> record, see
``result``) and ``properties_truncated``.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from execbench.sandbox import recording, tracer
from execbench.values import encode, view_name

if TYPE_CHECKING:
    from collections.abc import Iterator

_PART, _CLAUSE, _NAME = "__eb_part__", "__eb_clause__", "__eb_name__"
_OPEN, _TEST, _LOOP = "__eb_open__", "__eb_test__", "__eb_loop__"
MAX_PROPERTIES = 20_000
MAX_ITEMS = 1_000


def _call(name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(ast.Name(name, ast.Load()), list(args), [])


def parts_of(node: ast.expr) -> list[ast.expr]:
    """The direct non-constant sub-expressions of a loop's iterable, in source order."""
    if isinstance(node, ast.Call):
        children = [node.func.value] if isinstance(node.func, ast.Attribute) else []
        children += [a.value if isinstance(a, ast.Starred) else a for a in node.args]
        children += [k.value for k in node.keywords]
    elif isinstance(node, ast.BinOp):
        children = [node.left, node.right]
    elif isinstance(node, ast.UnaryOp):
        children = [node.operand]
    elif isinstance(node, ast.Subscript):
        children = [node.value, node.slice]
    elif isinstance(node, ast.Attribute):
        children = [node.value]
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        children = [e.value if isinstance(e, ast.Starred) else e for e in node.elts]
    else:
        children = []
    return [c for c in children if not isinstance(c, ast.Slice) and not _is_literal(c)]


def _is_literal(node: ast.expr) -> bool:
    """A constant or a display of constants (``[9]``, ``(1, 2)``): nothing to predict."""
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def clauses_of(node: ast.expr) -> list[ast.expr]:
    """The operands of every ``and``/``or`` in a condition, outermost first."""
    found: list[ast.expr] = []
    stack = [node]
    while stack:
        current = stack.pop(0)
        if isinstance(current, ast.BoolOp):
            found.extend(current.values)
            stack.extend(current.values)
        elif isinstance(current, ast.UnaryOp) and isinstance(current.op, ast.Not):
            stack.append(current.operand)
    return found


def names_of(node: ast.expr) -> list[str]:
    """The variables a condition reads, in order of first appearance (not the names of
    functions it calls: ``len`` in ``i < len(xs)`` is no loop variable)."""
    called = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    names: list[str] = []
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Load) \
                and id(inner) not in called and inner.id not in names:
            names.append(inner.id)
    return names


class _Instrument(ast.NodeTransformer):
    """Wraps loop iterables and conditions in calls to the recorder (see the module doc)."""

    def visit_For(self, node: ast.For) -> ast.AST:
        self.generic_visit(node)
        line = ast.Constant(node.lineno)
        parts = parts_of(node.iter)
        wrapped = _Wrap({id(p): (_PART, i) for i, p in enumerate(parts)},
                        node.lineno).visit(node.iter)
        opened = _call(_OPEN, line, ast.Constant(len(parts)), ast.Constant(0))
        node.iter = ast.copy_location(
            _call(_LOOP, line, ast.Tuple([opened, wrapped], ast.Load())), node.iter)
        return node

    def visit_If(self, node: ast.If) -> ast.AST:
        self.generic_visit(node)
        node.test = self._test(node.test, node.lineno, names=False)
        return node

    def visit_While(self, node: ast.While) -> ast.AST:
        self.generic_visit(node)
        node.test = self._test(node.test, node.lineno, names=True)
        return node

    @staticmethod
    def _test(test: ast.expr, lineno: int, names: bool) -> ast.expr:
        clauses = clauses_of(test)
        variables = names_of(test) if names else []
        targets = {id(c): (_CLAUSE, i) for i, c in enumerate(clauses)}
        wrapped = _Wrap(targets, lineno, variables).visit(test)
        line = ast.Constant(lineno)
        opened = _call(_OPEN, line, ast.Constant(len(clauses)), ast.Constant(len(variables)))
        return ast.copy_location(
            _call(_TEST, line, ast.Tuple([opened, wrapped], ast.Load())), test)


class _Wrap(ast.NodeTransformer):
    """Wraps the chosen sub-expressions (by identity) and, for ``while``, variable reads."""

    def __init__(self, targets: dict[int, tuple[str, int]], lineno: int,
                 names: list[str] | None = None) -> None:
        self.targets = targets
        self.lineno = lineno
        self.names = names or []

    def visit(self, node: ast.AST) -> ast.AST:
        target = self.targets.get(id(node))
        result = super().visit(node)
        if target is not None:
            kind, index = target
            result = ast.copy_location(
                _call(kind, ast.Constant(self.lineno), ast.Constant(index), result), node)
        return result

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.names:
            return ast.copy_location(_call(_NAME, ast.Constant(self.lineno),
                                           ast.Constant(self.names.index(node.id)), node), node)
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        return node  # its body runs later, per call: not a value of this evaluation


@tracer.register_recorder
class PropertiesRecorder(recording.Recorder):
    name = "properties"

    @classmethod
    def prepare(cls, tree: ast.Module) -> ast.Module:
        return ast.fix_missing_locations(_Instrument().visit(tree))

    def __init__(self, program: recording.CompiledProgram, options: dict[str, Any]) -> None:
        super().__init__(program, options)
        self.records: dict[int, list[dict[str, Any]]] = {}
        self.open: dict[int, list[dict[str, Any]]] = {}
        self.count = 0
        self.clock = 0
        self.truncated = False
        self.max_nodes = options["max_value_nodes"]

    def _encode(self, value: Any) -> Any:
        return encode(value, max_nodes=self.max_nodes)

    def _tick(self) -> int:
        self.clock += 1
        return self.clock

    def _room(self) -> bool:
        self.count += 1
        if self.count > MAX_PROPERTIES:
            self.truncated = True
            return False
        return True

    def namespace(self) -> dict[str, Any]:
        return {_OPEN: self._open, _PART: self._part, _CLAUSE: self._clause,
                _NAME: self._name, _TEST: self._test, _LOOP: self._loop}

    def _open(self, line: int, values: int, names: int) -> int:
        """Start an evaluation of ``line`` that may record ``values`` parts or clauses and
        ``names`` variables; returns its depth, which ``_close`` takes back."""
        stack = self.open.setdefault(line, [])
        stack.append({"parts": {}, "clauses": {}, "names": {}, "sizes": (values, names)})
        return len(stack) - 1

    def _close(self, line: int, depth: int) -> dict[str, Any]:
        """The values pending for the evaluation at ``depth``; deeper ones, left by
        evaluations an exception cut short, are dropped with it."""
        stack = self.open[line]
        pending = stack[depth]
        del stack[depth:]
        return pending

    def _pending(self, line: int) -> dict[str, Any]:
        return self.open[line][-1]

    def _part(self, line: int, index: int, value: Any) -> Any:
        self._pending(line)["parts"].setdefault(index, value)
        return value

    def _clause(self, line: int, index: int, value: Any) -> Any:
        self._pending(line)["clauses"][index] = value
        return value

    def _name(self, line: int, index: int, value: Any) -> Any:
        self._pending(line)["names"].setdefault(index, value)
        return value

    def _test(self, line: int, opened: tuple[int, Any]) -> bool:
        depth, value = opened
        taken = bool(value)
        pending = self._close(line, depth)
        if self._room():
            self.records.setdefault(line, []).append({
                "at": self._tick(), "value": self._encode(value), "taken": taken,
                "clauses": self._values(pending["clauses"], pending["sizes"][0]),
                "names": self._values(pending["names"], pending["sizes"][1])})
        return taken

    def _loop(self, line: int, opened: tuple[int, Any]) -> Iterator[Any]:
        depth, iterable = opened
        pending = self._close(line, depth)
        iterator = iter(iterable)
        record: dict[str, Any] | None = None
        if self._room():
            record = {"at": self._tick(),
                      "iterable": None if iterator is iterable
                      or view_name(iterable) is not None else self._encode(iterable),
                      "parts": self._values(pending["parts"], pending["sizes"][0]), "items": [],
                      "items_at": [], "items_truncated": False}
            self.records.setdefault(line, []).append(record)
        return self._items(iterator, record)

    def _items(self, iterator: Iterator[Any], record: dict[str, Any] | None) -> Iterator[Any]:
        for item in iterator:
            if record is not None:
                if len(record["items"]) < MAX_ITEMS:
                    record["items"].append(self._encode(item))
                    record["items_at"].append(self._tick())
                else:
                    record["items_truncated"] = True
            yield item

    def _values(self, found: dict[int, Any], size: int) -> list[Any]:
        """Encoded values by index; ``None`` (JSON null) for one never evaluated."""
        return [self._encode(found[i]) if i in found else None for i in range(size)]

    def result(self) -> dict[str, Any]:
        return {**super().result(),
                "properties": {str(line): records for line, records in
                               sorted(self.records.items())},
                "properties_truncated": self.truncated}
