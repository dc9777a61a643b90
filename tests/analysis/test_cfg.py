"""Control-flow graphs, prime paths and tours.

The graphs and prime paths of the small programs below were drawn by hand before the code
was run; the property test checks the enumeration against brute force on random graphs;
the tours come from real traced runs (loops of 0, 1 and many iterations).
"""

from __future__ import annotations

import random

import pytest

from execbench.analysis.cfg import (
    call_sequences,
    entry_exit_paths,
    function_graphs,
    prime_paths,
    toured,
)
from execbench.sandbox.pool import Job, Sandbox
from execbench.sources import load_source
from tests.helpers.corpus import Corpus
from tests.helpers.data import shared_data

LOOP_IF = """\
def f(xs):
    s = 0
    for x in xs:
        if x > 0:
            s += x
    return s
"""
# Lines: 2 s = 0; 3 for; 4 if; 5 s += x; 6 return.
LOOP_IF_EDGES = [(2, 3), (3, 4), (3, 6), (4, 3), (4, 5), (5, 3)]
LOOP_IF_PRIME = {
    (2, 3, 4, 5), (2, 3, 6), (4, 3, 6), (4, 5, 3, 6),  # maximal simple paths
    (3, 4, 3), (4, 3, 4), (3, 4, 5, 3), (4, 5, 3, 4), (5, 3, 4, 5),  # simple cycles
}



def test_a_loop_with_an_if_by_hand() -> None:
    graph = function_graphs(LOOP_IF)[1]
    assert (graph.name, graph.entry) == ("f", 2)
    assert graph.edges() == LOOP_IF_EDGES
    found = prime_paths(graph.succ)
    assert found.complete and set(found.paths) == LOOP_IF_PRIME


def test_entry_exit_paths_take_each_branch_and_leave_each_loop_once() -> None:
    graph = function_graphs(LOOP_IF)[1]
    assert sorted(entry_exit_paths(graph)) == [(2, 3, 4, 5, 6), (2, 3, 4, 6), (2, 3, 6)]
    assert len(entry_exit_paths(graph, max_paths=2)) == 2
    nested = "def h(a, b):\n" + "".join(f"    if a > {i}:\n        b += {i}\n"
                                          for i in range(12)) + "    return b\n"
    assert len(entry_exit_paths(function_graphs(nested)[1])) == 200  # 4,096, cut


CONSTRUCTS = """\
def g(n, items):
    '''A docstring is not a node.'''
    total = 0
    while True:
        n -= 1
        if n < 0:
            break
        elif n == 3:
            continue
        else:
            total += n
    for item in items:
        if item is None:
            break
    else:
        total += 100
    try:
        total = total // n
    except ZeroDivisionError:
        total = -1
    finally:
        items = None
    with open('/dev/null') as handle:
        handle.read()
    match total:
        case 0:
            return 'zero'
        case _:
            pass
    return total
"""


def test_every_construct_by_hand() -> None:
    graph = function_graphs(CONSTRUCTS)[1]
    assert graph.entry == 3
    expected = {
        3: [4], 4: [5],  # while True: no edge past the loop
        5: [6], 6: [7, 8], 7: [12], 8: [9, 11], 9: [4], 11: [4],
        12: [13, 16], 13: [12, 14], 14: [17],  # break skips the loop's else
        16: [17], 17: [18], 18: [19, 22], 19: [20], 20: [22], 22: [23],
        23: [24], 24: [25], 25: [26], 26: [27, 28], 27: [], 28: [29], 29: [30], 30: [],
    }
    assert {node: sorted(targets) for node, targets in graph.succ.items()} == expected
    assert graph.with_bodies == {23: frozenset({24})}


@pytest.mark.parametrize("seed", range(40))
def test_prime_paths_equal_brute_force_on_random_graphs(seed: int) -> None:
    rng = random.Random(seed)
    size = rng.randint(1, 7)
    succ = {n: sorted(rng.sample(range(size), rng.randint(0, min(3, size))))
            for n in range(size)}
    assert set(prime_paths(succ).paths) == _brute_force(succ)


def _brute_force(succ: dict[int, list[int]]) -> set[tuple[int, ...]]:
    """Every simple path and simple cycle by depth-first search, then the maximal ones."""
    simple: set[tuple[int, ...]] = set()

    def grow(path: tuple[int, ...]) -> None:
        simple.add(path)
        for target in succ[path[-1]]:
            if target == path[0]:
                simple.add((*path, target))
            elif target not in path:
                grow((*path, target))

    for node in succ:
        grow((node,))

    def inside(small: tuple[int, ...], big: tuple[int, ...]) -> bool:
        return len(small) < len(big) and any(
            big[i:i + len(small)] == small for i in range(len(big) - len(small) + 1))

    return {p for p in simple if not any(inside(p, q) for q in simple)}


def test_enumeration_stops_at_the_cap() -> None:
    # A chain of diamonds: 2 ** 12 paths from the first node to the last.
    succ: dict[int, list[int]] = {}
    for i in range(12):
        succ[3 * i] = [3 * i + 1, 3 * i + 2]
        succ[3 * i + 1] = [3 * i + 3]
        succ[3 * i + 2] = [3 * i + 3]
    succ[36] = []
    capped = prime_paths(succ, max_paths=1_000)
    assert not capped.complete and capped.paths == ()


@pytest.mark.parametrize(("args", "expected"), [
    ("[]", {(2, 3, 6)}),
    ("[1]", {(2, 3, 4, 5), (3, 4, 5, 3), (4, 5, 3, 6)}),
    ("[1, 2]", {(2, 3, 4, 5), (3, 4, 5, 3), (4, 5, 3, 4), (5, 3, 4, 5), (4, 5, 3, 6)}),
    ("[-1]", {(3, 4, 3), (4, 3, 6)}),
    ("[-1, 1, -1]", {(3, 4, 3), (4, 3, 4), (3, 4, 5, 3), (4, 5, 3, 4), (4, 3, 6)}),
])
def test_tours_of_real_runs(sandbox: Sandbox, args: str, expected: set) -> None:
    trace = sandbox.run(Job(LOOP_IF, "f", args))
    graph = function_graphs(LOOP_IF)[1]
    sequences = call_sequences(graph, trace.events, trace.frames)
    assert toured(prime_paths(graph.succ).paths, sequences) == expected


def test_with_exits_and_recursive_calls_are_read_per_frame(sandbox: Sandbox) -> None:
    code = ("def fact(n):\n"
            "    if n <= 1:\n"
            "        return 1\n"
            "    with open('/dev/null') as handle:\n"
            "        handle.read()\n"
            "    return n * fact(n - 1)\n")
    trace = sandbox.run(Job(code, "fact", "3"))
    graph = function_graphs(code)[1]
    assert call_sequences(graph, trace.events, trace.frames) == [
        [2, 4, 5, 6], [2, 4, 5, 6], [2, 3]]


def test_every_traced_step_of_the_constructs_is_an_edge(sandbox: Sandbox) -> None:
    graph = function_graphs(CONSTRUCTS)[1]
    for args in ("5, [1, None]", "2, []", "0, [1]", "4, [2, 3]"):
        trace = sandbox.run(Job(CONSTRUCTS, "g", args))
        for sequence in call_sequences(graph, trace.events, trace.frames):
            assert sequence[0] == graph.entry
            steps = list(zip(sequence, sequence[1:], strict=False))
            assert all(b in graph.succ[a] for a, b in steps), (args, sequence)


SAMPLE = {"cruxeval": 200, "humaneval": 40}
"""Programs of each benchmark a default run checks (all of them under ``--run-slow``)."""


@pytest.mark.parametrize("source", ["cruxeval", "humaneval"])
def test_every_traced_step_of_real_programs_is_an_edge(sandbox: Sandbox, corpus: Corpus,
                                                       source: str) -> None:
    """Each call's node sequence, on every call of CRUXEval and of the built-in HumanEval
    (of ``SAMPLE``'s seeded sample of their programs unless ``--run-slow``), starts at its
    function's entry and moves along edges only: the graphs miss no flow the interpreter
    takes, and their prime paths are enumerable (no function hits the cap). A run whose
    events were cut at the tracer's bound is checked on the part recorded."""
    spec = str(shared_data("cruxeval.jsonl")) if source == "cruxeval" else source
    programs = corpus.sample(load_source(spec).programs, SAMPLE[source])
    calls = [(p, Job(p.code, p.entry_point, c.args)) for p in programs for c in p.calls]
    traces = sandbox.map([job for _, job in calls])
    graphs = {p.id: function_graphs(p.code) for p in programs}
    assert all(prime_paths(g.succ).complete for gs in graphs.values() for g in gs.values())
    checked = 0
    for (program, _), trace in zip(calls, traces, strict=True):
        for graph in graphs[program.id].values():
            for sequence in call_sequences(graph, trace.events, trace.frames):
                assert sequence[0] == graph.entry, (program.id, sequence)
                assert all(b in graph.succ[a] for a, b in zip(sequence, sequence[1:],
                                                                  strict=False)), program.id
                checked += 1
    assert checked >= len(calls)
