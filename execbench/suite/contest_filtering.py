"""Applying the contest filters (``sources.contest_filters``) during a build: the ones that
read only the source while the sources are read, the ones that read the calls' runs as each
chunk is traced, with every drop listed and counted per filter.

One ``Filtering`` lives through a build: the syntax trees seen and the solutions kept per
question carry over from chunk to chunk, and chunks come in source order, so the first
solutions in source order are the ones kept, however the build is cut into chunks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from execbench.analysis.syntax import tree_key
from execbench.manifest import Skip
from execbench.program import Program
from execbench.sandbox.pool import Job, Sandbox
from execbench.sandbox.trace import Trace, TraceOptions
from execbench.sources.contest_filters import AST, FILTERS, ContestFilters, length_reason
from execbench.suite.budget import run_all

COUNTING = TraceOptions(recorder="opcodes", max_events=0, max_branch_seq=0)
"""The check run of ``max_steps_per_call``: lines and the operations count only."""
UNCOUNTED = 1 << 62
"""What a check run that did not end normally counts as: more than any limit."""

CONTEST_FILTERS = "contest_filters"
"""What the manifest names as the reason a filtered program was left out (the ``task`` of
its ``not_applicable`` skip: the user's choice, not a loss)."""


@dataclass
class Filtering:
    """The filters of one build and what they dropped so far."""

    filters: ContestFilters
    dropped: dict[str, int] = field(default_factory=dict)
    """Per filter (``FILTERS``), the programs it dropped."""
    filtered: set[str] = field(default_factory=set)
    """The ids of the programs the filters apply to (the contest sources')."""
    _trees: set[str] = field(default_factory=set)
    _per_question: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.dropped = {name: 0 for name in FILTERS if getattr(self.filters, name) is not None}

    def before_tracing(self, program: Program) -> Skip | None:
        """Why the length or duplicate filter drops ``program`` (counted), or None."""
        self.filtered.add(program.id)
        found = length_reason(self.filters, program)
        if found is None and self.filters.dedupe == AST:
            key = tree_key(program.code)
            if key in self._trees:
                found = "dedupe", "its syntax tree is that of an earlier solution"
            self._trees.add(key)
        if found is None:
            return None
        return self._drop(program, *found)

    def after_tracing(self, calls: list[tuple[Program, int]], traces: list[Trace],
                      sandbox: Sandbox) -> tuple[list[tuple[Program, int]], list[Trace],
                                                 list[Skip]]:
        """The calls (and traces) of the programs the operation and per-question filters
        keep, in order, and a skip for each program they drop (counted)."""
        steps = self.filters.max_steps_per_call
        most = self._operations(calls, sandbox) if steps is not None else {}
        skips: list[Skip] = []
        dropped: set[str] = set()
        # A chunk holds whole programs, so each is ruled on once, here.
        for program in {program.id: program for program, _ in calls}.values():
            if program.id not in self.filtered:
                continue
            skip = None
            if steps is not None and most[program.id] > steps:
                skip = self._drop(program, "max_steps_per_call",
                                  f"a call ran {most[program.id]:,} bytecode operations, more "
                                  f"than --max-steps-per-call {steps:,}")
            elif self.filters.max_per_question is not None:
                skip = self._question_cap(program)
            if skip is not None:
                skips.append(skip)
                dropped.add(program.id)
        kept = [(call, trace) for call, trace in zip(calls, traces, strict=True)
                if call[0].id not in dropped]
        return [call for call, _ in kept], [trace for _, trace in kept], skips

    def _operations(self, calls: list[tuple[Program, int]], sandbox: Sandbox
                    ) -> dict[str, int]:
        """Per filtered program, the most bytecode operations one of its calls ran: each
        call run once more, as its ground truth ran, counting them (``opcodes``, which the
        ground truth's own recorder does not count: it would cost every build a trace
        event per operation). A run that ends otherwise than its ground truth counts as
        past any limit."""
        mine = [(program, index) for program, index in calls if program.id in self.filtered]
        counted = run_all(sandbox, [Job(program.code, program.entry_point,
                                        program.calls[index].args, COUNTING)
                                    for program, index in mine])
        most: dict[str, int] = {}
        for (program, _), trace in zip(mine, counted, strict=True):
            found = trace.extra.get("opcodes")
            operations = found if trace.status == "ok" and isinstance(found, int) \
                else UNCOUNTED
            most[program.id] = max(most.get(program.id, 0), operations)
        return most

    def _question_cap(self, program: Program) -> Skip | None:
        question = program.meta.get("question_id")
        if question is None:
            return None
        key = str(question)
        taken = self._per_question.get(key, 0)
        cap = self.filters.max_per_question
        assert cap is not None
        if taken >= cap:
            return self._drop(program, "max_per_question",
                              f"question {key} has {cap} solutions kept already "
                              f"(--max-per-question {cap})")
        self._per_question[key] = taken + 1
        return None

    def _drop(self, program: Program, name: str, reason: str) -> Skip:
        self.dropped[name] += 1
        return Skip(where=program.id, kind="not_applicable", reason=reason,
                    task=CONTEST_FILTERS)
