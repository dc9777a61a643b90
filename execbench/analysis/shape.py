"""Static facts about a program's shape, from its syntax tree alone.

* **Executable lines**: the first line of every statement that produces a line event
  when it runs (docstrings, ``global``/``nonlocal`` and ``pass``-free ``else`` keywords
  do not). A line event on a continuation line of a multi-line statement is mapped back
  to the statement's first line (``statement_line``), as coverage tools report it.
* **Branches**: every ``if``/``elif``, ``else``, ``for``, ``while`` and loop ``else``, with
  the executable lines of its body (nested ones included) and, for an ``if``/``elif``, of
  its body with the arms after it (``chain``). A branch's line is its header, or the line
  of the ``else`` keyword.
* **Basic blocks**: maximal straight-line runs of statements in one body: simple statements
  and the header that ends the run (a loop header starts a block of its own).
* **Size and complexity**: lines of code (non-blank, non-comment), cyclomatic complexity
  (1 + decision points), and the construct category: CO (an ``if`` but no loop), LO (a
  loop but no ``if``), LC (both), Others (neither); only ``if``/``for``/``while``
  statements count, not comprehensions or conditional expressions.
* **Bins**: every binning of a size that tasks and reports group by is defined here, next
  to the others: ``LOC_BINS`` (a program's lines of code, the generalization study's DSL
  bins), ``FUNCTION_SIZE_BINS`` (the lines of code of the function a CodeSense question is
  asked in, the CodeSense paper's Table 12) and ``BLOCK_SIZE_BINS`` (the statements of a
  CodeSense block question). ``bin_order`` sorts the names of all of them. A function's
  lines of code are counted by ``function_loc``: ``loc``'s rule on the function's own text,
  in Python, C or Java.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass, field
from functools import lru_cache

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_BODIES = ("body", "orelse", "finalbody")


@dataclass(frozen=True)
class Branch:
    kind: str
    """``if``, ``elif``, ``else``, ``for``, ``while``, ``for-else`` or ``while-else``."""
    line: int
    body: frozenset[int]
    """Executable lines inside the branch's body, nested statements included."""
    decision: int
    """The line whose test decides whether the body runs (an ``else``'s ``if``/loop line)."""
    chain: frozenset[int] = frozenset()
    """For an ``if``/``elif``: its body with the ``elif``/``else`` arms after it, which is
    what DexBench's released code reads as the statement's body; else the body itself."""


@dataclass
class Shape:
    executable: frozenset[int]
    statement_line: dict[int, int]
    branches: list[Branch]
    blocks: list[frozenset[int]]
    function_lines: frozenset[int]
    """Executable lines inside function bodies (the part a call may leave unexecuted)."""
    loc: int
    cyclomatic: int
    category: str
    has_control_flow: bool = field(init=False)

    def __post_init__(self) -> None:
        self.has_control_flow = self.category != "Others"

    @property
    def outside_branches(self) -> frozenset[int]:
        inside = frozenset().union(*(b.body for b in self.branches))
        return self.executable - inside

    def normalise(self, lines: list[int] | set[int]) -> set[int]:
        """Traced line numbers as statement first lines, keeping only executable ones."""
        mapped = {self.statement_line.get(line, line) for line in lines}
        return mapped & self.executable


def _is_docstring(stmt: ast.stmt, parent: ast.AST) -> bool:
    body = getattr(parent, "body", None)
    return (isinstance(parent, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and body and body[0] is stmt and isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str))


def _header_end(stmt: ast.stmt) -> int:
    """Last line of a statement's own text: the whole of a simple statement, or the header
    of a compound one (up to the line before its first body statement)."""
    body = getattr(stmt, "body", None)
    if isinstance(body, list) and body:
        return max(stmt.lineno, body[0].lineno - 1)
    if isinstance(stmt, ast.Match):
        return max(stmt.lineno, stmt.cases[0].pattern.lineno - 1)
    return stmt.end_lineno or stmt.lineno


def _else_line(lines: list[str], before: int, after: int) -> int:
    """The line holding the ``else``/``finally`` keyword between two statements."""
    for number in range(before, after):
        text = lines[number - 1].strip() if 0 < number <= len(lines) else ""
        if text.startswith("else") or text.startswith("finally"):
            return number
    return after


class _Walker:
    def __init__(self, code: str) -> None:
        self.lines = code.splitlines()
        self.executable: set[int] = set()
        self.statement_line: dict[int, int] = {}
        self.branches: list[Branch] = []
        self.blocks: list[frozenset[int]] = []
        self.function_lines: set[int] = set()

    def body(self, stmts: list[ast.stmt], parent: ast.AST, in_function: bool) -> set[int]:
        """Walk one body; returns its executable lines (nested included)."""
        lines: set[int] = set()
        block: list[int] = []
        for stmt in stmts:
            if _is_docstring(stmt, parent) or isinstance(stmt, ast.Global | ast.Nonlocal):
                continue
            first = stmt.lineno
            # A decorator runs as its own line, as coverage tools count it.
            for decorator in getattr(stmt, "decorator_list", []):
                self._statement(decorator.lineno, decorator.end_lineno or decorator.lineno,
                                lines, in_function)
            self._statement(first, first, lines, in_function)
            for number in range(first, _header_end(stmt) + 1):
                self.statement_line.setdefault(number, first)
            compound = any(isinstance(getattr(stmt, n, None), list) and getattr(stmt, n)
                           for n in (*_BODIES, "handlers", "cases"))
            if not compound:
                block.append(first)
                continue
            # A loop header is a jump target, so it starts a block of its own; any other
            # header (if, def, with, try) ends the straight-line run it belongs to.
            if isinstance(stmt, _LOOPS):
                if block:
                    self.blocks.append(frozenset(block))
                block = [first]
            else:
                block.append(first)
            self.blocks.append(frozenset(block))
            block = []
            lines |= self.compound(stmt, in_function)
        if block:
            self.blocks.append(frozenset(block))
        return lines

    def _statement(self, first: int, last: int, lines: set[int], in_function: bool) -> None:
        self.executable.add(first)
        lines.add(first)
        if in_function:
            self.function_lines.add(first)
        for number in range(first, last + 1):
            self.statement_line.setdefault(number, first)

    def compound(self, stmt: ast.stmt, in_function: bool) -> set[int]:
        inner = in_function or isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef)
        lines = self.body(getattr(stmt, "body", []), stmt, inner)
        own = frozenset(lines)
        if getattr(stmt, "orelse", None):
            orelse = stmt.orelse
            is_elif = isinstance(stmt, ast.If) and len(orelse) == 1 and \
                isinstance(orelse[0], ast.If) and self._is_elif(orelse[0])
            else_lines = self.body(orelse, stmt, inner)
            if not is_elif:
                kind = "else" if isinstance(stmt, ast.If) else \
                    "while-else" if isinstance(stmt, ast.While) else \
                    "for-else" if isinstance(stmt, _LOOPS) else "else"
                line = _else_line(self.lines, (stmt.body[-1].end_lineno or stmt.lineno) + 1,
                                  orelse[0].lineno)
                if isinstance(stmt, ast.If | ast.While | ast.For | ast.AsyncFor):
                    self.branches.append(Branch(kind, line, frozenset(else_lines), stmt.lineno,
                                                frozenset(else_lines)))
            lines |= else_lines
        if isinstance(stmt, ast.If | ast.While | ast.For | ast.AsyncFor):
            kind = "while" if isinstance(stmt, ast.While) else \
                "for" if isinstance(stmt, _LOOPS) else \
                "elif" if self._is_elif(stmt) else "if"
            chain = frozenset(lines) if isinstance(stmt, ast.If) else own
            self.branches.append(Branch(kind, stmt.lineno, own, stmt.lineno, chain))
        for handler in getattr(stmt, "handlers", []) or []:
            self._statement(handler.lineno, handler.lineno, lines, inner)
            lines |= self.body(handler.body, handler, inner)
        for case in getattr(stmt, "cases", []) or []:
            self._statement(case.pattern.lineno, max(case.pattern.lineno,
                                                     case.body[0].lineno - 1), lines, inner)
            lines |= self.body(case.body, case, inner)
        if getattr(stmt, "finalbody", None):
            lines |= self.body(stmt.finalbody, stmt, inner)
        return lines

    def _is_elif(self, node: ast.If) -> bool:
        text = self.lines[node.lineno - 1][node.col_offset:] if node.lineno <= len(self.lines) \
            else ""
        return text.startswith("elif")


LOC_BINS: tuple[tuple[int, int], ...] = ((4, 7), (8, 11), (12, 15), (16, 19), (20, 24))
"""The lines-of-code bins of the generalization study: the DSL generator fills them and
the generalization metrics and report group by them."""


def loc_bin(lines: int) -> str:
    """The bin's name (``"8-11"``), or ``"<4"`` / ``">24"`` outside them."""
    for low, high in LOC_BINS:
        if low <= lines <= high:
            return f"{low}-{high}"
    return f"<{LOC_BINS[0][0]}" if lines < LOC_BINS[0][0] else f">{LOC_BINS[-1][1]}"


def bin_order(name: str) -> tuple[int, str]:
    """Sort key for bin names (results.json sorts keys alphabetically: "12-15" < "4-7")."""
    digits = "".join(c if c.isdigit() else " " for c in name).split()
    low = int(digits[0]) if digits else 0
    return (low + (1 if name.startswith(">") else -1 if name.startswith("<") else 0), name)


@dataclass(frozen=True)
class SizeBins:
    """Ranges of a whole-number size, each named by its bounds (``"10-19"``, ``"3"``, and
    ``"20+"`` for the open last one); a size below the first range is ``"<N"``. Reports
    keep the raw sizes in ``results.json`` and bin them when they show them, so that the
    bins can change without scoring a run again."""

    bins: tuple[tuple[int, int | None], ...]
    """(lowest, highest) sizes of each range, in order; the last may be open (None)."""
    labels: tuple[str, ...] = ()
    """A word for each range, where a paper names them (``small``), shown before it."""

    @staticmethod
    def _name(low: int, high: int | None) -> str:
        return f"{low}+" if high is None else str(low) if low == high else f"{low}-{high}"

    @property
    def names(self) -> tuple[str, ...]:
        """Every range's name, in order."""
        return tuple(self._name(low, high) for low, high in self.bins)

    def of(self, size: int) -> str:
        """The name of the range ``size`` falls in."""
        for low, high in self.bins:
            if low <= size and (high is None or size <= high):
                return self._name(low, high)
        return f"<{self.bins[0][0]}" if size < self.bins[0][0] else f">{self.bins[-1][1]}"

    def label(self, name: str) -> str:
        """A range's name with its word where it has one (``small: 1-9``)."""
        words = dict(zip(self.names, self.labels, strict=False))
        return f"{words[name]}: {name}" if name in words else name


FUNCTION_SIZE_BINS = SizeBins(((1, 9), (10, 19), (20, None)), ("small", "medium", "large"))
"""The lines of code of the function a CodeSense question is asked in (``function_loc``):
the CodeSense paper's function sizes (Table 12, Appendix A.14), small up to 9 lines,
medium up to 19, large from 20. The paper's table writes medium as ``10 < length <= 19``,
which files a 10-line function nowhere; it is medium here."""

BLOCK_SIZE_BINS = SizeBins(((1, 1), (2, 2), (3, 3), (4, 7), (8, 15), (16, 31), (32, 63),
                            (64, None)))
"""The statements of a CodeSense block question (its kind ``block-k``): the paper's block
sizes 1, 2 and 3 each alone (its Figure 3a), then doubling ranges for the longer blocks
the published C file asks about (up to 247 statements)."""


def loc(code: str) -> int:
    """Lines holding code: not blank, not only a comment (docstrings count, as in most
    tools). The one lines-of-code rule: suites, the DSL's bins and reports all use it."""
    comment_only: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.COMMENT:
                line = token.start[0]
                if code.splitlines()[line - 1].strip().startswith("#"):
                    comment_only.add(line)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return sum(1 for n, text in enumerate(code.splitlines(), 1)
               if text.strip() and n not in comment_only)


def c_like_loc(code: str) -> int:
    """``loc``'s rule for C and Java text: lines holding code, not blank and not only
    comment (``//`` to the line's end, ``/* ... */`` over any lines). A string or
    character literal is code, and a comment mark inside one is not a comment; a literal
    ends at its line's end (one the text leaves open does not swallow the rest)."""
    counted: set[int] = set()
    state = ""  # in code (empty), a ``//`` or ``/*`` comment, or a literal (its quote)
    line, index, end = 1, 0, len(code)
    while index < end:
        char = code[index]
        if char == "\n":
            line += 1
            state = "" if state != "/*" else state
        elif state == "/*":
            if code.startswith("*/", index):
                state, index = "", index + 1
        elif state in ("'", '"'):
            counted.add(line)
            if char == "\\" and code[index + 1:index + 2] not in ("", "\n"):
                index += 1
            elif char == state:
                state = ""
        elif state == "":
            if code.startswith(("//", "/*"), index):
                state, index = code[index:index + 2], index + 1
            elif not char.isspace():
                counted.add(line)
                state = char if char in "'\"" else ""
        index += 1
    return len(counted)


@lru_cache(maxsize=4096)
def function_loc(code: str, entry_point: str, language: str = "python") -> int:
    """The lines of code of the function a question is asked in (``FUNCTION_SIZE_BINS``
    bins them). Python: ``loc`` of the top-level function ``entry_point`` names, from its
    first decorator to its last line (a module's other functions and imports do not
    count), or of the whole text where no such function parses. C and Java: the whole text
    (a published record is the one function), by ``c_like_loc``. The CodeSense authors'
    ``code_length`` counts every non-blank line, comment lines too."""
    if language != "python":
        return c_like_loc(code)
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return loc(code)
    function = next((node for node in tree.body if isinstance(
        node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == entry_point), None)
    if function is None:
        return loc(code)
    first = min([function.lineno, *(d.lineno for d in function.decorator_list)])
    return loc("\n".join(code.splitlines()[first - 1:function.end_lineno]))


def cyclomatic(tree: ast.AST) -> int:
    """1 + decision points: if/elif, loops, except clauses, match cases, conditional
    expressions, comprehension ``for``s and ``if``s, and each extra boolean operand."""
    points = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.If | ast.IfExp | ast.For | ast.AsyncFor | ast.While |
                      ast.ExceptHandler | ast.match_case):
            points += 1
        elif isinstance(node, ast.comprehension):
            points += 1 + len(node.ifs)
        elif isinstance(node, ast.BoolOp):
            points += len(node.values) - 1
    return 1 + points


def code_category(code: str) -> str:
    """The construct category (``category``) of source text; ``unparsed`` when it does
    not parse."""
    try:
        return category(ast.parse(code))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "unparsed"


def category(tree: ast.AST) -> str:
    has_if = any(isinstance(n, ast.If) for n in ast.walk(tree))
    has_loop = any(isinstance(n, _LOOPS) for n in ast.walk(tree))
    return "LC" if has_if and has_loop else "CO" if has_if else "LO" if has_loop else "Others"


@lru_cache(maxsize=4096)
def shape_of(code: str) -> Shape:
    """``analyse``, remembered: a build asks about the same program once per task and call."""
    return analyse(code)


def analyse(code: str) -> Shape:
    tree = ast.parse(code)
    walker = _Walker(code)
    walker.body(tree.body, tree, in_function=False)
    branches = sorted(walker.branches, key=lambda b: b.line)
    return Shape(executable=frozenset(walker.executable), statement_line=walker.statement_line,
                 branches=branches, blocks=walker.blocks,
                 function_lines=frozenset(walker.function_lines), loc=loc(code),
                 cyclomatic=cyclomatic(tree), category=category(tree))
