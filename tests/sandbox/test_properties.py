"""The ``properties`` recorder: hand-checked values, and proof that recording changes
nothing the program does (its value, stdout, lines, events and branch outcomes)."""

from __future__ import annotations

import ast
import json
from collections import Counter

import pytest

from execbench.program import Program
from execbench.sandbox.pool import Job, Limits, Sandbox
from execbench.sandbox.properties import clauses_of
from execbench.sandbox.trace import Trace, TraceOptions
from execbench.sources import load_source
from execbench.values import LiteralError, decode, is_exact
from tests.helpers.corpus import Corpus
from tests.helpers.data import shared_data
from tests.sandbox.recompute import DRIVER, PER_LINE, evaluated, job_args, sites

PROPERTIES = TraceOptions(recorder="properties")

MIXED = """\
def f(xs, n):
    total = 0
    for i, x in enumerate(sorted(xs)):
        if x > 1 and i < n or x == 0:
            total += x
        elif not x:
            continue
    j = 0
    while j < len(xs) and xs[j] != 3:
        j += 1
    for c in (y * 2 for y in xs):
        total += c
    return total
"""



def _properties(trace: Trace) -> dict:
    assert trace.status == "ok", trace
    return {int(line): records for line, records in trace.extra["properties"].items()}


def _values(encoded: list) -> list:
    return [None if value is None else decode(value) for value in encoded]


def test_every_kind_of_property_by_hand(sandbox: Sandbox) -> None:
    found = _properties(sandbox.run(Job(MIXED, "f", "[3, 0, 2], 1", PROPERTIES)))
    assert set(found) == {3, 4, 6, 9, 11}
    (loop,) = found[3]
    assert loop["iterable"] is None  # enumerate(...) is an iterator: its items are its value
    assert _values(loop["parts"]) == [[0, 2, 3]]  # sorted(xs)
    assert _values(loop["items"]) == [(0, 0), (1, 2), (2, 3)]
    # Clauses, outermost first: `x > 1 and i < n`, `x == 0`, `x > 1`, `i < n`.
    assert [(decode(e["value"]), e["taken"], _values(e["clauses"])) for e in found[4]] == [
        (True, True, [False, True, False, None]),     # x=0: `i < n` short-circuited
        (False, False, [False, False, True, False]),  # x=2, i=1
        (False, False, [False, False, True, False]),  # x=3, i=2
    ]
    assert [e["taken"] for e in found[6]] == [False, False]  # `elif not x` for x=2, 3
    (loop_test,) = found[9]  # xs[0] == 3: the loop is never entered
    assert (decode(loop_test["value"]), loop_test["taken"]) == (False, False)
    assert _values(loop_test["clauses"]) == [True, False]
    assert _values(loop_test["names"]) == [0, [3, 0, 2]]  # j, xs (len is called, not read)
    (generated,) = found[11]
    assert generated["iterable"] is None and _values(generated["items"]) == [6, 0, 4]


def test_records_carry_their_place_in_the_run_order(sandbox: Sandbox) -> None:
    found = _properties(sandbox.run(Job(MIXED, "f", "[3, 0, 2], 1", PROPERTIES)))
    (loop,) = found[3]
    events = [(loop["at"], "for 3")]
    events += [(at, f"item {decode(item)}") for at, item in zip(loop["items_at"], loop["items"],
                                                                strict=True)]
    events += [(record["at"], f"test {line}") for line in (4, 6, 9) for record in found[line]]
    (generated,) = found[11]
    events += [(generated["at"], "for 11")] + [(at, "item") for at in generated["items_at"]]
    assert [name for _, name in sorted(events)] == [
        "for 3", "item (0, 0)", "test 4", "item (1, 2)", "test 4", "test 6", "item (2, 3)",
        "test 4", "test 6", "test 9", "for 11", "item", "item", "item"]
    assert len({at for at, _ in events}) == len(events)  # one tick each


def test_a_list_iterable_is_recorded_as_it_was_when_the_loop_started(sandbox: Sandbox) -> None:
    code = ("def f(xs):\n    out = []\n    for x in xs + [9]:\n        out.append(x)\n"
            "    return out\n")
    (loop,) = _properties(sandbox.run(Job(code, "f", "[1, 2]", PROPERTIES)))[3]
    assert decode(loop["iterable"]) == [1, 2, 9]
    assert _values(loop["parts"]) == [[1, 2]]  # xs; the constant [9] is not a part
    assert _values(loop["items"]) == [1, 2, 9]


SAME_AS_PLAIN = {
    "bool once": """\
class Flag:
    calls = 0
    def __bool__(self):
        Flag.calls += 1
        return True

def f():
    flag = Flag()
    if flag:
        pass
    while flag and Flag.calls < 3:
        pass
    return Flag.calls
""",
    "generator interleaving": """\
def f():
    log = []
    def gen():
        for i in range(3):
            log.append(('gen', i))
            yield i
    for x in gen():
        log.append(('body', x))
    return log
""",
    "break keeps the iterator's state": """\
def f():
    it = iter([1, 2, 3, 4])
    for x in it:
        if x == 2:
            break
    return list(it)
""",
    "recursion inside a condition": """\
def f(n=4):
    if n > 0 and f(n - 1) >= 0:
        return n
    return 0
""",
    "an exception caught inside a condition": """\
def check(v):
    try:
        if v / 0:
            pass
    except ZeroDivisionError:
        return True

def f():
    hits = 0
    for v in [1, 2]:
        if check(v) and v > 1:
            hits += 1
    return hits
""",
}


@pytest.mark.parametrize("name", sorted(SAME_AS_PLAIN))
def test_recording_changes_nothing_the_program_does(sandbox: Sandbox, name: str) -> None:
    code = SAME_AS_PLAIN[name]
    plain = sandbox.run(Job(code, "f", ""))
    recorded = sandbox.run(Job(code, "f", "", PROPERTIES))
    assert plain.status == recorded.status == "ok"
    for field in ("value", "stdout", "lines", "events", "branches", "loops"):
        assert getattr(recorded, field) == getattr(plain, field), field


def test_nested_evaluations_of_one_line_get_their_own_records(sandbox: Sandbox) -> None:
    code = SAME_AS_PLAIN["recursion inside a condition"]
    records = _properties(sandbox.run(Job(code, "f", "", PROPERTIES)))[2]
    # Innermost first: f(0) fails `n > 0`; then f(1) .. f(4) succeed.
    assert [_values(r["clauses"]) for r in records] == \
        [[False, None]] + [[True, True]] * 4
    assert [r["taken"] for r in records] == [False, True, True, True, True]


SAMPLE = {"cruxeval": 150, "humaneval": 30}
"""Programs of each benchmark a default run checks (``corpus``); all under ``--run-slow``."""


def _programs(source: str, corpus: Corpus) -> list[Program]:
    spec = str(shared_data("cruxeval.jsonl")) if source == "cruxeval" else source
    return corpus.sample(load_source(spec).programs, SAMPLE[source])


@pytest.mark.parametrize("source", ["cruxeval", "humaneval"])
def test_real_programs_run_the_same_with_properties_recorded(sandbox: Sandbox, corpus: Corpus,
                                                             source: str) -> None:
    """Every call of CRUXEval and of the built-in HumanEval (of a seeded sample of their
    programs, ``SAMPLE``, unless ``--run-slow``): same value, stdout, lines, events and
    branch outcomes with the recorder as without. Calls that use more than a quarter of the
    CPU limit untraced are left out, as a build leaves them out: recording costs CPU time
    (HumanEval/75's million loop tests), so they could time out."""
    programs = _programs(source, corpus)
    jobs = [Job(p.code, p.entry_point, c.args) for p in programs for c in p.calls]
    plain = sandbox.map(jobs)
    quarter = sandbox.limits.cpu_seconds / 4
    # Recording costs CPU time: the recorded runs get room for it, so that only a change in
    # behaviour (not the overhead, nor a loaded machine) can tell them apart.
    with Sandbox(workers=2, limits=Limits(cpu_seconds=4 * sandbox.limits.cpu_seconds,
                                          wall_seconds=60)) as roomy:
        recorded = roomy.map(Job(j.code, j.entry_point, j.args, PROPERTIES) for j in jobs)
    differ = [job.code[:60] for job, a, b in zip(jobs, plain, recorded, strict=True)
              if a.cpu_time <= quarter
              and (a.status, a.value, a.stdout, a.lines, a.events, a.branches)
              != (b.status, b.value, b.stdout, b.lines, b.events, b.branches)]
    assert differ == []
    assert sum(bool(t.extra.get("properties")) for t in recorded) > len(jobs) // 2


_PURE_CALLS = frozenset({"len", "abs", "min", "max", "sum", "sorted", "isinstance", "int",
                         "str", "float", "bool", "all", "any", "ord", "chr", "round", "set",
                         "list", "tuple", "range"})
EVALUATE = ("def evaluate(pairs):\n"
            "    out = []\n"
            "    for text, env in pairs:\n"
            "        try:\n"
            "            out.append(eval(text, {}, env))\n"
            "        except Exception:\n"
            "            out.append('<error>')\n"
            "    return out\n")


def _pure_conditions(code: str) -> dict[int, str]:
    """Single-line if/elif/while conditions that read variables and call only pure builtins:
    evaluating their text again on the variables has no effect and gives the same value."""
    import ast

    found = {}
    for node in ast.walk(ast.parse(code)):
        if not isinstance(node, ast.If | ast.While) or node.test.end_lineno != node.lineno:
            continue
        pure = all(
            isinstance(n, ast.expr_context | ast.boolop | ast.cmpop | ast.operator
                       | ast.unaryop | ast.Name | ast.Constant | ast.Compare | ast.BoolOp
                       | ast.BinOp | ast.UnaryOp | ast.Subscript | ast.Slice | ast.Tuple
                       | ast.List)
            or (isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                and n.func.id in _PURE_CALLS and not n.keywords)
            for n in ast.walk(node.test))
        if pure:
            found[node.lineno] = ast.unparse(node.test)
    return found


def test_recorded_predicates_agree_with_an_independent_recomputation(sandbox: Sandbox,
                                                                     corpus: Corpus) -> None:
    """On every call of the built-in HumanEval (of ``SAMPLE``'s seeded sample of its
    programs unless ``--run-slow``): the tracer's own variable snapshots at each
    line event of a pure condition, with the condition's text evaluated on them (in the
    sandbox, by a separate program), give the predicate values the recorder saw, in order."""
    from execbench.values import is_exact, to_literal

    programs = _programs("humaneval", corpus)
    calls = [(p, c) for p in programs for c in p.calls if _pure_conditions(p.code)]
    states = sandbox.map(Job(p.code, p.entry_point, c.args,
                             TraceOptions(states=True, max_states=5_000)) for p, c in calls)
    recorded = sandbox.map(Job(p.code, p.entry_point, c.args, PROPERTIES) for p, c in calls)
    jobs, expected = [], []
    for (program, _), snapshot, trace in zip(calls, states, recorded, strict=True):
        if trace.status != "ok" or snapshot.status != "ok":
            continue
        conditions = _pure_conditions(program.code)
        pairs, values = [], []
        seen = {line: 0 for line in conditions}
        records = trace.extra["properties"]
        for state in snapshot.states:
            line = state["line"]
            if line not in conditions or str(line) not in records:
                continue
            index = seen[line]
            seen[line] += 1
            env = state["locals"]
            if index >= len(records[str(line)]) or not all(map(is_exact, env.values())):
                continue
            literal = "{" + ", ".join(f"{k!r}: {to_literal(v)}" for k, v in env.items()) + "}"
            pairs.append(f"({conditions[line]!r}, {literal})")
            values.append(decode(records[str(line)][index]["value"]))
        if pairs:
            jobs.append(Job(EVALUATE, "evaluate", "[" + ", ".join(pairs) + "]"))
            expected.append(values)
    results = sandbox.map(jobs)
    compared = mismatched = 0
    for result, values in zip(results, expected, strict=True):
        assert result.status == "ok", result
        for again, seen_value in zip(decode(result.value), values, strict=True):
            if again == "<error>":  # a module-level name the snapshot does not hold
                continue
            compared += 1
            mismatched += again != seen_value or type(again) is not type(seen_value)
    assert compared > 1_000 and mismatched == 0  # 1,700 on the sample


def _simple_loops(code: str) -> dict[int, tuple[list[str], bool, set[int]]]:
    """``for`` loops whose target is a name or a flat tuple of names: line -> (names,
    whether the target is a tuple, the lines of the loop body)."""
    import ast

    found = {}
    for node in ast.walk(ast.parse(code)):
        if not isinstance(node, ast.For):
            continue
        target = node.target
        names = [target] if isinstance(target, ast.Name) else list(
            getattr(target, "elts", []))
        if not names or not all(isinstance(n, ast.Name) for n in names):
            continue
        body = {n.lineno for stmt in node.body for n in ast.walk(stmt) if hasattr(n, "lineno")}
        found[node.lineno] = ([n.id for n in names], isinstance(target, ast.Tuple), body)
    return found


def test_recorded_loop_items_agree_with_an_independent_recording(sandbox: Sandbox,
                                                                  corpus: Corpus) -> None:
    """On every call of the built-in HumanEval without recursion (of ``SAMPLE``'s seeded
    sample of its programs unless ``--run-slow``): the values the loop
    target holds at the first line event of each iteration, read from the plain tracer's
    variable snapshots, are the items the properties recorder saw the loop take, in
    order (a tuple target is compared element by element)."""
    from execbench.values import is_exact

    programs = _programs("humaneval", corpus)
    calls = [(p, c) for p in programs for c in p.calls if _simple_loops(p.code)]
    options = TraceOptions(states=True, max_states=5_000)
    states = sandbox.map(Job(p.code, p.entry_point, c.args, options) for p, c in calls)
    recorded = sandbox.map(Job(p.code, p.entry_point, c.args, PROPERTIES) for p, c in calls)
    compared = 0
    for (program, call), snapshot, trace in zip(calls, states, recorded, strict=True):
        frames = {state["frame"] for state in snapshot.states if state["frame"]}
        if trace.status != "ok" or snapshot.status != "ok" or len(frames) != 1 \
                or len(snapshot.states) >= options.max_states:
            continue
        for line, (names, is_tuple, body) in _simple_loops(program.code).items():
            records = trace.extra["properties"].get(str(line), [])
            if any(r["items_truncated"] for r in records):
                continue
            items = [item for record in records for item in record["items"]]
            steps = zip(snapshot.states, snapshot.states[1:], strict=False)
            seen = [after["locals"] for before, after in steps
                    if before["line"] == line and after["line"] in body]
            assert len(seen) == len(items), (program.id, call.args, line)
            for item, env in zip(items, seen, strict=True):
                if is_tuple:
                    if item[0] not in ("tuple", "list"):
                        continue
                    parts = item[1]
                else:
                    parts = [item]
                observed = [env.get(name) for name in names]
                if len(parts) != len(observed) or not all(map(is_exact, parts)) \
                        or not all(v is not None and is_exact(v) for v in observed):
                    continue
                compared += 1
                assert parts == observed, (program.id, call.args, line)
    assert compared > 1_000  # 1,900 on the sample


def _comparable(encoded: list) -> bool:
    """A value both sides can be compared on: written in full, or an object whose repr
    holds no address (``range(0, 3)``, ``dict_items([...])``)."""
    return is_exact(encoded) or encoded[0] == "object" and "0x" not in encoded[-1]


def _agree(recorded: list | None, redone: list, compared: Counter) -> bool:
    """One recorded value against its recomputation (``["value", v]``); a value too large
    for the recorder's bound, or an object with an address, is counted and passed over."""
    if recorded is None or redone[0] != "value":
        return recorded is None and redone[0] != "value"
    if not (_comparable(recorded) and _comparable(redone[1])):
        compared["not comparable (truncated, or an object with an address)"] += 1
        return True
    compared["values"] += 1
    return recorded == redone[1]


def _loop_agrees(record: dict, redone: list, compared: Counter) -> bool:
    iterable, *parts = redone
    if iterable[0] == "iterator":  # the recorder keeps the items the loop took
        items = record["items"]
        if record["items_truncated"] or not all(map(is_exact, items)):
            compared["not comparable (truncated, or an object with an address)"] += 1
            ok = record["iterable"] is None
        else:
            compared["values"] += 1
            ok = record["iterable"] is None and iterable[1][:len(items)] == items
    else:
        ok = _agree(record["iterable"], iterable, compared)
    return ok and len(parts) == len(record["parts"]) and all(
        _agree(r, p, compared) for r, p in zip(record["parts"], parts, strict=True))


def _test_agrees(record: dict, redone: list, node: ast.expr, compared: Counter) -> bool:
    predicate, *clauses = redone
    operands = clauses_of(node)
    try:
        truths = {id(o): bool(decode(c[1])) for o, c in zip(operands, clauses, strict=True)
                  if c[0] == "value"}
        reached = evaluated(node, truths)
    except (LiteralError, KeyError):  # an operand with no value to take the truth of
        compared["not comparable (truncated, or an object with an address)"] += 1
        return _agree(record["value"], predicate, compared)
    return _agree(record["value"], predicate, compared) and all(
        _agree(r, c, compared) if id(o) in reached else r is None
        for o, r, c in zip(operands, record["clauses"], clauses, strict=True))


@pytest.mark.slow
def test_recorded_properties_agree_with_a_recomputation_on_frame_locals(
        sandbox: Sandbox) -> None:
    """On every call of the built-in HumanEval, each loop's iterable and its non-constant
    parts, and each condition's predicate and ``and``/``or`` operands (with those that
    short-circuiting skips recorded as not evaluated), as the recorder saw them, equal
    the values of the same source texts evaluated on the frame's variables at the line
    event that starts the statement, in the unmodified program run under a separate
    ``sys.settrace`` (``tests/sandbox/recompute.py``, which also says what is left out and
    why). Every evaluation is compared, in order, up to 30 per line and call."""
    programs = load_source("humaneval").programs
    left_out: Counter = Counter()
    plans = {}
    for program in programs:
        plans[program.id], skipped = sites(program.code)
        left_out.update(skipped)
    calls = [(p, c) for p in programs for c in p.calls if plans[p.id]]
    recorded = sandbox.map(Job(p.code, p.entry_point, c.args, PROPERTIES) for p, c in calls)
    redone = sandbox.map(Job(DRIVER, "recompute", job_args(p.code, p.entry_point, c.args,
                                                           plans[p.id]))
                         for p, c in calls)
    compared: Counter = Counter()
    wrong = []
    for (program, call), trace, again in zip(calls, recorded, redone, strict=True):
        if trace.status != "ok" or again.status != "ok":
            compared["calls not run to the end (a limit)"] += 1
            continue
        mine = json.loads(decode(again.value))
        for site in plans[program.id]:
            theirs = trace.extra["properties"].get(str(site.line), [])
            evaluations = mine[str(site.line)]
            # Past its bound (HumanEval/75's million loop tests) the recorder keeps the
            # first records only: those are compared, their count is not.
            if len(evaluations) != min(len(theirs), PER_LINE) \
                    and not trace.extra["properties_truncated"]:
                wrong.append((program.id, call.args[:40], site.line, "count"))
                continue
            for record, values in zip(theirs, evaluations, strict=False):
                agrees = _loop_agrees(record, values, compared) if site.kind == "loop" \
                    else _test_agrees(record, values, site.node, compared)
                if not agrees:
                    wrong.append((program.id, call.args[:40], site.line, site.texts[0]))
    print(f"statements left out: {dict(left_out)}; compared: {dict(compared)}")
    assert wrong == []
    assert compared["values"] > 10_000
    # Nearly every loop and condition of HumanEval is checked.
    assert sum(left_out.values()) < sum(map(len, plans.values())) / 10
