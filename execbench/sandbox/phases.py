"""Where a unit's cost goes: CPU seconds and page faults of each step of its life, measured
only when asked (``Sandbox(phases=True)``: ``bench/sandbox_throughput.py``).

A runner per unit costs far more than the program it runs, and most of that cost is not
time spent in any one function but page faults spread over every step (each write to a
page the runner shares with the zygote copies it). So the steps are measured as the
kernel counts them, ``getrusage``'s CPU time and minor faults, at their boundaries:

* in the zygote: ``fork`` (making the runner), ``relay`` (reading and parsing the unit's
  batch, checking and passing on the answers), ``reap`` (killing and
  waiting for the runner), ``wipe`` (emptying the temporary root), and ``exit``: the
  runner's whole cost as the kernel reports it when it is reaped, less what the runner
  measured itself, so mostly the tearing down of its address space;
* in the runner: ``after fork`` (from the fork to its first own line: the interpreter's
  after-fork work), ``confine``, and per call ``compile``, ``run`` and
  ``encode`` (the answer's payload); sending the last answer is counted in ``exit``.

A runner's figures come back with its results and are checked by the zygote like the rest
of a message (``valid``); the zygote sends its own for a unit once the unit's root is
wiped, in a message of their own, before it forks the next runner (which would otherwise
find them in the memory it inherits); the parent reads that message before the next
unit's answers, or, for a worker's last unit, when the pool closes.
"""

from __future__ import annotations

import resource
from typing import Any, TypeGuard

RUNNER_STEPS = ("after fork", "confine", "compile", "run", "encode")
ZYGOTE_STEPS = ("fork", "relay", "exit", "reap", "wipe")
STEPS = ("fork", *RUNNER_STEPS, *ZYGOTE_STEPS[1:])
"""Every step, in the order a unit lives them."""

Spent = dict[str, list[float]]
"""Per step: ``[cpu_seconds, faults]``."""


def usage() -> tuple[float, int]:
    """This process's CPU seconds (user and system) and minor page faults so far."""
    now = resource.getrusage(resource.RUSAGE_SELF)
    return now.ru_utime + now.ru_stime, now.ru_minflt


def of_child(rusage: Any) -> tuple[float, int]:
    """A reaped child's CPU seconds and minor faults (``os.wait4``'s ``rusage``)."""
    return rusage.ru_utime + rusage.ru_stime, rusage.ru_minflt


class Clock:
    """The steps of one process, each measured from the end of the one before."""

    def __init__(self, start: tuple[float, int] = (0.0, 0)) -> None:
        self.last = start
        """Where the next step starts: a forked child's counts start at zero."""
        self.spent: Spent = {}

    def mark(self, step: str) -> None:
        """``step`` ends now."""
        now = usage()
        add(self.spent, step, now[0] - self.last[0], now[1] - self.last[1])
        self.last = now

    def take(self) -> Spent:
        """The steps measured since the last ``take``."""
        spent, self.spent = self.spent, {}
        return spent


def add(spent: Spent, step: str, cpu: float, faults: float) -> None:
    entry = spent.setdefault(step, [0.0, 0])
    entry[0] += cpu
    entry[1] += faults


def total(spent: Spent) -> tuple[float, float]:
    return sum(cpu for cpu, _ in spent.values()), sum(faults for _, faults in spent.values())


MAX_CPU_SECONDS = 1e6
MAX_FAULTS = 10 ** 12
"""Bounds on one step's figures: more than any unit could spend, small enough that sums of
them stay exact and finite."""


def valid(spent: Any, steps: tuple[str, ...] = RUNNER_STEPS) -> TypeGuard[Spent]:
    """Whether a runner's figures have the shape the zygote relays: known steps, each a
    finite CPU time and a whole number of faults, both non-negative and bounded."""
    return isinstance(spent, dict) and len(spent) <= len(steps) and all(
        step in steps and isinstance(value, list) and len(value) == 2
        and type(value[0]) in (int, float) and type(value[1]) is int
        and 0 <= value[0] <= MAX_CPU_SECONDS and 0 <= value[1] <= MAX_FAULTS
        for step, value in spent.items())
