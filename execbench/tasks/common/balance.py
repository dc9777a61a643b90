"""How a yes/no task's accuracy sits against its suite's class balance.

A yes/no suite is rarely balanced: on a harvested suite about three branch lines in four
are never executed, so answering ``no`` to everything scores 76.7%. Accuracy alone cannot
tell that from reasoning; two numbers beside it can:

* **majority class rate**: the share of samples whose truth is the suite's most common
  answer, which is the accuracy of a model that always gives that answer (the floor a
  model must beat). A property of the suite, not of the model: every run on the same
  suite (and ``-n``) shows the same value.
* **balanced accuracy**: the mean, over the answers present in the truth, of the share
  of samples right among those whose truth is that answer (each class's recall). A
  constant answer gets 1 / (number of classes) whatever the balance: 50% on yes/no.

Both count samples, as accuracy does, and every sample counts for its truth's class: an
unparsable answer, a failed request or a scoring error is a wrong answer of that class
(it said neither). A sample whose instance states no readable truth is left out. Ties
for the majority go to the first answer in name order.

The block (``ClassBalance``) is written into a task's summary (``task_metrics.TASK
.balance``) and read back leniently, like every summary: a record from before it existed,
or a malformed one, reads as None (no numbers), never raises.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from execbench.results import Metric, Place
from execbench.tasks.common.json_fields import (
    as_object,
    mapping,
    number,
    optional_count,
    optional_text,
)

if TYPE_CHECKING:
    from execbench.json_types import JSON, JSONObject
    from execbench.kept import Kept

YES, NO = "yes", "no"
BALANCE = "balance"
"""The key of the block in a task's summary record."""
MAJORITY, BALANCED = "majority", "balanced_accuracy"
"""The keys of the two numbers in the block (the places the tasks declare)."""


@dataclass(frozen=True)
class ClassShare:
    """The samples whose truth is one answer, and the share of them answered right (the
    class's recall; None in a partial record that does not say)."""

    samples: int | None
    recall: float | None

    def to_record(self) -> JSONObject:
        return {"samples": self.samples, "recall": self.recall}

    @classmethod
    def from_record(cls, record: Mapping[str, JSON]) -> ClassShare:
        return cls(optional_count(record, "samples"), number(record, "recall"))


@dataclass(frozen=True)
class ClassBalance:
    """The majority class rate and the balanced accuracy of a yes/no task's samples (see
    the module doc), with each class's samples and recall."""

    majority: float | None
    """The share of samples whose truth is ``majority_class``."""
    majority_class: str | None
    balanced_accuracy: float | None
    classes: Mapping[str, ClassShare] = field(default_factory=dict)
    """Answer -> its samples and recall, in name order."""

    def to_record(self) -> JSONObject:
        return {MAJORITY: self.majority, "majority_class": self.majority_class,
                BALANCED: self.balanced_accuracy,
                "classes": {name: share.to_record() for name, share in self.classes.items()}}

    @classmethod
    def from_record(cls, record: JSON) -> ClassBalance | None:
        """The block a record states; None where there is none (an older run's summary, or
        anything that is no object)."""
        if not isinstance(record, dict):
            return None
        return cls(number(record, MAJORITY), optional_text(record, "majority_class"),
                   number(record, BALANCED),
                   {name: ClassShare.from_record(as_object(share))
                    for name, share in mapping(record, "classes").items()})


def class_balance(samples: list[Kept], truth_of: Callable[[Kept], str | None]
                  ) -> ClassBalance | None:
    """The balance of ``samples``, each filed under the answer ``truth_of`` says is its
    truth (None: left out); None when no sample has one."""
    right: dict[str, list[bool]] = {}
    for sample in samples:
        truth = truth_of(sample)
        if truth is not None:
            right.setdefault(truth, []).append(bool(sample.correct))
    if not right:
        return None
    names = sorted(right)
    total = sum(len(answers) for answers in right.values())
    majority = max(names, key=lambda name: len(right[name]))  # the first of a tie
    recalls = {name: sum(right[name]) / len(right[name]) for name in names}
    return ClassBalance(len(right[majority]) / total, majority,
                        sum(recalls.values()) / len(recalls),
                        {name: ClassShare(len(right[name]), recalls[name]) for name in names})


def yes_no(truth: JSON) -> str | None:
    """``yes`` or ``no`` for a truth record whose ``value`` is a typed boolean (the
    CodeSense yes/no questions' ``["bool", true]``), None for anything else."""
    value = truth.get("value") if isinstance(truth, dict) else None
    if isinstance(value, list) and len(value) == 2 and value[0] == "bool" \
            and isinstance(value[1], bool):
        return YES if value[1] else NO
    return None


def balance_metrics(task: str) -> tuple[Metric, Metric]:
    """The two numbers as the task declares them, headline, so that the default report
    and the leaderboard show them beside its accuracy."""
    return (Metric("majority class", Place.summary(task, BALANCE, MAJORITY), headline=True,
                   description="share of samples whose truth is the suite's most common "
                   "answer: the accuracy of always giving that answer (the floor)"),
            Metric("balanced accuracy", Place.summary(task, BALANCE, BALANCED),
                   headline=True, description="mean over the answers in the truth of the "
                   "share of samples right among those with that truth (per-class "
                   "recall; an unreadable answer is wrong for its class); 50% for a "
                   "constant answer"))
