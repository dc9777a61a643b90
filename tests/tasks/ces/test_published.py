"""The simulation task against CES's own published artifacts in ../shared/published/ces
(skipped when absent): the only raw model responses the authors released, and their logged
HumanEval tests, whose loop iterables are the whole iterable where execbench's truth is the
items a loop left early took."""

from __future__ import annotations

import json

import pytest

from execbench.sandbox.pool import Sandbox
from tests.helpers.data import published
from tests.tasks.ces.test_rules import TASK, instance


def _program(problem: str) -> dict:
    """CES's program and call for one problem-test, in execbench's generic format."""
    with published("ces/ces_generic.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if record["id"] == problem:
                return record
    raise LookupError(problem)


@pytest.mark.parametrize("problem", ["HumanEval_13__1", "HumanEval_7__0"])
def test_the_published_gpt4_answers_are_told_the_format_expected(sandbox: Sandbox,
                                                                 problem: str) -> None:
    """gpt-4-turbo answered CES's own prompt: annotated code and an [OUTPUT] block, none of
    our placeholder lines. That is unreadable here, and the detail must say what was
    expected rather than call an 843-character answer empty."""
    response = published(f"ces/gpt-4-turbo/{problem}.response.txt").read_text(
        encoding="utf-8")
    record = _program(problem)
    made = instance(sandbox, record["code"], record["entry_point"], record["calls"][0])
    score = TASK.score(made, response, sandbox)
    assert score.verdict == "unparsable"
    assert (score.detail or "").startswith("expected one `[tag] = [values]` line per "
                                           "placeholder and `[output] = VALUE`")
    assert "empty" not in (score.detail or "")
