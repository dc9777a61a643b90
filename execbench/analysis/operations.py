"""What a statement does to the values it touches, from the syntax tree alone: the
statement kinds the error taxonomy (``tasks.common.taxonomy``) labels a wrong value by.

* ``condition``: an ``if``/``elif``/``while`` header (its value is a truth that decides
  which lines run next).
* ``library``: the value is made by a call into Python's builtins or standard library:
  a builtin name the program does not rebind (``len``, ``sorted``, ``range``), a name or
  module imported from a standard-library module (``math.floor``, ``from bisect import
  insort``), or a method that builtin types have and no class of the program defines
  (``s.split``, ``xs.pop``, ``d.get``).
* ``operation``: the value is computed otherwise: an arithmetic, comparison or boolean
  operator, an augmented assignment, a conditional expression, a comprehension, or a
  call of the program's own functions.
* ``move``: the value is only carried: a name, an attribute, a subscript, a literal, or
  a container of those (``a, b = b, a``, ``item = xs[i]``, ``return total``).

The precedence is that order: ``total += len(w)`` is ``library`` (whichever of the two
went wrong, the call is the part a model has to know rather than work out), and a
statement holding a call and an operator is judged by the call. A ``for`` statement is
judged by its iterable, the expression that makes its loop variables' values.
"""

from __future__ import annotations

import ast
import builtins
import sys
from dataclasses import dataclass
from functools import lru_cache

CONDITION, LIBRARY, OPERATION, MOVE = "condition", "library", "operation", "move"
KINDS = (CONDITION, LIBRARY, OPERATION, MOVE)
RANK = {MOVE: 0, OPERATION: 1, LIBRARY: 2}
"""Which kind wins when a statement's parts have several (``library`` over ``operation``
over ``move``)."""

_BUILTIN_NAMES = frozenset(name for name in dir(builtins) if not name.startswith("_"))
_BUILTIN_METHODS = frozenset(
    name for kind in (str, bytes, list, tuple, dict, set, frozenset, int, float, complex)
    for name in dir(kind) if not name.startswith("_"))
_OPERATORS = (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.ListComp,
              ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda, ast.JoinedStr)


@dataclass(frozen=True)
class Names:
    """What a program's names are bound to, for telling library calls from its own."""

    library: frozenset[str]
    """Names imported from standard-library modules (the module itself, or a name from it)."""
    own: frozenset[str]
    """Names the program binds otherwise (functions, classes, assignments, parameters)."""
    methods: frozenset[str]
    """Method names the program's classes define."""

    @classmethod
    def of(cls, tree: ast.AST) -> Names:
        library: set[str] = set()
        own: set[str] = set()
        methods: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    (library if _stdlib(alias.name) else own).add(bound)
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    stdlib = node.level == 0 and _stdlib(node.module or "")
                    (library if stdlib else own).add(alias.asname or alias.name)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                own.add(node.name)
                if isinstance(node, ast.ClassDef):
                    methods.update(item.name for item in node.body if isinstance(
                        item, ast.FunctionDef | ast.AsyncFunctionDef))
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                own.add(node.id)
            elif isinstance(node, ast.arg):
                own.add(node.arg)
        return cls(frozenset(library - own), frozenset(own), frozenset(methods))


def _stdlib(module: str) -> bool:
    return module.split(".")[0] in sys.stdlib_module_names


def _root(node: ast.expr) -> str | None:
    """The name an attribute chain starts from (``os`` of ``os.path.join``)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def is_library_call(call: ast.Call, names: Names) -> bool:
    """Whether ``call`` calls into the builtins or the standard library (module doc)."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in names.library or (func.id in _BUILTIN_NAMES
                                            and func.id not in names.own)
    if isinstance(func, ast.Attribute):
        if _root(func.value) in names.library:
            return True
        return func.attr in _BUILTIN_METHODS and func.attr not in names.methods
    return False


def expression_kind(node: ast.AST, names: Names) -> str:
    """``library``, ``operation`` or ``move`` for an expression (or a statement's parts)."""
    kind = MOVE
    for part in ast.walk(node):
        if isinstance(part, ast.Call):
            if is_library_call(part, names):
                return LIBRARY
            kind = OPERATION
        elif isinstance(part, (*_OPERATORS, ast.AugAssign)):
            kind = OPERATION
    return kind


@dataclass(frozen=True)
class Statement:
    """A statement that starts on a line, with what it does."""

    line: int
    kind: str
    """One of ``KINDS``."""
    node: ast.stmt


@dataclass(frozen=True)
class Program:
    """A parsed program's statements by first line, and its names."""

    tree: ast.Module
    names: Names
    statements: dict[int, ast.stmt]
    """The first statement starting on each line (the outermost; the first of several
    separated by ``;``)."""
    every: tuple[ast.stmt, ...]
    """Every statement, in line order (a one-line ``if x: y = 1`` gives two)."""

    def statement(self, line: int) -> Statement | None:
        """The statement starting on ``line`` and its kind; None where none starts there."""
        node = self.statements.get(line)
        return None if node is None else Statement(line, statement_kind(node, self.names),
                                                   node)

    def assignments(self, name: str, within: tuple[int, int] | None = None
                    ) -> list[Statement]:
        """The statements that bind ``name`` (an assignment, an augmented one, a ``for``
        target), in line order, only those starting within ``within`` (first and last
        line) when given."""
        found = []
        for node in self.every:
            line = node.lineno
            if within is not None and not within[0] <= line <= within[1]:
                continue
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For | ast.AsyncFor):
                targets = [node.target]
            if any(isinstance(part, ast.Name) and part.id == name
                   for target in targets for part in ast.walk(target)):
                found.append(Statement(line, statement_kind(node, self.names), node))
        return found

    def enclosing(self, line: int) -> list[ast.stmt]:
        """The compound statements (``if``, ``for``, ``while``, ``with``, ``try``, ``def``)
        whose bodies hold ``line``, innermost first."""
        found = [node for node in self.every if _holds(node, line)]
        return sorted(found, key=lambda node: node.lineno, reverse=True)


def _holds(node: ast.stmt, line: int) -> bool:
    """Whether ``line`` lies in one of ``node``'s bodies (not in its header)."""
    for body in ("body", "orelse", "finalbody", "handlers"):
        block = getattr(node, body, None)
        if isinstance(block, list) and block and \
                block[0].lineno <= line <= (block[-1].end_lineno or block[-1].lineno):
            return True
    return False


def statement_kind(node: ast.stmt, names: Names) -> str:
    """What a statement does (module doc): a ``for`` by its iterable, an assignment or a
    ``return`` by its value, an ``if``/``while`` is a condition."""
    if isinstance(node, ast.If | ast.While):
        return CONDITION
    if isinstance(node, ast.For | ast.AsyncFor):
        return expression_kind(node.iter, names)
    if isinstance(node, ast.AugAssign):
        return LIBRARY if expression_kind(node.value, names) == LIBRARY else OPERATION
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.Return | ast.Expr):
        return MOVE if node.value is None else expression_kind(node.value, names)
    return expression_kind(node, names)


@lru_cache(maxsize=256)
def program_of(code: str) -> Program | None:
    """The program's statements and names; None when the code is not Python this
    interpreter reads."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    every = [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]
    statements: dict[int, ast.stmt] = {}
    for node in every:  # outer statements first: a one-line `if x: y = 1` is the `if`
        statements.setdefault(node.lineno, node)
    return Program(tree, Names.of(tree), statements,
                   tuple(sorted(every, key=lambda node: (node.lineno, node.col_offset))))
