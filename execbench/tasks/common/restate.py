"""A dataset call's arguments written as literals, where the dataset wrote expressions.

HumanEval writes ``candidate(3 * 19)`` and CRUXEval ``f(''.join(['A'] * 20))``. A task that
asks a model for arguments (input prediction) must not show such text, since it is the
answer in all but name; one that gives arguments as the answer's shape (the oracle's reply)
must state them as literals the answer parser reads. The value of each such argument is the
one the sandbox traced when the call was made, so nothing here evaluates anything.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from execbench.tasks.common.answers import is_literal
from execbench.values import LiteralError, is_exact, parse_call_nodes, to_literal

if TYPE_CHECKING:
    from execbench.sandbox.trace import Trace


def stated_as_values(args: str, trace: Trace) -> str | None:
    """``args`` with every argument that is an expression with a literal value written as
    that value (``3 * 19`` becomes ``57``); arguments already literal keep their text, and
    those with no literal form (a lambda) too. None when no argument changes, or when the
    traced values cannot be lined up with the text (a ``*`` or ``**`` argument)."""
    try:
        nodes, keywords = parse_call_nodes(args)
    except LiteralError:
        return None
    if any(isinstance(node, ast.Starred) for node in nodes) or \
            any(kw.arg is None for kw in keywords) or trace.args is None:
        return None
    wrapped = f"_({args}\n)"  # the text parse_call_nodes reads, so offsets match
    values = dict(enumerate(trace.args))
    kwargs = trace.kwargs or {}
    parts: list[str] = []
    changed = False
    for key, node in [*enumerate(nodes), *((kw.arg, kw.value) for kw in keywords)]:
        value = values.get(key) if isinstance(key, int) else kwargs.get(str(key))
        text = ast.get_source_segment(wrapped, node) or ast.unparse(node)
        if not is_literal(node) and value is not None and is_exact(value):
            text, changed = to_literal(value), True
        parts.append(text if isinstance(key, int) else f"{key}={text}")
    return ", ".join(parts) if changed else None
