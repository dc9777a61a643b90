"""Samples as people read them: each logged answer beside the prompt it answered, the
ground truth and the verdict. ``samples.jsonl`` keeps only a hash of each prompt (logs
stay small), so the prompt is rendered again from the run's suite with the run's
settings, and its hash says whether it is still the prompt that was sent."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from execbench.rundir import (
    SAMPLES,
    Sample,
    load_run_config,
    prompt_hash,
    read_samples,
    stale_suite,
)
from execbench.suite import SuiteError, load_suite
from execbench.tasks import get_task


@dataclass
class RunSamples:
    """One run's samples with what is needed to show them."""

    model: str
    run_dir: str
    samples: list[dict[str, Any]]
    """Sample records, each with ``prompt`` (a list of messages, or None when the suite or
    the instance is gone), ``prompt_changed`` and ``truth`` (JSON text) added."""
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


def load_samples(run_dir: Path, keep: Filter = Filter(), limit: int | None = None
                 ) -> RunSamples:
    """The run's samples that ``keep`` matches (at most ``limit``, in log order), with
    their prompts rendered again. A run whose suite is gone or has changed still shows its
    responses; a warning says what cannot be trusted."""
    config = load_run_config(run_dir)
    kept = sorted((sample for sample in read_samples(run_dir / SAMPLES).values()
                   if keep(sample)), key=lambda s: (s.task, s.instance_id, s.sample))
    records = [sample.to_record() for sample in kept[:limit]]
    stale = stale_suite(run_dir)
    warnings: list[str] = [stale] if stale else []
    try:
        _, instances, _ = load_suite(Path(config.suite))
    except SuiteError as exc:
        instances = []
        if not stale:
            warnings.append(f"{run_dir}: prompts and truths cannot be shown: {exc}")
    by_id = {instance.id: instance for instance in instances}
    changed = 0
    for record in records:
        instance = by_id.get(record["instance_id"])
        if instance is None:
            record.update(prompt=None, prompt_changed=None, truth=None)
            continue
        messages = get_task(instance.task).prompt(instance, config.shots)
        record["prompt"] = messages
        record["prompt_changed"] = prompt_hash(messages) != record["prompt_hash"]
        changed += record["prompt_changed"]
        record["truth"] = json.dumps(instance.data.get("truth"), ensure_ascii=False)
    if changed and not stale:
        warnings.append(f"{run_dir}: {changed} prompts differ from those sent (the suite or "
                        "the prompt templates changed since the run)")
    return RunSamples(config.model, str(run_dir), records, warnings)

