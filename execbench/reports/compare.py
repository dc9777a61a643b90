"""Whether runs differ: the ``paired-differences`` layout, each run against the first one
given (``execbench report A B --compare`` is it for two runs), in the page, ``--plots``
and the terminal.

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

A sample is right as ``results.json`` counts it (``metrics.is_correct``: a failed request
never is). Each row's interval stands alone: with many rows, some exclude zero by chance,
and nothing here corrects for that. The table's note names what is not compared: a metric
some of the shared instances lack in a run (with how many), and a run whose log is
missing or does not read (``run_files``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from execbench.kept import Kept
from execbench.metrics import bootstrap_ci, is_correct
from execbench.reports.layouts import Layout, View, pyplot, register_layout
from execbench.reports.run_files import Unread, run_log
from execbench.reports.tables import Cell, Table, percent, run_labels
from execbench.rundir import SAMPLES, Results

COMPARE_LAYOUT = "paired-differences"
"""This layout's name, which ``ReportConfig.compare`` asks for."""
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

    def add(self, sample: Kept) -> None:
        self.samples += 1
        self.correct += is_correct(sample)
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
    unread: str | None = None
    """Why the run's samples could not be read (then it has no tasks)."""

    @classmethod
    def read(cls, result: Results) -> _Run:
        """The run's sums, streamed from its log (``run_files``); a log that is missing or
        does not read gives no tasks and says why."""
        run = cls()
        try:
            for sample in run_log(result):
                run.tasks.setdefault(sample.task, {}).setdefault(
                    sample.instance_id, _Sums()).add(sample)
        except Unread as exc:
            return cls(unread=str(exc))
        return run


METRICS = ("pass@1", "string match", "score")
"""The per-instance numbers compared, in the table's order."""


def _values(sums: dict[str, _Sums], shared: list[str]
            ) -> Iterator[tuple[str, list[float] | int]]:
    """Each per-instance number by metric name: its values over the shared instances, or
    how many of them lack it (not every sample records it)."""
    yield "pass@1", [sums[i].correct / sums[i].samples for i in shared]
    lacking = sum(sums[i].matched_known != sums[i].samples for i in shared)
    yield "string match", lacking or [sums[i].matched / sums[i].samples for i in shared]
    lacking = sum(sums[i].scored != sums[i].samples for i in shared)
    yield "score", lacking or [sums[i].score / sums[i].samples for i in shared]


@dataclass(frozen=True)
class Difference:
    """One number of one task, compared on the instances both runs answered."""

    task: str
    metric: str
    instances: int
    first: float
    second: float
    mean: float
    """first - second, averaged over the instances."""
    low: float
    high: float

    @property
    def differs(self) -> bool:
        """Whether the interval excludes zero."""
        return self.low > 0 or self.high < 0


@dataclass(frozen=True)
class Left:
    """A metric of a task not compared: some instances both runs answered lack it in a
    run (``instances`` of ``shared``), while the other instances have it in a run."""

    task: str
    metric: str
    instances: int
    shared: int


@dataclass(frozen=True)
class Comparison:
    """Two runs compared: the differences, the metrics left out and why, and why a run's
    samples could not be read."""

    found: list[Difference]
    left: list[Left]
    unread: tuple[str | None, str | None]


_Stamp = tuple[str, int, int, tuple[str, ...]]
_last: dict[tuple[_Stamp, _Stamp], Comparison] = {}
"""The last pair compared, and nothing more: a report's tables and its figure each ask
for the same pair, and the bootstrap over a large run's instances takes seconds; one
entry of a few rows, so a notebook that compares many runs keeps no sums alive."""


def _stamp(result: Results) -> _Stamp:
    """The run's log by path, size and time, so a log written meanwhile is read again, and
    the tasks the results show (``report --tasks`` reads some of the log)."""
    log = Path(result.run_dir) / SAMPLES
    tasks = tuple(sorted(result.metrics))
    try:
        stat = log.stat()
    except OSError:
        return (str(log), -1, -1, tasks)
    return (str(log), stat.st_size, stat.st_mtime_ns, tasks)


def compared(first: Results, second: Results) -> Comparison:
    """The two runs compared (see the module); the last pair is kept (``_last``)."""
    key = (_stamp(first), _stamp(second))
    found = _last.get(key)
    if found is None:
        found = _compare(_Run.read(first), _Run.read(second))
        _last.clear()
        _last[key] = found
    return found


def differences(first: Results, second: Results) -> list[Difference]:
    """Every per-instance number of every task both runs answered, compared (see the
    module), by task then metric; none where a run's samples cannot be read."""
    return compared(first, second).found


def _compare(a: _Run, b: _Run) -> Comparison:
    found: list[Difference] = []
    left: list[Left] = []
    for task in sorted(set(a.tasks) & set(b.tasks)):
        shared = sorted(set(a.tasks[task]) & set(b.tasks[task]))
        if not shared:
            continue
        theirs = dict(_values(b.tasks[task], shared))
        for metric, mine in _values(a.tasks[task], shared):
            other = theirs[metric]
            if isinstance(mine, int) or isinstance(other, int):
                lacking = max(mine if isinstance(mine, int) else 0,
                              other if isinstance(other, int) else 0)
                # a metric neither run records at all is no metric of the task's
                if not (isinstance(mine, int) and isinstance(other, int)
                        and mine == other == len(shared)):
                    left.append(Left(task, metric, lacking, len(shared)))
                continue
            gaps = [x - y for x, y in zip(mine, other, strict=True)]
            low, high = bootstrap_ci(gaps, resamples=RESAMPLES)
            found.append(Difference(task, metric, len(shared), sum(mine) / len(mine),
                                    sum(other) / len(other), sum(gaps) / len(gaps), low, high))
    return Comparison(found, left, (a.unread, b.unread))


def compare_table(first: Results, second: Results) -> Table:
    """The paired comparison of two runs (see the module)."""
    made = compared(first, second)
    rows: list[list[Cell]] = [
        [d.task, d.metric, d.instances, percent(d.first), percent(d.second), percent(d.mean),
         percent(d.low), percent(d.high), "yes" if d.differs else "no"]
        for d in made.found]
    first_label, second_label = run_labels([first, second])
    unread = [f"{name}: no samples read ({why})"
              for name, why in zip(("A", "B"), made.unread, strict=True) if why is not None]
    left = [f"{item.task} {item.metric} not compared: {item.instances} of the "
            f"{item.shared} instances both answered lack it" for item in made.left]
    return Table(
        f"Paired comparison: A = {first_label}, B = {second_label}",
        ["task", "metric", "instances", "A (%)", "B (%)", "A - B (points)", "95% low",
         "95% high", "differs"], rows, keys=2,
        note="On the instances both runs answered; the interval is a paired bootstrap over "
             "them (1,000 resamples, seeded); differs: it excludes 0. Each row's interval "
             "stands alone, not corrected for multiple comparisons (with many rows, some "
             "exclude 0 by chance). pass@1 "
             "is each instance's share of right samples (a failed request is never right); "
             "score the mean of the task's sample score (coverage: Jaccard)."
             + "".join(f" {line}." for line in [*left, *unread]))


def _sections(results: Sequence[Results], view: View) -> list[Table]:
    return [compare_table(results[0], other) for other in results[1:]]


def figure(results: Sequence[Results]) -> Any:
    """Each run after the first against the first: per task and number, the difference
    (points) with its 95% interval as a horizontal bar, a filled mark where it excludes 0."""
    plt = pyplot()
    labels = run_labels(results)
    pairs = [(label, compared(results[0], other).found)
             for label, other in zip(labels[1:], results[1:], strict=True)]
    rows = sorted({(d.task, d.metric) for _, found in pairs for d in found},
                  key=lambda row: (row[0], METRICS.index(row[1])))
    if not rows:
        fig, axis = plt.subplots(figsize=(6, 2))
        _message(axis, "Nothing to compare: no instance of a task was answered by the "
                       "first run and another (see the table's note).")
        return fig
    fig, axis = plt.subplots(figsize=(7.5, 0.35 * max(len(rows), 1) * max(len(pairs), 1)
                                      + 1.6))
    step = 0.8 / max(len(pairs), 1)
    for index, (label, found) in enumerate(pairs):
        by_row = {(d.task, d.metric): d for d in found}
        ys, xs, spans, filled = [], [], [], []
        for y, row in enumerate(rows):
            if row in by_row:
                d = by_row[row]
                ys.append(y - 0.4 + step * (index + 0.5))
                xs.append(100 * d.mean)
                spans.append((100 * (d.mean - d.low), 100 * (d.high - d.mean)))
                filled.append(d.differs)
        colour = f"C{index % 10}"
        axis.errorbar(xs, ys, xerr=list(zip(*spans, strict=True)) if spans else None,
                      fmt="none", ecolor=colour, capsize=3)
        axis.scatter(xs, ys, color=[colour if f else "white" for f in filled],
                     edgecolors=colour, zorder=3, label=f"{labels[0]} - {label}")
    axis.axvline(0, color="black", linewidth=0.8)
    axis.set_yticks(range(len(rows)), [f"{task} {metric}" for task, metric in rows],
                    fontsize=8)
    axis.invert_yaxis()
    axis.set_xlabel("paired difference (points), 95% interval; filled: excludes 0")
    axis.legend(loc="upper left", bbox_to_anchor=(0.0, -0.12 - 0.02 * len(rows)), fontsize=8)
    fig.tight_layout()
    return fig


def _message(axis: Any, text: str) -> None:
    axis.text(0.5, 0.5, text, ha="center", va="center", wrap=True, fontsize=9,
              transform=axis.transAxes)
    axis.set_axis_off()


register_layout(Layout(
    COMPARE_LAYOUT,
    "each run against the first: the paired difference of pass@1, string match and score "
    "on the instances both answered, with a bootstrap 95% interval (--compare is it for "
    "two runs)", _sections, figure, shows=lambda result: True, min_runs=2))
