"""EvalPlus files (HumanEval+ and MBPP+): reference solutions with many stored inputs.

Records carry ``task_id``, ``prompt``, ``canonical_solution``, ``entry_point`` and the
inputs as JSON: ``base_input`` (the original benchmark's) and ``plus_input`` (the many
generated ones, used only on request). Each input is a list of positional arguments; its
values are written back as Python literals, so floats such as ``nan`` survive the trip.

For HumanEval+ the program is ``prompt + canonical_solution`` as in HumanEval; an MBPP+
prompt is only a docstring describing the task, so the solution alone is the program.
"""

from __future__ import annotations

from typing import Any

from execbench.program import Call, Program
from execbench.sources.generic import build_program
from execbench.sources.jsonl import Record, RecordError
from execbench.values import LiteralError, encode, to_literal

ID_KEY = "task_id"


def build(record: Record, *, plus_inputs: bool) -> Program:
    """A program from one EvalPlus record, with the base (and optionally plus) inputs."""
    task_id = str(record.get(ID_KEY, (str, int)))
    code = record.get("canonical_solution")
    if task_id.startswith("HumanEval/"):
        code = record.get("prompt") + code
    calls = _calls(record, "base_input", record.get("base_input", list))
    if plus_inputs:
        extra = record.data.get("plus_input")
        if isinstance(extra, list):
            calls += _calls(record, "plus_input", extra)
        else:  # MBPP+ v0.2.0 has a task whose plus_input is {}: keep its base inputs
            record.notes.append("key 'plus_input' is not a list; only base inputs are used")
    meta = {"task_id": task_id, "atol": record.optional("atol", (int, float))}
    return build_program(record, code, record.get("entry_point"), calls, meta,
                         written_by_us=True)


def _calls(record: Record, key: str, inputs: list[Any]) -> list[Call]:
    calls = []
    for index, arguments in enumerate(inputs, 1):
        text = _args_text(key, index, arguments)
        if text is None:
            record.notes.append(f"{key} {index} is too large to write as a literal")
        else:
            calls.append(Call(text))
    return calls


def _args_text(key: str, index: int, arguments: Any) -> str | None:
    """The argument-list text of one stored input (``None`` if a value is too large)."""
    if not isinstance(arguments, list):
        raise RecordError(f"key {key!r}: input {index} should be a list of arguments, "
                          f"not {type(arguments).__name__}")
    try:
        return ", ".join(to_literal(encode(v)) for v in arguments)
    except LiteralError:
        return None
