"""A program's known bug, and the calls of its tests that reveal it.

HumanEvalPack gives every HumanEval problem a bug written by a person: the same module with
a different body of the entry point. The source keeps it in ``Program.meta["bug"]``
(``Bug.to_meta``), so that nothing else about the program changes.

A call *reveals* the bug when the buggy module, run on it in the sandbox, does not return
what the canonical program returned (typed equality, ``values.equal``) or does not return
at all. Only calls on which the canonical program returned a literal value qualify: that
value is the expected one a bug task shows. The bug tasks and ``execbench build --buggy``
pose the same call, chosen by ``error_revealing_call``, so a run of the bug tasks and a run
of a task on the buggy program speak of one test.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from execbench.sandbox.trace import RESULT_ONLY
from execbench.values import equal, is_exact

if TYPE_CHECKING:
    from execbench.program import Program
    from execbench.sandbox.pool import Sandbox
    from execbench.sandbox.trace import Trace

WRONG_VALUE, RAISES, NO_RESULT = "wrong value", "raises", "no result"
"""How a buggy run reveals the bug, in the order ``error_revealing_call`` prefers them: a
wrong value can be asked about on the buggy program (its output, its simulation), an
exception leaves no output to predict, and a run stopped by a limit (``timeout``,
``memory``, ...) hinges on that limit."""
_ORDER = (WRONG_VALUE, RAISES, NO_RESULT)


@dataclass(frozen=True)
class Bug:
    """A known bug: the whole buggy module, and how the source classifies it."""

    code: str
    type: str
    """The kind of mistake (HumanEvalPack: ``missing logic``, ``variable misuse``, ...)."""
    symptoms: str
    """What it does to a run (HumanEvalPack: ``incorrect output``, ``infinite loop``, ...)."""

    def to_meta(self) -> dict[str, str]:
        return {"code": self.code, "type": self.type, "symptoms": self.symptoms}

    @classmethod
    def of(cls, program: Program) -> Bug | None:
        """The program's known bug, or None when its source states none."""
        meta = program.meta.get("bug")
        return None if meta is None else cls(meta["code"], meta["type"], meta["symptoms"])


@dataclass(frozen=True)
class Revealing:
    """A call on which the buggy program goes wrong, and its run there."""

    index: int
    """The call's index in ``program.calls``."""
    how: str
    """``WRONG_VALUE``, ``RAISES`` or ``NO_RESULT``."""
    trace: Trace
    """The buggy program's run on the call (result only)."""


def _reveals(canonical: Trace, buggy: Trace) -> str | None:
    if buggy.status == "ok":
        same = buggy.value is not None and equal(buggy.value, canonical.value)
        return None if same else WRONG_VALUE
    return RAISES if buggy.status == "exception" else NO_RESULT


def revealing_calls(program: Program, bug: Bug, traced: list[tuple[int, Trace]],
                    sandbox: Sandbox, budget: int, memo: dict[Any, Any]) -> list[Revealing]:
    """The traced calls that reveal ``bug``, in call order.

    The buggy module runs under ``budget`` steps (a build's share of the limit), so a bug
    that loops forever costs no more than a ground truth may. The result is kept in
    the build's ``memo``: every bug task and ``--buggy`` run the buggy program once per call.
    """
    from execbench.sandbox.pool import Job

    key = ("bug", program.id, bug.code)
    if key not in memo:
        usable = [(index, trace) for index, trace in traced
                  if trace.status == "ok" and trace.value is not None and is_exact(trace.value)]
        runs = sandbox.map(Job(bug.code, program.entry_point, program.calls[index].args,
                               RESULT_ONLY, max_steps=budget) for index, _ in usable)
        found = []
        for (index, canonical), buggy in zip(usable, runs, strict=True):
            how = _reveals(canonical, buggy)
            if how is not None:
                found.append(Revealing(index, how, buggy))
        memo[key] = found
    return memo[key]


def error_revealing_call(program: Program, bug: Bug, traced: list[tuple[int, Trace]],
                         sandbox: Sandbox, budget: int, seed: int,
                         memo: dict[Any, Any]) -> Revealing | None:
    """The one call a program's bug is shown with: among the revealing calls of the most
    preferred kind (``_ORDER``), one chosen with the seed; None when no call reveals it."""
    found = revealing_calls(program, bug, traced, sandbox, budget, memo)
    for how in _ORDER:
        kind = [item for item in found if item.how == how]
        if kind:
            return random.Random(f"{seed}/{program.id}/bug").choice(kind)
    return None
