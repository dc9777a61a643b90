"""The CodeSense tasks end to end: built from generic JSONL programs (traced here, or with
recorded facts), answered by the oracle and other responses, summarised."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import execbench
from execbench.models.base import ModelError
from execbench.runner import RunConfig, read_samples, run
from execbench.sources.debugger_values import PLACEHOLDERS
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks import get_task
from execbench.tasks.base import CORRECT, INCORRECT, UNPARSABLE, Instance
from execbench.tasks.codesense.facts import BlockFact, BranchFact, LoopFact, StatementFact
from execbench.tasks.codesense.payload import ConcreteTruth, FactQuestion
from execbench.tasks.common.abstract_payload import AbstractTruth
from execbench.tasks.prediction_payload import CodeSenseQuestion, codesense_question
from tests.helpers.programs import EVERY_STATEMENT

CODESENSE = ["statement", "block", "loop", "branch"]
FACTS = {kind.task: kind for kind in (StatementFact, BlockFact, LoopFact, BranchFact)}


def _asked(instance: Instance) -> FactQuestion:
    """A CodeSense task's instance, read as its task reads it."""
    return FactQuestion.from_record(instance.data, FACTS[instance.task], instance.language)


def _output(instance: Instance) -> CodeSenseQuestion:
    asked = codesense_question(instance)
    assert asked is not None
    return asked



def _source(tmp_path: Path, *records: dict[str, Any]) -> Path:
    path = tmp_path / "programs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _build(tmp_path: Path, source: Path, tasks: list[str], **options: str):
    suite = tmp_path / "suite"
    manifest = build_suite([str(source)], suite, BuildOptions(
        tasks=tasks, task_options=dict(options), workers=1, overwrite=True))
    return manifest, load_suite(suite)[1], suite


def test_every_task_builds_by_kind_and_the_oracle_answers_all(tmp_path: Path) -> None:
    source = _source(tmp_path, {"id": "f", "code": EVERY_STATEMENT, "entry_point": "f",
                                "calls": ["[1, 2, 9], 4"]})
    manifest, instances, suite = _build(tmp_path, source, CODESENSE, questions="20")
    kinds = manifest.task_counts
    assert kinds["statement"] == {"arithmetic": 2, "branch": 2, "call": 1, "constant": 1}
    assert kinds["block"] == {"block-1": 1, "block-2": 1, "block-3": 1}
    assert kinds["loop"] == {"after": 2, "body": 6, "iterations": 1}
    assert kinds["branch"] == {"branch": 3}
    by_id = {i.id: i for i in instances}
    arithmetic = by_id["statement/programs/f/0/L3"]
    assert _asked(arithmetic).truth == ConcreteTruth(["int", 8], "8")
    assert _asked(arithmetic).values == "concrete"
    assert _asked(arithmetic).fact.kind == "arithmetic"
    assert _asked(by_id["loop/programs/f/0/L4-iterations"]).truth.reference == "3"
    assert _asked(by_id["branch/programs/f/0/L10"]).truth.reference == "no"

    results = run(RunConfig(suite=str(suite), model="reference/oracle"), tmp_path / "run")
    for task in CODESENSE:
        summary = results["task_metrics"][task]
        assert summary["all"] == {"samples": sum(kinds[task].values()), "strict": 1.0,
                                  "string_match": 1.0}
        assert set(summary["by_kind"]) == set(kinds[task])
        assert set(summary["by_values"]) == {"concrete"}


def test_the_cap_keeps_a_seeded_mix_of_kinds_and_rebuilds_the_same(tmp_path: Path) -> None:
    source = _source(tmp_path, {"id": "f", "code": EVERY_STATEMENT, "entry_point": "f",
                                "calls": ["[1, 2, 9], 4"]})
    _, first, suite = _build(tmp_path, source, ["statement", "loop"], questions="3")
    statement = [i for i in first if i.task == "statement"]
    assert len(statement) == 3 and len({_asked(i).fact.kind for i in statement}) == 3
    text = (suite / "instances.jsonl").read_bytes()
    _build(tmp_path, source, ["statement", "loop"], questions="3")
    assert (suite / "instances.jsonl").read_bytes() == text


def test_an_opaque_value_gives_no_instance(tmp_path: Path) -> None:
    code = "def f(n):\n    box = object()\n    return n\n"
    source = _source(tmp_path, {"id": "g", "code": code, "entry_point": "f", "calls": ["1"]})
    manifest, instances, _ = _build(tmp_path, source, ["statement"])
    assert instances == []
    [skip] = [s for s in manifest.skipped if s.task == "statement"]
    assert skip.reason == "no value a question could ask for (dropped: 1 call)"


RECORDED = {"status": "ok", "value": ["int", 6], "value_repr": "6", "facts": [
    {"task": "statement", "line": 2, "statement": "y = TABLE[key] * 2", "kind": "arithmetic",
     "before": {"key": ["str", "a"]}, "value": ["int", 6]},
    {"task": "branch", "line": 3, "executed": False},
    {"task": "loop", "line": 4, "question": "body", "variable": "i", "iteration": 2,
     "value": ["object", "Thing", "<Thing>"]},
]}
LOOKUP = "def lookup(key):\n    y = TABLE[key] * 2\n    if y < 0:\n        y = 0\n    return y\n"


def test_recorded_facts_make_exactly_those_instances(tmp_path: Path) -> None:
    source = _source(tmp_path, {"id": "lookup", "code": LOOKUP, "entry_point": "lookup",
                                "calls": [{"args": "'a'", "trace": RECORDED}]})
    manifest, instances, suite = _build(tmp_path, source,
                                        [*CODESENSE, "output", "input"])
    facts = {i.task: _asked(i).fact.record for i in instances if i.task in CODESENSE}
    assert facts == {"statement": RECORDED["facts"][0], "branch": RECORDED["facts"][1]}
    assert all(i.recorded for i in instances)
    skips = {s.task: s.reason for s in manifest.skipped if s.task}
    # The loop fact asks for an opaque value; the block task has no fact at all; the input
    # task cannot check an answer on code that may not run alone.
    assert skips["loop"] == "no value a question could ask for (dropped: 1 body)"
    assert skips["block"] == ("the recorded questions are branch, loop, statement questions, "
                              "none a block one")
    assert "recorded" in skips["input"]
    assert {i.task for i in instances} == {"statement", "branch", "output"}
    results = run(RunConfig(suite=str(suite), model="reference/oracle"), tmp_path / "run")
    assert all(results["metrics"][t]["all"]["pass@1"] == 1.0 for t in results["metrics"])


def _instance(tmp_path: Path, task: str, **options: str):
    source = _source(tmp_path, {"id": "f", "code": EVERY_STATEMENT, "entry_point": "f",
                                "calls": ["[1, 2, 9], 4"]})
    cap = {"questions": "20"} if task in CODESENSE else {}
    _, instances, _ = _build(tmp_path, source, [task], **cap, **options)
    return instances


@pytest.mark.parametrize(("response", "verdict", "matched"), [
    ("<ans>'11'</ans>", CORRECT, True),
    ("[ANSWER]\nlabel = '11'\n[/ANSWER]", CORRECT, False),
    ("<ans>11</ans>", INCORRECT, True),  # the int 11 is not the string '11'
    ("<ans>the string 11</ans>", UNPARSABLE, False),
    (None, UNPARSABLE, False),
])
def test_scores_are_type_aware_and_record_the_string_match(
        tmp_path: Path, response: str | None, verdict: str, matched: bool) -> None:
    [call] = [i for i in _instance(tmp_path, "statement") if _asked(i).fact.kind == "call"]
    score = get_task("statement").judging.score(call, response, None)
    assert score.verdict == verdict
    # Beside the verdict: the size of the function asked about (EVERY_STATEMENT's 11 lines) and
    # the abstract category of the value asked for, which the summary splits by.
    assert score.extra == {"kind": "call", "values": "concrete", "function_lines": 11,
                           "category": "str: Numeric String", "string_match": matched}


def test_block_and_branch_answers(tmp_path: Path) -> None:
    block = next(i for i in _instance(tmp_path, "block") if _asked(i).fact.kind == "block-2")
    task = get_task("block")
    assert task.judging.score(block, "<ans>{'total': 8, 'c': 100}</ans>", None).verdict == CORRECT
    assert task.judging.score(block, "c = 100\ntotal = 8", None).verdict == CORRECT
    assert task.judging.score(block, "{'c': 100}", None).verdict == INCORRECT
    branch = next(i for i in _instance(tmp_path, "branch") if _asked(i).fact.record["line"] == 6)
    assert get_task("branch").judging.score(branch, "<ans>Yes</ans>", None).verdict == CORRECT
    assert get_task("branch").judging.score(branch, "No", None).verdict == INCORRECT


def test_abstract_values_on_statement_loop_and_output(tmp_path: Path) -> None:
    source = _source(tmp_path, {"id": "f", "code": EVERY_STATEMENT, "entry_point": "f",
                                "calls": ["[1, 2, 9], 4"]})
    manifest, instances, suite = _build(tmp_path, source, ["statement", "loop", "output"],
                                        values="abstract", questions="20")
    output = next(i for i in instances if i.task == "output")
    assert _output(output).truth == AbstractTruth("Numeric String", "str", ["str", "11"],
                                                  "'11'")
    assert _output(output).values == "abstract"
    branch = next(_asked(i) for i in instances if i.task == "statement"
                  and _asked(i).fact.kind == "branch")
    assert isinstance(branch.truth, AbstractTruth)
    assert branch.truth.category in ("True", "False")
    assert get_task("output").judging.score(output, "<ans>numeric string</ans>", None).extra == {
        "kind": "output", "values": "abstract", "category": "str: Numeric String",
        "function_lines": 11, "string_match": True}
    oracle = run(RunConfig(suite=str(suite), model="reference/oracle"), tmp_path / "oracle")
    assert all(m["all"]["pass@1"] == 1.0 for m in oracle["metrics"].values())
    assert oracle["task_metrics"]["loop"]["by_values"]["abstract"]["strict"] == 1.0
    assert oracle["task_metrics"]["output"]["all"] == {"samples": 1, "strict": 1.0,
                                                       "string_match": 1.0}
    baseline = run(RunConfig(suite=str(suite), model="reference/random-category"),
                   tmp_path / "random")
    samples = read_samples(tmp_path / "random" / "samples.jsonl")
    assert {s.verdict for s in samples.values()} <= {CORRECT, INCORRECT}
    assert baseline["metrics"]["statement"]["all"]["pass@1"] < 1.0
    again = run(RunConfig(suite=str(suite), model="reference/random-category"),
                tmp_path / "random-again")
    assert again["metrics"] == baseline["metrics"]


def test_the_default_output_task_is_unchanged(tmp_path: Path) -> None:
    [output] = _instance(tmp_path, "output")
    assert codesense_question(output) is None
    assert output.data == {"truth": {"value": ["str", "11"], "repr": "'11'"}}
    suite = tmp_path / "suite"
    results = run(RunConfig(suite=str(suite), model="reference/oracle"), tmp_path / "run")
    # Not CodeSense's summary (no kinds, so no place in its report): the strict and
    # string-match shares that every output run states.
    assert results["task_metrics"] == {"output": {
        "all": {"samples": 1, "strict": 1.0, "string_match": 1.0},
        "by_source": {"programs": {"samples": 1, "strict": 1.0, "string_match": 1.0}}}}


def test_the_random_baseline_answers_only_abstract_instances(tmp_path: Path) -> None:
    """Refused before the run (issue #23), where it once wrote a run of errors."""
    _instance(tmp_path, "loop")
    with pytest.raises(ModelError, match="answers only abstract-value instances, and the "
                                         "loop instances of this run ask for values"):
        run(RunConfig(suite=str(tmp_path / "suite"), model="reference/random-category"),
            tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_a_published_text_value_is_scored_by_string_match_alone() -> None:
    """A published value that is no literal is kept, shown as the authors wrote it, and
    judged by CodeSense's normalised string comparison; strict says it is not comparable."""
    from execbench.tasks.codesense.facts import LoopFact
    from execbench.tasks.codesense.tasks import concrete_truth, score_concrete

    value = ["object", "unknown", "array([1, 2])"]
    fact = LoopFact({"task": "loop", "line": 2, "question": "after", "variable": "a",
                     "value": value})
    assert concrete_truth(fact, value) is None  # our own tracer's opaque values: dropped
    truth = concrete_truth(fact, value, published=True)
    assert truth == ConcreteTruth(value, "array([1, 2])", comparable=False)
    assert truth.to_record() == {"value": value, "text": "array([1, 2])", "comparable": False}
    right = score_concrete(fact, truth, "<ans> Array([1, 2]) </ans>", {})
    wrong = score_concrete(fact, truth, "<ans>[1, 2]</ans>", {})
    assert (right.verdict, right.extra) == ("correct", {"string_match": True,
                                                        "comparable": False})
    assert (wrong.verdict, wrong.extra["string_match"]) == ("incorrect", False)


def test_a_value_nobody_read_is_no_truth_even_published() -> None:
    """``<not recorded>`` and ``<an address>`` stand for a value the recorder (ours, or the
    publisher's reader) could not give: as an answer key they would mark every real answer
    wrong, so such a fact is dropped; the C recorder writes exactly these texts."""
    from execbench.tasks.codesense.tasks import concrete_truth

    for text in sorted(PLACEHOLDERS):
        value = ["object", "unknown", text]
        fact = StatementFact({"task": "statement", "line": 3, "statement": "p = f();",
                              "kind": "call", "value": value})
        assert concrete_truth(fact, value, published=True) is None
    recorder = Path(execbench.__file__).parent / "harvest" / "native" / "gdb_recorder.py"
    written = re.findall(r'^(?:NOT_RECORDED|AN_ADDRESS) = "(<[^"]+>)"$', recorder.read_text(),
                         re.M)
    assert sorted(written) == sorted(PLACEHOLDERS)
