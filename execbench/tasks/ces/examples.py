"""The worked examples a simulation prompt may show, and how one is picked.

The pool covers the construct mixes the paper lists (if, elif, nested if, for, while,
nested loops, if inside or after a loop, if inside nested loops). The example shown with a
program is the one whose construct features (``features``) overlap the program's most
(Jaccard similarity, ties to the earlier one in the pool); a program without loops or
conditions gets the first. No answer is written here: the build traces each example with
the same tracer and recorder as the programs, and the answer shown is the one
``reference/oracle`` would give, so it cannot disagree with what the code does.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class Example:
    name: str
    code: str
    entry_point: str
    args: str


POOL = (
    Example("if", """\
def describe(n):
    if n % 2 == 0 and n > 0:
        return 'positive even'
    return 'other'
""", "describe", "6"),
    Example("elif", """\
def grade(score):
    if score >= 90:
        return 'A'
    elif score >= 75:
        return 'B'
    elif score >= 60 or score == 0:
        return 'C'
    return 'F'
""", "grade", "72"),
    Example("nested if", """\
def quadrant(x, y):
    if x > 0:
        if y > 0:
            return 1
        return 4
    if y > 0:
        return 2
    return 3
""", "quadrant", "3, -2"),
    Example("for", """\
def total_length(words):
    total = 0
    for word in words:
        total += len(word)
    return total
""", "total_length", "['ab', 'cde']"),
    Example("while", """\
def count_digits(n):
    count = 0
    while n > 0:
        n //= 10
        count += 1
    return count
""", "count_digits", "407"),
    Example("nested loops", """\
def pair_sums(xs, ys):
    sums = []
    for x in xs:
        for y in ys[:2]:
            sums.append(x + y)
    return sums
""", "pair_sums", "[1, 2], [10, 20, 30]"),
    Example("if inside for", """\
def late_vowels(text):
    count = 0
    for i, ch in enumerate(text.lower()):
        if ch in 'aeiou' and i > 0:
            count += 1
    return count
""", "late_vowels", "'Idea'"),
    Example("if inside while", """\
def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps
""", "collatz_steps", "6"),
    Example("if after loop", """\
def mean(values):
    total = 0
    for v in values:
        total += v
    if len(values) == 0:
        return 0.0
    return total / len(values)
""", "mean", "[2, 4, 9]"),
    Example("if inside nested loops", """\
def find_pair(xs, target):
    for i in range(len(xs)):
        for j in range(i + 1, len(xs)):
            if xs[i] + xs[j] == target:
                return (i, j)
    return None
""", "find_pair", "[3, 1, 4, 2], 6"),
)

_LOOPS = (ast.For, ast.While)


def features(code: str) -> frozenset[str]:
    """The construct mix of a program: which of if, elif, nested if, for, while, nested
    loops, if inside a loop, if outside every loop, and/or in a condition it has."""
    found: set[str] = set()
    _walk(ast.parse(code), loops=0, ifs=0, found=found, lines=code.splitlines())
    return frozenset(found)


def _walk(node: ast.AST, loops: int, ifs: int, found: set[str], lines: list[str]) -> None:
    for child in ast.iter_child_nodes(node):
        inner_loops, inner_ifs = loops, ifs
        if isinstance(child, _LOOPS):
            found.add("for" if isinstance(child, ast.For) else "while")
            if loops:
                found.add("nested loops")
            inner_loops += 1
        if isinstance(child, ast.If):
            is_elif = lines[child.lineno - 1][child.col_offset:].startswith("elif")
            found.add("elif" if is_elif else "if")
            if ifs and not is_elif:
                found.add("nested if")
            found.add("if inside a loop" if loops else "if outside loops")
            inner_ifs += 0 if is_elif else 1
        if isinstance(child, ast.If | ast.While) and isinstance(child.test, ast.BoolOp):
            found.add("and/or")
        _walk(child, inner_loops, inner_ifs, found, lines)


def pick(code: str) -> Example:
    """The pool example whose features overlap the program's most."""
    wanted = features(code)

    def similarity(example: Example) -> float:
        theirs = features(example.code)
        return len(wanted & theirs) / len(wanted | theirs)

    return max(POOL, key=similarity)
