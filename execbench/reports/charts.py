"""The HTML page's charts, from the runs' results alone: each task family's headline
metrics across runs with their 95% intervals, pass@k against k, and pass@1 per category
of every breakdown the tasks declare (``Task.breakdowns``). What to draw comes from the
declarations each ``results.json`` carries, so a new family or breakdown is charted with
no change here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import groupby

from execbench.reports.families import estimate
from execbench.reports.leaderboard import answered, headline, readable
from execbench.reports.meanings import SHARED, TERMS, meaning
from execbench.reports.ordering import natural
from execbench.reports.svg import PALETTE, Bar, Series, bars, lines
from execbench.reports.tables import percent, run_labels
from execbench.results import DeclaredMetric
from execbench.rundir import Results


@dataclass
class Charts:
    """What the page's chart section shows."""

    legend: list[tuple[str, str]]
    """(run label, colour): every chart colours a run alike."""
    families: list[tuple[str, list[str]]] = field(default_factory=list)
    """(family, one SVG per headline metric)."""
    pass_at_k: list[str] = field(default_factory=list)
    """One SVG per task that some run drew several samples of."""
    breakdowns: list[str] = field(default_factory=list)
    """One SVG per task and breakdown."""


def charts(results: Sequence[Results]) -> Charts:
    labels = run_labels(results)
    colours = [PALETTE[i % len(PALETTE)] for i in range(len(results))]
    drawn = Charts(legend=list(zip(labels, colours, strict=True)))
    for family, members in groupby(headline(results), key=lambda m: m.family):
        drawn.families.append((family, [_headline(results, labels, colours, metric)
                                        for metric in members]))
    tasks = sorted({task for result in results for task in result.metrics})
    drawn.pass_at_k = [chart for task in tasks
                       if (chart := _pass_at_k(results, labels, colours, task)) is not None]
    drawn.breakdowns = [chart for task in tasks
                        for chart in _breakdowns(results, labels, colours, task)]
    return drawn


def _headline(results: Sequence[Results], labels: list[str], colours: list[str],
              metric: DeclaredMetric) -> str:
    """One bar per run that has the metric's task; the instance count in the title where
    the runs share it, else beside each value."""
    cells = [(label, colour, result, cell) for label, colour, result in
             zip(labels, colours, results, strict=True)
             if (cell := estimate(result, metric)) is not None]
    counts = {cell.instances for *_, cell in cells}
    groups = []
    for label, colour, result, cell in cells:
        silent = not answered(result, metric.task)
        interval = None if cell.interval is None else (cell.interval[0] or 0.0,
                                                       cell.interval[1] or 0.0)
        note = " ".join(([] if len(counts) == 1 else [f"n={cell.instances}"])
                        + (["no answer"] if silent else []))
        groups.append((label, [Bar(colour, cell.value, interval, faint=silent, note=note,
                                   hover=f"{label}: n={cell.instances}")]))
    title = f"{metric.task} {metric.name} (%)"
    if not metric.higher_is_better:
        title += ", lower is better"
    if len(counts) == 1:
        title += f", n={counts.pop()}"
    return bars("headline", title, groups, meaning(metric))


def _pass_at_k(results: Sequence[Results], labels: list[str], colours: list[str],
               task: str) -> str | None:
    """pass@k against k, a line per run; None where no run drew more than one sample."""
    having = [i for i, result in enumerate(results) if task in result.metrics]
    deepest = max((results[i].config.n for i in having), default=1)
    if deepest < 2:
        return None
    series = []
    for i in having:
        group = results[i].metrics[task].all
        points = [(k, value) for k in range(1, results[i].config.n + 1)
                  if (value := percent(group.pass_at_k(k))) is not None]
        series.append(Series(colours[i], points, hover=labels[i]))
    return lines("pass-at-k", f"{task}: pass@k (%)", list(range(1, deepest + 1)), series, "k",
                 TERMS["pass@k"])


def _breakdowns(results: Sequence[Results], labels: list[str], colours: list[str],
                task: str) -> list[str]:
    """Per breakdown of the task: a group of bars per category, a bar per run."""
    blocks = [block.breakdowns if (block := result.metrics.get(task)) is not None else {}
              for result in results]
    names = sorted({name for block in blocks for name in block})
    drawn = []
    for name in names:
        categories = sorted({category for block in blocks for category in block.get(name, {})},
                            key=natural)
        groups = []
        for category in categories:
            members = []
            for label, colour, split in zip(labels, colours, blocks, strict=True):
                group = split.get(name, {}).get(category)
                if group is None:
                    continue
                low, high = group.accuracy_ci95
                silent = not readable(group)
                members.append(Bar(colour, percent(group.pass_at_k(1)),
                                   (percent(low) or 0.0, percent(high) or 0.0), faint=silent,
                                   note="no answer" if silent else "",
                                   hover=f"{label}: n={group.instances}"))
            groups.append((category, members))
        drawn.append(bars("breakdown", f"{task} pass@1 by {name} (%)", groups,
                          f"{SHARED['pass@1']}, among the {task} instances of each {name}"))
    return drawn

