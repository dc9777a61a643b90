"""The harvest's records as the parent takes them from the child's channel, checked."""

from __future__ import annotations

import json
from typing import Any

from execbench.harvest.channel import Lines
from execbench.harvest.listing import Function

REFUSED_NOT_JSON = "not a record"
REFUSED_JAIL = "a jail report not first on the channel"
REFUSED_AFTER_END = "written after the end of the run"
REFUSED_FUNCTION = "not a listed function, or a filtered one"
REFUSED_MALFORMED = "malformed call record"
REFUSED_SLOT = "reservoir slot out of range or not its ordinal's"
REFUSED_DUPLICATE = "a second record for one ordinal"
REFUSED_ORDINAL = "ordinal beyond the calls the child counted"
MAX_STOPPED_CHARS = 200
"""Characters of the child's word on why it stopped the run (longer: malformed counts)."""


class Records(Lines):
    """The child's records, taken from the pipe only the parent reads and checked as far as
    the parent can: the tests run in the recorder's process and can write on the pipe too.

    The first line is the jail's report of its layers, written before the tests' code ran.
    After it, a call record is refused when it names a function that is not listed (or is
    filtered), a reservoir slot out of range or not its ordinal's (the first ``max_calls``
    ordinals fill slots in order), an ordinal already received for its function, or, at
    the end, an ordinal above the sampling candidates the child counted for the function;
    nothing is taken after the child's last counts (``end``). Counts whose fields the
    verdict and the summary read have the wrong shape (``well_formed``) are not taken and
    mark the run ``malformed``: the harvest fails (the counts are the project's word too).
    Of the rest, per function and slot, the call with the highest ordinal (the latest
    sampling decision) is kept.
    A line longer than ``max_line`` bytes (more than a record or the counts can be) is
    dropped unread, so a flood without newlines cannot fill this process's memory.
    """

    def __init__(self, functions: list[Function], max_calls: int, max_line: int) -> None:
        super().__init__(max_line)
        self.listed = {f.id for f in functions if f.skip is None}
        self.max_calls = max_calls
        self.jail: dict[str, Any] | None = None
        self.ended = False
        self.calls: dict[tuple[str, int], dict[str, Any]] = {}
        """Keyed by function and ordinal."""
        self.accepted = 0
        self.counts: dict[str, Any] = {}
        self.malformed = False

    def _take(self, line: bytes) -> None:
        try:
            record = json.loads(line)
            kind = record["kind"]
        except (ValueError, TypeError, KeyError):
            self.refused[REFUSED_NOT_JSON] += 1
            return
        if self.lines == 1 and kind == "jail":
            self.jail = record
        elif self.jail is None or kind == "jail":
            self.refused[REFUSED_JAIL] += 1
        elif self.ended:
            self.refused[REFUSED_AFTER_END] += 1
        elif kind == "counts" and not well_formed(record):
            self.malformed = True
        elif kind == "counts":
            self.counts = {**self.counts, **record}
            self.ended = bool(record.get("end"))
        elif kind == "call":
            self._call(record)
        else:
            self.refused[REFUSED_NOT_JSON] += 1

    def _call(self, record: dict[str, Any]) -> None:
        function, slot, ordinal = record.get("function"), record.get("slot"), record.get("ordinal")
        if function not in self.listed:
            self.refused[REFUSED_FUNCTION] += 1
        elif type(slot) is not int or type(ordinal) is not int or ordinal < 1 \
                or not isinstance(record.get("args"), str) \
                or not isinstance(record.get("trace"), dict):
            self.refused[REFUSED_MALFORMED] += 1
        elif not 0 <= slot < self.max_calls or (ordinal <= self.max_calls
                                                 and slot != ordinal - 1):
            self.refused[REFUSED_SLOT] += 1
        elif (function, ordinal) in self.calls:
            self.refused[REFUSED_DUPLICATE] += 1
        else:
            self.calls[function, ordinal] = record

    def finish(self) -> dict[tuple[str, int], dict[str, Any]]:
        """The kept calls by function and slot, once the child's channel has closed."""
        self._closed()
        candidates = self.counts.get("candidates", {})
        kept: dict[tuple[str, int], dict[str, Any]] = {}
        for (function, ordinal), record in sorted(self.calls.items(), key=lambda i: i[0][1]):
            bound = candidates.get(function) if isinstance(candidates, dict) else None
            if not isinstance(bound, int) or ordinal > bound:
                self.refused[REFUSED_ORDINAL] += 1
                continue
            self.accepted += 1
            kept[function, record["slot"]] = record
        return kept

    def status(self) -> dict[str, Any]:
        done, total = self.counts.get("tests", (0, 0))
        slots = {(record["function"], record["slot"]) for record in self.calls.values()}
        return {"tests": done, "total": total, "calls": len(slots),
                "functions": len({function for function, _ in slots})}


def well_formed(counts: dict[str, Any]) -> bool:
    """Whether the child's ``counts`` have the shapes the parent reads: ``exit`` an int or
    ``None``, ``tests`` a pair of non-negative ints, ``stopped`` a short text or ``None``."""
    exit_status, tests, stopped = counts.get("exit"), counts.get("tests", [0, 0]), \
        counts.get("stopped")
    return (exit_status is None or type(exit_status) is int) \
        and isinstance(tests, list) and len(tests) == 2 \
        and all(type(n) is int and n >= 0 for n in tests) \
        and (stopped is None or isinstance(stopped, str) and len(stopped) <= MAX_STOPPED_CHARS)
