"""The trace schema: every field kept, a record that breaks the schema refused by name."""

from __future__ import annotations

import json

import pytest

from execbench.sandbox import recording, tracer
from execbench.sandbox.trace import RESULT_ONLY, Trace, TraceError, TraceOptions, combined


def test_fields_a_recorder_adds_are_kept_in_extra_and_written_back() -> None:
    record = {"status": "ok", "value": ["int", 3], "lines": [1, 2],
              "iterables": {"3": [["list", []]]}, "predicates": {}}
    trace = Trace.from_dict(record)
    assert (trace.status, trace.lines) == ("ok", [1, 2])
    assert trace.extra == {"iterables": {"3": [["list", []]]}, "predicates": {}}
    assert Trace.from_dict(trace.to_dict()) == trace
    assert trace.to_dict()["iterables"] == record["iterables"]


@pytest.mark.parametrize(("record", "message"), [
    ({"status": "fine"}, "unknown trace status 'fine'"),
    ({"lines": [1]}, "unknown trace status None"),
    ({"status": "ok", "lines": "1,2"}, "'lines' has type str"),
    ({"status": "ok", "cpu_time": True}, "'cpu_time' has type bool"),
    ({"status": "ok", "extra": {}}, "'extra' is reserved"),
    ([1, 2], "not list"),
])
def test_a_record_that_breaks_the_schema_is_refused_by_name(record: object,
                                                            message: str) -> None:
    with pytest.raises(TraceError, match=message.replace("(", r"\(")):
        Trace.from_dict(record)


@pytest.mark.parametrize("payload", [b"{", b"[]", json.dumps({"status": 3}).encode(),
                                     b"\xff\xfe"])
def test_a_runner_payload_that_breaks_the_schema_is_a_crash(payload: bytes) -> None:
    trace = Trace.from_payload(payload)
    assert trace.status == "crashed" and trace.detail.startswith("unreadable result")


def test_result_only_options_record_no_event_order() -> None:
    assert (RESULT_ONLY.max_events, RESULT_ONLY.max_branch_seq) == (0, 0)
    assert RESULT_ONLY.recorder == TraceOptions().recorder == "lines"


def test_combined_options_record_what_each_asks_for() -> None:
    assert combined([]) == TraceOptions() == combined([TraceOptions(), TraceOptions()])
    both = combined([TraceOptions(max_events=5, states=True),
                     TraceOptions(recorder="properties", max_value_nodes=500)])
    assert both == TraceOptions(recorder="properties", max_events=10_000, states=True,
                                max_value_nodes=500)
    assert combined([TraceOptions(recorder="properties"), TraceOptions()]).recorder == \
        "properties"


def test_recorders_that_do_not_extend_each_other_cannot_be_combined() -> None:
    class Other(recording.Recorder):
        name = "other"

    tracer.register_recorder(Other)
    try:
        with pytest.raises(ValueError, match="cannot be used in one run"):
            combined([TraceOptions(recorder="properties"), TraceOptions(recorder="other")])
    finally:
        tracer.RECORDERS.unregister(Other.name)
