"""Hand-checked traces of small programs, run through the real sandbox.

Every expected line set, event order and count below was worked out by reading the program,
not by running the tracer, so a regression in the tracer shows up as a disagreement with a
person rather than with an earlier version of itself.
"""

from __future__ import annotations

import sys

import pytest

from execbench.analysis.cfg import call_sequences, function_graphs
from execbench.sandbox.pool import Job, Sandbox
from execbench.sandbox.trace import Trace, TraceOptions
from execbench.tasks.codesense import derive
from execbench.tasks.codesense.kinds import analyse
from execbench.values import encode

COMPREHENSION_FRAMES = sys.version_info < (3, 12)
"""Whether list, set and dict comprehensions run in a frame of their own: up to Python
3.11; since 3.12 they run inline, in the frame of the code that holds them (PEP 709). Their
line events are the same in number either way (one as the comprehension starts, one per
item taken) but belong to the comprehension's frame on 3.11, where the enclosing frame
reports the statement once more before it, and to the enclosing frame after."""

CLASSIFY = """\
import random

LIMIT = 3


def classify(values, threshold):
    total = 0
    for v in values:
        if v > threshold:
            total += v
        else:
            total -= 1
    return total
"""



def _run(sandbox: Sandbox, code: str, args: str = "", entry_point: str = "f",
         options: TraceOptions | None = None) -> Trace:
    return sandbox.run(Job(code, entry_point, args, options or TraceOptions()))


def test_lines_events_and_frames_of_if_else_in_a_loop(sandbox: Sandbox) -> None:
    trace = _run(sandbox, CLASSIFY, "[1, 5, 7], 4", "classify")
    assert trace.status == "ok"
    # Module: import, LIMIT, def. Call: v=1 takes the else arm, 5 and 7 the if arm.
    assert trace.lines == [1, 3, 6, 7, 8, 9, 10, 12, 13]
    assert trace.events == [
        [1, 0], [3, 0], [6, 0],
        [7, 1], [8, 1], [9, 1], [12, 1],
        [8, 1], [9, 1], [10, 1],
        [8, 1], [9, 1], [10, 1],
        [8, 1], [13, 1],
    ]
    assert not trace.events_truncated
    assert trace.frames == [{"function": "<module>", "line": 1},
                            {"function": "classify", "line": 6}]
    assert trace.loops == {"8": 3}
    assert trace.branches == {"8": {"true": 3, "false": 1, "seq": "TTTF"},
                              "9": {"true": 2, "false": 1, "seq": "FTT"}}
    assert trace.value == ["int", 11]
    assert trace.value_repr == "11"


def test_the_other_arm_gives_the_other_lines(sandbox: Sandbox) -> None:
    trace = _run(sandbox, CLASSIFY, "[0, 0], 4", "classify")
    assert trace.lines == [1, 3, 6, 7, 8, 9, 12, 13]
    assert trace.branches["9"] == {"true": 0, "false": 2, "seq": "FF"}
    assert trace.value == ["int", -2]


def test_empty_loop_records_the_header_and_no_iteration(sandbox: Sandbox) -> None:
    trace = _run(sandbox, CLASSIFY, "[], 4", "classify")
    assert trace.lines == [1, 3, 6, 7, 8, 13]
    assert trace.branches == {"8": {"true": 0, "false": 1, "seq": "F"}}
    assert trace.loops == {"8": 0}


WHILE_AND_NESTED = """\
def f(n):
    steps = 0
    while n > 1:
        n = n // 2
        steps += 1
    pairs = 0
    for i in range(3):
        for j in range(i):
            pairs += 1
    return steps, pairs
"""


def test_loop_iteration_counts_for_while_and_nested_for(sandbox: Sandbox) -> None:
    trace = _run(sandbox, WHILE_AND_NESTED, "8")
    assert trace.value_repr == "(3, 3)"
    # while: 8 -> 4 -> 2 -> 1. Inner for: 0 + 1 + 2 iterations, left once per outer pass.
    assert trace.loops == {"3": 3, "7": 3, "8": 3}
    assert trace.branches["3"] == {"true": 3, "false": 1, "seq": "TTTF"}
    assert trace.branches["7"] == {"true": 3, "false": 1, "seq": "TTTF"}
    assert trace.branches["8"] == {"true": 3, "false": 3, "seq": "FTFTTF"}
    assert trace.lines == list(range(1, 11))


MULTILINE_IF = """\
def f(a, b):
    if (a > 0
            and b > 0):
        return 1
    return 0
"""


@pytest.mark.parametrize(("args", "lines", "outcome"), [
    ("1, 1", [1, 2, 3, 4], {"true": 1, "false": 0, "seq": "T"}),
    ("1, -1", [1, 2, 3, 5], {"true": 0, "false": 1, "seq": "F"}),
    ("-1, 1", [1, 2, 5], {"true": 0, "false": 1, "seq": "F"}),  # `and` short-circuits
])
def test_multi_line_condition_is_one_branch(sandbox: Sandbox, args: str, lines: list[int],
                                             outcome: dict) -> None:
    trace = _run(sandbox, MULTILINE_IF, args)
    assert trace.lines == lines
    assert trace.branches == {"2": outcome}


def test_states_hold_the_locals_before_each_line(sandbox: Sandbox) -> None:
    trace = _run(sandbox, CLASSIFY, "[1, 5, 7], 4", "classify", TraceOptions(states=True))
    lines = [s for s in trace.states if "event" not in s]
    assert len(lines) == len(trace.events)
    assert [[s["line"], s["frame"]] for s in lines] == trace.events
    at_return = [s for s in lines if s["line"] == 13]
    assert at_return == [{"line": 13, "frame": 1, "locals": {
        "values": encode([1, 5, 7]), "threshold": encode(4), "total": encode(11), "v": encode(7)}}]
    # The first visit of line 10 (v=5) sees total after the else arm ran once for v=1.
    first_10 = next(s for s in trace.states if s["line"] == 10)
    assert first_10["locals"]["total"] == encode(-1)
    assert first_10["locals"]["v"] == encode(5)
    # Module-level states leave out dunders and modules but keep globals.
    module_at_def = next(s for s in trace.states if s["line"] == 6)
    assert module_at_def["locals"] == {"LIMIT": encode(3)}


CAUGHT = """\
def f(xs):
    total = 0
    try:
        total = xs[5]
    except IndexError:
        total = -1
    return total
"""


def test_return_and_exception_events_add_marked_states(sandbox: Sandbox) -> None:
    trace = _run(sandbox, CAUGHT, "[1, 2]", options=TraceOptions(states=True))
    marked = [(s["line"], s["event"]) for s in trace.states if s["frame"] == 1 and "event" in s]
    # The subscript on line 4 raised (its assignment never happened); line 7 returned.
    assert marked == [(4, "exception"), (7, "return")]
    at_return = next(s for s in trace.states if s.get("event") == "return" and s["frame"] == 1)
    assert at_return["locals"] == {"xs": encode([1, 2]), "total": encode(-1)}


def test_states_are_off_by_default_and_events_can_be_bounded(sandbox: Sandbox) -> None:
    trace = _run(sandbox, CLASSIFY, "[1, 5, 7], 4", "classify", TraceOptions(max_events=5))
    assert trace.states == []
    assert len(trace.events) == 5
    assert trace.events_truncated
    assert trace.lines == [1, 3, 6, 7, 8, 9, 10, 12, 13]


MODULE_LEVEL = """\
X = [i * 2 for i in range(3)]
if len(X) > 5:
    Y = 1
else:
    Y = 2


def f():
    return Y
"""


def test_module_level_lines_count(sandbox: Sandbox) -> None:
    trace = _run(sandbox, MODULE_LEVEL)
    assert trace.lines == [1, 2, 5, 8, 9]
    if COMPREHENSION_FRAMES:
        assert trace.events == [[1, 0], [1, 1], [1, 1], [1, 1], [1, 1], [2, 0], [5, 0],
                                [8, 0], [9, 2]]
        assert [f["function"] for f in trace.frames] == ["<module>", "<listcomp>", "f"]
    else:
        assert trace.events == [[1, 0], [1, 0], [1, 0], [1, 0], [2, 0], [5, 0], [8, 0],
                                [9, 1]]
        assert [f["function"] for f in trace.frames] == ["<module>", "f"]
    assert trace.branches == {"2": {"true": 0, "false": 1, "seq": "F"}}
    assert trace.value == ["int", 2]


RAISES = """\
def helper(x):
    return 10 / x


def f(x):
    y = x - 1
    z = helper(y)
    return z
"""


def test_exception_mid_call_keeps_the_lines_up_to_the_raise(sandbox: Sandbox) -> None:
    trace = _run(sandbox, RAISES, "1")
    assert trace.status == "exception"
    assert trace.exception == {"type": "ZeroDivisionError", "message": "division by zero",
                               "phase": "call"}
    assert trace.lines == [1, 2, 5, 6, 7]
    assert trace.events == [[1, 0], [5, 0], [6, 1], [7, 1], [2, 2]]
    assert trace.value is None and trace.value_repr is None
    ok = _run(sandbox, RAISES, "3")
    assert (ok.status, ok.value, ok.lines) == ("ok", ["float", "5.0"], [1, 2, 5, 6, 7, 8])


def test_exception_in_the_module_body_has_phase_module(sandbox: Sandbox) -> None:
    trace = _run(sandbox, "A = 1\nB = [][0]\n\ndef f():\n    return A\n")
    assert trace.status == "exception"
    assert trace.exception["type"] == "IndexError"
    assert trace.exception["phase"] == "module"
    assert trace.lines == [1, 2]


RETURNS = """\
class Box:
    pass


def f(kind):
    if kind == "data":
        return (1, "a", [2.0, -0.0], {3}, frozenset(), {"k": None}, True, b"\\x00", 1j)
    return Box()
"""


def test_return_value_is_typed_json_with_a_literal_repr(sandbox: Sandbox) -> None:
    trace = _run(sandbox, RETURNS, "'data'")
    expected = (1, "a", [2.0, -0.0], {3}, frozenset(), {"k": None}, True, b"\x00", 1j)
    assert trace.value == encode(expected)
    assert trace.value_repr == ("(1, 'a', [2.0, -0.0], {3}, frozenset(), {'k': None}, True, "
                                "b'\\x00', complex(0.0, 1.0))")
    opaque = _run(sandbox, RETURNS, "'box'")
    assert opaque.value == ["object", "Box", "<__program__.Box object at 0x?>"]
    assert opaque.value_repr == "<__program__.Box object at 0x?>"


MUTATES = """\
def f(xs, d):
    xs.append(4)
    d["new"] = xs
    return xs, d
"""


def test_arguments_are_encoded_before_the_call_mutates_them(sandbox: Sandbox) -> None:
    trace = _run(sandbox, MUTATES, "[1, 2], d={'a': 0}")
    assert trace.args == [encode([1, 2])]
    assert trace.kwargs == {"d": encode({"a": 0})}
    assert trace.value == encode(([1, 2, 4], {"a": 0, "new": [1, 2, 4]}))


RANDOM = """\
import random


def f():
    return [random.random(), random.randint(0, 10**9), random.sample(range(100), 3)]
"""


def test_random_is_reseeded_for_every_call(sandbox: Sandbox) -> None:
    traces = sandbox.map([Job(RANDOM, "f", "")] * 6)
    assert all(t.status == "ok" for t in traces)
    assert all(t.value == traces[0].value for t in traces)


def test_string_hashing_is_the_same_in_every_worker(sandbox: Sandbox) -> None:
    code = "def f():\n    return list({'apple', 'pear', 'fig', 'kiwi', 'plum'})\n"
    traces = sandbox.map([Job(code, "f", "")] * 6)
    assert all(t.value == traces[0].value for t in traces)


DATASET_ARGS = """\
G = [3, 1, 2]


def f(a, b=None):
    if callable(a):
        return [x for x in range(4) if a(x)]
    if isinstance(a, range):
        return list(a)
    a.sort()
    return a, G
"""


@pytest.mark.parametrize(("args", "value"), [
    ("lambda x: x < 2", [0, 1]),
    ("range(3)", [0, 1, 2]),
    ("G[:]", ([1, 2, 3], [3, 1, 2])),
    ("b=1, a=[2, 1]", ([1, 2], [3, 1, 2])),
    ("*[[5, 4]]", ([4, 5], [3, 1, 2])),
])
def test_dataset_style_argument_expressions(sandbox: Sandbox, args: str, value: object) -> None:
    trace = _run(sandbox, DATASET_ARGS, args)
    assert trace.status == "ok", trace.exception
    assert trace.value == encode(value)


def test_lambda_argument_lines_are_not_program_lines(sandbox: Sandbox) -> None:
    trace = _run(sandbox, DATASET_ARGS, "lambda x: (x\n < 2)")
    assert trace.lines == [1, 4, 5, 6]
    comprehension = ["<listcomp>"] if COMPREHENSION_FRAMES else []
    assert [f["function"] for f in trace.frames] == ["<module>", "f", *comprehension]


def test_bad_entry_point_and_bad_arguments_have_phase_arguments(sandbox: Sandbox) -> None:
    missing = _run(sandbox, DATASET_ARGS, "1", entry_point="nope")
    assert missing.status == "exception"
    assert (missing.exception["type"], missing.exception["phase"]) == ("KeyError", "arguments")
    bad = _run(sandbox, DATASET_ARGS, "undefined_name")
    assert (bad.exception["type"], bad.exception["phase"]) == ("NameError", "arguments")


TRAILING_HEADERS = """\
def f(xs):
    for x in xs:
        if x < 0:
            raise ValueError(x)
"""


def test_loop_exit_counts_when_the_loop_ends_the_function(sandbox: Sandbox) -> None:
    trace = _run(sandbox, TRAILING_HEADERS, "[1, 2]")
    assert trace.branches["2"] == {"true": 2, "false": 1, "seq": "TTF"}


RAISING_HEADER = """\
def f(x):
    try:
        if 1 / x:
            return 1
    except ZeroDivisionError:
        return 2
"""


def test_a_condition_that_raises_is_no_branch_outcome(sandbox: Sandbox) -> None:
    trace = _run(sandbox, RAISING_HEADER, "0")
    assert trace.value == ["int", 2]
    assert "3" not in trace.branches


SPANNING_BODY = """\
def f(a):
    total = 0
    for x in range(a):
        total += sum([
            x])
    if a > 0:
        y = [
            a]
        return y
    return total
"""


@pytest.mark.parametrize(("args", "loop", "branch"), [
    ("2", {"true": 2, "false": 1, "seq": "TTF"}, {"true": 1, "false": 0, "seq": "T"}),
    ("0", {"true": 0, "false": 1, "seq": "F"}, {"true": 0, "false": 1, "seq": "F"}),
])
def test_a_body_whose_first_statement_spans_lines_counts_as_entered(
        sandbox: Sandbox, args: str, loop: dict, branch: dict) -> None:
    # Python reports the line of ``x``/``a`` (5, 8) before the statement's first line.
    trace = _run(sandbox, SPANNING_BODY, args)
    assert trace.branches == {"3": loop, "6": branch}
    assert trace.loops == {"3": loop["true"]}


def test_a_recorder_can_instrument_the_program_and_add_to_the_trace() -> None:
    """The recorder seam, in this process: a recorder that wraps every comparison so its
    value is recorded where it is evaluated, once, while lines and branches are recorded
    as by the base recorder."""
    import ast

    from execbench.sandbox import recording, tracer

    class Comparisons(recording.Recorder):
        name = "test-comparisons"

        @classmethod
        def prepare(cls, tree: ast.Module) -> ast.Module:
            class Wrap(ast.NodeTransformer):
                def visit_Compare(self, node: ast.Compare) -> ast.AST:
                    call = ast.Call(ast.Name("__seen__", ast.Load()),
                                    [ast.Constant(node.lineno), self.generic_visit(node)], [])
                    return ast.copy_location(call, node)

            return ast.fix_missing_locations(Wrap().visit(tree))

        def __init__(self, program: recording.CompiledProgram, options: dict) -> None:
            super().__init__(program, options)
            self.seen: list[list] = []

        def namespace(self) -> dict:
            def seen(line: int, value: object) -> object:
                self.seen.append([line, value])
                return value

            return {"__seen__": seen}

        def result(self) -> dict:
            return {**super().result(), "comparisons": self.seen}

    tracer.register_recorder(Comparisons)
    try:
        plain = tracer.run(tracer.compile_program(CLASSIFY), "classify",
                           tracer.compile_args("[1, 5, 7], 4"), {})
        program = tracer.compile_program(CLASSIFY, Comparisons.name)
        traced = tracer.run(program, "classify", tracer.compile_args("[1, 5, 7], 4"), {})
    finally:
        tracer.RECORDERS.unregister(Comparisons.name)
    assert traced["comparisons"] == [[9, False], [9, True], [9, True]]  # `if v > threshold`
    assert {k: traced[k] for k in ("lines", "branches", "loops", "value")} == \
        {k: plain[k] for k in ("lines", "branches", "loops", "value")}
    assert "comparisons" not in plain
    assert Trace.from_dict(traced).extra == {"comparisons": traced["comparisons"]}
    with pytest.raises(ValueError, match="unknown recorder"):
        TraceOptions(recorder="test-comparisons")


COMPREHENSIONS = """\
def f(xs):
    total = 0
    for row in [[x, -x] for x in xs]:
        if any([v > 1 for v in row]):
            total += len({v: v for v in row})
        elif all(v != 0 for v in row):
            total -= 1
    return total, [
        t * 2
        for t in range(total + 1)
    ]
"""


def test_comprehensions_give_the_same_truth_on_every_version(sandbox: Sandbox) -> None:
    """Where a comprehension runs (its own frame or inline, ``COMPREHENSION_FRAMES``)
    changes which frame its line events belong to, and nothing read from a trace: lines,
    branch outcomes (a comprehension or generator expression on a header line is no pass
    through the header), a function's statement sequence, the CodeSense facts."""
    trace = _run(sandbox, COMPREHENSIONS, "[1, 2]", options=TraceOptions(states=True))
    assert trace.value == encode((1, [0, 2]))
    assert trace.lines == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    assert trace.branches == {"3": {"true": 2, "false": 1, "seq": "TTF"},
                              "4": {"true": 1, "false": 1, "seq": "FT"},
                              "6": {"true": 1, "false": 0, "seq": "T"}}
    assert trace.loops == {"3": 2}
    (graph,) = (g for g in function_graphs(COMPREHENSIONS).values() if g.name == "f")
    assert call_sequences(graph, trace.events, trace.frames) == [[2, 3, 4, 6, 7, 3, 4, 5, 3, 8]]
    function = analyse(COMPREHENSIONS, "f")
    assert function is not None
    states = derive.entry_states(function, "f", trace)
    assert [(f.line, f.value) for f in derive.statement_facts(function, states)] == [
        (2, ["int", 0]), (4, ["bool", False]), (5, ["int", 1]), (6, ["bool", True]),
        (7, ["int", -1])]
    iterations = [f.to_record() for f in derive.loop_facts(function, states)
                  if f.question != "body"]
    assert iterations == [
        {"task": "loop", "line": 3, "question": "iterations", "value": ["int", 2]},
        {"task": "loop", "line": 3, "question": "after", "variable": "total",
         "value": ["int", 1]},
        {"task": "loop", "line": 3, "question": "after", "variable": "row",
         "value": encode([2, -2])}]
    comprehension_frames = [f["function"] for f in trace.frames if f["function"] != "<genexpr>"]
    assert comprehension_frames == ["<module>", "f"] + (
        ["<listcomp>"] * 3 + ["<dictcomp>", "<listcomp>"] if COMPREHENSION_FRAMES
        else [])


GENERATOR_LOOP = """\
def items(n):
    yield from range(n)


def f(n):
    total = 0
    for x in items(n):
""" + "".join(f"        total += x * {k}\n" for k in range(60)) + """\
    return total
"""


def test_a_loop_over_a_generator_with_a_long_body_ends_as_any_loop(sandbox: Sandbox) -> None:
    """Python 3.13.0 reports the end of such a loop as a StopIteration passing through
    the frame; nothing was raised, and the trace shows nothing of it."""
    trace = _run(sandbox, GENERATOR_LOOP, "2", options=TraceOptions(states=True))
    assert trace.value == ["int", sum(range(60))]
    assert trace.branches["7"] == {"true": 2, "false": 1, "seq": "TTF"}
    assert "exception" not in [s.get("event") for s in trace.states]


SAME_LINE_CALLS = """\
def g(v):
    return v


def f(a, b):
    x = a or g(b)
    if g(a) or g(b):
        x += 1
    return x
"""


@pytest.mark.parametrize("recorder", ["lines", "properties"])
def test_a_line_is_reported_once_however_often_its_calls_return_into_it(
        sandbox: Sandbox, recorder: str) -> None:
    """Python 3.12 reports a line again when a call returns into it and a jump forward
    lands on it (``recording.REPEATS_LINES``); every version's trace reports it once, and so
    does the properties recorder's, which passes a condition's clauses through calls."""
    trace = _run(sandbox, SAME_LINE_CALLS, "0, 1", options=TraceOptions(recorder=recorder))
    assert trace.value == ["int", 2]
    assert trace.events == [[1, 0], [5, 0], [6, 1], [2, 2], [7, 1], [2, 3], [2, 4], [8, 1],
                            [9, 1]]


ANNOTATED = """\
def g(x: int, y: Nowhere) -> 'float':
    return x


def f():
    return sorted(g.__annotations__.items())
"""


@pytest.mark.parametrize("recorder", ["lines", "properties"])
def test_a_programs_annotations_are_postponed(sandbox: Sandbox, recorder: str) -> None:
    """Programs are compiled with postponed annotations (PEP 563) whatever module compiles
    them: a function whose annotations name what its program does not define (a snippet
    lifted out of its module) is still defined, and its annotations are their text."""
    trace = _run(sandbox, ANNOTATED, options=TraceOptions(recorder=recorder))
    assert trace.value == ["list", [["tuple", [["str", "return"], ["str", "'float'"]]],
                                    ["tuple", [["str", "x"], ["str", "int"]]],
                                    ["tuple", [["str", "y"], ["str", "Nowhere"]]]]]
