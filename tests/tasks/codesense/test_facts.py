"""Facts derived from a call's recorded states, and facts a recorded trace brings."""

from __future__ import annotations

import ast

import pytest

from execbench.sandbox.pool import Job, Sandbox
from execbench.sandbox.trace import Trace, TraceOptions
from execbench.sources import load_source
from execbench.tasks.codesense.facts import (
    BlockFact,
    BranchFact,
    Fact,
    LoopFact,
    NoFacts,
    StatementFact,
    facts_for,
)
from execbench.values import encode
from tests.helpers.data import shared_data

STATES = TraceOptions(states=True)
FACT_TYPES: dict[str, type[Fact]] = {kind.task: kind for kind in
                                     (StatementFact, BlockFact, LoopFact, BranchFact)}


def _facts(sandbox: Sandbox, task: str, code: str, args: str, entry: str = "f",
           options: TraceOptions = STATES) -> list[dict]:
    trace = sandbox.run(Job(code, entry, args, options))
    return facts_for(FACT_TYPES[task], code, entry, trace)


KINDS = """\
def f(xs, n):
    c = 100
    total = n * 2
    name = str(n)
    first, last = xs[0], xs[-1]
    if total > 3:
        total += 1
    try:
        bad = xs[10]
    except IndexError:
        bad = None
    return total
"""


def test_each_statement_kind_gets_its_value_and_the_values_it_reads(sandbox: Sandbox) -> None:
    facts = {f["line"]: f for f in _facts(sandbox, "statement", KINDS, "[1, 2, 3], 2")}
    assert {line: (f["kind"], f["value"]) for line, f in facts.items()} == {
        2: ("constant", encode(100)), 3: ("arithmetic", encode(4)), 4: ("call", encode("2")),
        5: ("assignment", encode((1, 3))), 6: ("branch", encode(True)),
        7: ("arithmetic", encode(5)), 11: ("constant", encode(None))}
    assert facts[3]["before"] == {"n": encode(2)}
    assert facts[4]["before"] == {"n": encode(2)}  # ``str`` is a builtin, not a local
    assert facts[6]["statement"] == "if total > 3:" and facts[2]["before"] == {}
    # Line 9 raised before assigning: no fact about it.
    assert 9 not in facts


def test_a_condition_that_fails_is_false(sandbox: Sandbox) -> None:
    facts = {f["line"]: f for f in _facts(sandbox, "statement", KINDS, "[1], 1")}
    assert facts[6]["value"] == encode(False) and 7 not in facts


MULTI_LINE = """\
def f(a, b):
    x = max(
        a,
        b,
    )
    y = [
        a,
        b + x,
    ]
    if (x >
            a):
        y = [
            x]
    return y
"""


def test_statements_spanning_lines_are_one_statement(sandbox: Sandbox) -> None:
    # Python reports ``x = max(`` at 2, 3, 4 and 2 again, and ``y = [`` at 7, 8, then 6.
    facts = {f["line"]: f["value"] for f in _facts(sandbox, "statement", MULTI_LINE, "3, 4")}
    assert facts == {2: encode(4), 6: encode([3, 8]), 10: encode(True), 12: encode([4])}
    blocks = _facts(sandbox, "block", MULTI_LINE, "3, 4")
    assert [(f["lines"], f["after"]) for f in blocks] == [
        ([2], {"x": encode(4)}), ([2, 6], {"x": encode(4), "y": encode([3, 8])}),
        ([2, 6, 10], {"x": encode(4), "y": encode([3, 8])})]


LOOPS = """\
def f(xs, stop):
    total = 0
    for x in xs:
        if x == stop:
            break
        total += x
    for _ in []:
        total = -1
    i = 0
    while i < 2:
        for j in range(3):
            total += j
        i += 1
    return total
"""


def _loop(facts: list[dict], line: int) -> dict:
    found: dict = {"body": {}, "after": {}}
    for fact in facts:
        if fact["line"] != line:
            continue
        if fact["question"] == "iterations":
            found["iterations"] = fact["value"][1]
        elif fact["question"] == "body":
            found["body"][(fact["variable"], fact["iteration"])] = fact["value"]
        else:
            found["after"][fact["variable"]] = fact["value"]
    return found


def test_loops_with_break_zero_iterations_nesting_and_while(sandbox: Sandbox) -> None:
    facts = _facts(sandbox, "loop", LOOPS, "[4, 5, 6, 7], 6")
    broken = _loop(facts, 3)
    # Two iterations finish, the third breaks: the body was entered three times.
    assert broken["iterations"] == 3
    assert broken["body"] == {("total", 1): encode(4), ("x", 1): encode(4),
                              ("total", 2): encode(9), ("x", 2): encode(5),
                              ("total", 3): encode(9), ("x", 3): encode(6)}
    assert broken["after"] == {"total": encode(9), "x": encode(6)}
    assert _loop(facts, 7) == {"iterations": 0, "body": {}, "after": {}}
    outer = _loop(facts, 10)
    assert outer["iterations"] == 2
    assert outer["after"] == {"total": encode(15), "i": encode(2), "j": encode(2)}
    # The inner loop's first run is during the outer loop's first iteration.
    inner = _loop(facts, 11)
    assert inner["iterations"] == 3 and inner["after"]["total"] == encode(12)


def test_a_loop_left_by_return_has_no_after_facts(sandbox: Sandbox) -> None:
    code = "def f(xs):\n    for x in xs:\n        if x > 1:\n            return x\n    return 0\n"
    found = _loop(_facts(sandbox, "loop", code, "[1, 2, 3]"), 2)
    assert found["iterations"] == 2 and found["after"] == {}
    assert found["body"] == {("x", 1): encode(1)}  # the second iteration never finished


def test_a_loop_that_ends_the_function_is_followed_by_its_return(sandbox: Sandbox) -> None:
    code = "def f(xs):\n    out = []\n    for x in xs:\n        out.append(x * 2)\n"
    found = _loop(_facts(sandbox, "loop", code, "[1, 2]"), 3)
    assert found["after"] == {"out": encode([2, 4]), "x": encode(2)}


def test_cut_states_give_fewer_facts_never_wrong_ones(sandbox: Sandbox) -> None:
    cut = TraceOptions(states=True, max_states=8)
    facts = _facts(sandbox, "loop", LOOPS, "[4, 5, 6, 7], 6", options=cut)
    assert facts == []  # the first loop is still running when the states stop
    statements = _facts(sandbox, "statement", LOOPS, "[4, 5, 6, 7], 6", options=cut)
    assert statements and all(f["line"] < 10 for f in statements)


BRANCHES = """\
def f(n):
    if n > 0:
        return 'up'
    elif n < -100:
        raise ValueError(n)
    return 'down'
"""


def test_branch_facts_include_lines_never_reached(sandbox: Sandbox) -> None:
    facts = _facts(sandbox, "branch", BRANCHES, "-1")
    assert [(f["line"], f["executed"]) for f in facts] == [(3, False), (4, True), (5, False)]


def test_block_facts_are_the_locals_changed_after_k_statements(sandbox: Sandbox) -> None:
    code = "def f(a, i, j):\n    t = a[i]\n    a[i] = a[j]\n    a[j] = t\n    return a\n"
    facts = _facts(sandbox, "block", code, "[5, 7, 9], 0, 2")
    assert [(f["size"], f["lines"], f["after"]) for f in facts] == [
        (1, [2], {"t": encode(5)}),
        (2, [2, 3], {"a": encode([9, 7, 9]), "t": encode(5)}),
        (3, [2, 3, 4], {"a": encode([9, 7, 5]), "t": encode(5)})]


def test_given_facts_are_used_as_they_are_and_nothing_is_derived() -> None:
    given = [{"task": "branch", "line": 40, "executed": True},
             {"task": "loop", "line": 2, "question": "iterations", "value": ["int", 7]}]
    trace = Trace(status="ok", extra={"facts": given})
    assert facts_for(BranchFact, "def f():\n    pass\n", "f", trace) == given[:1]
    assert facts_for(StatementFact, "", "f", trace) == []
    with pytest.raises(NoFacts, match="not a list"):
        facts_for(BranchFact, "", "f", Trace(status="ok", extra={"facts": {}}))


def test_a_call_that_did_not_finish_gives_no_facts() -> None:
    with pytest.raises(NoFacts, match="timeout"):
        facts_for(StatementFact, "def f():\n    pass\n", "f", Trace(status="timeout"))


def _outer_loops(code: str, entry_point: str) -> set[int]:
    """Header lines of the entry point's loops that no other loop encloses (each runs at
    most once per call)."""
    func = next(n for n in ast.parse(code).body
                if isinstance(n, ast.FunctionDef) and n.name == entry_point)
    loops = [n for n in ast.walk(func) if isinstance(n, ast.For | ast.While)]
    inner = {m.lineno for n in loops for m in ast.walk(n)
             if m is not n and isinstance(m, ast.For | ast.While)}
    return {n.lineno for n in loops} - inner


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["humaneval", "cruxeval.jsonl"])
def test_iteration_counts_agree_with_the_tracers_loop_counts(sandbox: Sandbox,
                                                            spec: str) -> None:
    """Two records of one run: the loop facts (from the states) and the tracer's own
    per-header iteration counts, on every loop that runs at most once per call."""
    if spec != "humaneval":
        spec = str(shared_data(spec))
    programs = load_source(spec, None, plus_inputs=False, count=0, seed=0).programs
    jobs = [(p, call) for p in programs for call in p.calls[:3]]
    traces = sandbox.map(Job(p.code, p.entry_point, call.args,
                             TraceOptions(states=True, max_states=20_000)) for p, call in jobs)
    checked = 0
    for (program, _), trace in zip(jobs, traces, strict=True):
        if trace.status != "ok" or sum(f["function"] == program.entry_point
                                       for f in trace.frames) != 1:
            continue  # recursion runs a loop in several frames: the counts add up there
        once = _outer_loops(program.code, program.entry_point)
        for fact in facts_for(LoopFact, program.code, program.entry_point, trace):
            if fact["question"] == "iterations" and fact["line"] in once:
                assert fact["value"] == ["int", trace.loops.get(str(fact["line"]), 0)], \
                    (program.id, fact)
                checked += 1
    assert checked > 200
