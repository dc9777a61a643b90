"""The simulation task's numbers from samples: class shares per construct category, rules
fired, divergence kinds and consistency per program; the summary's record, and reading it
back (an older or partial record too)."""

from __future__ import annotations

import json
from typing import Any

from execbench.kept import Kept
from execbench.tasks.base import Instance
from execbench.tasks.ces.payload import Coverage, ProgramFacts
from execbench.tasks.ces.summary import summarize
from execbench.tasks.ces.summary_payload import (
    NO_CONSISTENCY,
    NO_GROUP,
    NO_SPECTRUM,
    Consistency,
    Divergence,
    Group,
    Judged,
    SimulationSummary,
    Spectrum,
)


def _sample(instance: str, cls: str | None, verdict: str = "incorrect",
            source: str = "s", **extra: Any) -> Kept:
    return Kept(instance_id=instance, task="simulation", source=source, sample=0,
                verdict=verdict, correct=verdict == "correct",
                extra={"class": cls, **extra} if cls else {})


def _instance(key: str, category: str, covered: Coverage) -> Instance:
    """An instance as a run's summary sees it: its summary fields alone."""
    program = key.split("/")[0]
    return Instance(id=key, task="simulation", source="s", program_id=program, call_index=0,
                    code="", entry_point="f", args="",
                    data=ProgramFacts(category, covered).to_record())


def _run() -> SimulationSummary:
    cover = Coverage("a", 1, 2)
    other = Coverage("b", 1, 2)
    instances = {key: _instance(key, category, covered) for key, category, covered in (
        ("p/0", "LC", cover), ("p/1", "LC", other), ("q/0", "CO", cover), ("q/1", "CO", cover))}
    point = {"kind": "iterable", "id": "4a", "line": 4, "label": "w", "quadruple": "TF--"}
    right = {"output_right": True, "output_string_match": True}
    samples = [_sample("p/0", "coherent_correct", "correct", rules=[], **right),
               _sample("p/1", "coherent_correct", "correct", source="r", rules=[], **right),
               _sample("q/0", "incoherent_correct", rules=["rule1", "rule3"],
                       output_right=True, output_string_match=False),
               _sample("q/1", "coherent_incorrect", rules=[], divergence=point,
                       output_right=False, output_string_match=False),
               # an unquoted string: no readable output, but the string comparison takes it
               Kept(instance_id="q/1", task="simulation", source="s", sample=1,
                    verdict="unparsable", correct=False, extra={"output_string_match": True})]
    return summarize(samples, instances)


def test_shares_rules_divergence_and_consistency() -> None:
    found = _run()
    every = found.overall
    assert (every.samples, every.coherent_correct, every.incoherent_correct,
            every.unparsable, every.errors) == (5, 0.4, 0.2, 1, 0)
    assert every.rules == {"rule1": 1, "rule2": 0, "rule3": 1}
    assert every.divergence == {"iterable": 1} and every.quadruples == {"TF--": 1}
    assert (every.output_right, every.output_string_match) == (0.6, 0.6)
    assert found.category("LC").coherent_correct == 1.0
    assert (found.category("LO").samples, found.category("LO").coherent_correct) == (0, None)
    assert list(found.by_category) == ["CO", "LO", "LC", "Others"]
    assert list(found.by_source) == ["r", "s"]
    assert found.consistency == Consistency(0.5, 0.0, 0.5, programs=2,
                                            different_coverage=0.5,
                                            differing=Spectrum(1.0, 0.0, 0.0, programs=1))
    assert found.category_consistency("LC").strong == 1.0


def test_consistency_over_programs_whose_calls_cover_different_prime_paths() -> None:
    """Seven programs, by hand: A, B, C have two calls of different coverage (strong, weak,
    random); D, E share one coverage (weak, random); F's calls each tour every prime path
    (strong without differing); G's second call has unknown coverage (strong, since no
    other call shares it, but it shows no two known coverages). Over all: strong 3/7, weak
    2/7, random 2/7; over A, B, C alone: a third each."""
    a, b = Coverage("a", 1, 3), Coverage("b", 2, 3)
    full = Coverage("f", 3, 3)
    unknown = Coverage(None, None, None)
    calls = {  # program: category, [(right, coverage)] per call
        "A": ("LC", [(True, a), (True, b), (True, b)]),
        "B": ("LC", [(False, a), (True, b), (True, b)]),
        "C": ("LC", [(True, a), (False, b)]),
        "D": ("LC", [(True, a), (True, a)]),
        "E": ("LO", [(True, a), (False, a)]),
        "F": ("LO", [(True, full), (True, full)]),
        "G": ("LO", [(True, a), (True, unknown)])}
    instances = {f"{program}/{index}": _instance(f"{program}/{index}", category, covered)
                 for program, (category, tests) in calls.items()
                 for index, (_, covered) in enumerate(tests)}
    samples = [_sample(f"{program}/{index}", "coherent_correct" if right else
                       "coherent_incorrect", "correct" if right else "incorrect")
               for program, (_, tests) in calls.items()
               for index, (right, _) in enumerate(tests)]
    found = summarize(samples, instances)
    assert found.consistency == Consistency(3 / 7, 2 / 7, 2 / 7, programs=7,
                                            different_coverage=3 / 7,
                                            differing=Spectrum(1 / 3, 1 / 3, 1 / 3, 3))
    assert found.category_consistency("LC") == Consistency(
        0.25, 0.5, 0.25, 4, 0.75, Spectrum(1 / 3, 1 / 3, 1 / 3, 3))
    assert found.category_consistency("LO") == Consistency(
        2 / 3, 0.0, 1 / 3, 3, 0.0, Spectrum(None, None, None, 0))
    assert found.category_consistency("CO") == Consistency(
        None, None, None, 0, None, Spectrum(None, None, None, 0))
    back = SimulationSummary.from_record(json.loads(json.dumps(found.to_record())))
    assert back == found
    # the record's keys, in order: the spectrum of all programs, then the two
    record = found.consistency.to_record()
    assert list(record) == ["strong", "weak", "random", "programs", "different_coverage",
                            "differing"]
    differing = record["differing"]
    assert isinstance(differing, dict)
    assert list(differing) == ["strong", "weak", "random", "programs"]
    assert json.dumps(record) == json.dumps({
        "strong": 3 / 7, "weak": 2 / 7, "random": 2 / 7, "programs": 7,
        "different_coverage": 3 / 7,
        "differing": {"strong": 1 / 3, "weak": 1 / 3, "random": 1 / 3, "programs": 3}})
    assert isinstance(found.consistency, Spectrum) and found.consistency.levels == (
        3 / 7, 2 / 7, 2 / 7)


def test_the_record_keeps_its_keys_in_order() -> None:
    """``results.json`` keeps its bytes: the record has the keys, in the order, that the
    summary always wrote."""
    record = _run().to_record()
    assert list(record) == ["all", "by_category", "by_source", "consistency",
                            "consistency_by_category"]
    every = record["all"]
    assert isinstance(every, dict)
    assert every == {"samples": 5, "coherent_correct": 0.4, "coherent_incorrect": 0.2,
                     "incoherent_correct": 0.2, "incoherent_incorrect": 0.0, "errors": 0,
                     "unparsable": 1, "rules": {"rule1": 1, "rule2": 0, "rule3": 1},
                     "divergence": {"iterable": 1}, "quadruples": {"TF--": 1},
                     "output_right": 0.6, "output_string_match": 0.6}
    # The output's two shares come last: what the summary always wrote stays in order.
    assert list(every) == ["samples", "coherent_correct", "coherent_incorrect",
                           "incoherent_correct", "incoherent_incorrect", "errors",
                           "unparsable", "rules", "divergence", "quadruples", "output_right",
                           "output_string_match"]
    consistency = record["consistency"]
    assert isinstance(consistency, dict)
    # the spectrum over programs of two coverages came later: it is written last
    assert list(consistency) == ["strong", "weak", "random", "programs", "different_coverage",
                                 "differing"]
    assert consistency["differing"] == {"strong": 1.0, "weak": 0.0, "random": 0.0,
                                        "programs": 1}


def test_the_summary_reads_back_from_its_json() -> None:
    found = _run()
    assert SimulationSummary.from_record(json.loads(json.dumps(found.to_record()))) == found
    empty = summarize([], {})
    assert SimulationSummary.from_record(empty.to_record()) == empty
    assert empty.overall.coherent_correct is None and empty.consistency.programs == 0


def test_an_old_or_partial_record_reads_with_what_it_lacks_unknown() -> None:
    partial = SimulationSummary.from_record({
        "all": {"samples": 3, "coherent_correct": 1, "rules": {"rule1": 2}},
        "by_category": {"CO": {"samples": 3}},
        "consistency": {"strong": 0.5}})
    assert partial.overall == Group(3, 1, None, None, None, None, None, {"rule1": 2}, {}, {})
    assert partial.category("CO").samples == 3
    assert partial.category("LO") == NO_GROUP
    assert partial.by_source == {}
    assert partial.consistency == Consistency(0.5, None, None, None, None)
    assert partial.consistency.differing == NO_SPECTRUM
    assert Spectrum(None, None, None, None) == NO_SPECTRUM
    assert partial.category_consistency("CO") == NO_CONSISTENCY
    nothing = SimulationSummary.from_record({})
    assert (nothing.overall, nothing.consistency) == (NO_GROUP, NO_CONSISTENCY)
    # a malformed value is unknown, not a crash
    odd = SimulationSummary.from_record({"all": {"samples": "3", "rules": [1],
                                                 "divergence": {"iterable": "x"}},
                                         "by_category": None})
    assert (odd.overall.samples, odd.overall.rules, odd.overall.divergence) == (None, {}, {})
    assert odd.by_category == {}


def test_what_the_scoring_says_of_a_sample_reads_from_its_extra() -> None:
    point = Divergence("iterable", "4a", 4, "TF--", label="w")
    assert Divergence.from_record(point.to_record()) == point
    assert list(point.to_record()) == ["kind", "id", "line", "label", "quadruple"]
    output = Divergence("output", "output", None, "----")
    assert output.to_record() == {"kind": "output", "id": "output", "line": None,
                                  "quadruple": "----"}
    judged = Judged.of({"class": "coherent_incorrect", "rules": ["rule2"],
                        "divergence": point.to_record()})
    assert judged == Judged("coherent_incorrect", ("rule2",), point)
    assert Judged.of(None) == Judged.of({}) == Judged(None)
    assert Judged.of({"class": 3, "divergence": {}}) == Judged(None)
