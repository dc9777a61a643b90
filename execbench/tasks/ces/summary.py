"""The simulation task's numbers (``results.json``: ``task_metrics.simulation``): the share
of samples in each of the four classes, how often each coherence rule fired, and the kinds
of divergence points, over all samples, per construct category (the paper's Table 1 and
Figure 7) and per source; and the consistency of each program's calls (Figure 6).

Shares are over every sample of a group, so a failed request or an unreadable answer
lowers them all; those are counted apart (``errors``, ``unparsable``). A program's call
counts as simulated right when every sample of it is coherent with the right output.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from execbench.tasks.base import ERROR, UNPARSABLE
from execbench.tasks.ces.coverage import consistency
from execbench.tasks.ces.payload import Coverage, ProgramFacts

if TYPE_CHECKING:
    from execbench.tasks.base import Instance

CATEGORIES = ("CO", "LO", "LC", "Others")
CLASSES = {(True, True): "coherent_correct", (True, False): "coherent_incorrect",
           (False, True): "incoherent_correct", (False, False): "incoherent_incorrect"}
RULES = ("rule1", "rule2", "rule3")
LEVELS = ("strong", "weak", "random")


def _extra(sample: dict[str, Any]) -> dict[str, Any]:
    return sample.get("extra") or {}


def _group(samples: list[dict[str, Any]]) -> dict[str, Any]:
    total = len(samples)
    classes = Counter(_extra(s).get("class") for s in samples)
    result: dict[str, Any] = {"samples": total}
    for name in CLASSES.values():
        result[name] = classes[name] / total if total else None
    result["errors"] = sum(s["verdict"] == ERROR for s in samples)
    result["unparsable"] = sum(s["verdict"] == UNPARSABLE for s in samples)
    result["rules"] = {rule: sum(rule in _extra(s).get("rules", ()) for s in samples)
                       for rule in RULES}
    points = [_extra(s)["divergence"] for s in samples if _extra(s).get("divergence")]
    result["divergence"] = dict(sorted(Counter(p["kind"] for p in points).items()))
    result["quadruples"] = dict(sorted(Counter(p["quadruple"] for p in points).items()))
    return result


def _consistency(samples: list[dict[str, Any]], instances: dict[str, Instance]
                 ) -> dict[str, Any]:
    by_instance: dict[str, list[bool]] = {}
    for sample in samples:
        by_instance.setdefault(sample["instance_id"], []).append(
            _extra(sample).get("class") == "coherent_correct")
    programs: dict[str, list[tuple[bool, Coverage]]] = {}
    for key in sorted(by_instance):
        instance = instances[key]
        programs.setdefault(instance.program_id, []).append(
            (all(by_instance[key]), ProgramFacts.from_record(instance.data).coverage))
    levels = Counter(consistency(tests) for tests in programs.values())
    differing = sum(len({c.digest for _, c in tests if c.digest is not None}) > 1
                    for tests in programs.values())
    count = len(programs)
    result: dict[str, Any] = {level: levels[level] / count if count else None
                              for level in LEVELS}
    result["programs"] = count
    result["different_coverage"] = differing / count if count else None
    return result


def summarize(samples: list[dict[str, Any]], instances: dict[str, Instance]
              ) -> dict[str, Any]:
    """All of the module doc's numbers, from a run's samples of the task."""
    categories: dict[str, list[dict[str, Any]]] = {name: [] for name in CATEGORIES}
    sources: dict[str, list[dict[str, Any]]] = {}
    for sample in samples:
        facts = ProgramFacts.from_record(instances[sample["instance_id"]].data)
        categories[facts.category].append(sample)
        sources.setdefault(sample["source"], []).append(sample)
    return {"all": _group(samples),
            "by_category": {name: _group(group) for name, group in categories.items()},
            "by_source": {name: _group(group) for name, group in sorted(sources.items())},
            "consistency": _consistency(samples, instances),
            "consistency_by_category": {
                name: _consistency(group, instances) for name, group in categories.items()}}
