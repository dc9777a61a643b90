"""Prime-path coverage of a call (loops run 0, 1 and many times), the seeded choice of
calls that puts different coverages first, and Definitions 4 and 5 checked by hand."""

from __future__ import annotations

import random

from execbench.sandbox.pool import Job, Sandbox
from execbench.tasks.ces.coverage import choose, consistency, coverage
from execbench.tasks.ces.payload import Coverage

LOOP = "def f(n):\n    total = 0\n    for i in range(n):\n        total += i\n    return total\n"


def test_loops_run_zero_one_and_many_times_tour_different_paths(sandbox: Sandbox) -> None:
    found = {n: coverage(LOOP, sandbox.run(Job(LOOP, "f", str(n)))) for n in (0, 1, 2, 5)}
    # Prime paths: [2,3,4,3] (loop entered and repeated), [3,4,3], [4,3,4], [2,3,5]
    # (never entered), [4,3,5] (left after an iteration).
    assert {c.prime_paths for c in found.values()} == {5}
    assert [found[n].toured for n in (0, 1, 2, 5)] == [1, 3, 4, 4]
    assert found[2].digest == found[5].digest
    assert len({c.digest for c in found.values()}) == 3


def test_a_run_cut_at_the_event_bound_has_unknown_coverage(sandbox: Sandbox) -> None:
    from execbench.sandbox.trace import TraceOptions

    trace = sandbox.run(Job(LOOP, "f", "100", TraceOptions(max_events=10)))
    assert coverage(LOOP, trace).digest is None


def test_different_coverages_are_chosen_first() -> None:
    digests = {0: "a", 1: "a", 2: "a", 3: "b", 4: None}
    for seed in range(20):
        chosen = choose(list(digests), digests, 2, random.Random(seed))
        assert {digests[i] for i in chosen} == {"a", "b"}
    assert choose(list(digests), digests, 9, random.Random(0)) == [0, 1, 2, 3, 4]
    assert choose([0, 1], {0: "a", 1: "a"}, 1, random.Random(0)) in ([0], [1])


def _covers(digest: str | None, toured: int = 1, paths: int = 3) -> Coverage:
    return Coverage(digest, toured, paths)


def test_consistency_levels_by_hand() -> None:
    a, b = _covers("a"), _covers("b")
    assert consistency([(True, a), (True, b), (True, a)]) == "strong"
    assert consistency([(True, a), (True, a), (False, b)]) == "weak"
    assert consistency([(False, a), (True, a), (True, b)]) == "random"
    assert consistency([(True, a), (True, a)]) == "weak"  # no two coverages to differ
    full = _covers("a", 3, 3)
    assert consistency([(True, full), (True, full)]) == "strong"  # each covers them all
    assert consistency([(True, b), (False, a)]) == "random"
    unknown = _covers(None)
    assert consistency([(False, unknown), (True, unknown), (True, a)]) == "random"
