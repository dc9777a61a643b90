"""The syntax tree as a key (what the duplicate filters compare): layout and comments aside,
names kept, and a tree too deep for ``ast.dump`` (a hostile program) read without a
crash."""

from __future__ import annotations

import ast
from collections.abc import Callable

import pytest

from execbench.analysis.syntax import tree_key


def test_layout_and_comments_do_not_count_but_names_do() -> None:
    plain = tree_key("def f(x):\n    return x + 1\n")
    assert tree_key("def f( x ):  # add one\n    return (x+1)\n") == plain
    assert tree_key("def f(y):\n    return y + 1\n") != plain
    assert tree_key("def f(x):\n    return x + '1'\n") != plain
    assert tree_key("def f(x):\n    return [x + 1]\n") != plain


# A chain of additions: its tree is some 900 levels deep, and ``ast.dump`` takes a Python
# frame a level, so called from a deeper stack (as inside a build) it dies on it.
CHAIN = "def total(a: int) -> int:\n    return " + " + ".join(["a"] * 900)


def _from_deeper(levels: int, read: Callable[[str], object]) -> object:
    return _from_deeper(levels - 1, read) if levels else read(CHAIN)


def test_a_tree_too_deep_for_ast_dump_is_compared() -> None:
    with pytest.raises(RecursionError):
        _from_deeper(150, lambda code: ast.dump(ast.parse(code)))
    assert _from_deeper(150, tree_key) == tree_key(CHAIN.replace(" + ", "+"))
    assert tree_key(CHAIN) != tree_key(CHAIN.replace("+ a", "- a", 1))
