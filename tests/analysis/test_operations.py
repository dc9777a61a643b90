"""Statement kinds read from the syntax tree: conditions, library calls (builtins, the
standard library, builtin types' methods), operations and moves, with the program's own
names taking precedence over the builtins they shadow."""

from __future__ import annotations

import pytest

from execbench.analysis.operations import CONDITION, LIBRARY, MOVE, OPERATION, program_of

CODE = """\
import math
from bisect import insort
from helpers import tidy


class Box:
    def append(self, x):
        return x


def f(xs, s, box):
    n = len(xs)
    words = s.split(',')
    root = math.floor(n / 2)
    insort(xs, 3)
    total = n * 2 + 1
    total += len(words)
    first = xs[0]
    a, b = first, total
    c = 100
    clean = tidy(s)
    box.append(1)
    evens = [x for x in xs if x % 2 == 0]
    if total > 3: total = 0
    while n > 0:
        n -= 1
    for i in range(n):
        pass
    for w in words:
        pass
    return first
"""


@pytest.mark.parametrize(("line", "kind"), [
    (12, LIBRARY), (13, LIBRARY), (14, LIBRARY), (15, LIBRARY), (16, OPERATION),
    (17, LIBRARY), (18, MOVE), (19, MOVE), (20, MOVE), (21, OPERATION),
    (22, OPERATION), (23, OPERATION), (24, CONDITION), (25, CONDITION), (26, OPERATION),
    (27, LIBRARY), (29, MOVE), (31, MOVE),
])
def test_each_statement_gets_its_kind(line: int, kind: str) -> None:
    program = program_of(CODE)
    assert program is not None
    found = program.statement(line)
    assert found is not None and found.kind == kind


def test_a_builtin_the_program_rebinds_is_its_own() -> None:
    program = program_of("def sorted(xs):\n    return xs\n\n\ndef f(xs):\n"
                         "    ys = sorted(xs)\n    zs = len(xs)\n    return ys\n")
    assert program is not None
    assert [program.statement(line).kind for line in (6, 7)] == [OPERATION, LIBRARY]


def test_assignments_and_the_statements_around_a_line() -> None:
    program = program_of(CODE)
    assert program is not None
    assert [s.line for s in program.assignments("total")] == [16, 17, 24]
    assert [s.line for s in program.assignments("n", (25, 26))] == [26]
    assert [node.lineno for node in program.enclosing(26)][:2] == [25, 11]


def test_code_that_does_not_parse_has_no_statements() -> None:
    assert program_of("def f(:\n") is None
