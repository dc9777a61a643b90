"""The typed summary of questions asked in CodeSense's style (``abstract_payload``): the
record ``results.json`` keeps of it, exactly as it always was, and reading it back,
including the records of older runs."""

from __future__ import annotations

import json

from execbench.kept import Kept
from execbench.tasks.base import Instance
from execbench.tasks.common.abstract import summarize_by_kind
from execbench.tasks.common.abstract_payload import AbstractTruth, Filing, KindSummary, Share


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
    # The exact text, key order included: results.json keeps its bytes.
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
        "all": {"samples": 5, "strict": 0.5, "string_match": 0.6, "not_comparable": 1}})


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
