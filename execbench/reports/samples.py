"""Samples as people read them: each logged answer beside the prompt it answered, the
ground truth and the verdict. ``samples.jsonl`` keeps only a hash of each prompt (logs
stay small), so the prompt is rendered again from the run's suite with the run's
settings, and its hash says whether it is still the prompt that was sent."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
from execbench.tasks.base import Instance


@dataclass
class RunSamples:
    """One run's samples with what is needed to show them."""

    model: str
    run_dir: str
    samples: list[dict[str, Any]]
    """Sample records, each with ``prompt`` (a list of messages, or None when the suite or
    the instance is gone), ``prompt_changed`` and ``truth`` (JSON text) added."""
    matched: int = 0
    """How many samples the filter matched (``samples`` holds the first of them)."""
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Filter:
    """Which samples to show; None matches everything."""

    task: str | None = None
    verdict: str | None = None
    source: str | None = None
    instance: str | None = None
    """An instance id, or the start of one (``output/cruxeval/``)."""

    def __call__(self, sample: Sample) -> bool:
        return ((self.task is None or sample.task == self.task)
                and (self.verdict is None or sample.verdict == self.verdict)
                and (self.source is None or sample.source == self.source)
                and (self.instance is None or sample.instance_id.startswith(self.instance)))


def _order(sample: Sample) -> tuple[str, str, int]:
    return (sample.task, sample.instance_id, sample.sample)


def _first(samples: Iterable[Sample], limit: int | None, per_task: int | None
           ) -> tuple[list[Sample], int]:
    """The first samples in :func:`_order` (at most ``per_task`` of each task, then at most
    ``limit``) and how many there were, holding a few times what is kept, never the log."""
    cap = per_task if per_task is not None else limit
    groups: dict[str, list[Sample]] = {}
    count = 0
    for sample in samples:
        count += 1
        group = groups.setdefault(sample.task if per_task is not None else "", [])
        group.append(sample)
        if cap is not None and len(group) >= 2 * cap + 64:
            group.sort(key=_order)
            del group[cap:]
    kept = []
    for group in groups.values():
        group.sort(key=_order)
        kept += group[:cap]
    kept.sort(key=_order)
    return kept[:limit], count


def _instances(suite: Path, wanted: set[str]) -> dict[str, Instance]:
    """The suite's instances whose ids are ``wanted``, read from it as a stream."""
    return {instance.id: instance for instance in SuiteFile.open(suite).instances()
            if instance.id in wanted}


def load_samples(run_dir: Path, keep: Filter = Filter(), limit: int | None = None,
                 per_task: int | None = None) -> RunSamples:
    """The run's samples that ``keep`` matches, the first in (task, instance, sample)
    order (at most ``per_task`` of each task, then at most ``limit``), with their prompts
    rendered again. The log and the suite are read as streams, holding what is shown. A
    run whose suite is gone or has changed still shows its responses; a warning says what
    cannot be trusted."""
    config = load_run_config(run_dir)
    kept, matched = _first((s for s in iter_samples(run_dir / SAMPLES) if keep(s)), limit,
                           per_task)
    records = [sample.to_record() for sample in kept]
    stale = stale_suite(run_dir)
    warnings: list[str] = [stale] if stale else []
    try:
        by_id = _instances(Path(config.suite), {sample.instance_id for sample in kept})
    except SuiteError as exc:
        by_id = {}
        if not stale:
            warnings.append(f"{run_dir}: prompts and truths cannot be shown: {exc}")
    changed = 0
    for record in records:
        instance = by_id.get(record["instance_id"])
        if instance is None:
            record.update(prompt=None, prompt_changed=None, truth=None)
            continue
        messages = get_task(instance.task).asking.prompt(instance, config.shots)
        record["prompt"] = messages
        record["prompt_changed"] = prompt_hash(messages) != record["prompt_hash"]
        changed += record["prompt_changed"]
        record["truth"] = json.dumps(instance.data.get("truth"), ensure_ascii=False)
    if changed and not stale:
        warnings.append(f"{run_dir}: {changed} prompts differ from those sent (the suite or "
                        "the prompt templates changed since the run)")
    return RunSamples(config.model, str(run_dir), records, matched, warnings)
