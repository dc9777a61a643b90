"""A definition's first line counts its decorators, as its code's first line does."""

from __future__ import annotations

import ast
import types

from execbench.analysis.spans import first_line

CODE = """\
import functools


@functools.cache
@staticmethod
def f(x):
    return x


def g():
    pass
"""


def test_the_first_decorator_starts_a_definition_as_its_code_reports() -> None:
    f, g = ast.parse(CODE).body[1:]
    assert (first_line(f), f.lineno) == (4, 6)
    assert first_line(g) == g.lineno == 10
    reported = {const.co_name: const.co_firstlineno
                for const in compile(CODE, "<program>", "exec").co_consts
                if isinstance(const, types.CodeType)}
    assert reported == {"f": first_line(f), "g": first_line(g)}
