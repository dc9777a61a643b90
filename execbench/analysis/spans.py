"""Where a definition's source text starts.

A decorated function's code reports the line of its first decorator as its first line
(``co_firstlineno``), and that is where its source text begins: a frame is matched to its
``def`` by that line, and a function is cut out of its module from it.
"""

from __future__ import annotations

import ast


def first_line(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> int:
    """The first line of a definition, its decorators included."""
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])
