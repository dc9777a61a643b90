"""Typed run results for report tests, from the few parts a test cares about."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from execbench.kept import Kept
from execbench.metrics import summarize, usage_summary, verdict_counts
from execbench.results import Group, Paired, TaskMetrics
from execbench.rundir import Results, RunConfig, SampleCounts
from execbench.runner import declared_metrics


def make_results(model: str = "m", run_dir: str = "r", *, n: int = 1,
                 samples: Iterable[dict[str, Any]] = (), suite: str = "suites/s",
                 suite_sha256: str | None = None,
                 categories: Mapping[str, Mapping[str, Mapping[str, str]]] | None = None,
                 task_metrics: Mapping[str, Any] | None = None,
                 paired_metrics: Mapping[str, Paired] | None = None,
                 metrics: Mapping[str, TaskMetrics] | None = None,
                 declared: Iterable[str] | None = None,
                 counted: tuple[int | None, int | None] = (0, 0)) -> Results:
    """A run of ``model`` whose metrics come from ``samples`` (sample records); its
    declared metrics are those of the tasks it has, or of ``declared``; ``counted`` are
    its truncated and refused answers (None: a run from before they were counted)."""
    records = [Kept.from_record(sample) for sample in samples]
    if metrics is None:
        metrics = summarize(records, n, categories) if records else {}
    tasks = sorted(declared if declared is not None else {*metrics, *(task_metrics or {})})
    return Results(
        config=RunConfig(suite=suite, model=model, n=n), run_dir=run_dir,
        suite_sha256=suite if suite_sha256 is None else suite_sha256,
        counts=SampleCounts(instances=len({r.instance_id for r in records}),
                            samples=len(records), expected_samples=len(records),
                            verdicts=verdict_counts(records), truncated=counted[0],
                            refused=counted[1]),
        metrics=metrics, usage=usage_summary(records, 0.0), sessions=(),
        declared_metrics=declared_metrics(tasks), task_metrics=dict(task_metrics or {}),
        paired_metrics=dict(paired_metrics or {}))


def group(instances: int) -> Group:
    """A group of ``instances`` instances, a sample each, none answered right."""
    return Group(instances=instances, samples=instances, pass_at=(0.0,), rested_on=(instances,),
                 accuracy=0.0, accuracy_ci95=(0.0, 0.0), verdicts={"incorrect": instances})
