"""A suite's ``manifest.json`` as typed records: the recipe that decides the suite, the
sources it read, what it counts and what it skipped and why.

The recipe is defined once (:class:`Recipe`): the manifest writes it, and a rebuild into a
folder that holds a suite compares against it field by field, so a field added here is
written, checked and named in the refusal without another list to keep in step. The file
is written with sorted keys, so the order of the fields here does not change its bytes;
keys that older suites lack (``buggy``, ``after``, ``before``, ``recorded_instances``,
``task_counts``) are
written only when they say something, so those suites keep their bytes.
"""

from __future__ import annotations

import json
import platform
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import execbench.import_guard  # noqa: F401 - first: a folder hiding the package, in one line
from execbench import SCHEMA_VERSION, __version__
from execbench.sandbox.pool import Limits
from execbench.sources.contest_filters import ContestFilters


@dataclass(frozen=True)
class Recipe:
    """The build settings that, with the sources' bytes, decide a suite's contents."""

    seed: int
    tasks: list[str]
    task_options: dict[str, str]
    limit: int | None
    max_calls: int | None
    plus_inputs: bool
    mutate: bool = False
    count: int = 100
    limits: Limits = field(default_factory=Limits)
    buggy: bool = False
    """Written only when set (suites built before the option have no such key)."""
    after: str | None = None
    """``--after``: programs dated strictly later only (written only when set)."""
    before: str | None = None
    """``--before``: programs dated strictly earlier only (written only when set)."""
    contest_filters: ContestFilters | None = None
    """The contest filters applied (written only when some are)."""
    inputs: int = 1
    """``--inputs``: calls per program the one-call tasks ask (written only when not 1)."""

    def to_record(self) -> dict[str, Any]:
        record = {f.name: getattr(self, f.name) for f in fields(self)}
        record["limits"] = asdict(self.limits)
        if self.contest_filters is not None and self.contest_filters.active:
            record["contest_filters"] = self.contest_filters.to_record()
        else:
            del record["contest_filters"]
        if self.inputs == 1:
            del record["inputs"]
        for name in ("buggy", "after", "before"):
            if not record[name]:
                del record[name]
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Recipe:
        """Read the recipe's fields out of a manifest record (other keys are ignored)."""
        values = {f.name: record[f.name] for f in fields(cls) if f.name in record}
        if "contest_filters" in values:
            values["contest_filters"] = ContestFilters.from_record(values["contest_filters"])
        return cls(**{**values, "limits": Limits(**record["limits"])})

    def differences(self, manifest: dict[str, Any]) -> list[str]:
        """The recipe fields that ``manifest`` (a manifest record, perhaps unreadable or
        partial) does not hold as this recipe has them, in the order they are defined."""
        mine = self.to_record()
        return [f.name for f in fields(self) if manifest.get(f.name) != mine.get(f.name)]


@dataclass(frozen=True)
class Skip:
    """Something a build left out, with why: a source record, a program, a call, or one
    task's instance for a call."""

    where: str
    """``file:line`` for a source record, a program id, or ``program#call``."""
    kind: str | None
    """``record``, ``program``, ``call`` or ``instance`` (what was lost), or
    ``not_applicable`` (a call or program the task has no question about: nothing was
    lost); None in suites built before skips had kinds."""
    reason: str
    task: str | None = None
    """The task that found nothing to ask (``instance``), the variant (``mutate``,
    ``buggy``) that dropped a program, or ``dates`` for a program outside ``--after`` and
    ``--before`` (``not_applicable``)."""
    id: str | None = None
    """The id the source gave the record, when it had one."""
    from_source: bool = False
    """Skipped while reading a source: such entries carry ``id`` (null when unknown)."""

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"where": self.where, "reason": self.reason}
        if self.kind is not None:
            record["kind"] = self.kind
        if self.from_source:
            record["id"] = self.id
        if self.task is not None:
            record["task"] = self.task
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Skip:
        return cls(where=record["where"], kind=record.get("kind"), reason=record["reason"],
                   task=record.get("task"), id=record.get("id"), from_source="id" in record)


@dataclass(frozen=True)
class SuiteSource:
    """One source a suite was built from, and what came of it."""

    name: str
    format: str
    origin: str
    sha256: str
    programs: int
    """Programs kept from it (duplicates of an earlier source's ids are not)."""
    skipped: int
    """Its records skipped (within ``--limit``)."""

    def to_record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> SuiteSource:
        return cls(**record)


@dataclass(frozen=True)
class SkipCounts:
    """Skips counted by what was lost."""

    records: int
    programs: int
    """Whole programs: duplicates, no mutant, no bug."""
    calls: int
    """Call-level problems, over the CPU budget."""
    instances: dict[str, int]
    """Per task: calls whose instance could not be made (the call raised, a value has no
    literal form, ...)."""
    not_applicable: dict[str, int] = field(default_factory=dict)
    """Per task: calls and programs the task has no question about (a recorded call for
    input prediction, a function without branches for DexBench); not skips, since
    nothing was lost. Empty in suites built before they were told apart."""

    @classmethod
    def of(cls, skipped: list[Skip]) -> SkipCounts:
        per_task: dict[str, dict[str, int]] = {"instance": {}, "not_applicable": {}}
        for entry in skipped:
            if entry.kind in per_task and entry.task is not None:
                counts = per_task[entry.kind]
                counts[entry.task] = counts.get(entry.task, 0) + 1
        return cls(records=sum(e.kind == "record" for e in skipped),
                   programs=sum(e.kind == "program" for e in skipped),
                   calls=sum(e.kind == "call" for e in skipped),
                   instances=per_task["instance"],
                   not_applicable=per_task["not_applicable"])


@dataclass(frozen=True)
class SuiteCounts:
    """What a build made and what it left out."""

    programs: int
    calls: int
    instances: int
    by_task: dict[str, int]
    skipped: SkipCounts | int
    """An int (all skips) in suites built before skips were counted by kind."""
    programs_by_task: dict[str, int] | None = None
    """None in suites built before it was counted (the key is then absent)."""

    def to_record(self) -> dict[str, Any]:
        record = asdict(self)
        if self.programs_by_task is None:
            del record["programs_by_task"]
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> SuiteCounts:
        skipped = record["skipped"]
        return cls(**{**record, "skipped": skipped if isinstance(skipped, int)
                      else SkipCounts(**skipped)})


@dataclass(frozen=True)
class Manifest:
    """A suite's ``manifest.json``."""

    recipe: Recipe
    sources: list[SuiteSource]
    counts: SuiteCounts
    expected_output_mismatches: list[str]
    """Calls (``program#call``) whose traced output differs from the one the source states."""
    skipped: list[Skip]
    instances_sha256: str
    recorded_instances: list[str] = field(default_factory=list)
    """Instances whose truth comes from a recorded trace (the key is absent when none)."""
    task_counts: dict[str, dict[str, int]] = field(default_factory=dict)
    """Counts that tasks state of their own instances (absent when no task states any)."""
    contest_filtered: dict[str, int] = field(default_factory=dict)
    """Per contest filter applied, how many programs it dropped (absent when none was
    applied; ``sources.contest_filters`` says in what order they run)."""
    python: str = field(default_factory=platform.python_version)
    execbench_version: str = __version__
    schema_version: int = SCHEMA_VERSION

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "schema_version": self.schema_version, "execbench_version": self.execbench_version,
            "python": self.python, **self.recipe.to_record(),
            "sources": [source.to_record() for source in self.sources],
            "counts": self.counts.to_record(),
            "expected_output_mismatches": self.expected_output_mismatches,
            "skipped": [skip.to_record() for skip in self.skipped],
            "instances_sha256": self.instances_sha256}
        if self.recorded_instances:
            record["recorded_instances"] = self.recorded_instances
        if self.task_counts:
            record["task_counts"] = self.task_counts
        if self.contest_filtered:
            record["contest_filtered"] = self.contest_filtered
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Manifest:
        return cls(recipe=Recipe.from_record(record),
                   sources=[SuiteSource.from_record(s) for s in record["sources"]],
                   counts=SuiteCounts.from_record(record["counts"]),
                   expected_output_mismatches=record["expected_output_mismatches"],
                   skipped=[Skip.from_record(s) for s in record["skipped"]],
                   instances_sha256=record["instances_sha256"],
                   recorded_instances=record.get("recorded_instances", []),
                   task_counts=record.get("task_counts", {}),
                   contest_filtered=record.get("contest_filtered", {}), python=record["python"],
                   execbench_version=record["execbench_version"],
                   schema_version=record["schema_version"])

    def text(self) -> str:
        """The file's text (sorted keys, so the bytes do not depend on field order)."""
        return json.dumps(self.to_record(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
