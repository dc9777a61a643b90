"""Builds on variants of the programs instead of the programs themselves: a mutant
(``--mutate``, Algorithm 1) or the known bug a source states (``--buggy``, HumanEvalPack).

Both replace each program by one other program with the one call that tells it apart from
the original, drop the programs with no such variant, and trace the variants as any
other program; they differ only in how a variant is found, which a ``Variant`` says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from execbench.manifest import Skip
from execbench.program import LANGUAGES, PYTHON, Program
from execbench.sandbox.pool import Sandbox
from execbench.sandbox.trace import Trace, TraceOptions
from execbench.suite.ground_truth import ground_truth
from execbench.suite.options import Progress
from execbench.tasks.base import build_step_budget

Traced = list[tuple[int, Trace]]
"""A program's traced calls, as (call index, trace) pairs."""


@dataclass(frozen=True)
class Variant:
    """One way to vary a program: ``find`` gives the variant of a program with its traced
    calls (in a sandbox, with the seed), or the reason it has none."""

    task: str
    """What the manifest's skips of programs with no variant name as their task."""
    stage: str
    """The progress stage while variants are sought."""
    find: Callable[[Program, Traced, Sandbox, int], Program | str]


def vary(variant: Variant, sandbox: Sandbox, calls: list[tuple[Program, int]],
         traces: list[Trace], seed: int, recording: TraceOptions, skipped: list[Skip],
         traced_skips: list[Skip], progress: Progress
         ) -> tuple[list[Program], list[tuple[Program, int]], list[Trace]]:
    """Each program replaced by its variant, traced with ``recording``: the variants, their
    calls and their traces. Programs with no variant are listed in ``skipped``, variants
    whose ground truth is not kept in ``traced_skips``."""
    found: list[Program] = []
    grouped = _by_program(calls, traces)
    for done, (program, traced) in enumerate(grouped):
        progress(variant.stage, done, len(grouped))
        made = variant.find(program, traced, sandbox, seed)
        if isinstance(made, str):
            skipped.append(Skip(where=program.id, kind="program", reason=made,
                                task=variant.task))
        else:
            found.append(made)
    new_calls, new_traces = ground_truth(sandbox, [(program, 0) for program in found],
                                         recording, progress, traced_skips,
                                         "tracing variants")
    return [program for program, _ in new_calls], new_calls, new_traces


def _by_program(calls: list[tuple[Program, int]], traces: list[Trace]
                ) -> list[tuple[Program, Traced]]:
    """Each program with its traced calls, in source order."""
    grouped: dict[str, tuple[Program, Traced]] = {}
    for (program, index), trace in zip(calls, traces, strict=True):
        grouped.setdefault(program.id, (program, []))[1].append((index, trace))
    return list(grouped.values())


def _replaced(program: Program, suffix: str, code: str, index: int, meta: dict[str, Any],
              origin: dict[str, Any]) -> Program:
    """``program`` with ``code`` in place of its own and its call ``index`` alone; ``meta``
    says, under ``mutation``, what the variant is (``origin``) and what it came from. The
    output a source states belongs to the original, so the call states none."""
    call = replace(program.calls[index], expected=None)
    return Program(
        id=f"{program.id}@{suffix}", source=program.source, code=code,
        entry_point=program.entry_point, calls=(call,),
        meta={**meta, "mutation": {**origin, "original_id": program.id,
                                   "original_call_index": index}})


def _mutant(program: Program, traced: Traced, sandbox: Sandbox, seed: int) -> Program | str:
    """The program's mutant for one seeded call: one that runs without error and changes
    the call's output."""
    from execbench.mutation import mutant_for, mutation_call  # only builds that mutate

    if program.language != PYTHON:
        return (f"a {LANGUAGES[program.language]} program is never run, so no mutant of it "
                "can be checked")
    index = mutation_call(program, traced, seed)
    found = None if index is None else mutant_for(program, index, dict(traced)[index],
                                                  sandbox, seed, {})
    if index is None or found is None:
        return "no mutant runs without error and changes the output"
    mutant, _ = found
    return _replaced(program, "mutant", mutant.code, index, program.meta, mutant.describe())


def _buggy(program: Program, traced: Traced, sandbox: Sandbox, seed: int) -> Program | str:
    """The module of the bug the source states, with the one call of the problem's tests
    that reveals it (the call the bug tasks show). It states no bug of its own, so the bug
    tasks skip it."""
    from execbench.sources.bugs import Bug, error_revealing_call  # only builds on bugs

    bug = Bug.of(program)
    if bug is None:
        return "the source states no bug for this program"
    found = error_revealing_call(program, bug, traced, sandbox, build_step_budget(sandbox),
                                 seed, {})
    if found is None:
        return "no call of the problem's tests reveals the bug"
    meta = {key: value for key, value in program.meta.items() if key != "bug"}
    return _replaced(program, "buggy", bug.code, found.index, meta,
                     {"bug_type": bug.type, "failure_symptoms": bug.symptoms,
                      "reveals": found.how})


MUTANT = Variant("mutate", "finding mutants", _mutant)
BUGGY = Variant("buggy", "finding bug-revealing calls", _buggy)
