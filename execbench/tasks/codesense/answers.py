"""Reading the answers only CodeSense questions take: a ``{name: value}`` mapping (block
questions) and a yes or no (branch questions). Values are read with the literal parser
only (``common.answers``); nothing is ever run."""

from __future__ import annotations

import ast

from execbench.tasks.common.answers import read_value
from execbench.values import Encoded, LiteralError, encode, literal_value


def read_mapping(text: str) -> Encoded:
    """A ``{name: value}`` answer, as a dict literal or as ``name = value`` lines, encoded
    as a typed-JSON dict with string keys."""
    try:
        value = read_value(text, assignment=True)
    except LiteralError:
        value = None
    if value is not None and value[0] == "dict":
        return value
    pairs = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            tree = ast.parse(line.strip())
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            raise LiteralError(f"not a dict literal or `name = value` line: {line.strip()[:60]}"
                               ) from None
        stmt = tree.body[0] if len(tree.body) == 1 else None
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1 or \
                not isinstance(stmt.targets[0], ast.Name):
            raise LiteralError(f"not a `name = value` line: {line.strip()[:60]}")
        pairs.append([["str", stmt.targets[0].id], encode(literal_value(stmt.value))])
    if not pairs:
        raise LiteralError("no dict literal or `name = value` lines")
    return ["dict", pairs]


def read_yes_no(text: str) -> bool | None:
    word = text.strip().strip("'\"`.!").lower()
    if word in ("yes", "true"):
        return True
    if word in ("no", "false"):
        return False
    return None
