"""What the CodeSense tasks can ask about one function, read from its syntax tree alone.

Only the entry point's own statements count (not those of functions or classes defined
inside it, which run in other frames). For each statement: its first line, the lines it
spans, and, for the statements the ``statement`` task asks about, its kind:

* ``branch``: an ``if``/``elif``/``while`` header; its value is whether the body is entered.
* ``constant``: an assignment of a literal (``c = 100``, ``names = []``).
* ``call``: an assignment whose value calls a function or method (``n = len(xs)``).
* ``arithmetic``: an augmented assignment, or one whose value is an arithmetic or unary
  operation (``y = x * 2 + 1``).
* ``assignment``: any other assignment (``a, b = pair``, ``item = xs[i]``).

The order of those tests is the precedence: ``total += f(x)`` is a call. Only assignments to
plain names (or a tuple or list of plain names) have a value to ask for.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache

from execbench.analysis.spans import first_line

KINDS = ("assignment", "arithmetic", "constant", "branch", "call")
"""Statement kinds, as CodeSense's published ``Statement Type`` values (Assignment,
Arithmetic Assignment, Constant Assignment, Branch, API) map to them."""


@dataclass(frozen=True)
class Statement:
    line: int
    end: int
    """The last line of the statement's own text (a compound statement's header)."""
    text: str
    """The source text (a compound statement's header only, ``if x > 0:``)."""
    kind: str | None
    """One of ``KINDS``, or None for statements the ``statement`` task does not ask about."""
    targets: tuple[str, ...] = ()
    """Assigned names, in order (a tuple target gives several)."""
    reads: tuple[str, ...] = ()
    """Names the statement reads, in order of first appearance."""
    body_line: int | None = None
    """For an ``if``/``while``/``for`` header: the first line of its body."""


@dataclass(frozen=True)
class Loop:
    line: int
    header: frozenset[int]
    """The lines of the header (a long condition may span several)."""
    body: tuple[int, int]
    """First and last line of the body (not the ``else`` clause)."""
    span: tuple[int, int]
    """First and last line of the whole statement, ``else`` clause included."""
    text: str


@dataclass(frozen=True)
class Function:
    first_line: int
    """The line a frame of the function reports (the first decorator's, if decorated)."""
    statements: dict[int, Statement]
    """By first line."""
    continuation: dict[int, int]
    """Lines inside a statement's own text other than its first -> that first line."""
    loops: tuple[Loop, ...]
    conditional: tuple[int, ...]
    """First lines of blocks that run only on some paths: the bodies and ``else`` parts of
    ``if``, ``for``, ``while``, the handlers and ``else`` of ``try``, the cases of ``match``."""


def _own_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Every statement in ``body`` and the blocks nested in it, not entering functions or
    classes defined there."""
    found: list[ast.stmt] = []
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        for block in _blocks(node):
            stack.extend(reversed(block))
    return found


def _blocks(node: ast.stmt) -> list[list[ast.stmt]]:
    blocks = [getattr(node, name, None) or [] for name in ("body", "orelse", "finalbody")]
    blocks += [handler.body for handler in getattr(node, "handlers", [])]
    blocks += [case.body for case in getattr(node, "cases", [])]
    return [block for block in blocks if block]


def _names(node: ast.AST | None) -> tuple[str, ...]:
    if node is None:
        return ()
    seen = dict.fromkeys(n.id for n in ast.walk(node)
                         if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    return tuple(seen)


def _targets(target: ast.expr) -> tuple[str, ...] | None:
    if isinstance(target, ast.Name):
        return (target.id,)
    if isinstance(target, ast.Tuple | ast.List) and target.elts and \
            all(isinstance(e, ast.Name) for e in target.elts):
        return tuple(e.id for e in target.elts)  # type: ignore[attr-defined]
    return None


def _is_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return isinstance(node.operand, ast.Constant)
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return all(_is_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_literal(k) and _is_literal(v)
                   for k, v in zip(node.keys, node.values, strict=True))
    return False


def _value_kind(value: ast.expr, augmented: bool) -> str:
    if any(isinstance(n, ast.Call) for n in ast.walk(value)):
        return "call"
    if augmented or isinstance(value, ast.BinOp | ast.UnaryOp) and not _is_literal(value):
        return "arithmetic"
    if _is_literal(value):
        return "constant"
    return "assignment"


def _header_end(node: ast.stmt) -> int:
    if isinstance(node, ast.If | ast.While):
        return node.test.end_lineno or node.lineno
    if isinstance(node, ast.For | ast.AsyncFor):
        return node.iter.end_lineno or node.lineno
    if isinstance(node, ast.With | ast.AsyncWith):
        return max(item.context_expr.end_lineno or node.lineno for item in node.items)
    if _blocks(node):  # try, match, nested def/class: the header is the first line
        return node.lineno
    return node.end_lineno or node.lineno


def _statement(node: ast.stmt, lines: list[str]) -> Statement:
    end = _header_end(node)
    text = "\n".join(lines[node.lineno - 1:end]).strip()
    if not _blocks(node):
        text = ast.get_source_segment("\n".join(lines), node) or text
    kind: str | None = None
    targets: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    body_line: int | None = None
    if isinstance(node, ast.If | ast.While):
        kind, reads = "branch", _names(node.test)
    elif isinstance(node, ast.Assign) and len(node.targets) == 1:
        names = _targets(node.targets[0])
        if names:
            kind, targets, reads = _value_kind(node.value, False), names, _names(node.value)
    elif isinstance(node, ast.AnnAssign) and node.value is not None and node.simple:
        kind, targets = _value_kind(node.value, False), (node.target.id,)  # type: ignore[union-attr]
        reads = _names(node.value)
    elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        kind, targets = _value_kind(node.value, True), (node.target.id,)
        reads = tuple(dict.fromkeys((node.target.id, *_names(node.value))))
    if isinstance(node, ast.If | ast.While | ast.For | ast.AsyncFor) and node.body:
        body_line = node.body[0].lineno
        if body_line <= end:  # ``if x: y`` on one line: no line event tells the arms apart
            kind = None
    return Statement(node.lineno, end, text, kind, targets, reads, body_line)


def _constant_true(test: ast.expr) -> bool:
    return isinstance(test, ast.Constant) and bool(test.value)


@lru_cache(maxsize=256)
def analyse(code: str, entry_point: str) -> Function | None:
    """The entry point's statements, loops and conditional blocks; None when the code has
    no top-level function of that name (or does not parse)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    func = next((node for node in tree.body if isinstance(node, ast.FunctionDef)
                 and node.name == entry_point), None)
    if func is None:
        return None
    lines = code.splitlines()
    statements: dict[int, Statement] = {}
    continuation: dict[int, int] = {}
    loops: list[Loop] = []
    conditional: list[int] = []
    for node in _own_statements(func.body):
        statement = _statement(node, lines)
        statements.setdefault(node.lineno, statement)
        for line in range(node.lineno + 1, statement.end + 1):
            continuation.setdefault(line, node.lineno)
        if isinstance(node, ast.If | ast.For | ast.While):
            # A body on the header's line runs whenever the header does, as far as lines tell.
            conditional += [block[0].lineno for block in (node.body, node.orelse)
                            if block and block[0].lineno > statement.end]
        elif isinstance(node, ast.Try | ast.TryStar):
            conditional += [h.body[0].lineno for h in node.handlers]
            conditional += [node.orelse[0].lineno] if node.orelse else []
        elif isinstance(node, ast.Match):
            conditional += [case.body[0].lineno for case in node.cases]
        # A body on the header's own line leaves no line event to tell iterations apart,
        # and ``while True`` may not report its header on every iteration.
        if isinstance(node, ast.For | ast.While) and node.body[0].lineno > statement.end \
                and not (isinstance(node, ast.While) and _constant_true(node.test)):
            loops.append(Loop(node.lineno, frozenset(range(node.lineno, statement.end + 1)),
                              (node.body[0].lineno, node.body[-1].end_lineno or node.lineno),
                              (node.lineno, node.end_lineno or node.lineno), statement.text))
    return Function(first_line(func), statements, continuation, tuple(loops),
                    tuple(sorted(set(conditional))))
