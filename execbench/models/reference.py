"""Reference models: answers computed from the suite, for checking the pipeline and floors.

``reference/oracle`` states each instance's ground truth in the task's answer format, so
it must score 100% on every task; any less is a bug in extraction or scoring.
``reference/constant`` gives the same response to every prompt (``-M answer=TEXT`` to
choose it), the floor a model must beat. ``reference/original`` answers the mutation and
choice tasks with the unmutated program's output: pure recall, the reversion ceiling.
``reference/shortcut`` answers the simulation task with the right output after a
simulation whose every property is wrong: a run of it must come out all incoherent.
``reference/random-category`` answers abstract-value instances (``-T values=abstract``)
with a category drawn uniformly from those of the value's type, seeded by the run's seed
and the instance: the random baseline of CodeSense's Table 7.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from execbench.models.base import (
    GenerateConfig,
    Generation,
    ModelBase,
    ModelError,
    Request,
    instance_of,
)
from execbench.models.provider import ModelKind, Provider
from execbench.registry import Registry, UnknownName
from execbench.tasks import get_task, task_names
from execbench.tasks.common.abstract import random_category
from execbench.tasks.common.abstract_payload import AbstractTruth, Filing

if TYPE_CHECKING:
    from execbench.tasks.base import Instance

DEFAULT_CONSTANT = "[ANSWER]\nassert f(0) == 0\n[/ANSWER]"


def _tasks_with(response: str) -> list[str]:
    """The tasks that can give a reference model's kind of answer (``original_response``:
    what the unmutated program would give; ``shortcut_response``: a simulation gone wrong
    that still states the right output)."""
    return [name for name in task_names() if hasattr(get_task(name).asking, response)]


class OracleModel(ModelBase):
    name = "reference/oracle"

    async def generate(self, request: Request, config: GenerateConfig) -> Generation:
        start = time.perf_counter()
        instance = instance_of(request, self.name)
        asking = get_task(instance.task).asking
        reason = asking.abstains(instance)
        if reason is not None:  # an error, so that runs count it apart from wrong answers
            return Generation(text=None, error=f"reference/oracle abstains: {reason}")
        text = asking.reference_response(instance)
        return Generation(text=text, latency=time.perf_counter() - start)


class OriginalModel(ModelBase):
    name = "reference/original"

    def check(self, instances: Sequence[Instance]) -> None:
        """Refuse tasks with no original program to recall (a suite built without
        mutants): every sample would be an error, and the run a table of zeros."""
        tasks = sorted({instance.task for instance in instances})
        answerable = _tasks_with("original_response")
        unanswerable = sorted(t for t in tasks if t not in answerable)
        if unanswerable:
            able = sorted(set(tasks) - set(unanswerable))
            hint = (f"run it with --tasks {','.join(able)}" if able else
                    f"build a suite with --tasks {','.join(answerable)}")
            raise ModelError(f"reference/original answers only the tasks on mutants "
                             f"({', '.join(answerable)}), not {', '.join(unanswerable)}; {hint}")

    async def generate(self, request: Request, config: GenerateConfig) -> Generation:
        instance = instance_of(request, self.name)
        task = get_task(instance.task)
        respond = getattr(task.asking, "original_response", None)
        if respond is None:
            return Generation(text=None, error=f"reference/original cannot answer the "
                                               f"{task.name} task (only mutation and choice)")
        return Generation(text=respond(instance))


class ShortcutModel(ModelBase):
    name = "reference/shortcut"

    def check(self, instances: Sequence[Instance]) -> None:
        """Refuse tasks with no simulation to get wrong: every sample would be an error."""
        tasks = sorted({instance.task for instance in instances})
        able = _tasks_with("shortcut_response")
        unanswerable = sorted(t for t in tasks if t not in able)
        if unanswerable:
            raise ModelError(f"reference/shortcut answers only {', '.join(able)}, not "
                             f"{', '.join(unanswerable)}; run it with --tasks "
                             f"{','.join(able)}")

    async def generate(self, request: Request, config: GenerateConfig) -> Generation:
        instance = instance_of(request, self.name)
        return Generation(text=get_task(instance.task).asking.shortcut_response(instance))


class RandomCategoryModel(ModelBase):
    name = "reference/random-category"

    def check(self, instances: Sequence[Instance]) -> None:
        """Refuse instances that ask for no category: every sample would be an error."""
        concrete = sorted({instance.task for instance in instances
                           if Filing.of(instance).values != "abstract"})
        if concrete:
            raise ModelError("reference/random-category answers only abstract-value "
                             f"instances, and the {', '.join(concrete)} instances of this "
                             "run ask for values; build a suite with -T values=abstract "
                             "(the output, statement and loop tasks take it)")

    async def generate(self, request: Request, config: GenerateConfig) -> Generation:
        instance = instance_of(request, self.name)
        truth = AbstractTruth.asked(instance)
        if truth is None:
            return Generation(text=None, error="reference/random-category answers only "
                              "abstract-value instances (build with -T values=abstract)")
        rng = random.Random(f"{request.seed}/{instance.id}/{request.sample}")
        return Generation(text=f"<ans>{random_category(truth.type, rng)}</ans>")


class ConstantModel(ModelBase):
    name = "reference/constant"

    def __init__(self, answer: str) -> None:
        self.answer = answer

    async def generate(self, request: Request, config: GenerateConfig) -> Generation:
        return Generation(text=self.answer)


@dataclass(frozen=True)
class Reference:
    """One reference model: what it answers, and its ``-M`` options (``make`` takes them)."""

    description: str
    make: Callable[[dict[str, str]], ModelBase]
    options: frozenset[str] = frozenset()
    usage: str = ""
    """The options as ``execbench ls models`` shows them."""


REFERENCES: Registry[Reference] = Registry("reference model")
REFERENCES.register("oracle", Reference("states the ground truth: must score 100%",
                                        lambda _: OracleModel()))
REFERENCES.register("constant", Reference(
    "the same answer to every prompt: a floor",
    lambda args: ConstantModel(args.get("answer", DEFAULT_CONSTANT)),
    frozenset({"answer"}), "answer=TEXT"))
REFERENCES.register("random-category", Reference(
    "a uniformly random category of the value's type, for abstract-value instances: "
    "CodeSense's random baseline", lambda _: RandomCategoryModel()))
REFERENCES.register("original", Reference(
    "the unmutated program's output (mutation and choice tasks): the reversion ceiling",
    lambda _: OriginalModel()))
REFERENCES.register("shortcut", Reference(
    "the right output after a simulation with every property wrong (simulation task): "
    "must come out all incoherent", lambda _: ShortcutModel()))


def get_reference_model(rest: str, model_args: dict[str, str]) -> ModelBase:
    try:
        reference = REFERENCES.get(rest)
    except UnknownName as exc:
        raise ModelError(str(exc)) from None
    if not set(model_args) <= reference.options:
        raise ModelError(f"reference/{rest} does not take model arguments {sorted(model_args)}")
    return reference.make(model_args)


def _create(name: str, rest: str, base_url: str | None, model_args: dict[str, str]
            ) -> ModelBase:
    return get_reference_model(rest, model_args)


PROVIDER = Provider(_create, tuple(
    ModelKind(f"reference/{name}", REFERENCES.get(name).description,
              model_args=REFERENCES.get(name).usage) for name in REFERENCES.names()))
