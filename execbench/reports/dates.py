"""Results against the model's dates: the ``cutoff-split`` and ``release-date`` layouts.

The Generalization study (Yang et al.) asks whether a model reasons about code or recalls
it, and one way to tell is time: a problem published after a model's training cutoff
cannot have been in its training data, and models released later ought not to do better
only because they saw more of the benchmark. A run carries its model's dates where it was
given them (``run --model-release/--model-cutoff/--model-cards``, or ``report
--model-cards`` for runs made without), and its suite's instances carry their program's
date where the source gives one (contest programs' ``contest_date``, a generic record's
``meta.date``).

**cutoff-split**: each run's instances split by the model's cutoff, from the run's
``samples.jsonl`` and its suite: pass@1 per task on the instances dated on or before the
cutoff and on those dated after, each with its bootstrap 95% interval over instances
(computed as ``metrics.summarize`` computes the task's pass@1 in ``results.json``, from a
tally per instance: the log is streamed, no sample kept),
instance and sample counts and the span of dates. An instance's date is a day; a cutoff
given as a month covers the whole month (``2023-10``: through 2023-10-31), a cutoff given
as a day covers that day; an instance dated on the cutoff's last day counts as on or
before (the model may have seen it). Instances without a date are counted as undated, in
a row of their own. A run without a cutoff, whose suite is gone, changed since the run or
holds no dated instance, or whose log does not read (``run_files``), is listed with the
reason, not dropped.

**release-date**: each run with a release date is a point per task: x its model's release
date (a month alone at its first day), y the task's headline pass@1 with its interval, as
``results.json`` holds them, one series per task.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from execbench.metrics import bootstrap_ci, is_correct
from execbench.reports.families import estimate
from execbench.reports.layouts import Layout, View, pyplot, register_layout
from execbench.reports.leaderboard import headline
from execbench.reports.run_files import Unread, run_instances, run_log
from execbench.reports.tables import Cell, Estimate, Table, percent, run_labels
from execbench.results import DeclaredMetric
from execbench.rundir import Results
from execbench.sources.dates import DateError, parse_date

BEFORE, AFTER, UNDATED = "on or before cutoff", "after cutoff", "undated"
SIDES = (BEFORE, AFTER, UNDATED)
_BREAKDOWN = "cutoff"
NO_CUTOFF = "no training cutoff"
NO_RELEASE = "no release date"
NO_DATES = "no dated instance in its suite"
APART_NOTE = ("A run's cutoff comes from `run --model-cutoff` or `--model-cards`, or from "
              "`report --model-cards`; an instance's date is its program's (contest "
              "records' contest_date, a generic record's meta.date); a suite changed since "
              "the run may date its instances otherwise than when they were asked.")
SPLIT_NOTE = ("pass@1 (%) [bootstrap 95% interval over instances] n=instances, on each side "
              "of the model's training cutoff by the instance's program date; a month cutoff "
              "covers the whole month (2023-10: through 2023-10-31), and an instance dated on "
              "the cutoff's last day counts as on or before it. Problems of different "
              "periods also differ in kind and difficulty: a drop after the cutoff is a sign "
              "of contamination to look into, not a proof of it; the two sides' intervals are "
              "each their own, not an interval of their difference.")


@dataclass(frozen=True)
class Side:
    """One task's instances on one side of the cutoff: pass@1 (each instance's share of
    right samples, averaged) with its bootstrap interval over instances, as
    ``metrics.summarize`` gives a group's pass@1 in ``results.json``."""

    instances: int
    samples: int
    pass_at_1: float
    interval: tuple[float, float]


@dataclass
class Split:
    """One run's samples on each side of its model's cutoff, per task, or why there is
    no split."""

    groups: dict[str, dict[str, Side]] = field(default_factory=dict)
    """Per task, per side (``SIDES``, those with instances): the side's numbers."""
    spans: dict[tuple[str, str], tuple[date, date]] = field(default_factory=dict)
    """Per (task, side), the first and last date of its instances (not for undated)."""
    why_not: str | None = None


def split(result: Results) -> Split:
    """The run's samples split by its model's cutoff (``Split.why_not`` says why not).
    The log is streamed and only a tally per instance kept (samples, right ones)."""
    cutoff = result.config.dates().cutoff_day()
    if cutoff is None:
        return Split(why_not=NO_CUTOFF)
    try:
        dates = {instance.id: _day(instance.date) for instance in run_instances(result)}
    except Unread as exc:
        return Split(why_not=f"suite not used: {exc}")
    if not any(day is not None for day in dates.values()):
        return Split(why_not=NO_DATES)
    tallies: dict[tuple[str, str], list[int]] = {}
    try:
        for sample in run_log(result):
            tally = tallies.setdefault((sample.task, sample.instance_id), [0, 0])
            tally[0] += 1
            tally[1] += is_correct(sample)
    except Unread as exc:
        return Split(why_not=f"samples not read: {exc}")
    found = Split()
    shares: dict[tuple[str, str], list[tuple[str, int, float]]] = {}
    for (task, instance), (samples, right) in tallies.items():
        day = dates.get(instance)
        side = UNDATED if day is None else BEFORE if day <= cutoff else AFTER
        shares.setdefault((task, side), []).append((instance, samples, right / samples))
        if day is not None:
            first, last = found.spans.get((task, side), (day, day))
            found.spans[(task, side)] = (min(first, day), max(last, day))
    for (task, side), mine in sorted(shares.items()):
        # instances in id order, as metrics takes them, so the bootstrap draws the same
        fractions = [share for _, _, share in sorted(mine)]
        found.groups.setdefault(task, {})[side] = Side(
            len(fractions), sum(samples for _, samples, _ in mine),
            sum(fractions) / len(fractions), bootstrap_ci(fractions))
    if not found.groups:
        found.why_not = "no sample logged"
    return found


def _day(text: str | None) -> date | None:
    if text is None:
        return None
    try:
        return parse_date(text)
    except DateError:
        return None


def _side_estimate(side: Side) -> Estimate:
    low, high = side.interval
    return Estimate(percent(side.pass_at_1), (percent(low), percent(high)), side.instances)


def _span(spans: dict[tuple[str, str], tuple[date, date]], task: str, side: str) -> str | None:
    found = spans.get((task, side))
    if found is None:
        return None
    first, last = found
    return first.isoformat() if first == last else f"{first.isoformat()} to {last.isoformat()}"


def cutoff_tables(results: Sequence[Results], splits: Sequence[Split] | None = None
                  ) -> list[Table]:
    """A row per run, task and side of the cutoff: pass@1 with its interval and the
    instances, the samples and the span of dates; then the runs not split, and why."""
    splits = [split(result) for result in results] if splits is None else splits
    labels = run_labels(results)
    rows: list[list[Cell]] = []
    apart: list[list[Cell]] = []
    for label, result, found in zip(labels, results, splits, strict=True):
        if found.why_not is not None:
            apart.append([label, result.config.model_cutoff, found.why_not])
            continue
        for task, sides in sorted(found.groups.items()):
            for side in SIDES:
                group = sides.get(side)
                if group is not None:
                    rows.append([label, task, side, _side_estimate(group), group.samples,
                                 _span(found.spans, task, side), result.config.model_cutoff])
    tables = [Table("pass@1 on instances dated on or before vs after the model's training "
                    "cutoff (%)", ["run", "task", "side", "pass@1", "samples", "dates", "cutoff"],
                    rows, note=SPLIT_NOTE, keys=3)]
    if apart:
        tables.append(Table("Runs not split by their model's cutoff", ["run", "cutoff", "why"],
                            apart, note=APART_NOTE))
    return tables


def _pass_at_1(results: Sequence[Results]) -> list[DeclaredMetric]:
    """Each task's headline pass@1, as the runs declare it."""
    return [metric for metric in headline(results) if metric.metric.at.key == "pass@1"]


@dataclass(frozen=True)
class Point:
    """A run's headline pass@1 on one task, at its model's release date."""

    label: str
    release: str
    day: date
    task: str
    value: Estimate


def points(results: Sequence[Results]) -> list[Point]:
    """Every (run with a release date, task with a headline pass@1) point, by release
    date, then run label, then task."""
    metrics = _pass_at_1(results)
    found = []
    for label, result in zip(run_labels(results), results, strict=True):
        dates = result.config.dates()
        day = dates.release_day()
        if day is None or dates.release is None:
            continue
        for metric in metrics:
            cell = estimate(result, metric)
            if cell is not None and cell.value is not None:
                found.append(Point(label, dates.release, day, metric.task, cell))
    return sorted(found, key=lambda point: (point.day, point.label, point.task))


def release_tables(results: Sequence[Results]) -> list[Table]:
    """The points of the release-date figure as a table; then the runs without a
    release date."""
    cutoffs = {label: result.config.model_cutoff
               for label, result in zip(run_labels(results), results, strict=True)}
    rows: list[list[Cell]] = [[point.label, point.release, cutoffs[point.label], point.task,
                               point.value] for point in points(results)]
    tables = [Table("Headline pass@1 by the model's release date (%)",
                    ["run", "released", "cutoff", "task", "pass@1"], rows, keys=4,
                    note="pass@1 (%) [bootstrap 95% interval over instances] n=instances, "
                         "over all of the task's instances; runs by release date.")]
    apart: list[list[Cell]] = [[label, NO_RELEASE] for label, result in zip(
        run_labels(results), results, strict=True) if result.config.model_release is None]
    if apart:
        tables.append(Table("Runs without a release date", ["run", "why"], apart,
                            note="A run's release date comes from `run --model-release` or "
                                 "`--model-cards`, or from `report --model-cards`."))
    return tables


def _error_bars(values: Sequence[Estimate]) -> list[list[float]]:
    """matplotlib's asymmetric error bars (below, above) of estimates; 0 without one."""
    below, above = [], []
    for value in values:
        centre = value.value or 0.0
        low, high = value.interval or (None, None)
        below.append(max(0.0, centre - low) if low is not None else 0.0)
        above.append(max(0.0, high - centre) if high is not None else 0.0)
    return [below, above]


def _message(axis: Any, text: str) -> None:
    axis.text(0.5, 0.5, text, ha="center", va="center", wrap=True, fontsize=9,
              transform=axis.transAxes)
    axis.set_axis_off()


def cutoff_figure(results: Sequence[Results]) -> Any:
    """A panel per task: per run, pass@1 on or before and after its cutoff as two bars
    with their intervals; a figure that says so where no run could be split."""
    plt = pyplot()
    splits = [split(result) for result in results]
    labels = run_labels(results)
    tasks = sorted({task for found in splits for task in found.groups})
    if not tasks:
        fig, axis = plt.subplots(figsize=(6, 2))
        _message(axis, "No run could be split by its model's cutoff (see the table).")
        return fig
    # a label with its run folder may be long; each says the cutoff it was split at
    names = {label: "\n".join([*textwrap.wrap(label, 30, break_on_hyphens=False),
                               f"cutoff {result.config.model_cutoff}"])
             for label, result in zip(labels, results, strict=True)}
    lines = max(name.count("\n") + 1 for name in names.values())
    fig, axes = plt.subplots(1, len(tasks), figsize=(max(4.0, 1.1 * len(results) + 2.5)
                                                     * len(tasks), 3.4 + 0.4 * lines),
                             squeeze=False)
    for axis, task in zip(axes[0], tasks, strict=True):
        shown = [(label, found.groups[task]) for label, found in zip(labels, splits, strict=True)
                 if task in found.groups]
        for offset, (side, colour) in enumerate(((BEFORE, "tab:blue"), (AFTER, "tab:orange"))):
            xs, cells = [], []
            for index, (_, sides) in enumerate(shown):
                if side in sides:
                    xs.append(index + (offset - 0.5) * 0.38)
                    cells.append(_side_estimate(sides[side]))
            if cells:
                axis.bar(xs, [cell.value or 0.0 for cell in cells], width=0.36, color=colour,
                         label=side, yerr=_error_bars(cells), capsize=3)
        axis.set_xticks(range(len(shown)), [names[label] for label, _ in shown], rotation=30,
                        ha="right", fontsize=8)
        axis.set_title(task, fontsize=9)
        axis.set_ylim(0, 120)
        axis.set_yticks(range(0, 101, 20))
        axis.set_ylabel("pass@1 (%)")
        axis.legend(loc="upper center", ncol=2, fontsize=7)
    fig.tight_layout()
    return fig


def release_figure(results: Sequence[Results]) -> Any:
    """Headline pass@1 against the model's release date, a series per task, each point
    with its interval and its run's label (each later series drawn smaller and above, so
    points that coincide stay visible); a figure that says so where no run has a release
    date."""
    plt = pyplot()
    found = points(results)
    if not found:
        fig, axis = plt.subplots(figsize=(6, 2))
        _message(axis, "No run has a release date (see the table).")
        return fig
    fig, axis = plt.subplots(figsize=(7.5, 4.2))
    markers = "osD^v<>p*h"
    for number, task in enumerate(sorted({point.task for point in found})):
        mine = [point for point in found if point.task == task]
        axis.errorbar([point.day for point in mine], [point.value.value for point in mine],
                      yerr=_error_bars([point.value for point in mine]),
                      fmt=markers[number % len(markers)], capsize=3, label=task,
                      markersize=max(3, 9 - 2 * number), zorder=2 + number, alpha=0.9)
    highest: dict[str, Point] = {}
    for point in found:
        if point.label not in highest or (point.value.value or 0.0) > (
                highest[point.label].value.value or 0.0):
            highest[point.label] = point
    for point in highest.values():  # each run named once, above its best task
        axis.annotate(point.label, (point.day, point.value.value or 0.0), fontsize=6,
                      textcoords="offset points", xytext=(4, 6))
    axis.set_xlabel("model release date")
    axis.set_ylabel("headline pass@1 (%)")
    axis.set_ylim(-5, 105)
    axis.grid(alpha=0.3)
    axis.legend(loc="best", fontsize=7)
    fig.autofmt_xdate()
    fig.tight_layout()
    return fig


def _cutoff_sections(results: Sequence[Results], view: View) -> list[Table]:
    return cutoff_tables(results)


def _release_sections(results: Sequence[Results], view: View) -> list[Table]:
    return release_tables(results)


register_layout(Layout(
    "cutoff-split", "pass@1 per task on instances dated on or before vs after the model's "
    "training cutoff, with intervals and counts: did the model see the benchmark? (the "
    "Generalization study's contamination check; needs dated programs and --model-cutoff)",
    _cutoff_sections, cutoff_figure, shows=lambda result: result.config.model_cutoff is not None))
register_layout(Layout(
    "release-date", "each task's headline pass@1 with its interval against the model's "
    "release date, a point per run (the Generalization study's results over model release "
    "dates; needs --model-release)", _release_sections, release_figure,
    shows=lambda result: result.config.model_release is not None))
