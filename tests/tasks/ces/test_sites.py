"""What a simulation asks: the properties of each loop and condition with their true
values (checked by hand), lines the run never reaches, iterables written as the items the
loop took, and annotations that leave the program as it was."""

from __future__ import annotations

import pytest

from execbench.sandbox.pool import Job, Sandbox
from execbench.sandbox.trace import TraceOptions
from execbench.tasks.base import SkipInstance
from execbench.tasks.ces.annotate import annotate
from execbench.tasks.ces.payload import Compound, Property
from execbench.tasks.ces.sites import order_key, properties_of
from execbench.values import decode

PROPERTIES = TraceOptions(recorder="properties")
CODE = """\
def f(pairs, n):
    out = []
    for k, (a, *rest) in enumerate(pairs):
        if a > n or not rest:
            out.append(k)
    for i in range(len(pairs)):
        if i == 1:
            break
    while n > 0 and out:
        n -= 1
    if n < -5:
        return None
    return out
"""


def _found(sandbox: Sandbox, code: str, args: str
           ) -> tuple[dict[str, Property], list[Compound]]:
    trace = sandbox.run(Job(code, "f", args, PROPERTIES))
    properties, compounds = properties_of(code, trace)
    return {p.id: p for p in properties}, compounds


def _values(prop: Property) -> list:
    return [decode(v) for v in prop.values]


def test_properties_by_hand(sandbox: Sandbox) -> None:
    found, compounds = _found(sandbox, CODE, "[(5, 1), (0,), (7,)], 2")
    assert {tag: (p.kind, p.label) for tag, p in found.items()} == {
        "3a": ("loop_variable", "k"), "3b": ("loop_variable", "a"),
        "3c": ("loop_variable", "rest"), "3d": ("iterable", "enumerate(pairs)"),
        "3e": ("iterable_part", "pairs"),
        "4a": ("predicate", "a > n or not rest"), "4b": ("clause", "a > n"),
        "4c": ("clause", "not rest"), "4d": ("branch", "taken"),
        "6a": ("loop_variable", "i"), "6b": ("iterable", "range(len(pairs))"),
        "6c": ("iterable_part", "len(pairs)"),
        "7a": ("predicate", "i == 1"), "7b": ("branch", "taken"),
        "9a": ("loop_variable", "n"),  # `out` is read only when `n > 0` holds: not asked
        "9b": ("predicate", "n > 0 and out"), "9c": ("clause", "n > 0"),
        "9d": ("clause", "out"), "9e": ("branch", "taken"),
        "11a": ("predicate", "n < -5"), "11b": ("branch", "taken")}
    assert _values(found["3b"]) == [5, 0, 7] and _values(found["3c"]) == [[1], [], []]
    assert _values(found["3d"]) == [[(0, (5, 1)), (1, (0,)), (2, (7,))]]  # the items taken
    assert _values(found["4c"]) == [None, True, None]  # skipped when `a > n` held
    assert _values(found["4a"]) == _values(found["4d"]) == [True, True, True]
    assert _values(found["6b"]) == [[0, 1]]  # the loop broke out: the items it took
    assert _values(found["6c"]) == [3]
    assert _values(found["9a"]) == [2, 1, 0] and _values(found["9d"]) == [True, True, None]
    assert _values(found["11a"]) == [False]
    assert {c.id: (c.of, c.expression) for c in compounds} == {
        "3d": (("3e",), "enumerate(__eb_get(0))"),
        "4a": (("4b", "4c"), "__eb_get(0) or __eb_get(1)"),
        "6b": (("6c",), "range(__eb_get(0))"),
        "9b": (("9c", "9d"), "__eb_get(0) and __eb_get(1)")}
    assert [c.early_exit for c in compounds] == [False, None, True, None]
    # A condition's compound says nothing of leaving early, in the record too.
    assert ["early_exit" in c.to_record() for c in compounds] == [True, False, True, False]


def test_lines_the_run_never_reaches_are_asked_with_no_values(sandbox: Sandbox) -> None:
    found, _ = _found(sandbox, CODE, "[], -9")
    assert all(found[tag].values == [] for tag in ("3a", "4a", "4d", "7a", "7b"))
    assert _values(found["3d"]) == [[]]  # the loop ran, with no iteration
    assert _values(found["11a"]) == [True]


def test_values_that_cannot_be_written_as_literals_are_not_asked(sandbox: Sandbox) -> None:
    code = ("class Box:\n    pass\n\ndef f():\n    for b in [Box(), Box()]:\n"
            "        if b:\n            pass\n    return 1\n")
    found, _ = _found(sandbox, code, "")
    assert sorted(found) == ["6a", "6b"]  # nothing of the loop; the condition as its truth
    assert _values(found["6a"]) == [True, True]


def test_values_follow_the_run_order(sandbox: Sandbox) -> None:
    found, _ = _found(sandbox, CODE, "[(5, 1), (0,)], 2")
    order = sorted((order_key(p, k), tag) for tag, p in found.items()
                   for k in range(len(p.values)) if p.line < 6)
    assert [tag for _, tag in order] == [
        "3e", "3d", "3a", "3b", "3c", "4b", "4c", "4a", "4d",
        "3a", "3b", "3c", "4b", "4c", "4a", "4d"]


def test_a_trace_without_properties_makes_no_instance(sandbox: Sandbox) -> None:
    with pytest.raises(SkipInstance, match="no recorded properties"):
        properties_of(CODE, sandbox.run(Job(CODE, "f", "[], 1")))


def test_annotations_go_where_the_header_ends_and_change_nothing() -> None:
    code = "def f(xs):\n    if (len(xs) > 1 and\n            xs[0]):  # keep\n        return 1\n" \
           "    return 0\n"
    props = [Property("2a", 2, "predicate", "len(xs) > 1 and xs[0]", [], []),
             Property("2b", 2, "branch", "taken", [], [])]
    lines = annotate(code, props).splitlines()
    assert lines[2] == "            xs[0]):  # keep  # [2a] len(xs) > 1 and xs[0] = ??  " \
                       "[2b] taken = ??"
    assert lines[1] == "    if (len(xs) > 1 and" and lines[3:] == code.splitlines()[3:]
    filled = annotate(code, props, {"2a": "[True]", "2b": "[True]"})
    assert "[2a] len(xs) > 1 and xs[0] = [True]" in filled
