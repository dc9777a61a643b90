"""What a DexBench instance carries beside the common fields, typed.

Two shapes, one per direction: the coverage question (the executed lines, and what the
failure taxonomy needs to label a wrong set), and the counterfactual question (the target,
the input that reaches it, the original call's lines). Both carry the program's complexity,
which the DexBench report tabulates per suite. Each is written to and read from an
instance's task fields here and nowhere else; ``instances.jsonl`` sorts the keys, so the
order fields are written in is not part of a suite's bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from execbench.tasks.common.answers import Given
from execbench.tasks.common.json_fields import (
    int_of,
    ints,
    ints_of,
    list_of,
    object_of,
    text_of,
)

if TYPE_CHECKING:
    from execbench.analysis.shape import Shape
    from execbench.json_types import JSON, JSONObject
    from execbench.tasks.base import Instance

DEXBENCH_TASKS = ("coverage", "counterfactual")


@dataclass(frozen=True)
class Complexity:
    """The program's size and branching, as the paper's complexity table counts them."""

    loc: int
    cyclomatic: int
    category: str
    """``CO`` (an ``if``, no loop), ``LO`` (a loop, no ``if``), ``LC`` (both), ``Others``."""

    @classmethod
    def of(cls, shape: Shape) -> Complexity:
        return cls(shape.loc, shape.cyclomatic, shape.category)

    def to_record(self) -> JSONObject:
        return {"loc": self.loc, "cyclomatic": self.cyclomatic, "category": self.category}

    @classmethod
    def from_record(cls, record: Mapping[str, JSON]) -> Complexity:
        return cls(int_of(record, "loc"), int_of(record, "cyclomatic"),
                   text_of(record, "category"))


def complexity(instance: Instance) -> Complexity | None:
    """The complexity a DexBench instance states; None for any other task's, or for a
    record written before the build stated it."""
    if instance.task not in DEXBENCH_TASKS or "shape" not in instance.data:
        return None
    return Complexity.from_record(object_of(instance.data, "shape"))


@dataclass(frozen=True)
class CoverageQuestion:
    """Which lines a call executes (each statement by its first line)."""

    lines: tuple[int, ...]
    """The truth, ascending."""
    executable: tuple[int, ...]
    """Every line a statement starts on: a predicted line outside them is a hallucination."""
    blocks: tuple[tuple[int, ...], ...]
    """The basic blocks: one run in part is a skipped statement."""
    shape: Complexity
    options: tuple[tuple[int, ...], ...] = ()
    """With ``-T options=listed``, the executed-line sets the prompt offers to choose from
    (the truth among them); empty otherwise, and then not in the record."""

    def to_record(self) -> JSONObject:
        record: JSONObject = {
            "truth": {"lines": list(self.lines), "executable": list(self.executable),
                      "blocks": [list(block) for block in self.blocks]},
            "shape": self.shape.to_record()}
        if self.options:
            record["options"] = [list(option) for option in self.options]
        return record

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> CoverageQuestion:
        truth = object_of(data, "truth")
        blocks = list_of(truth, "blocks")
        options = list_of(data, "options") if "options" in data else []
        return cls(ints_of(truth, "lines"), ints_of(truth, "executable"),
                   tuple(ints(block, "blocks") for block in blocks),
                   Complexity.from_record(object_of(data, "shape")),
                   tuple(ints(option, "options") for option in options))


@dataclass(frozen=True)
class Target:
    """The code a counterfactual answer must make run (Algorithm 1)."""

    line: int
    kind: str
    """The branch's keyword (``if``, ``elif``, ``else``, ``for``, ...), or ``line`` for a
    line outside every branch body."""
    body: tuple[int, ...]
    """The lines any one of which running counts as reaching the target."""
    decision: int | None
    """The line deciding whether the body runs: when it ran and the body did not, the
    answer misread the prompt. None for a standalone line."""
    arms: bool = False
    """The body takes in the ``elif``/``else`` arms after the branch (``-T body=chain``)."""

    def to_record(self) -> JSONObject:
        record: JSONObject = {"line": self.line, "kind": self.kind, "body": list(self.body),
                  "decision": self.decision}
        return {**record, "arms": True} if self.arms else record

    @classmethod
    def from_record(cls, record: Mapping[str, JSON]) -> Target:
        decision = record["decision"]
        if decision is not None:
            decision = int_of(record, "decision")
        return cls(int_of(record, "line"), text_of(record, "kind"), ints_of(record, "body"),
                   decision, record.get("arms") is True)


@dataclass(frozen=True)
class CounterfactualQuestion:
    """Arguments under which the target runs, where the original call's did not."""

    target: Target
    witness: str | None
    """Arguments found to reach the target, written as an answer: what the oracle says.
    None where the search found none and ``-T unwitnessed=keep`` kept the target: an
    answer is then judged by running it alone, and the oracle abstains."""
    original_lines: tuple[int, ...]
    """The lines the original call executed."""
    given: tuple[Given, ...]
    """The call's arguments that are not literals, which an answer repeats verbatim."""
    mode: str
    """``mutate`` (the prompt shows the original call) or ``generate`` (it hides it)."""
    target_rule: str
    shape: Complexity

    def to_record(self) -> JSONObject:
        return {"truth": {**self.target.to_record(), "witness": self.witness,
                          "original_lines": list(self.original_lines)},
                "given": [g.to_record() for g in self.given], "mode": self.mode,
                "target_rule": self.target_rule, "shape": self.shape.to_record()}

    @classmethod
    def from_record(cls, data: Mapping[str, JSON]) -> CounterfactualQuestion:
        truth = object_of(data, "truth")
        witness = None if truth.get("witness") is None else text_of(truth, "witness")
        return cls(Target.from_record(truth), witness,
                   ints_of(truth, "original_lines"), Given.listed(data),
                   text_of(data, "mode"), text_of(data, "target_rule"),
                   Complexity.from_record(object_of(data, "shape")))
