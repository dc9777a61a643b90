"""What a build is asked to make, and how it says how far it is: read by every step of a
build, so kept apart from them all."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields

from execbench.executors import LOCAL, ExecutorChoice
from execbench.manifest import Recipe
from execbench.sandbox.pool import Limits
from execbench.sources.contest_filters import ContestFilters

Progress = Callable[[str, int, "int | None"], None]
"""How a build says how far it is: (stage, done, total), total None while unknown. The
tracing stage counts calls, the others programs."""


@dataclass
class BuildOptions:
    tasks: list[str] | None
    """None: the tasks the sources hold (``held_tasks``)."""
    seed: int = 0
    limit: int | None = None
    """Use only the first N programs (over all sources, in order)."""
    max_calls: int | None = None
    """Per program, keep at most this many calls, chosen with the seed."""
    fmt: str | None = None
    plus_inputs: bool = False
    count: int = 100
    """How many programs the ``dsl`` generator samples."""
    mutate: bool = False
    """Build every task on a single-site mutant of each program instead of the original."""
    buggy: bool = False
    """Build every task on the buggy program of each program whose source states a bug
    (HumanEvalPack), with its error-revealing call only (``sources.bugs``)."""
    task_options: dict[str, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    after: str | None = None
    """Keep only programs dated strictly after this day (``sources.dates``)."""
    before: str | None = None
    """Keep only programs dated strictly before this day."""
    contest_filters: ContestFilters | None = None
    """Which contest solutions to keep (``sources.contest_filters``); None keeps all."""
    inputs: int = 1
    """How many of a program's calls the tasks that ask about one call per program
    (``mutation``, ``choice``) ask about, each in turn."""
    workers: int | None = None
    overwrite: bool = False
    """Replace a different suite already in the output folder (else the build refuses)."""
    executor: ExecutorChoice = LOCAL
    """Where the ground-truth runs happen: here, or a chunk of programs per Ray task (each
    with a sandbox of its own); the suite is the same bytes either way."""

    def recipe(self) -> Recipe:
        """The options that decide the suite's contents (the others say how to build it)."""
        return Recipe(**{f.name: getattr(self, f.name) for f in fields(Recipe)})
