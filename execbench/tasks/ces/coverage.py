"""Which prime paths a run tours, which calls a simulation suite takes, and how
consistently a model simulates one program's calls (the paper's section 5).

* **Coverage** of a call: the set of (function, prime path) pairs its run tours, over
  every function of the program (``analysis.cfg``); unknown (None) when the run's line
  events were cut at the tracer's bound or a function has more prime paths than the cap.
* **Choice of calls** (``-T tests=K``, default 3): among the calls that can make an
  instance, in a seeded order, the first call of each different coverage is taken until
  K calls or the coverages run out, then the rest in the same order; so at least two
  calls cover different prime paths wherever the source's calls allow it.
* **Consistency** (Definitions 4 and 5) of a model on a program, from whether each call
  was simulated right (coherent with the right output) and its coverage: *strong* when
  every call is right and either two of them cover different prime paths or each covers
  all of them; *weak* when every call that shares its coverage with another is right and
  some do share (or when all calls are right but none differ); *random* otherwise. Calls
  of unknown coverage share it with no other.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import TYPE_CHECKING

from execbench.analysis.cfg import call_sequences, function_graphs, prime_paths, toured
from execbench.tasks.ces.payload import UNKNOWN, Coverage

if TYPE_CHECKING:
    from execbench.sandbox.trace import Trace

DEFAULT_TESTS = 3


def coverage(code: str, trace: Trace) -> Coverage:
    """A call's coverage: a digest of its toured prime paths, how many it tours of how
    many there are; ``digest`` None when unknown."""
    paths: list[tuple[int, tuple[int, ...]]] = []
    seen: list[tuple[int, tuple[int, ...]]] = []
    for line, graph in sorted(function_graphs(code).items()):
        found = prime_paths(graph.succ)
        if not found.complete or trace.events_truncated:
            return UNKNOWN
        paths += [(line, path) for path in found.paths]
        sequences = call_sequences(graph, trace.events, trace.frames)
        seen += [(line, path) for path in toured(found.paths, sequences)]
    text = json.dumps(sorted(seen), separators=(",", ":"))
    return Coverage(hashlib.sha256(text.encode()).hexdigest()[:16], len(seen), len(paths))


def choose(indices: list[int], coverages: dict[int, str | None], count: int,
           rng: random.Random) -> list[int]:
    """``count`` calls, different coverages first (see the module doc), in call order."""
    order = list(indices)
    rng.shuffle(order)
    chosen: list[int] = []
    digests: set[str] = set()
    for index in order:
        digest = coverages[index]
        if len(chosen) < count and digest is not None and digest not in digests:
            chosen.append(index)
            digests.add(digest)
    for index in order:
        if len(chosen) < count and index not in chosen:
            chosen.append(index)
    return sorted(chosen)


def consistency(tests: list[tuple[bool, Coverage]]) -> str:
    """``strong``, ``weak`` or ``random`` for one program's (right, coverage) pairs."""
    groups: dict[str, list[bool]] = {}
    for number, (right, covered) in enumerate(tests):
        groups.setdefault(covered.digest or f"unknown {number}", []).append(right)
    all_right = all(right for right, _ in tests)
    full = all(c.full for _, c in tests)
    if all_right and (len(groups) > 1 or full):
        return "strong"
    shared = [group for group in groups.values() if len(group) > 1]
    if (shared and all(all(group) for group in shared)) or all_right:
        return "weak"
    return "random"
