"""The simulation task's numbers from samples: class shares per construct category, rules
fired, divergence kinds and consistency per program."""

from __future__ import annotations

from typing import Any

from execbench.tasks.base import Instance
from execbench.tasks.ces.payload import Coverage, ProgramFacts
from execbench.tasks.ces.summary import summarize


def _sample(instance: str, cls: str | None, verdict: str = "incorrect",
            **extra: Any) -> dict[str, Any]:
    return {"instance_id": instance, "source": "s", "verdict": verdict,
            "extra": {"class": cls, **extra} if cls else {}}


def _instance(key: str, category: str, covered: Coverage) -> Instance:
    """An instance as a run's summary sees it: its summary fields alone."""
    program = key.split("/")[0]
    return Instance(id=key, task="simulation", source="s", program_id=program, call_index=0,
                    code="", entry_point="f", args="",
                    data=ProgramFacts(category, covered).to_record())


def test_shares_rules_divergence_and_consistency() -> None:
    cover = Coverage("a", 1, 2)
    other = Coverage("b", 1, 2)
    instances = {key: _instance(key, category, covered) for key, category, covered in (
        ("p/0", "LC", cover), ("p/1", "LC", other), ("q/0", "CO", cover), ("q/1", "CO", cover))}
    point = {"kind": "iterable", "quadruple": "TF--"}
    samples = [_sample("p/0", "coherent_correct", "correct", rules=[]),
               _sample("p/1", "coherent_correct", "correct", rules=[]),
               _sample("q/0", "incoherent_correct", rules=["rule1", "rule3"]),
               _sample("q/1", "coherent_incorrect", rules=[], divergence=point),
               _sample("q/1", None, "unparsable")]
    found = summarize(samples, instances)
    every = found["all"]
    assert (every["samples"], every["coherent_correct"], every["incoherent_correct"],
            every["unparsable"]) == (5, 0.4, 0.2, 1)
    assert every["rules"] == {"rule1": 1, "rule2": 0, "rule3": 1}
    assert every["divergence"] == {"iterable": 1} and every["quadruples"] == {"TF--": 1}
    assert found["by_category"]["LC"]["coherent_correct"] == 1.0
    assert found["by_category"]["LO"] == {**found["by_category"]["LO"], "samples": 0,
                                          "coherent_correct": None}
    assert found["consistency"] == {"strong": 0.5, "weak": 0.0, "random": 0.5,
                                    "programs": 2, "different_coverage": 0.5}
    assert found["consistency_by_category"]["LC"]["strong"] == 1.0
