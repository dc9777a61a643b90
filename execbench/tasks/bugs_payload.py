"""What a bug-task instance carries beside the common fields, typed.

Every bug task shows the same error-revealing test and notes the bug it reveals; each
adds its own truth: whether the shown module is the buggy one (prediction), the bug's
lines (localization), the problem's test calls with the canonical values and the
canonical function (repair). Each is written to and read from an instance's task fields
here and nowhere else; ``instances.jsonl`` sorts the keys, so the order fields are written
in is not part of a suite's bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from execbench.values import Encoded


@dataclass(frozen=True)
class BugNote:
    """The bug as the source classifies it, and how the test's call shows it: for a
    reader of the suite; no score depends on it."""

    type: str
    symptoms: str
    reveals: str
    """``sources.bugs``: ``wrong value``, ``raises`` or ``no result``."""
    buggy_result: str
    """The buggy call's value (its repr), exception type, or run status."""

    def to_record(self) -> dict[str, Any]:
        return {"type": self.type, "symptoms": self.symptoms, "reveals": self.reveals,
                "buggy_result": self.buggy_result}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> BugNote:
        return cls(record["type"], record["symptoms"], record["reveals"], record["buggy_result"])


@dataclass(frozen=True)
class BugQuestion:
    """What all three tasks show: the failing test, ``assert f(ARGS) == EXPECTED``."""

    test: str
    bug: BugNote

    def _shown(self) -> dict[str, Any]:
        return {"test": self.test, "bug": self.bug.to_record()}

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> BugQuestion:
        """What any bug task's instance shows, whichever task it is."""
        return BugQuestion(data["test"], BugNote.from_record(data["bug"]))


@dataclass(frozen=True)
class PredictionQuestion(BugQuestion):
    """Is the shown module (the buggy one, or the canonical one) buggy?"""

    buggy: bool

    @property
    def variant(self) -> str:
        return "buggy" if self.buggy else "fixed"

    @property
    def answer(self) -> str:
        return "yes" if self.buggy else "no"

    def to_record(self) -> dict[str, Any]:
        return {**self._shown(), "variant": self.variant, "truth": self.answer}

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> PredictionQuestion:
        shown = BugQuestion.from_record(data)
        return cls(shown.test, shown.bug, data["truth"] == "yes")


@dataclass(frozen=True)
class LocalizationQuestion(BugQuestion):
    """Which line is the bug on?"""

    lines: tuple[int, ...]
    """The buggy module's lines where its entry point differs from the canonical one
    (``bugs.bug_lines``): naming any of them is right."""

    def to_record(self) -> dict[str, Any]:
        return {**self._shown(), "truth": {"lines": list(self.lines)}}

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> LocalizationQuestion:
        shown = BugQuestion.from_record(data)
        return cls(shown.test, shown.bug, tuple(data["truth"]["lines"]))


@dataclass(frozen=True)
class RepairCall:
    """One of the problem's test calls, with the value the canonical program returned."""

    args: str
    value: Encoded
    repr: str

    def to_record(self) -> dict[str, Any]:
        return {"args": self.args, "value": self.value, "repr": self.repr}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RepairCall:
        return cls(record["args"], record["value"], record["repr"])


@dataclass(frozen=True)
class RepairQuestion(BugQuestion):
    """Rewrite the entry point so that every test call returns the canonical value."""

    calls: tuple[RepairCall, ...]
    function: str
    """The canonical entry-point function: what the oracle answers."""

    def to_record(self) -> dict[str, Any]:
        return {**self._shown(),
                "truth": {"calls": [call.to_record() for call in self.calls],
                          "function": self.function}}

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> RepairQuestion:
        shown, truth = BugQuestion.from_record(data), data["truth"]
        return cls(shown.test, shown.bug,
                   tuple(RepairCall.from_record(call) for call in truth["calls"]),
                   truth["function"])
