"""Static program shape: executable lines, branches, basic blocks, size and complexity.

Every expected value here was worked out by hand from the program text (and the
executable lines were checked once against coverage.py's statement lines).
"""

from __future__ import annotations

import ast
import textwrap

import pytest

from execbench.analysis.shape import Branch, analyse, category, cyclomatic

SAMPLE_492 = """\
def f(text, value):
    ls = list(text)
    if (ls.count(value)) % 2 == 0:
        while value in ls:
            ls.remove(value)
    else:
        ls.clear()
    return ''.join(ls)"""

# One program with most of the statement kinds the analysis treats specially.
MIXED = '''\
"""Module docstring: not a statement that runs."""
import math

COUNT = 0


def grade(score):
    """Letter for a score."""
    global COUNT
    COUNT += 1
    if score >= 90:
        return "A"
    elif score >= 80:
        return "B"
    elif score >= 70:
        return "C"
    else:
        return "F"


def find(items, wanted):
    total = (1 +
             2 +
             3)
    for item in items:
        if item == wanted:
            break
    else:
        total = 0
    n = total
    while n > 0:
        n -= 1
    else:
        n = -1
    try:
        value = items[0]
    except IndexError:
        value = math.inf
    return value, n
'''


def branch_map(code: str) -> dict[tuple[str, int], tuple[set[int], int]]:
    return {(b.kind, b.line): (set(b.body), b.decision) for b in analyse(code).branches}


# --- CRUXEval sample_492 ------------------------------------------------------------------

def test_sample_492_by_hand() -> None:
    shape = analyse(SAMPLE_492)
    assert shape.executable == {1, 2, 3, 4, 5, 7, 8}  # line 6 is the `else:` keyword
    assert shape.branches == [
        Branch("if", 3, frozenset({4, 5}), 3, frozenset({4, 5, 7})),
        Branch("while", 4, frozenset({5}), 4, frozenset({5})),
        Branch("else", 6, frozenset({7}), 3, frozenset({7})),
    ]
    assert (shape.loc, shape.cyclomatic, shape.category) == (8, 3, "LC")
    assert shape.has_control_flow
    assert sorted(sorted(b) for b in shape.blocks) == [[1], [2, 3], [4], [5], [7], [8]]
    assert shape.function_lines == {2, 3, 4, 5, 7, 8}
    assert shape.outside_branches == {1, 2, 3, 8}


# --- a program with elif chains, loop else, try, docstrings, global ----------------------

def test_mixed_program_executable_lines() -> None:
    shape = analyse(MIXED)
    # Not executable: the module and function docstrings (1, 8), `global` (9), the
    # `else:` keywords (17, 28, 33) and the continuation lines of `total = (...)` (23-24).
    assert shape.executable == {2, 4, 7, 10, 11, 12, 13, 14, 15, 16, 18, 21, 22, 25, 26,
                                27, 29, 30, 31, 32, 34, 35, 36, 37, 38, 39}
    assert shape.function_lines >= shape.executable - {2, 4, 7, 21, 37}
    assert not shape.function_lines & {2, 4, 7, 21}


def test_except_line_is_a_function_line() -> None:
    shape = analyse(MIXED)
    assert 37 in shape.function_lines


def test_mixed_program_branches() -> None:
    assert branch_map(MIXED) == {
        ("if", 11): ({12}, 11),
        ("elif", 13): ({14}, 13),
        ("elif", 15): ({16}, 15),
        ("else", 17): ({18}, 15),  # decided by the last `elif`
        ("for", 25): ({26, 27}, 25),
        ("if", 26): ({27}, 26),
        ("for-else", 28): ({29}, 25),
        ("while", 31): ({32}, 31),
        ("while-else", 33): ({34}, 31),
    }


def test_continuation_lines_map_to_the_first_line() -> None:
    shape = analyse(MIXED)
    assert {line: shape.statement_line[line] for line in (22, 23, 24)} == {22: 22, 23: 22,
                                                                           24: 22}
    # A tracer may report a continuation line; docstrings, `global` and `else:` are dropped.
    assert shape.normalise([1, 8, 9, 10, 17, 23, 24, 33]) == {10, 22}


def test_mixed_program_size_and_complexity() -> None:
    shape = analyse(MIXED)
    assert shape.loc == 34  # 39 lines, 5 of them blank
    # Decision points: if, 2 elif, for, if, while, except.
    assert shape.cyclomatic == 8
    assert shape.category == "LC"


def test_multi_line_headers_and_calls() -> None:
    code = textwrap.dedent("""\
        def f(mode, xs):
            box = dict(
                a=1,
            )
            if (mode == "a" or
                    mode == "b"):
                pass
            with open(__file__) as fh:
                first = fh.readline()
            squash = lambda v: (
                v + 1
            )
            return (box, first,
                    squash(1))
        """)
    shape = analyse(code)
    assert shape.executable == {1, 2, 5, 7, 8, 9, 10, 13}
    assert {n: shape.statement_line[n] for n in (3, 4, 6, 11, 12, 14)} == \
        {3: 2, 4: 2, 6: 5, 11: 10, 12: 10, 14: 13}
    # The `if` header spans two lines; its body is the `pass`.
    assert branch_map(code) == {("if", 5): ({7}, 5)}


def test_try_handlers_and_bodies_are_executable() -> None:
    code = textwrap.dedent("""\
        def f(x):
            try:
                y = 1 / x
            except ZeroDivisionError:
                y = 0
            else:
                y += 1
            finally:
                x = None
            return y
        """)
    shape = analyse(code)
    assert shape.executable == {1, 2, 3, 4, 5, 7, 9, 10}
    assert shape.branches == []  # try/except is not a branch the targets use
    assert shape.cyclomatic == 2
    assert shape.category == "Others"


def test_nested_function_and_class_bodies() -> None:
    code = textwrap.dedent('''\
        class Box:
            """A box."""
            size = 3

            def grow(self, by):
                def step(n):
                    nonlocal by
                    return n + by
                return step(self.size)
        ''')
    shape = analyse(code)
    assert shape.executable == {1, 3, 5, 6, 8, 9}
    # Class-level lines run with the module; only function bodies can be left unexecuted.
    assert shape.function_lines == {6, 8, 9}


def test_decorator_line_is_a_statement() -> None:
    code = textwrap.dedent("""\
        @staticmethod
        def f(x):
            return x
        """)
    shape = analyse(code)
    assert shape.executable == {1, 2, 3}
    # A module run reports line events on the decorator and on the `def`.
    assert shape.normalise([1, 2]) == {1, 2}


def test_match_statement() -> None:
    code = textwrap.dedent("""\
        def f(x):
            match x:
                case 1:
                    return "one"
                case [a,
                      b]:
                    return "pair"
                case _:
                    return "other"
        """)
    shape = analyse(code)
    # coverage.py's statements: the `match`, each `case` and each body line.
    assert shape.executable == {1, 2, 3, 4, 5, 7, 8, 9}
    # f([1, 2]) reports lines 1, 2, 3, 5, 6 (the pattern's second line) and 7.
    assert shape.normalise([1, 2, 3, 5, 6, 7]) == {1, 2, 3, 5, 7}


# --- basic blocks -------------------------------------------------------------------------

def test_basic_blocks() -> None:
    code = textwrap.dedent("""\
        def f(xs):
            a = 1
            b = 2
            for x in xs:
                a += x
                b -= x
            c = a + b
            if c:
                c = 0
            return c
        """)
    blocks = sorted(sorted(b) for b in analyse(code).blocks)
    # A loop header starts a block of its own; an `if` header ends the run before it.
    assert blocks == [[1], [2, 3], [4], [5, 6], [7, 8], [9], [10]]


def test_blocks_are_disjoint_runs_of_executable_lines() -> None:
    shape = analyse(MIXED)
    seen: set[int] = set()
    for block in shape.blocks:
        assert block <= shape.executable
        assert not block & seen
        seen |= block
    assert [2, 4, 7] in [sorted(b) for b in shape.blocks]  # module level up to the `def`


# --- construct category -------------------------------------------------------------------

@pytest.mark.parametrize(("body", "expected"), [
    ("return x + 1", "Others"),
    ("return [y for y in x if y]", "Others"),
    ("return 1 if x else 2", "Others"),
    ("return {k: v for k, v in x.items() if v}", "Others"),
    ("if x:\n    return 1\nreturn 2", "CO"),
    ("for y in x:\n    print(y)", "LO"),
    ("while x:\n    x = x - 1 if x > 1 else 0", "LO"),
    ("for y in x:\n    if y:\n        return y", "LC"),
    ("if x:\n    while x:\n        x -= 1", "LC"),
])
def test_category(body: str, expected: str) -> None:
    code = "def f(x):\n" + textwrap.indent(body, "    ") + "\n"
    shape = analyse(code)
    assert category(ast.parse(code)) == shape.category == expected
    assert shape.has_control_flow == (expected != "Others")


# --- cyclomatic complexity ----------------------------------------------------------------

@pytest.mark.parametrize(("code", "expected"), [
    ("x = 1", 1),
    ("def f():\n    return lambda: 1", 1),
    ("if a:\n    pass", 2),
    ("if a:\n    pass\nelif b:\n    pass\nelse:\n    pass", 3),  # `else` is no decision
    ("for x in y:\n    pass\nelse:\n    pass", 2),
    ("while a:\n    pass", 2),
    ("try:\n    pass\nexcept A:\n    pass\nexcept B:\n    pass\nfinally:\n    pass", 3),
    ("y = a if b else c", 2),
    ("y = [x for x in z]", 2),
    ("y = [x for x in z if x if x > 1]", 4),  # one `for` and two `if`s
    ("y = {x: w for x in z for w in x}", 3),
    ("y = a and b and c", 3),  # each extra operand of a boolean operation
    ("while a and b or c:\n    pass", 4),
    ("match x:\n    case 1:\n        pass\n    case _:\n        pass", 3),
])
def test_cyclomatic(code: str, expected: int) -> None:
    assert cyclomatic(ast.parse(code)) == expected


# --- lines of code ------------------------------------------------------------------------

def test_loc_skips_blank_and_comment_only_lines() -> None:
    code = textwrap.dedent('''\
        # a header comment

        def f(x):
            """Docstring lines count."""
            # a comment line
            y = x  # a trailing comment keeps its line

                # an indented comment
            return y
        ''')
    assert analyse(code).loc == 4
