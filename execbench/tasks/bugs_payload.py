"""What a bug-task instance carries beside the common fields, typed.

Every bug task shows the same error-revealing test and notes the bug it reveals; each
adds its own truth: whether the shown module is the buggy one (prediction), the bug's
lines (localization), the problem's test calls with the canonical values and the
canonical function (repair). Each is written to and read from an instance's task fields
here and nowhere else; ``instances.jsonl`` sorts the keys, so the order fields are written
in is not part of a suite's bytes. Bug prediction's summary (``results.json``'s
``task_metrics.bug-prediction``) is typed here too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from execbench.json_types import JSON, JSONObject
from execbench.tasks.common.balance import BALANCE, ClassBalance
from execbench.tasks.common.json_fields import (
    as_object,
    count,
    ints_of,
    list_of,
    number,
    object_of,
    objects_of,
    text_of,
    text_or_none,
)
from execbench.values import Encoded


@dataclass(frozen=True)
class BugNote:
    """The bug as the source classifies it, and how the test's call shows it: for a
    reader of the suite; no score depends on it."""

    type: str
    symptoms: str
    reveals: str
    """``sources.bugs``: ``wrong value``, ``raises`` or ``no result``."""
    buggy_result: str | None
    """The buggy call's value (its repr), exception type, or run status; None for a wrong
    value with no literal form (``range(3)`` inside a tuple)."""

    def to_record(self) -> JSONObject:
        return {"type": self.type, "symptoms": self.symptoms, "reveals": self.reveals,
                "buggy_result": self.buggy_result}

    @classmethod
    def from_record(cls, record: Mapping[str, JSON]) -> BugNote:
        return cls(text_of(record, "type"), text_of(record, "symptoms"),
                   text_of(record, "reveals"), text_or_none(record, "buggy_result"))


@dataclass(frozen=True)
class BugQuestion:
    """What all three tasks show: the failing test, ``assert f(ARGS) == EXPECTED``."""

    test: str
    bug: BugNote
    code: str | None = field(default=None, kw_only=True)
    """The module shown where it is not the program's own (the buggy one), as the build
    poses the question: a common field, the instance's ``code`` (``Instance.build`` takes
    it out of the record, so a question read back from an instance's data has None)."""

    def _shown(self) -> JSONObject:
        return {"test": self.test, "bug": self.bug.to_record()}

    def _posed(self, record: JSONObject) -> JSONObject:
        """The task's record with the code it shows, where that is set, last."""
        if self.code is not None:
            record["code"] = self.code
        return record

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> BugQuestion:
        """What any bug task's instance shows, whichever task it is."""
        return BugQuestion(text_of(data, "test"), BugNote.from_record(object_of(data, "bug")))


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

    def to_record(self) -> JSONObject:
        return self._posed({**self._shown(), "variant": self.variant, "truth": self.answer})

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> PredictionQuestion:
        shown = BugQuestion.from_record(data)
        return cls(shown.test, shown.bug, text_of(data, "truth") == "yes", code=shown.code)


@dataclass(frozen=True)
class LocalizationQuestion(BugQuestion):
    """Which line is the bug on?"""

    lines: tuple[int, ...]
    """The buggy module's lines where its entry point differs from the canonical one
    (``bugs.bug_lines``): naming any of them is right."""

    def to_record(self) -> JSONObject:
        return self._posed({**self._shown(), "truth": {"lines": list(self.lines)}})

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> LocalizationQuestion:
        shown = BugQuestion.from_record(data)
        return cls(shown.test, shown.bug, ints_of(object_of(data, "truth"), "lines"),
                   code=shown.code)


@dataclass(frozen=True)
class RepairCall:
    """One of the problem's test calls, with the value the canonical program returned."""

    args: str
    value: Encoded
    repr: str

    def to_record(self) -> JSONObject:
        return {"args": self.args, "value": self.value, "repr": self.repr}

    @classmethod
    def from_record(cls, record: Mapping[str, JSON]) -> RepairCall:
        return cls(text_of(record, "args"), list_of(record, "value"), text_of(record, "repr"))


@dataclass(frozen=True)
class RepairQuestion(BugQuestion):
    """Rewrite the entry point so that every test call returns the canonical value."""

    calls: tuple[RepairCall, ...]
    function: str
    """The canonical entry-point function: what the oracle answers."""

    def to_record(self) -> JSONObject:
        return self._posed({**self._shown(),
                            "truth": {"calls": [call.to_record() for call in self.calls],
                                      "function": self.function}})

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> RepairQuestion:
        shown, truth = BugQuestion.from_record(data), object_of(data, "truth")
        return cls(shown.test, shown.bug,
                   tuple(RepairCall.from_record(call) for call in objects_of(truth, "calls")),
                   text_of(truth, "function"), code=shown.code)


# --- the summary ------------------------------------------------------------------------

@dataclass(frozen=True)
class BugPredictionSummary:
    """``task_metrics.bug-prediction``: the share of samples right on each variant (a
    failed request counts as wrong), None where the variant has no samples, and the
    samples each rests on. A model that always says ``yes`` gets ``buggy`` 1 and
    ``fixed`` 0."""

    buggy: float | None
    buggy_samples: int
    fixed: float | None
    fixed_samples: int
    balance: ClassBalance | None = None
    """The majority class rate and balanced accuracy (``common.balance``; ``yes`` is the
    buggy variants' answer); None with no samples, and in a record from before it."""

    def to_record(self) -> JSONObject:
        record: JSONObject = {"buggy": self.buggy, "buggy_samples": self.buggy_samples,
                              "fixed": self.fixed, "fixed_samples": self.fixed_samples}
        if self.balance is not None:
            record[BALANCE] = self.balance.to_record()
        return record

    @classmethod
    def from_record(cls, record: JSON) -> BugPredictionSummary:
        """A missing share reads None, a missing count 0 (all of them where the entry is
        no object), a missing balance None."""
        found = as_object(record)
        return cls(number(found, "buggy"), count(found, "buggy_samples"),
                   number(found, "fixed"), count(found, "fixed_samples"),
                   ClassBalance.from_record(found.get(BALANCE)))
