"""Evaluating a program's compounds on the true values of their parts, once, at build time.

Rule 1 evaluates a compound's expression (``sites``) on the values a model states for its
parts. The same evaluation on the parts' *true* values tells two things about the truth:

* **Which compounds Rule 1 can check**: those whose true parts give their true value. A
  helper that reads state the run had changed, or a slice bound that is not a part, gives
  another value outside the run; such a compound is listed as unchecked, with why.
* **The whole iterable of a loop that can be left early.** The task asks for the items the
  loop took (all that a range, zip or generator shows of itself); CES's truth is the whole
  iterable as it stood when the loop started. An answer stating either is right, in scoring
  as in Rule 1, which accepts both. Where the evaluation lists more items than the loop
  took (the loop's items being its first ones, which Rule 1's agreement already requires),
  the listed items are kept as the property's ``whole`` values, one per execution of the
  loop (the items taken, where that execution ran to the end). A listing cut at the
  evaluator's bound is not the whole iterable and is not kept; an iterable with no parts
  to evaluate it on (``range(10)``, a generator held in a name) gets no ``whole`` values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from execbench.tasks.ces.payload import Compound, Property, Unchecked
from execbench.tasks.ces.rules import MAX_LISTED, Check, Stated, agrees, rule1_checks, run_checks
from execbench.values import Encoded, is_exact

if TYPE_CHECKING:
    from execbench.sandbox.pool import Sandbox

_UNFINISHED = "evaluating the expressions on the recorded values did not finish"
_DIFFERS = "the expression evaluated on the recorded operands does not give the recorded value"


@dataclass(frozen=True)
class Calibration:
    """What the build-time evaluation found (see the module doc)."""

    checked: tuple[Compound, ...]
    """The compounds Rule 1 checks."""
    unchecked: tuple[Unchecked, ...]
    """The others, with why."""
    whole: dict[str, list[Encoded]]
    """Iterable tag -> its whole value per execution, for the iterables where some
    execution's whole differs from the items the loop took."""


def calibrate(code: str, properties: Sequence[Property], compounds: Sequence[Compound],
              sandbox: Sandbox) -> Calibration:
    """Evaluate every compound on its true parts in the sandbox (see the module doc)."""
    if not compounds:
        return Calibration((), (), {})
    given: dict[str, Stated | None] = {p.id: Stated(p.values, p.values, True)
                                       for p in properties}
    checks, _ = rule1_checks(compounds, given)
    results = run_checks(code, checks, sandbox) if checks else []
    if results is None:
        return Calibration((), tuple(Unchecked(c.id, _UNFINISHED) for c in compounds), {})
    failing = {check.id for check, result in zip(checks, results, strict=True)
               if not agrees(check, result)}
    return Calibration(tuple(c for c in compounds if c.id not in failing),
                       tuple(Unchecked(c.id, _DIFFERS) for c in compounds if c.id in failing),
                       _wholes(checks, results, failing))


def _wholes(checks: list[Check], results: list[list[Encoded]], failing: set[str]
            ) -> dict[str, list[Encoded]]:
    """The whole iterables of the loops left early, per execution (``Calibration.whole``).
    The checks of one iterable come one per execution, in order (``rule1_checks`` on the
    truth states every execution)."""
    found: dict[str, list[Encoded]] = {}
    differs: set[str] = set()
    for check, result in zip(checks, results, strict=True):
        if check.mode != "iterable" or not check.early_exit or check.id in failing:
            continue
        whole = _whole(result)
        if whole is not None and whole != check.value:
            differs.add(check.id)
        found.setdefault(check.id, []).append(check.value if whole is None else whole)
    return {tag: rows for tag, rows in found.items() if tag in differs}


def _whole(result: list[Encoded]) -> Encoded | None:
    """The iterable's items as the evaluation listed them, or None when it gave a plain
    value (asked as it is), an item with no literal form or a listing cut at the bound."""
    _, value, _, listed = result
    if listed != ["bool", True] or len(value[1]) >= MAX_LISTED or not is_exact(value):
        return None
    return value
