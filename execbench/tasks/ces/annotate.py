"""The annotated program a simulation prompt shows: every site line ends with a comment
naming its placeholders, ``# [3a] i = ??  [3b] range(n) = ??``, whether or not the run
reaches it, so the annotations say nothing about the path taken. Comments are appended to
the line holding the header's ``:``, so every line keeps its number and the program its
meaning (checked: the annotated text must parse to the same tree)."""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from execbench.tasks.ces.payload import Property

_OPEN, _CLOSE = "([{", ")]}"


def annotate(code: str, properties: Sequence[Property], values: dict[str, str] | None = None
             ) -> str:
    """``code`` with each property's placeholder on its line; ``values`` (tag -> text)
    fills placeholders instead of ``??``. Raises ``ValueError`` if the comments would
    change the program (a header whose ``:`` cannot be found)."""
    notes: dict[int, list[str]] = {}
    for prop in properties:
        filled = "??" if values is None else values[prop.id]
        notes.setdefault(prop.line, []).append(f"[{prop.id}] {prop.label} = {filled}")
    lines = code.splitlines()
    colons = _header_colons(code, set(notes))
    for line, texts in notes.items():
        row = colons[line] - 1
        lines[row] = f"{lines[row]}  # " + "  ".join(texts)
    annotated = "\n".join(lines) + "\n"
    if ast.dump(ast.parse(annotated)) != ast.dump(ast.parse(code)):
        raise ValueError("annotating the program would change it")
    return annotated


def _header_colons(code: str, heads: set[int]) -> dict[int, int]:
    """For each statement starting on a line of ``heads``: the line of the ``:`` that ends
    its header (the first one outside brackets)."""
    starts = {node.lineno: (node.lineno, node.col_offset) for node in ast.walk(ast.parse(code))
              if isinstance(node, ast.For | ast.While | ast.If) and node.lineno in heads}
    tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    found: dict[int, int] = {}
    for line, start in starts.items():
        depth = 0
        for token in tokens:
            if token.start < start or token.type != tokenize.OP:
                continue
            if token.string in _OPEN:
                depth += 1
            elif token.string in _CLOSE:
                depth -= 1
            elif token.string == ":" and depth == 0:
                found[line] = token.start[0]
                break
        else:
            raise ValueError(f"no ':' ends the header at line {line}")
    return found
