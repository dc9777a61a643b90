"""DSL-List: randomly sampled list programs, written out as imperative Python.

This is the generated source of the generalization paper (section 4.1, appendix A.1),
rebuilt from its description. ``generate`` draws typed programs in a small list DSL,
translates each to a Python function ``f``, draws three inputs for it, keeps the ones
that run cleanly and are not constant on their inputs, and fills lines-of-code bins. The
language itself, and the translation that gives its programs their meaning, are in
``dsl_language``; this module draws programs and picks the ones the source gives.

Sampling and selection
----------------------
Production weights are those of the paper: ``if`` and ``map`` 5, ``extend`` 0.05, every
other primitive, literal and parameter 1. Trees are drawn top-down with a depth budget
(a production is eligible when it can finish within the budget) and kept only if their
depth is exactly the one asked for. The syntactic constraints of appendix A.1.1 hold by
construction (literal-free first operand of a comparison; ``extend``/``length``/``map``
never on the bare ``empty``; ``-1`` only in ``index``; ``index``/``init``/``tail`` never
on the bare ``empty``) or are checked after drawing (no identical operands of a
comparison or logical operator, no list extending itself, distinct ``if`` branches,
every parameter used). The first three of these are applied both to the DSL subtrees
and to the Python expressions they become, because in-place updates can turn different
subtrees into the same Python (``(< (length a1) (length (tail a1)))`` would compare
``len(a1) < len(a1)``).

``generate`` alternates depths 4 and 5 draw by draw, skips drafts whose line count falls
in no bin that still needs programs or whose code was already taken, and validates the
rest in batches in the sandbox.
"""

from __future__ import annotations

import hashlib
import json
import random
from bisect import bisect
from dataclasses import dataclass
from functools import cache
from itertools import accumulate

from execbench.analysis.shape import LOC_BINS, loc
from execbench.program import Call, Program
from execbench.sandbox.pool import Job, Sandbox
from execbench.sandbox.trace import RESULT_ONLY, Trace
from execbench.sources.base import Loaded, SourceError
from execbench.sources.dsl_language import (
    COMPARISONS,
    ENTRY_POINT,
    LITERALS,
    LOGICAL,
    Node,
    translation,
)
from execbench.values import canonical, is_exact, to_literal

DEPTHS: tuple[int, ...] = (4, 5)
SIGNATURES: dict[str, int] = {"1arg": 1, "2arg": 2}
"""Signature label (used in program ids) -> number of ``List(int)`` parameters."""

INPUTS_PER_PROGRAM = 3
INPUT_LENGTHS = (3, 5)
INPUT_VALUES = (0, 5)
ATTEMPTS_PER_PROGRAM = 2_000
"""Draws allowed per wanted program before giving up on a signature's bins."""
BATCH = 96
"""Drafts validated per ``Sandbox.map`` call: enough to keep every worker busy."""


@dataclass(frozen=True)
class _Rule:
    op: str
    args: tuple[str, ...]
    """The grammar context each argument is drawn from."""
    weight: float


# Contexts: "list" (any list), "list+" (a list that is not the bare ``empty``), "int",
# "int-" (an int that is not a literal), "index" (an int that may be -1), "bool", and
# "func" (an ``int -> int`` mapping function).
_LIST_RULES = (
    _Rule("if", ("bool", "list", "list"), 5.0),
    _Rule("map", ("func", "list+"), 5.0),
    _Rule("append", ("int", "list"), 1.0),
    _Rule("extend", ("list", "list+"), 0.05),
    _Rule("init", ("list+",), 1.0),
    _Rule("tail", ("list+",), 1.0),
)
_INT_RULES = (
    _Rule("if", ("bool", "int", "int"), 5.0),
    _Rule("length", ("list+",), 1.0),
    _Rule("index", ("index", "list+"), 1.0),
)
_LITERAL_RULES = tuple(_Rule(k, (), 1.0) for k in LITERALS)
_BOOL_RULES = (
    *(_Rule(op, ("int-", "int"), 1.0) for op in COMPARISONS),
    *(_Rule(op, ("bool", "bool"), 1.0) for op in LOGICAL),
    _Rule("!", ("bool",), 1.0),
)


@cache
def _grammar(arity: int) -> dict[str, tuple[_Rule, ...]]:
    params = tuple(_Rule(f"a{k}", (), 1.0) for k in range(1, arity + 1))
    return {
        "list": (*params, _Rule("empty", (), 1.0), *_LIST_RULES),
        "list+": (*params, *_LIST_RULES),
        "int": (*_LITERAL_RULES, *_INT_RULES),
        "int-": _INT_RULES,
        "index": (_Rule("-1", (), 1.0), *_LITERAL_RULES, *_INT_RULES),
        "bool": _BOOL_RULES,
        "func": (_Rule("if", ("bool", "int"), 5.0),),
    }


@cache
def _min_heights(arity: int) -> dict[str, int]:
    """The smallest tree height each context can produce (a fixpoint over the rules)."""
    grammar = _grammar(arity)
    best = dict.fromkeys(grammar, 10**9)
    changed = True
    while changed:
        changed = False
        for context, rules in grammar.items():
            for rule in rules:
                h = 1 + max((best[a] for a in rule.args), default=0)
                if h < best[context]:
                    best[context], changed = h, True
    return best


@cache
def _choices(arity: int, context: str, budget: int) -> tuple[tuple[_Rule, ...], list[float]]:
    """The rules of ``context`` that fit in ``budget`` levels, with cumulative weights."""
    lowest = _min_heights(arity)
    rules = tuple(r for r in _grammar(arity)[context]
                  if 1 + max((lowest[a] for a in r.args), default=0) <= budget)
    return rules, list(accumulate(r.weight for r in rules))


def _draw(rng: random.Random, arity: int, context: str, budget: int) -> tuple[Node, int]:
    """A random tree of ``context`` at most ``budget`` high, and its height.

    Picks a rule the way ``rng.choices(rules, cum_weights=...)`` does, without its
    per-call overhead: this runs for every node of every draft.
    """
    rules, weights = _choices(arity, context, budget)
    rule = rules[bisect(weights, rng.random() * weights[-1])]
    if not rule.args:
        return Node(rule.op), 1
    drawn = [_draw(rng, arity, a, budget - 1) for a in rule.args]
    return Node(rule.op, tuple(n for n, _ in drawn)), 1 + max(h for _, h in drawn)


def sample(rng: random.Random, arity: int, depth: int) -> Node:
    """Draw a program of ``arity`` list parameters and exactly ``depth``, meeting A.1.1.

    Draws are repeated until one qualifies; each qualifies with a fixed positive chance,
    so this ends (in practice after a handful of draws).
    """
    return _sample(rng, arity, depth)[0]


def _sample(rng: random.Random, arity: int, depth: int) -> tuple[Node, str]:
    """``sample``, plus the tree's Python translation (made anyway to check it)."""
    if depth < _min_heights(arity)["list"] or arity not in SIGNATURES.values():
        raise ValueError(f"no {arity}-parameter program of depth {depth}")
    params = {f"a{k}" for k in range(1, arity + 1)}
    while True:
        tree, drawn = _draw(rng, arity, "list", depth)
        if drawn != depth or not params <= _leaves(tree) or _repeats(tree):
            continue
        python = translation(tree, arity)
        if not python.repeats:
            return tree, python.code


def _leaves(node: Node) -> set[str]:
    if not node.args:
        return {node.op}
    return set().union(*(_leaves(a) for a in node.args))


def _repeats(node: Node) -> bool:
    """True if some node has two arguments that must differ but are the same subtree."""
    args = node.args
    if node.op in COMPARISONS or node.op in LOGICAL or node.op == "extend":
        same = args[0] == args[1]
    else:
        same = node.op == "if" and len(args) == 3 and args[1] == args[2]
    return same or any(_repeats(a) for a in args)


@dataclass
class _Draft:
    tree: Node
    depth: int
    code: str
    bin: int
    calls: list[str]


def _inputs(rng: random.Random, arity: int) -> list[str]:
    """Three argument texts, each ``arity`` lists of 3-5 ints from 0-5."""
    calls = []
    for _ in range(INPUTS_PER_PROGRAM):
        lists = [[rng.randint(*INPUT_VALUES) for _ in range(rng.randint(*INPUT_LENGTHS))]
                 for _ in range(arity)]
        calls.append(", ".join(map(str, lists)))
    return calls


def _bin_of(lines: int) -> int | None:
    return next((k for k, (lo, hi) in enumerate(LOC_BINS) if lo <= lines <= hi), None)


def _quotas(total: int) -> list[int]:
    """``total`` split over the bins as equally as possible, earlier bins taking the rest."""
    share, rest = divmod(total, len(LOC_BINS))
    return [share + (k < rest) for k in range(len(LOC_BINS))]


def _outputs(traces: list[Trace]) -> list[str] | None:
    """The calls' outputs as literals if the program is valid on them, else ``None``."""
    if any(t.status != "ok" or t.value is None or not is_exact(t.value) for t in traces):
        return None
    if len({canonical(t.value) for t in traces}) == 1:
        return None
    return [to_literal(t.value) for t in traces]


def _fill(rng: random.Random, label: str, total: int, sandbox: Sandbox) -> list[Program]:
    """Draw and validate ``label`` programs until every lines-of-code bin has its quota."""
    arity = SIGNATURES[label]
    quotas = _quotas(total)
    kept: list[list[tuple[_Draft, list[str]]]] = [[] for _ in LOC_BINS]
    taken: set[str] = set()
    attempts, cap = 0, ATTEMPTS_PER_PROGRAM * max(total, 1)
    while any(len(b) < q for b, q in zip(kept, quotas, strict=True)):
        batch: list[_Draft] = []
        while len(batch) < BATCH and attempts < cap:
            depth = DEPTHS[attempts % len(DEPTHS)]
            attempts += 1
            tree, code = _sample(rng, arity, depth)
            where = _bin_of(loc(code))
            if where is None or len(kept[where]) >= quotas[where] or code in taken:
                continue
            taken.add(code)
            batch.append(_Draft(tree, depth, code, where, _inputs(rng, arity)))
        if not batch:
            missing = ", ".join(f"{lo}-{hi}: {len(b)}/{q}" for (lo, hi), b, q
                                in zip(LOC_BINS, kept, quotas, strict=True) if len(b) < q)
            raise SourceError(f"dsl: {label} lines-of-code bins still short after "
                              f"{attempts} draws ({missing})")
        traces = sandbox.map(Job(d.code, ENTRY_POINT, args, RESULT_ONLY)
                             for d in batch for args in d.calls)
        for k, draft in enumerate(batch):
            outputs = _outputs(traces[k * INPUTS_PER_PROGRAM:(k + 1) * INPUTS_PER_PROGRAM])
            if outputs is not None and len(kept[draft.bin]) < quotas[draft.bin]:
                kept[draft.bin].append((draft, outputs))
    return [_program(label, b, k, draft, outputs)
            for b, drafts in enumerate(kept) for k, (draft, outputs) in enumerate(drafts)]


def _program(label: str, where: int, k: int, draft: _Draft, outputs: list[str]) -> Program:
    lo, hi = LOC_BINS[where]
    return Program(
        id=f"dsl/{label}/{lo}-{hi}/{k}", source="dsl", code=draft.code, entry_point=ENTRY_POINT,
        calls=tuple(Call(args, expected) for args, expected in zip(draft.calls, outputs,
                                                                   strict=True)),
        meta={"dsl": str(draft.tree), "signature": label, "depth": draft.depth,
              "loc": loc(draft.code)})


def _digest(programs: list[Program]) -> str:
    records = [{"id": p.id, "code": p.code, "calls": [[c.args, c.expected] for c in p.calls],
                "meta": p.meta} for p in programs]
    text = json.dumps(records, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def generate(count: int, seed: int, sandbox: Sandbox | None = None) -> Loaded:
    """``count`` valid DSL-List programs, the same ones for the same ``count`` and ``seed``.

    Half go to each signature (``1arg`` takes the odd one), split equally over ``LOC_BINS``
    (earlier bins take any remainder). Every program runs without error on its three calls
    and does not return the same value for all three; each call's ``expected`` is that
    returned value. Ids are ``dsl/<signature>/<lo>-<hi>/<k>``, listed by signature, bin,
    then order of acceptance; ``meta`` holds the s-expression (``dsl``), the signature
    label, the depth and the line count. Raises ``SourceError`` when a bin cannot be filled
    within ``ATTEMPTS_PER_PROGRAM`` draws per wanted program.
    """
    if count < 1:
        raise SourceError(f"dsl: count must be at least 1, not {count}")
    if sandbox is None:
        with Sandbox() as own:
            return generate(count, seed, own)
    rng = random.Random(seed)
    totals = {"1arg": count - count // 2, "2arg": count // 2}
    programs = [p for label, total in totals.items() for p in _fill(rng, label, total, sandbox)]
    return Loaded(name="dsl", format="dsl", origin=f"generator:dsl?count={count}&seed={seed}",
                  sha256=_digest(programs), programs=programs)
