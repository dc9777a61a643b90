"""Programs' dates, and the window ``build --after``/``--before`` keeps.

A program's date is ``meta["date"]``, a day written ``YYYY-MM-DD``: the contest format sets
it from ``contest_date``, and a generic record may give it in its ``meta``. A benchmark
that must be newer than a model's training data keeps the programs dated after the model's
cutoff; one that a model may have seen, those before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from execbench.program import Program
from execbench.sources.jsonl import RecordError

DATES = "dates"
"""What a build's manifest names as the reason a program outside the window was left out
(the ``task`` of its ``not_applicable`` skip: not a loss, the user's choice)."""


class DateError(ValueError):
    """A date that cannot be read; the message says which text and the accepted forms."""


def parse_date(text: str) -> date:
    """The day of an ISO date or date-time text (``2024-05-01``, ``2024-05-01T12:00:00``,
    with or without a time zone)."""
    try:
        return datetime.fromisoformat(text.strip()).date()
    except ValueError:
        raise DateError(f"{text!r} is not a date (write it as YYYY-MM-DD, or an ISO "
                        "date and time)") from None


def date_text(text: str) -> str:
    """``text`` as the day ``meta["date"]`` holds; ``RecordError`` if it is not a date."""
    try:
        return parse_date(text).isoformat()
    except DateError as exc:
        raise RecordError(f"key 'contest_date': {exc}") from None


def program_date(program: Program) -> date | None:
    """The program's date, or None where it has none (or one that does not read)."""
    value = program.meta.get("date")
    if not isinstance(value, str):
        return None
    try:
        return parse_date(value)
    except DateError:
        return None


@dataclass(frozen=True)
class DateWindow:
    """The days a build keeps: strictly after ``after`` and strictly before ``before``."""

    after: date | None = None
    before: date | None = None

    @classmethod
    def of(cls, after: str | None, before: str | None) -> DateWindow:
        """The window of two option texts; ``DateError`` names the one that is wrong."""
        window = cls(None if after is None else parse_date(after),
                     None if before is None else parse_date(before))
        if window.after is not None and window.before is not None \
                and window.after >= window.before:
            raise DateError(f"no day is after {window.after} and before {window.before}")
        return window

    @property
    def open(self) -> bool:
        """Whether the window keeps every program, dated or not."""
        return self.after is None and self.before is None

    def excludes(self, program: Program) -> str | None:
        """Why the window leaves ``program`` out, or None if it keeps it."""
        if self.open:
            return None
        day = program_date(program)
        if day is None:
            return "no date, and --after or --before keeps dated programs only"
        if self.after is not None and day <= self.after:
            return f"dated on or before {self.after} (--after)"
        if self.before is not None and day >= self.before:
            return f"dated on or after {self.before} (--before)"
        return None
