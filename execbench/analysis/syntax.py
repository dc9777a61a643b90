"""A program's syntax tree as a key: what the duplicate filters compare (contest solutions'
``--dedupe ast``, the programs ``generate-programs`` keeps)."""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from typing import Any


def tree_key(code: str) -> str:
    """A digest of the code's syntax tree without positions: equal for solutions that
    differ only in layout and comments. What ``ast.dump`` writes, but walked with a stack
    of its own: a long chain (``a + a + ... + a``) parses into a tree deeper than Python's
    recursion limit, which ``ast.dump`` would die on."""
    digest = hashlib.sha256()
    stack: list[Any] = [ast.parse(code)]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.AST):
            digest.update(f"{type(item).__name__}(".encode())
            stack.append(_CLOSE)
            for name in reversed(item._fields):
                stack.extend((getattr(item, name, None), _Mark(f"{name}=")))
        elif isinstance(item, list):
            digest.update(b"[")
            stack.append(_CLOSE_LIST)
            stack.extend(reversed(item))
        elif isinstance(item, _Mark):
            digest.update(item.text.encode())
        else:
            digest.update(f"{type(item).__name__}:{item!r},".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class _Mark:
    """Punctuation of ``tree_key``'s walk, told apart from the tree's own strings."""

    text: str


_CLOSE, _CLOSE_LIST = _Mark(")"), _Mark("]")
