"""Single-site program mutation operators (the generalization paper's Table 1).

Operators: arithmetic (``+ - * / // % **``, also in augmented assignments, each swapped for
every other of its kind), relational (``< <= > >= == !=``), logical (``and``/``or``
swapped, a ``not`` dropped), keyword (``break``/``continue``, ``True``/``False``), and
numeric literal (``n -> n+1``, ``n -> n-1``, ``0 <-> 1``).

Edits are made on the source text at the exact token, so a mutant differs from its
original at one place and every other byte is kept (comments, layout, line numbers).
Sites come from the syntax tree, so ``*args``, unary minus or ``**kwargs`` are never
mistaken for operators.

This module only transforms source text; ``mutation.search`` runs the mutants.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from execbench.json_types import JSONObject

ARITHMETIC = ("+", "-", "*", "/", "//", "%", "**")
RELATIONAL = ("<", "<=", ">", ">=", "==", "!=")
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
           ast.Mod: "%", ast.Pow: "**"}
_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


@dataclass(frozen=True)
class Mutant:
    code: str
    operator: str
    """``arithmetic``, ``relational``, ``logical``, ``keyword`` or ``numeric``."""
    line: int
    column: int
    before: str
    after: str

    def describe(self) -> JSONObject:
        return {"operator": self.operator, "line": self.line, "column": self.column,
                "before": self.before, "after": self.after}


def _lines(code: str) -> list[str]:
    """Lines as Python numbers them: split at \\n, \\r\\n and \\r only (``splitlines``
    would also split at form feeds and U+2028 inside strings)."""
    return io.StringIO(code, newline="").readlines()


def _offsets(code: str) -> list[int]:
    """Character offset of the start of each line (1-based line numbers)."""
    starts = [0, 0]
    for line in _lines(code):
        starts.append(starts[-1] + len(line))
    return starts


class _Sites:
    """Every mutable site of a program as (operator kind, line, col, end col, text, choices)."""

    def __init__(self, code: str) -> None:
        self.code = code
        self.lines = _lines(code)
        self.tree = ast.parse(code)
        self.tokens = [t for t in tokenize.generate_tokens(io.StringIO(code).readline)
                       if t.type in (tokenize.OP, tokenize.NAME, tokenize.NUMBER)]

    def _token_after(self, token: tokenize.TokenInfo) -> tokenize.TokenInfo | None:
        for candidate in self.tokens:
            if candidate.start >= token.end:
                return candidate
        return None

    def _token_between(self, text: str, start: tuple[int, int], end: tuple[int, int]):
        for token in self.tokens:
            if start <= token.start and token.end <= end and token.string == text:
                return token
        return None

    def sites(self) -> list[tuple[str, int, int, int, str, tuple[str, ...]]]:
        found = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
                found += self._operator(_BINOPS[type(node.op)], node.left, node.right,
                                        "arithmetic", ARITHMETIC)
            elif isinstance(node, ast.AugAssign) and type(node.op) in _BINOPS:
                text = _BINOPS[type(node.op)] + "="
                token = self._token_between(text, self._end(node.target), self._start(node.value))
                if token:
                    choices = tuple(op + "=" for op in ARITHMETIC if op + "=" != text)
                    found.append(("arithmetic", *token.start, token.end[1], text, choices))
            elif isinstance(node, ast.Compare):
                left = node.left
                for op, right in zip(node.ops, node.comparators, strict=True):
                    if type(op) in _CMPOPS:
                        found += self._operator(_CMPOPS[type(op)], left, right, "relational",
                                                RELATIONAL)
                    left = right
            elif isinstance(node, ast.BoolOp):
                text, other = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
                for left, right in zip(node.values, node.values[1:], strict=False):
                    token = self._token_between(text, self._end(left), self._start(right))
                    if token:
                        found.append(("logical", *token.start, token.end[1], text, (other,)))
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                token = self._token_between("not", self._start(node), self._start(node.operand))
                if token:
                    # Drop "not" and the blanks up to the next token (a bracket, say).
                    following = self._token_after(token)
                    end = following.start[1] if following and \
                        following.start[0] == token.start[0] else token.end[1]
                    found.append(("logical", *token.start, end,
                                  self._text(token.start[0], token.start[1], end), ("",)))
            elif isinstance(node, ast.Break | ast.Continue):
                text = "break" if isinstance(node, ast.Break) else "continue"
                other = "continue" if text == "break" else "break"
                found.append(("keyword", *self._span(node), text, (other,)))
            elif isinstance(node, ast.Constant) and type(node.value) is bool:
                text = str(node.value)
                found.append(("keyword", *self._span(node), text,
                              ("False" if node.value else "True",)))
            elif isinstance(node, ast.Constant) and type(node.value) in (int, float) \
                    and node.lineno == node.end_lineno:
                value = node.value
                line, start, end = self._span(node)
                text = self._text(line, start, end)
                if _literal_text(text) != value:  # e.g. a constant inside an f-string
                    continue
                options = [value + 1, value - 1]
                if value == 0:
                    options.append(1)
                elif value == 1:
                    options.append(0)
                choices = tuple(dict.fromkeys(repr(v) if v >= 0 else f"({v!r})"
                                              for v in options))
                found.append(("numeric", line, start, end, text, choices))
        return sorted(set(found), key=lambda s: (s[1], s[2], s[0]))

    def _operator(self, text, left, right, kind, family):
        token = self._token_between(text, self._end(left), self._start(right))
        if token is None:
            return []
        return [(kind, *token.start, token.end[1], text, tuple(op for op in family if op != text))]

    def _text(self, line: int, start: int, end: int) -> str:
        return self.lines[line - 1][start:end]

    def _column(self, line: int, byte_column: int) -> int:
        """The character column of an AST position (which counts UTF-8 bytes)."""
        return len(self.lines[line - 1].encode()[:byte_column].decode("utf-8", "replace"))

    def _start(self, node: ast.AST) -> tuple[int, int]:
        return node.lineno, self._column(node.lineno, node.col_offset)

    def _end(self, node: ast.AST) -> tuple[int, int]:
        return node.end_lineno, self._column(node.end_lineno, node.end_col_offset)

    def _span(self, node: ast.AST) -> tuple[int, int, int]:
        """(line, start column, end column) in characters, for a one-line node."""
        return node.lineno, self._start(node)[1], self._end(node)[1]


def _literal_text(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None


def mutants(code: str) -> list[Mutant]:
    """Every single-site mutant of ``code`` that still parses, in source order."""
    offsets = _offsets(code)
    original = ast.dump(ast.parse(code))
    result: list[Mutant] = []
    seen = {code}
    for kind, line, col, end_col, text, choices in _Sites(code).sites():
        start, stop = offsets[line] + col, offsets[line] + end_col
        for choice in choices:
            mutated = code[:start] + choice + code[stop:]
            if mutated in seen:
                continue
            seen.add(mutated)
            try:
                if ast.dump(ast.parse(mutated)) == original:
                    continue
            except SyntaxError:
                continue
            result.append(Mutant(mutated, kind, line, col, text, choice))
    return result
