"""Samples as people read them: each logged answer beside the prompt it answered, the
ground truth and the verdict. ``samples.jsonl`` keeps only a hash of each prompt (logs
stay small), so the prompt is rendered again from the run's suite with the run's
settings, and its hash says whether it is still the prompt that was sent."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from execbench.models.cards import ModelDates
from execbench.reports.ordering import natural
from execbench.rundir import (
    SAMPLES,
    Sample,
    iter_samples,
    load_run_config,
    prompt_hash,
    stale_suite,
)
from execbench.suite import SuiteError, SuiteFile
from execbench.tasks import get_task
from execbench.tasks.asking import DrawnExamples, PromptTemplateError, ask, drawn_from
from execbench.tasks.base import Instance
from execbench.tasks.protocol import Protocol

if TYPE_CHECKING:
    from execbench.json_types import JSONObject
    from execbench.tasks.base import Message


@dataclass(frozen=True)
class ShownSample:
    """A logged sample with what showing it needs of its instance; each of these is None
    when the suite or the instance is gone."""

    sample: Sample
    prompt: list[Message] | None = None
    """The prompt made again from the suite."""
    prompt_changed: bool | None = None
    """The prompt made again is not the one sent (the suite or the templates changed)."""
    truth: str | None = None
    """The instance's truth as JSON text."""

    def to_record(self) -> JSONObject:
        """The sample's record with the three added (``execbench show --format json``)."""
        prompt = None if self.prompt is None else [dict(message) for message in self.prompt]
        return {**self.sample.to_record(), "prompt": prompt,
                "prompt_changed": self.prompt_changed, "truth": self.truth}


@dataclass
class RunSamples:
    """One run's samples with what is needed to show them."""

    model: str
    run_dir: str
    samples: list[ShownSample]
    matched: int = 0
    """How many samples the filter matched (``samples`` holds the first of them)."""
    warnings: list[str] = field(default_factory=list)
    dates: ModelDates = field(default_factory=ModelDates)
    """The model's release date and training cutoff, where the run was given them."""


@dataclass(frozen=True)
class Filter:
    """Which samples to show; None matches everything."""

    task: str | None = None
    verdict: str | None = None
    source: str | None = None
    instance: str | None = None
    """An instance id, or the start of one (``output/cruxeval/``)."""
    tasks: frozenset[str] | None = None
    """Only these tasks (``report --tasks``: the tasks its results hold)."""

    def __call__(self, sample: Sample) -> bool:
        return ((self.task is None or sample.task == self.task)
                and (self.tasks is None or sample.task in self.tasks)
                and (self.verdict is None or sample.verdict == self.verdict)
                and (self.source is None or sample.source == self.source)
                and (self.instance is None or sample.instance_id.startswith(self.instance)))


Order = Callable[[Sample], Any]
"""A sort key for samples: which come first when only the first are kept."""


def by_instance(sample: Sample) -> Any:
    """Task, then instance id in :func:`natural` order, then sample number."""
    return (sample.task, natural(sample.instance_id), sample.sample)


def _first(samples: Iterable[Sample], limit: int | None, per_task: int | None,
           order: Order) -> tuple[list[Sample], int]:
    """The first samples in ``order`` (at most ``per_task`` of each task, then at most
    ``limit``) and how many there were, holding a few times what is kept, never the log."""
    cap = per_task if per_task is not None else limit
    groups: dict[str, list[Sample]] = {}
    count = 0
    for sample in samples:
        count += 1
        group = groups.setdefault(sample.task if per_task is not None else "", [])
        group.append(sample)
        if cap is not None and len(group) >= 2 * cap + 64:
            group.sort(key=order)
            del group[cap:]
    kept = []
    for group in groups.values():
        group.sort(key=order)
        kept += group[:cap]
    kept.sort(key=order)
    return kept[:limit], count


def _instances(suite: Path, wanted: set[str]) -> dict[str, Instance]:
    """The suite's instances whose ids are ``wanted``, read from it as a stream."""
    return {instance.id: instance for instance in SuiteFile.open(suite).instances()
            if instance.id in wanted}


def load_samples(run_dir: Path, keep: Filter = Filter(), limit: int | None = None,
                 per_task: int | None = None, order: Order = by_instance) -> RunSamples:
    """The run's samples that ``keep`` matches, the first in ``order`` (by default task,
    instance, sample: :func:`by_instance`; at most ``per_task`` of each task, then at most
    ``limit``), with their prompts
    rendered again. The log and the suite are read as streams, holding what is shown. A
    run whose suite is gone or has changed still shows its responses; a warning says what
    cannot be trusted."""
    config = load_run_config(run_dir)
    kept, matched = _first((s for s in iter_samples(run_dir / SAMPLES) if keep(s)), limit,
                           per_task, order)
    stale = stale_suite(run_dir)
    warnings: list[str] = [stale] if stale else []
    try:
        by_id = _instances(Path(config.suite), {sample.instance_id for sample in kept})
    except SuiteError as exc:
        by_id = {}
        if not stale:
            warnings.append(f"{run_dir}: prompts and truths cannot be shown: {exc}")
    protocol = config.protocol()
    shown = _shown_all(kept, by_id, protocol, Path(config.suite) if by_id else None)
    unmade = sum(1 for one in shown if one.prompt is None
                 and one.sample.instance_id in by_id)
    if unmade:
        warnings.append(f"{run_dir}: {unmade} prompts cannot be made again: the run's "
                        "template fails on them now")
    changed = sum(bool(one.prompt_changed) for one in shown)
    if changed and not stale:
        warnings.append(f"{run_dir}: {changed} prompts differ from those sent (the suite or "
                        "the prompt templates changed since the run)")
    return RunSamples(config.model, str(run_dir), shown, matched, warnings, config.dates())


def _shown_all(kept: list[Sample], by_id: dict[str, Instance], protocol: Protocol,
               suite: Path | None) -> list[ShownSample]:
    """Each sample with its prompt made again as it was sent (drawing its worked examples
    from the suite where the run drew them)."""
    if suite is None:
        return [_shown(sample, None, protocol, None) for sample in kept]
    with drawn_from(SuiteFile.open(suite), protocol) as drawn:
        return [_shown(sample, by_id.get(sample.instance_id), protocol, drawn)
                for sample in kept]


def _shown(sample: Sample, instance: Instance | None, protocol: Protocol,
           drawn: DrawnExamples | None) -> ShownSample:
    """The sample with its prompt made again and its instance's truth, where the suite
    still holds the instance."""
    if instance is None:
        return ShownSample(sample)
    try:
        messages = ask(get_task(instance.task), instance, protocol, drawn)
    except PromptTemplateError:
        return ShownSample(sample)
    return ShownSample(sample, messages, prompt_hash(messages) != sample.prompt_hash,
                 json.dumps(instance.truth, ensure_ascii=False))
