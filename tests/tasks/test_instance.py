"""An instance is made from a task's typed payload, and read back from its record with
each common field checked."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from execbench.json_types import JSONObject
from execbench.program import Call, Program
from execbench.tasks.base import Instance, InstanceError

PROGRAM = Program(id="p1", source="src", code="def f(x):\n    return x\n", entry_point="f",
                  calls=(Call(args="1"), Call(args="2")))


@dataclass(frozen=True)
class Payload:
    record: JSONObject

    def to_record(self) -> JSONObject:
        return dict(self.record)


def test_the_payload_record_becomes_the_task_fields_and_may_set_the_code() -> None:
    plain = Instance.build("t", PROGRAM, 1, Payload({"truth": 2, "variant": "a"}))
    assert (plain.id, plain.args, plain.code, plain.data) == (
        "t/p1/1/a", "2", PROGRAM.code, {"truth": 2, "variant": "a"})
    mutant = Instance.build("t", PROGRAM, 0, Payload({"truth": 1, "code": "def f(x): ...",
                                                      "mutation": {"operator": "x"}}))
    assert (mutant.code, mutant.mutation, mutant.data) == (
        "def f(x): ...", {"operator": "x"}, {"truth": 1})
    assert Instance.from_record(mutant.to_record()) == mutant


@pytest.mark.parametrize(("record", "error"), [
    ({"id": "x"}, "sets common instance fields ['id']"),
    ({"code": 3}, "code that is no text"),
    ({"mutation": ["x"]}, "a mutation that is no mapping"),
])
def test_a_payload_may_not_set_other_common_fields_or_wrong_types(record: JSONObject,
                                                                  error: str) -> None:
    with pytest.raises(TypeError, match=error.replace("[", r"\[")):
        Instance.build("t", PROGRAM, 0, Payload(record))


def test_a_record_with_a_mistyped_common_field_is_refused_by_name() -> None:
    good = Instance.build("t", PROGRAM, 0, Payload({"truth": 1})).to_record()
    for name, value in (("call_index", "0"), ("call_index", True), ("code", None)):
        with pytest.raises(InstanceError, match=f"field '{name}' should be"):
            Instance.from_record({**good, name: value})
    with pytest.raises(InstanceError, match="'mutation' should be a mapping"):
        Instance.from_record({**good, "mutation": "x"})
