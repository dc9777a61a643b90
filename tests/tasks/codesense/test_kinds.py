"""Statement kinds, loops and conditional blocks read from a function's syntax tree."""

from __future__ import annotations

from execbench.tasks.codesense.kinds import analyse

CODE = """\
import math


@staticmethod
def f(xs, n):
    c = 100
    neg = -1
    names = ['a', 'b']
    total = n * 2 + 1
    total += len(xs)
    first, last = xs[0], xs[-1]
    root = math.sqrt(n)
    label: str = 'x'
    xs[0] = 5
    if total > 3:
        total -= 1
    elif total < 0:
        pass
    while n > 0:
        n -= 1
    for x in xs: total += x
    def inner():
        hidden = 1
    try:
        c = 1 / n
    except ZeroDivisionError:
        c = 0
    return total
"""


def test_each_statement_gets_its_kind_by_precedence() -> None:
    function = analyse(CODE, "f")
    assert function is not None
    kinds = {line: s.kind for line, s in function.statements.items() if s.kind}
    assert kinds == {6: "constant", 7: "constant", 8: "constant", 9: "arithmetic",
                     10: "call", 11: "assignment", 12: "call", 13: "constant",
                     15: "branch", 16: "arithmetic", 17: "branch", 19: "branch",
                     20: "arithmetic", 25: "arithmetic", 27: "constant"}
    tuple_target = function.statements[11]
    assert tuple_target.targets == ("first", "last") and tuple_target.reads == ("xs",)
    assert function.statements[10].reads == ("total", "len", "xs")
    assert function.statements[15].text == "if total > 3:"
    # A subscript target has no name whose value to ask for; an inner def's body is
    # another frame's.
    assert function.statements[14].kind is None and 23 not in function.statements


def test_frames_report_the_decorator_line_and_loops_need_a_body_line_of_their_own() -> None:
    function = analyse(CODE, "f")
    assert function is not None
    assert function.first_line == 4
    # The one-line ``for`` body gives no line event apart from its header: not a loop here.
    assert [loop.line for loop in function.loops] == [19]
    assert function.loops[0].body == (20, 20)
    # The try body always starts; its handler does not. The one-line for body is left out.
    assert function.conditional == (16, 17, 18, 20, 27)


def test_while_true_is_no_loop_to_ask_about_and_missing_functions_give_none() -> None:
    function = analyse("def g():\n    while True:\n        break\n", "g")
    assert function is not None and function.loops == ()
    assert analyse("def g():\n    pass\n", "h") is None
    assert analyse("def g(:\n", "g") is None
