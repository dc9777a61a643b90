"""Choosing a program's mutant by running them (the generalization paper's Algorithm 1).

``choose_mutant`` applies Algorithm 1 to one (program, call): run every single-site mutant
(``mutation.operators``) in the sandbox, keep those that return normally with an output
different from the original's, and pick the one whose executed-line set is most similar
(Jaccard) to the original's, ties broken with the seed. ``mutant_for`` remembers the choice
in a build's memo, so a suite built with ``--mutate`` and the generalization tasks share
one mutant per (program, call).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from execbench.mutation.operators import Mutant, mutants
from execbench.sandbox.trace import RESULT_ONLY
from execbench.values import equal, is_exact

if TYPE_CHECKING:
    from execbench.program import Program
    from execbench.sandbox.pool import Sandbox
    from execbench.sandbox.trace import Trace

MIN_STEPS = 20_000
MAX_STEPS = 250_000
STEP_FACTOR = 50
"""A mutant may take ``STEP_FACTOR`` times the original call's steps, within bounds: the
bounds keep a mutant that loops forever cheap, and counting (not timing) makes the same
mutants valid on every machine."""


def mutation_call(program: Program, traced: list[tuple[int, Trace]], seed: int) -> int | None:
    """The call a program is mutated for: one that returns a literal value, chosen by seed."""
    usable = _usable(traced)
    if not usable:
        return None
    return random.Random(f"{seed}/{program.id}/mutant").choice(usable)


def mutation_calls(program: Program, traced: list[tuple[int, Trace]], seed: int,
                   most: int) -> list[int]:
    """Up to ``most`` calls a program is mutated for, each on its own, in call order: every
    call that returns a literal value, or ``most`` of them chosen by seed."""
    usable = _usable(traced)
    if len(usable) <= most:
        return usable
    return sorted(random.Random(f"{seed}/{program.id}/mutants").sample(usable, most))


def _usable(traced: list[tuple[int, Trace]]) -> list[int]:
    return [i for i, t in traced if t.status == "ok" and t.value is not None
            and is_exact(t.value)]


def mutant_for(program: Program, call_index: int, trace: Trace, sandbox: Sandbox, seed: int,
               memo: dict[Any, Any]) -> tuple[Mutant, Trace] | None:
    """Algorithm 1 for the call, remembered in the build's memo so tasks share one mutant."""
    args = program.calls[call_index].args
    key = ("mutant", program.id, program.code, args)
    if key not in memo:
        rng = random.Random(f"{seed}/{program.id}/mutant-choice")
        memo[key] = choose_mutant(sandbox, program.code, program.entry_point, args, trace, rng)
    return memo[key]


def mutant_budget(original: Trace) -> int:
    """Steps a mutant may take: a multiple of the original call's, within bounds."""
    return min(MAX_STEPS, max(MIN_STEPS, STEP_FACTOR * original.steps))


def choose_mutant(sandbox: Sandbox, code: str, entry_point: str, args: str, original: Trace,
                  rng: random.Random) -> tuple[Mutant, Trace] | None:
    """Algorithm 1 for one (program, call); None when no mutant is valid."""
    from execbench.sandbox.pool import Job

    candidates = mutants(code)
    if not candidates or original.value is None:
        return None
    # Mutants that loop forever are common (``i += 1`` -> ``i -= 1``); a budget well above
    # the original's own steps keeps them from costing the full limit each.
    budget = mutant_budget(original)
    traces = sandbox.map(Job(m.code, entry_point, args, RESULT_ONLY, max_steps=budget)
                         for m in candidates)
    lines = set(original.lines)
    scored = []
    for mutant, trace in zip(candidates, traces, strict=True):
        if trace.status != "ok" or trace.value is None or not is_exact(trace.value) \
                or equal(trace.value, original.value):
            continue
        union = lines | set(trace.lines)
        similarity = len(lines & set(trace.lines)) / len(union) if union else 1.0
        scored.append((similarity, mutant, trace))
    if not scored:
        return None
    best = max(s for s, _, _ in scored)
    _, mutant, trace = rng.choice([item for item in scored if item[0] == best])
    return mutant, trace
