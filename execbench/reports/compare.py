"""Whether two runs differ: ``execbench report A B --compare``.

Each run's table shows an interval per cell, but two intervals that overlap say little
about two models asked the same questions: what matters is the difference on each
question. For every task both runs answered, and every number a sample carries (pass@1:
the share of an instance's samples that are right; the string-match share where the task
records one; the mean ``score`` where every sample has one, such as coverage's Jaccard),
the table gives both runs' values on the instances both answered, their difference, a
paired bootstrap interval of the difference over those instances (``metrics.bootstrap_ci``,
seeded, 1,000 resamples), and whether it excludes zero. Numbers a run's summary computes
over all its samples at once (coherence, reversion, balanced accuracy) are not per
instance, and are not compared here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from execbench.metrics import bootstrap_ci
from execbench.reports.tables import Cell, Table, percent, run_labels
from execbench.rundir import SAMPLES, Results, Sample, iter_samples

STRING_MATCH_KEYS = ("string_match", "output_string_match")
"""Where a sample records whether its answer matches the truth as text."""
RESAMPLES = 1000


@dataclass
class _Sums:
    """One instance's samples, summed."""

    samples: int = 0
    correct: int = 0
    matched: int = 0
    matched_known: int = 0
    score: float = 0.0
    scored: int = 0

    def add(self, sample: Sample) -> None:
        self.samples += 1
        self.correct += sample.correct
        extra = sample.extra or {}
        for key in STRING_MATCH_KEYS:
            if isinstance(extra.get(key), bool):
                self.matched_known += 1
                self.matched += bool(extra[key])
                break
        if sample.score is not None:
            self.scored += 1
            self.score += sample.score


@dataclass
class _Run:
    """A run's samples summed by task and instance."""

    tasks: dict[str, dict[str, _Sums]] = field(default_factory=dict)

    @classmethod
    def read(cls, run_dir: Path) -> _Run:
        run = cls()
        for sample in iter_samples(run_dir / SAMPLES):
            run.tasks.setdefault(sample.task, {}).setdefault(sample.instance_id,
                                                             _Sums()).add(sample)
        return run


def _values(sums: dict[str, _Sums], shared: list[str]) -> Iterator[tuple[str, list[float]]]:
    """Each per-instance number every shared instance has, by metric name."""
    yield "pass@1", [sums[i].correct / sums[i].samples for i in shared]
    if all(sums[i].matched_known == sums[i].samples for i in shared):
        yield "string match", [sums[i].matched / sums[i].samples for i in shared]
    if all(sums[i].scored == sums[i].samples for i in shared):
        yield "score", [sums[i].score / sums[i].samples for i in shared]


def compare_table(first: Results, second: Results) -> Table:
    """The paired comparison of two runs (see the module)."""
    a, b = (_Run.read(Path(result.run_dir)) for result in (first, second))
    rows: list[list[Cell]] = []
    for task in sorted(set(a.tasks) & set(b.tasks)):
        shared = sorted(set(a.tasks[task]) & set(b.tasks[task]))
        if not shared:
            continue
        theirs = dict(_values(b.tasks[task], shared))
        for metric, mine in _values(a.tasks[task], shared):
            other = theirs.get(metric)
            if other is None:
                continue
            differences = [x - y for x, y in zip(mine, other, strict=True)]
            low, high = bootstrap_ci(differences, resamples=RESAMPLES)
            mean = sum(differences) / len(differences)
            rows.append([task, metric, len(shared), percent(sum(mine) / len(mine)),
                         percent(sum(other) / len(other)), percent(mean), percent(low),
                         percent(high), "yes" if low > 0 or high < 0 else "no"])
    first_label, second_label = run_labels([first, second])
    return Table(
        f"Paired comparison: A = {first_label}, B = {second_label}",
        ["task", "metric", "instances", "A (%)", "B (%)", "A - B (points)", "95% low",
         "95% high", "differs"], rows, keys=2,
        note="On the instances both runs answered; the interval is a paired bootstrap over "
             "them (1,000 resamples, seeded); differs: it excludes 0. pass@1 is each "
             "instance's share of right samples; score the mean of the task's sample score "
             "(coverage: Jaccard).")
