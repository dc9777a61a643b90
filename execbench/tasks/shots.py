"""Worked examples drawn from the suite (``--shot-pick random|same-kind|same-function``).

CodeSense's ablation compares in-context examples picked at random, of the same kind as
the question, and from the same function; Yang et al. show one example with its run
worked out. An example here is another instance of the same task in the same suite,
asked with the task's own template variables and answered with the answer the oracle
gives (``reference_response``, so its format is the one scoring reads); in reasoning style
it also carries its run worked out line by line (``worked_steps``), made by the same
tracer that makes the ground truth. The pick is seeded by the run's seed and the
instance's id, so a prompt is the same wherever it is made again (``show``, the page).

A function is its code (trailing spaces and blank ends aside) in its language, whatever
program id its source gave it: CodeSense's files repeat a function under many records.
``random`` and ``same-kind`` never take an example from the question's own function (the
answer to a sibling question can give the answer away); ``same-function`` takes them from
there only, as asked, never from the question's own call (other questions on one call
give each other's answers away: a block's first two statements and its first three, a
bug's buggy and fixed variants, a mutant and its original), so it draws the function's
other calls. Where the suite has fewer candidates than ``--shots``, the prompt shows fewer
examples, and the run says how many questions that concerns (``shortfall``).

Only ids, programs, kinds and file offsets are kept in memory (the suite is read once to
index it); an example's instance is read back from the file when drawn.
"""

from __future__ import annotations

import hashlib
import random
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from typing import Protocol as Interface

from execbench.program import PYTHON
from execbench.tasks.protocol import DIRECT, FIXED, Protocol
from execbench.tasks.registry import get_task
from execbench.values import to_literal

if TYPE_CHECKING:
    from execbench.sandbox.pool import Limits, Sandbox
    from execbench.tasks.base import Instance
    from execbench.tasks.roles import Task

SAME_KIND = "same-kind"
SAME_FUNCTION = "same-function"
MAX_STEPS_SHOWN = 40
"""The most line steps a worked example states; a longer run is summed up after them."""
_CACHED = 256
"""Examples kept made (their variables and worked steps): neighbouring questions of a
program draw the same ones."""


@dataclass(frozen=True, slots=True)
class Entry:
    """An instance of the suite as a candidate example: where it is, and what it is
    about (its function, its call, its kind)."""

    id: str
    function: str
    """A hash of the function's code and language (``function_of``)."""
    call: str
    """A hash of the function and the call's arguments."""
    kind: str
    offset: int


class SuiteReader(Interface):
    """What examples are drawn from: a suite read as a stream (``suite.SuiteFile``)."""

    @property
    def limits(self) -> Limits: ...

    def offsets(self) -> dict[str, int]: ...

    def instances(self) -> Iterator[Instance]: ...

    def instance_at(self, offset: int, expected: str) -> Instance: ...


def function_of(instance: Instance) -> str:
    """The question's function, whatever program id its source gave it."""
    lines = "\n".join(line.rstrip() for line in instance.code.strip().splitlines())
    return hashlib.sha256(f"{instance.language}\n{lines}".encode()).hexdigest()[:16]


def call_of(instance: Instance) -> str:
    """The question's call: its function and its arguments."""
    return hashlib.sha256(f"{function_of(instance)}\n{instance.args}".encode()).hexdigest()[:16]


def worked_steps(task: Task, instance: Instance, sandbox: Sandbox) -> str:
    """The call the example's answer is about (``Asking.worked_call``) worked out: each
    line a function runs (``MAX_STEPS_SHOWN`` of them), with the local variables it set,
    then what the call returned or raised; empty for a call that cannot run alone here
    (recorded where it ran, or not Python)."""
    from execbench.sandbox.pool import Job
    from execbench.sandbox.trace import TraceOptions
    from execbench.tasks.base import build_step_budget

    if instance.recorded or instance.language != PYTHON:
        return ""
    code, entry_point, args = task.asking.worked_call(instance)
    trace = sandbox.run(Job(code, entry_point, args, TraceOptions(states=True),
                            max_steps=build_step_budget(sandbox)))
    functions = {frame["function"] for frame in trace.frames} - {"<module>"}
    steps: list[str] = []
    before: dict[int, tuple[int, dict[str, Any]]] = {}
    for state in trace.states:
        frame = state["frame"]
        name = trace.frames[frame]["function"]
        if name == "<module>":
            continue  # the module's definitions, not the call's work
        if frame in before:
            line, earlier = before[frame]
            changed = [f"{key} = {_shown(value)}" for key, value in state["locals"].items()
                       if earlier.get(key) != value]
            where = f"in {name}, line {line}" if len(functions) > 1 else f"line {line}"
            steps.append(f"{where}: {', '.join(changed)}" if changed else where)
        before[frame] = (state["line"], state["locals"])
    said = [f"Running `{entry_point}({args})`, line by line with what each line sets:"]
    said += steps[:MAX_STEPS_SHOWN]
    if len(steps) > MAX_STEPS_SHOWN:
        said.append(f"... and {len(steps) - MAX_STEPS_SHOWN} more lines.")
    if trace.status == "ok" and trace.value is not None:
        said.append(f"The call returns {_shown(trace.value)}.")
    elif trace.exception:
        said.append(f"The call raises {trace.exception['type']}.")
    return "\n".join(said)


def _shown(value: Any) -> str:
    try:
        return to_literal(value)
    except (ValueError, TypeError, KeyError, IndexError):
        return "<a value with no literal form>"


@dataclass
class _Index:
    """A task's candidates, by function and by kind, so that a pick reads only its own."""

    by_function: dict[str, list[Entry]]
    by_kind: dict[str, list[Entry]]
    every: list[Entry]


class DrawnExamples:
    """The examples of every question of a run, drawn from its suite (see the module)."""

    def __init__(self, suite: SuiteReader, sandbox: Sandbox | None) -> None:
        self.suite = suite
        self.sandbox = sandbox
        """Where worked steps are run; None: examples carry none (as in direct style)."""
        self._index: dict[str, _Index] | None = None
        self._made: OrderedDict[tuple[str, str], dict[str, Any]] = OrderedDict()

    def index(self) -> dict[str, _Index]:
        """Every instance of the suite as an entry, by task (read once, when first asked)."""
        if self._index is None:
            found: dict[str, _Index] = {}
            offsets = self.suite.offsets()
            for instance in self.suite.instances():
                if get_task(instance.task).asking.abstains(instance) is not None:
                    continue  # no answer to show
                kind = get_task(instance.task).asking.example_kind(instance)
                entry = Entry(instance.id, function_of(instance), call_of(instance), kind,
                              offsets[instance.id])
                index = found.setdefault(instance.task, _Index({}, {}, []))
                index.by_function.setdefault(entry.function, []).append(entry)
                index.by_kind.setdefault(kind, []).append(entry)
                index.every.append(entry)
            self._index = found
        return self._index

    def picked(self, task: Task, instance: Instance, protocol: Protocol) -> list[Entry]:
        """The suite's instances ``instance``'s examples are: up to ``protocol.shots``
        other instances of its task, picked as ``protocol.shot_pick`` says."""
        index = self.index().get(instance.task)
        if index is None:
            return []
        function, call = function_of(instance), call_of(instance)
        if protocol.shot_pick == SAME_FUNCTION:
            pool = [e for e in index.by_function.get(function, []) if e.call != call]
        else:
            candidates = index.every if protocol.shot_pick != SAME_KIND \
                else index.by_kind.get(task.asking.example_kind(instance), [])
            pool = [e for e in candidates if e.function != function]
        rng = random.Random(f"{protocol.seed}/{protocol.shot_pick}/{instance.id}")
        return rng.sample(pool, min(protocol.shots, len(pool)))

    def drawn(self, task: Task, instance: Instance, protocol: Protocol) -> list[dict[str, Any]]:
        """The worked examples of ``instance`` (``picked``), each as template variables."""
        return [self._example(task, entry, protocol)
                for entry in self.picked(task, instance, protocol)]

    def shortfall(self, instances: Iterable[Instance], protocol: Protocol) -> str | None:
        """A line saying how many of ``instances`` have fewer examples to draw than
        ``--shots`` asks (they are asked with fewer), or None when none has."""
        short = total = 0
        for instance in instances:
            total += 1
            short += len(self.picked(get_task(instance.task), instance, protocol)) < \
                protocol.shots
        if not short:
            return None
        why = {SAME_FUNCTION: "no other call of their function in the suite",
               SAME_KIND: "too few questions of their kind on other functions"}.get(
                   protocol.shot_pick, "too few questions on other functions")
        return (f"--shot-pick {protocol.shot_pick}: {short:,} of {total:,} questions have "
                f"fewer than {protocol.shots} examples to draw ({why}); they are asked with "
                "the ones they have")

    def _example(self, task: Task, entry: Entry, protocol: Protocol) -> dict[str, Any]:
        key = (entry.id, protocol.style)
        made = self._made.get(key)
        if made is None:
            example = self.suite.instance_at(entry.offset, entry.id)
            alone = replace(protocol, shots=0, shot_pick=FIXED)
            worked = "" if protocol.style == DIRECT or self.sandbox is None \
                else worked_steps(task, example, self.sandbox)
            made = {**task.asking.variables(example, alone),
                    "answer": task.asking.reference_response(example), "worked": worked}
            self._made[key] = made
            if len(self._made) > _CACHED:
                self._made.popitem(last=False)
        return made
