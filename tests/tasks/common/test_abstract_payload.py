"""The typed summary of questions asked in CodeSense's style (``abstract_payload``): the
record ``results.json`` keeps of it, exactly as it always was where no finer split
applies, the finer splits (by language and kind, by function size, by abstract category,
by sample) where they do, and reading it back, including the records of older runs."""

from __future__ import annotations

import json

from execbench.kept import Kept
from execbench.tasks.base import Instance
from execbench.tasks.common.abstract import summarize_by_kind
from execbench.tasks.common.abstract_payload import (
    UNFILED,
    AbstractTruth,
    Filing,
    KindSummary,
    Share,
)


def _instance(id: str, language: str = "python", **data: str) -> Instance:
    return Instance(id=id, task="statement", source="s", program_id="p", call_index=0,
                    code="", entry_point="f", args="", data=dict(data), language=language)


def _sample(id: str, verdict: str, **extra: bool | str) -> Kept:
    return Kept(instance_id=id, task="statement", source="s", sample=0, verdict=verdict,
                correct=verdict == "correct", extra=dict(extra) or None)


INSTANCES = {
    "a": _instance("a", kind="call", values="concrete"),
    "b": _instance("b", kind="call", values="abstract"),
    "c": _instance("c", "c", kind="arithmetic", values="concrete"),
    "d": _instance("d"),  # a plain output question beside published ones: no kind
}
SAMPLES = [
    _sample("a", "correct", string_match=True),
    _sample("a", "incorrect", string_match=False),
    _sample("b", "correct", string_match=True),
    _sample("c", "incorrect", string_match=True, comparable=False),
    _sample("d", "error"),
]


def test_the_summary_record_is_the_json_results_always_held() -> None:
    record = summarize_by_kind(SAMPLES, INSTANCES).to_record()
    # The exact text, key order included: results.json keeps its bytes; the samples span
    # two languages, so the split by language and kind follows ``all``.
    assert json.dumps(record) == json.dumps({
        "by_kind": {
            "?": {"samples": 1, "strict": 0.0, "string_match": 0.0},
            "arithmetic": {"samples": 1, "strict": None, "string_match": 1.0,
                           "not_comparable": 1},
            "call": {"samples": 3, "strict": 2 / 3, "string_match": 2 / 3}},
        "by_values": {
            "abstract": {"samples": 1, "strict": 1.0, "string_match": 1.0},
            "concrete": {"samples": 4, "strict": 1 / 3, "string_match": 0.5,
                         "not_comparable": 1}},
        "by_language": {
            "c": {"samples": 1, "strict": None, "string_match": 1.0, "not_comparable": 1},
            "python": {"samples": 4, "strict": 0.5, "string_match": 0.5}},
        "all": {"samples": 5, "strict": 0.5, "string_match": 0.6, "not_comparable": 1},
        "by_language_kind": {
            "c": {"arithmetic": {"samples": 1, "strict": None, "string_match": 1.0,
                                 "not_comparable": 1}},
            "python": {"?": {"samples": 1, "strict": 0.0, "string_match": 0.0},
                       "call": {"samples": 3, "strict": 2 / 3, "string_match": 2 / 3}}}})


def test_a_summary_of_one_language_without_recorded_sizes_keeps_its_four_parts() -> None:
    python = {key: instance for key, instance in INSTANCES.items() if key != "c"}
    record = summarize_by_kind([s for s in SAMPLES if s.instance_id != "c"], python).to_record()
    assert list(record) == ["by_kind", "by_values", "by_language", "all"]


def test_no_samples_give_no_accuracy_and_no_not_comparable() -> None:
    assert summarize_by_kind([], {}).to_record() == {
        "by_kind": {}, "by_values": {}, "by_language": {},
        "all": {"samples": 0, "strict": None, "string_match": None}}


def test_the_summary_reads_back_as_it_was_written() -> None:
    summary = summarize_by_kind(SAMPLES, INSTANCES)
    assert KindSummary.from_record(summary.to_record()) == summary
    # and through the JSON text results.json holds
    assert KindSummary.from_record(json.loads(json.dumps(summary.to_record()))) == summary
    assert summary.overall == Share(5, 0.5, 0.6, 1)
    assert summary.by_kind["arithmetic"].strict is None


def test_an_older_or_partial_record_reads_with_its_missing_parts_empty() -> None:
    # Before runs were split by language, and before values that are no literal were kept.
    older = {"by_kind": {"call": {"samples": 2, "strict": 0.5, "string_match": 1}},
             "by_values": {"concrete": {"samples": 2, "strict": 0.5, "string_match": 1.0}},
             "all": {"samples": 2, "strict": 0.5, "string_match": 1.0}}
    summary = KindSummary.from_record(older)
    assert summary.by_language == {}
    assert summary.by_kind == {"call": Share(2, 0.5, 1.0)}
    assert summary.overall.not_comparable == 0
    assert list(summary.to_record()) == ["by_kind", "by_values", "by_language", "all"]
    # A record with parts missing or malformed reads as far as it goes, never raises.
    partial = KindSummary.from_record({"by_kind": {"call": {"strict": True}, "loop": 3},
                                       "by_values": [], "all": None})
    assert partial == KindSummary(by_kind={"call": Share(), "loop": Share()})
    assert KindSummary.from_record({}) == KindSummary()
    assert Share.from_record({"samples": "2", "strict": "0.5"}) == Share()


def test_truths_and_filings_read_their_records() -> None:
    truth = AbstractTruth("Positive Regular", "int", ["int", 3], "3")
    assert truth.to_record() == {"category": "Positive Regular", "type": "int",
                                 "value": ["int", 3], "repr": "3"}
    assert AbstractTruth.from_record(truth.to_record()) == truth
    bare = AbstractTruth("True", "bool")
    assert list(bare.to_record()) == ["category", "type"]
    assert AbstractTruth.from_record(bare.to_record()) == bare
    asked = _instance("x", values="abstract")
    asked.data["truth"] = truth.to_record()
    assert AbstractTruth.asked(asked) == truth
    assert AbstractTruth.asked(_instance("y", values="concrete")) is None
    assert Filing.of(INSTANCES["b"]) == Filing("call", "abstract")
    assert Filing.of(INSTANCES["d"]) == Filing("?", "concrete")


def _scored(id: str, verdict: str, sample: int = 0, **extra: bool | str | int) -> Kept:
    return Kept(instance_id=id, task="statement", source="s", sample=sample, verdict=verdict,
                correct=verdict == "correct", extra=dict(extra) or None)


def test_sizes_and_categories_come_from_the_scores_a_failed_request_takes_its_own() -> None:
    instances = {"a": _instance("a", kind="call", values="concrete"),
                 "b": _instance("b", kind="call", values="abstract"),
                 "e": _instance("e", kind="constant", values="concrete")}
    samples = [
        _scored("a", "correct", 0, function_lines=12, category="int: Zero", string_match=True),
        _scored("a", "error", 1),  # never scored: filed as sample 0 of its instance was
        _scored("b", "incorrect", 0, function_lines=4, category="str: Empty String",
                string_match=False),
        _scored("b", "correct", 1, function_lines=4, category="str: Empty String",
                string_match=True),
        _scored("e", "error", 0),  # no sample of "e" was scored: nothing says its size
        _scored("e", "error", 1),
    ]
    summary = summarize_by_kind(samples, instances)
    assert summary.by_function_lines == {"4": Share(2, 0.5, 0.5), "12": Share(2, 0.5, 0.5),
                                         UNFILED: Share(2, 0.0, 0.0)}
    assert summary.by_category == {
        "abstract": {"str: Empty String": Share(2, 0.5, 0.5)},
        "concrete": {"int: Zero": Share(2, 0.5, 0.5), UNFILED: Share(2, 0.0, 0.0)}}
    assert summary.by_sample == {"0": Share(3, 1 / 3, 1 / 3), "1": Share(3, 1 / 3, 1 / 3)}
    assert summary.by_language_kind == {}  # one language: by_kind is it
    record = summary.to_record()
    assert list(record) == ["by_kind", "by_values", "by_language", "all",
                            "by_function_lines", "by_category", "by_sample"]
    assert list(record["by_function_lines"]) == ["4", "12", "?"]   # line counts in order
    assert KindSummary.from_record(json.loads(json.dumps(record))) == summary


def test_an_older_summary_has_no_finer_splits_and_says_what_it_cannot_tell() -> None:
    older = KindSummary.from_record({
        "by_kind": {"call": {"samples": 2, "strict": 0.5, "string_match": 1.0}},
        "by_language": {"python": {"samples": 2, "strict": 0.5, "string_match": 1.0}},
        "all": {"samples": 2, "strict": 0.5, "string_match": 1.0}})
    assert (older.by_function_lines, older.by_category, older.by_sample) == ({}, {}, {})
    # One language: its kinds are by_kind; another language has none.
    assert older.kinds_of("python") == {"call": Share(2, 0.5, 1.0)}
    assert older.kinds_of("c") == {}
    # Two languages and no split by kind (recorded before it was): cannot be told.
    mixed = KindSummary.from_record({
        "by_kind": {"call": {"samples": 2}},
        "by_language": {"python": {"samples": 1}, "c": {"samples": 1}}})
    assert mixed.kinds_of("c") is None and mixed.kinds_of("java") == {}
    # Before the split by language: which language the kinds are in is not known.
    assert KindSummary.from_record({"by_kind": {"call": {"samples": 2}}}).kinds_of(
        "python") is None
    # Malformed finer splits read as far as they go.
    partial = KindSummary.from_record({"by_language_kind": {"c": 3, "java": {"call": 2}},
                                       "by_category": [], "by_function_lines": {"5": "x"}})
    assert partial.by_language_kind == {"c": {}, "java": {"call": Share()}}
    assert partial.by_category == {} and partial.by_function_lines == {"5": Share()}


def test_shares_combine_into_the_share_of_all_their_samples() -> None:
    # A bin of block sizes: 2 of 3 right and 1 of 1, one not comparable in the second.
    first, second = Share(3, 2 / 3, 1 / 3), Share(2, 1.0, 0.5, not_comparable=1)
    assert Share.combined([first, second]) == Share(5, 3 / 4, 2 / 5, 1)
    assert Share.combined([]) == Share(0, None, None)
    assert Share.combined([Share(2, None, 1.0, 2)]) == Share(2, None, 1.0, 2)
    # A group that does not say how many samples it has, or how many were right: unknown.
    assert Share.combined([first, Share()]) == Share()
    assert Share.combined([Share(2, None, 0.5)]) == Share()
