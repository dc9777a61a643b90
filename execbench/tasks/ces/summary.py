"""The simulation task's numbers (``results.json``: ``task_metrics.simulation``): the share
of samples in each of the four classes, how often each coherence rule fired, and the kinds
of divergence points, over all samples, per construct category (the paper's Table 1 and
Figure 7) and per source; and the consistency of each program's calls (Figure 6), over
all programs and over those whose calls cover different prime paths (known coverages
with two digests; a call of unknown coverage does not make a program count there).

Shares are over every sample of a group, so a failed request or an unreadable answer
lowers them all; those are counted apart (``errors``, ``unparsable``). A program's call
counts as simulated right when every sample of it is coherent with the right output.
The summary's types, which the report reads back, are in ``summary_payload``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from execbench.kept import Kept
from execbench.tasks.base import ERROR, UNPARSABLE
from execbench.tasks.ces.coverage import consistency
from execbench.tasks.ces.payload import Coverage, ProgramFacts
from execbench.tasks.ces.summary_payload import (
    CATEGORIES,
    CLASSES,
    LEVELS,
    RULES,
    Consistency,
    Group,
    Judged,
    SimulationSummary,
    Spectrum,
)

if TYPE_CHECKING:
    from execbench.tasks.base import Instance

_Read = tuple[Kept, Judged]
"""A sample with what its scoring says of it, read once."""


def _group(samples: list[_Read]) -> Group:
    total = len(samples)
    classes = Counter(judged.coherence for _, judged in samples)
    shares = {name: classes[name] / total if total else None for name in CLASSES.values()}
    points = [judged.divergence for _, judged in samples if judged.divergence is not None]
    return Group(
        samples=total, coherent_correct=shares["coherent_correct"],
        coherent_incorrect=shares["coherent_incorrect"],
        incoherent_correct=shares["incoherent_correct"],
        incoherent_incorrect=shares["incoherent_incorrect"],
        errors=sum(s.verdict == ERROR for s, _ in samples),
        unparsable=sum(s.verdict == UNPARSABLE for s, _ in samples),
        rules={rule: sum(rule in judged.rules for _, judged in samples) for rule in RULES},
        divergence=dict(sorted(Counter(p.kind for p in points).items())),
        quadruples=dict(sorted(Counter(p.quadruple for p in points).items())),
        output_right=_share(samples, lambda judged: judged.output_right),
        output_string_match=_share(samples, lambda judged: judged.output_matched))


def _share(samples: list[_Read], holds: Callable[[Judged], bool]) -> float | None:
    """The share of samples whose judgement ``holds`` (a failed request or an unreadable
    answer does not); None for no samples."""
    return sum(holds(judged) for _, judged in samples) / len(samples) if samples else None


def _consistency(samples: list[_Read], instances: dict[str, Instance]) -> Consistency:
    by_instance: dict[str, list[bool]] = {}
    for sample, judged in samples:
        by_instance.setdefault(sample.instance_id, []).append(
            judged.coherence == "coherent_correct")
    programs: dict[str, list[tuple[bool, Coverage]]] = {}
    for key in sorted(by_instance):
        instance = instances[key]
        programs.setdefault(instance.program_id, []).append(
            (all(by_instance[key]), ProgramFacts.from_record(instance.data).coverage))
    # (level, whether two calls cover different prime paths) per program
    levels = [(consistency(tests), len({c.digest for _, c in tests if c.digest is not None}) > 1)
              for tests in programs.values()]
    every = _spectrum([level for level, _ in levels])
    differ = [level for level, differs in levels if differs]
    count = len(programs)
    return Consistency(every.strong, every.weak, every.random, programs=count,
                       different_coverage=len(differ) / count if count else None,
                       differing=_spectrum(differ))


def _spectrum(levels: list[str]) -> Spectrum:
    """The share of each consistency level among some programs' levels."""
    tally = Counter(levels)
    count = len(levels)
    share = {level: tally[level] / count if count else None for level in LEVELS}
    return Spectrum(share["strong"], share["weak"], share["random"], programs=count)


def summarize(samples: list[Kept], instances: dict[str, Instance]) -> SimulationSummary:
    """All of the module doc's numbers, from a run's samples of the task."""
    read = [(sample, Judged.of(sample.extra)) for sample in samples]
    categories: dict[str, list[_Read]] = {name: [] for name in CATEGORIES}
    sources: dict[str, list[_Read]] = {}
    for pair in read:
        sample = pair[0]
        facts = ProgramFacts.from_record(instances[sample.instance_id].data)
        categories[facts.category].append(pair)
        sources.setdefault(sample.source, []).append(pair)
    return SimulationSummary(
        overall=_group(read),
        by_category={name: _group(group) for name, group in categories.items()},
        by_source={name: _group(group) for name, group in sorted(sources.items())},
        consistency=_consistency(read, instances),
        consistency_by_category={
            name: _consistency(group, instances) for name, group in categories.items()})
