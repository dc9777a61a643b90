"""The typed values CodeSense-style questions are made of, and their records: a derived
fact's record (key order included, as a suite keeps it), and each question's record read
back as the question it was written from."""

from __future__ import annotations

import json

import pytest

from execbench.tasks.codesense.derive import BlockRun, BranchRun, LoopRun, StatementRun
from execbench.tasks.codesense.facts import (
    BlockFact,
    BranchFact,
    Fact,
    InputsFact,
    LoopFact,
    StatementFact,
)
from execbench.tasks.codesense.payload import ConcreteTruth, FactQuestion
from execbench.tasks.common.abstract_payload import AbstractTruth
from execbench.tasks.common.answers import Given
from execbench.tasks.prediction_payload import CodeSenseQuestion, InputQuestion, OutputQuestion


def test_derived_facts_write_the_records_facts_describe() -> None:
    statement = StatementRun(3, "y = x * 2", "arithmetic", ["int", 4], {"x": ["int", 2]})
    assert json.dumps(statement.to_record()) == json.dumps(
        {"task": "statement", "line": 3, "statement": "y = x * 2", "kind": "arithmetic",
         "value": ["int", 4], "before": {"x": ["int", 2]}})
    block = BlockRun(2, (2, 3), {"y": ["int", 4]})
    assert json.dumps(block.to_record()) == json.dumps(
        {"task": "block", "size": 2, "lines": [2, 3], "after": {"y": ["int", 4]}})
    assert json.dumps(LoopRun(4, "iterations", ["int", 3]).to_record()) == json.dumps(
        {"task": "loop", "line": 4, "question": "iterations", "value": ["int", 3]})
    assert json.dumps(LoopRun(4, "body", ["int", 1], "t", 2).to_record()) == json.dumps(
        {"task": "loop", "line": 4, "question": "body", "variable": "t", "iteration": 2,
         "value": ["int", 1]})
    assert json.dumps(LoopRun(4, "after", ["int", 6], "t").to_record()) == json.dumps(
        {"task": "loop", "line": 4, "question": "after", "variable": "t",
         "value": ["int", 6]})
    assert BranchRun(5, False).to_record() == {"task": "branch", "line": 5, "executed": False}


@pytest.mark.parametrize(("fact_type", "record"), [
    (StatementFact, StatementRun(3, "y = x * 2", "arithmetic", ["int", 4],
                                 {"x": ["int", 2]}).to_record()),
    (BlockFact, BlockRun(1, (2,), {"y": ["int", 4]}).to_record()),
    (LoopFact, LoopRun(4, "body", ["int", 1], "t", 2).to_record()),
    (BranchFact, BranchRun(5, True).to_record()),
])
def test_a_fact_question_reads_back_as_it_was_written(fact_type: type[Fact],
                                                      record: dict) -> None:
    fact = fact_type.read(record)
    assert fact is not None
    for truth in (ConcreteTruth(fact.asked, fact.answer_text(fact.asked)),
                  ConcreteTruth(["object", "unknown", "<T>"], "<T>", comparable=False),
                  ConcreteTruth(["int", 1], "0x1 1", "1", repr="1"),
                  AbstractTruth("Positive Regular", "int")):
        question = FactQuestion(fact, truth, fact.variant, objects=truth.repr is not None)
        written = json.loads(json.dumps(question.to_record()))
        back = FactQuestion.from_record(written, fact_type, "python")
        assert (back.fact.record, back.truth, back.variant, back.objects) == (
            fact.record, truth, question.variant, question.objects)
        assert back.values == question.values == written["values"]


def test_output_and_input_questions_read_back_as_they_were_written() -> None:
    given = (Given("lambda x: x", position=1), Given("abs", keyword="key"))
    for question in (OutputQuestion(["int", 3], "3"), OutputQuestion(["int", 3], None, True)):
        written = json.loads(json.dumps(question.to_record()))
        assert OutputQuestion.from_record(written) == question
    for asked in (InputQuestion(["int", 3], "3", given, "[1, 2]"),
                  InputQuestion(["int", 3], None, ())):
        written = json.loads(json.dumps(asked.to_record()))
        assert InputQuestion.from_record(written) == asked
    fact = InputsFact({"names": ["n"], "output": "3"}, "c")
    for codesense in (CodeSenseQuestion("output", AbstractTruth("Zero", "int", ["int", 0],
                                                                "0")),
                      CodeSenseQuestion("input", ConcreteTruth(
                          ["dict", [[["str", "n"], ["int", 2]]]], "{n = 2}"), fact)):
        written = json.loads(json.dumps(codesense.to_record()))
        back = CodeSenseQuestion.from_record(written, "c")
        assert (back.kind, back.truth, back.values) == (codesense.kind, codesense.truth,
                                                        codesense.values)
        assert (back.fact and back.fact.record) == (codesense.fact and codesense.fact.record)


def test_a_malformed_record_fails_where_it_is_read() -> None:
    with pytest.raises(ValueError, match="'text' is not a string"):
        ConcreteTruth.from_record({"value": ["int", 1], "text": 1})
    with pytest.raises(KeyError):
        OutputQuestion.from_record({"truth": {"repr": "1"}})
    with pytest.raises(ValueError, match="'given' is not a list of objects"):
        Given.listed({"given": ["lambda x: x"]})
