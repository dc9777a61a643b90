"""The DSL-List generator: selection, validity, reproducibility, constraints, translation."""

from __future__ import annotations

import ast
import json
import random
from collections import Counter
from dataclasses import asdict

import pytest

from execbench.analysis.shape import LOC_BINS, loc
from execbench.sandbox.pool import Job
from execbench.sources import dsl, dsl_language
from execbench.sources.base import Loaded, SourceError
from execbench.values import canonical, encode, parse_call_nodes, parse_literal


@pytest.fixture(scope="module")
def loaded(sandbox) -> Loaded:
    return dsl.generate(100, 0, sandbox)


def _dump(loaded: Loaded) -> str:
    return json.dumps({"sha256": loaded.sha256, "origin": loaded.origin,
                       "programs": [asdict(p) for p in loaded.programs]}, sort_keys=True)


def test_counts_bins_and_records(loaded):
    assert (loaded.name, loaded.format) == ("dsl", "dsl")
    assert loaded.origin == "generator:dsl?count=100&seed=0"
    assert len(loaded.programs) == 100 and not loaded.skipped
    assert Counter(p.meta["signature"] for p in loaded.programs) == {"1arg": 50, "2arg": 50}
    cells = Counter((p.meta["signature"], p.id.split("/")[2]) for p in loaded.programs)
    assert cells == {(sig, f"{lo}-{hi}"): 10 for sig in dsl.SIGNATURES for lo, hi in LOC_BINS}
    assert len({p.id for p in loaded.programs}) == 100
    assert len({p.code for p in loaded.programs}) == 100
    for p in loaded.programs:
        _, sig, label, _ = p.id.split("/")
        lo, hi = map(int, label.split("-"))
        arity = dsl.SIGNATURES[sig]
        assert (p.source, p.entry_point) == ("dsl", "f")
        assert p.meta["loc"] == loc(p.code) and lo <= p.meta["loc"] <= hi
        tree = dsl_language.parse(p.meta["dsl"])
        assert p.meta["depth"] in dsl.DEPTHS and dsl_language.height(tree) == p.meta["depth"]
        assert dsl_language.translate(tree, arity) == p.code
        assert len(p.calls) == 3
        for call in p.calls:
            args, kwargs = parse_call_nodes(call.args)
            assert not kwargs and len(args) == arity
            for node in args:
                value = ast.literal_eval(node)
                assert 3 <= len(value) <= 5 and all(0 <= x <= 5 for x in value)


def test_every_program_runs_and_is_not_constant(loaded, sandbox):
    jobs = [Job(p.code, p.entry_point, c.args) for p in loaded.programs for c in p.calls]
    traces = iter(sandbox.map(jobs))
    for p in loaded.programs:
        mine = [next(traces) for _ in p.calls]
        assert all(t.status == "ok" for t in mine), p.id
        assert len({canonical(t.value) for t in mine}) > 1, p.id
        for call, trace in zip(p.calls, mine, strict=True):
            assert canonical(encode(parse_literal(call.expected))) == canonical(trace.value)


def test_same_seed_same_programs(loaded, sandbox):
    assert _dump(dsl.generate(100, 0, sandbox)) == _dump(loaded)


def test_other_seed_other_programs(loaded, sandbox):
    other = dsl.generate(100, 1, sandbox)
    assert other.sha256 != loaded.sha256
    assert [p.code for p in other.programs] != [p.code for p in loaded.programs]


def test_bad_count_and_unfillable_bins(sandbox, monkeypatch):
    with pytest.raises(SourceError, match="at least 1"):
        dsl.generate(0, 0, sandbox)
    monkeypatch.setattr(dsl, "ATTEMPTS_PER_PROGRAM", 1)
    with pytest.raises(SourceError, match="bins still short"):
        dsl.generate(10, 0, sandbox)


# --------------------------------------------------------------------------- constraints


def _nodes(node: dsl_language.Node):
    yield node
    for arg in node.args:
        yield from _nodes(arg)


def _is_literal(node: dsl_language.Node) -> bool:
    return not node.args and node.op.lstrip("-").isdigit()


def _check_tree(tree: dsl_language.Node, arity: int) -> None:
    leaves = {n.op for n in _nodes(tree) if not n.args}
    assert {f"a{k}" for k in range(1, arity + 1)} <= leaves
    for node in _nodes(tree):
        op, args = node.op, node.args
        if op in ("==", "<", ">"):
            assert not _is_literal(args[0])
        if op in ("==", "<", ">", "&&", "||", "extend"):
            assert args[0] != args[1]
        if op == "if" and len(args) == 3:
            assert args[1] != args[2]
        if op in ("extend", "length", "map", "index", "init", "tail"):
            assert args[-1].op != "empty"
        for k, arg in enumerate(args):
            if arg.op == "-1":
                assert (op, k) == ("index", 0)


def _check_code(code: str) -> None:
    def same(a: ast.AST, b: ast.AST) -> bool:
        return ast.dump(a) == ast.dump(b)

    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Compare):
            assert not same(node.left, node.comparators[0])
        elif isinstance(node, ast.BoolOp):
            assert not same(node.values[0], node.values[1])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "extend":
            assert not same(node.func.value, node.args[0])
        elif isinstance(node, ast.If):
            assert not same(node.body[0].value, node.orelse[0].value)


@pytest.mark.parametrize("arity", [1, 2])
@pytest.mark.parametrize("depth", dsl.DEPTHS)
def test_sampled_programs_meet_the_constraints(arity, depth):
    rng = random.Random(arity * 10 + depth)
    for _ in range(100):
        tree = dsl.sample(rng, arity, depth)
        assert dsl_language.height(tree) == depth
        _check_tree(tree, arity)
        _check_code(dsl_language.translate(tree, arity))


def test_sampling_is_reproducible():
    def draws(seed: int) -> list[str]:
        rng = random.Random(seed)
        return [str(dsl.sample(rng, 2, 5)) for _ in range(20)]

    assert draws(7) == draws(7) != draws(8)


# --------------------------------------------------------------------------- translation


MAP = "(map (if (== (index 0 a1) 5) (index (length a1) a2)) (tail a2))"
MAP_PY = """\
def f(a1, a2):
    a2.pop(0)
    for i in range(len(a2)):
        if a1[0] == 5:
            v1 = a2[len(a1)]
        else:
            v1 = a2[i]
        a2[i] = v1
    return a2
"""

BRANCH = ("(if (|| (&& (< (length a1) 3) (> (index -1 a1) 2)) (! (== (index 0 a1) 1))) "
          "(extend (tail a1) (append 2 empty)) (init a1))")
BRANCH_PY = """\
def f(a1):
    v1 = []
    a1.pop(0)
    v1.append(2)
    v1.extend(a1)
    a1.pop()
    if (len(a1) < 3 and a1[-1] > 2) or not (a1[0] == 1):
        v2 = v1
    else:
        v2 = a1
    return v2
"""

EMPTIES = "(if (> (length a1) 3) (append (index 1 a1) empty) (append 0 empty))"
EMPTIES_PY = """\
def f(a1):
    v1, v2 = [], []
    v1.append(a1[1])
    v2.append(0)
    if len(a1) > 3:
        v3 = v1
    else:
        v3 = v2
    return v3
"""


@pytest.mark.parametrize(("text", "arity", "python"),
                         [(MAP, 2, MAP_PY), (BRANCH, 1, BRANCH_PY), (EMPTIES, 1, EMPTIES_PY)])
def test_translation(text, arity, python):
    tree = dsl_language.parse(text)
    assert str(tree) == text
    assert dsl_language.translate(tree, arity) == python
    assert loc(python) == len(python.splitlines())


def test_translation_mutates_in_place(sandbox):
    """``tail`` changes a1 itself, so ``length a1`` afterwards sees the shorter list."""
    code = dsl_language.translate(dsl_language.parse("(append (length a1) (tail a1))"), 1)
    trace = sandbox.run(Job(code, "f", "[1, 2, 3]"))
    assert trace.status == "ok" and trace.value == encode([2, 3, 2])


@pytest.mark.parametrize("text", ["(map length a1)", "(append 1)", "a2", "(foo a1)",
                                  "(map (if (< a1 1) 2 3) a1)"])
def test_translation_refuses_ill_formed_trees(text):
    with pytest.raises(ValueError, match="cannot translate|map takes"):
        dsl_language.translate(dsl_language.parse(text), 1)


@pytest.mark.parametrize("text", ["(tail a1", "(tail a1))", "()", ")"])
def test_parse_refuses_bad_text(text):
    with pytest.raises(ValueError):
        dsl_language.parse(text)
