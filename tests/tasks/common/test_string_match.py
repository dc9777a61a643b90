"""The lenient column beside the strict one on every task whose answer is a value: the
value an answer states, read as text (``stated_text``), compared with the truth's text as
CodeSense compares (``string_match``). An answer the literal parser refuses, such as a
string written without its quotes, is unparsable under strict and right under string
match; the summaries and the declared metrics carry the share."""

from __future__ import annotations

import json

import pytest

from execbench.kept import Kept
from execbench.sandbox.pool import Sandbox
from execbench.tasks import get_task
from execbench.tasks.base import CORRECT, INCORRECT, UNPARSABLE, Instance
from execbench.tasks.common.abstract_payload import Share
from execbench.tasks.common.answers import stated_text, string_match, value_string_match
from execbench.tasks.generalization_payload import (
    ChoiceQuestion,
    MutationQuestion,
    Outcome,
    PairFacts,
    Shown,
)
from execbench.tasks.prediction_payload import OutputQuestion, ValueSummary
from tests.tasks.ces.test_rules import TASK as SIMULATION
from tests.tasks.ces.test_rules import instance as simulation_instance

OUTPUT = get_task("output")
MUTATION = get_task("mutation")
CHOICE = get_task("choice")


@pytest.mark.parametrize(("answer", "stated"), [
    ("'abc'", "'abc'"),
    ("abcdefghij", "abcdefghij"),
    ("assert f(1) == abcdefghij", "abcdefghij"),
    ("assert f('a == b', [x == y]) == 'c'", "'c'"),            # == inside strings, brackets
    ("assert f(\"\\\" == \") == 5", "5"),                        # an escaped quote
    ("assert f(\'\'\'it's == \'\'\') == 'x'", "'x'"),            # three quotes, one inside
    ("I think so.\nassert f(1) == 2\nassert f(1) == [1,\n 2]", "[1,\n 2]"),  # the last assert
    ("  assert   f(x) ==   hello world  ", "hello world"),
    ("f(1) == 3", "3"),
    ("assert f(x)", "f(x)"),                                    # no value stated
    ("assertion", "assertion"),                                 # a word, not the keyword
    ("assert f(1) == it's", "it's"),                            # an unclosed quote after it
    ("assert f(it's) == x", "f(it's) == x"),                    # one before it hides it
    ("", ""),
])
def test_the_stated_value_is_read_as_text(answer: str, stated: str) -> None:
    assert stated_text(answer) == stated


def test_no_answer_states_nothing() -> None:
    assert stated_text(None) is None
    assert not value_string_match(None, "'x'")


@pytest.mark.parametrize(("answer", "truth", "matched"), [
    ("abcdefghij", "'abcdefghij'", True),         # quotes trimmed from both ends
    ('"abc"', "'abc'", True),
    ("TRUE", "True", True),                        # case folded
    ("  [1,   2];", "[1, 2]", True),               # whitespace runs, a trailing semicolon
    ("[1,2]", "[1, 2]", False),                    # text, not values: spacing counts
    ("{'b': 2, 'a': 1}", "{'a': 1, 'b': 2}", False),
    ("1.50", "1.5", False),
    ("'abd'", "'abc'", False),
])
def test_the_normalisation_is_codesenses(answer: str, truth: str, matched: bool) -> None:
    assert string_match(answer, truth) is matched
    assert value_string_match(f"assert f(1) == {answer}", truth) is matched


def _output(value: list, repr_text: str) -> Instance:
    return Instance(id="output/hand/f/0", task="output", source="hand", program_id="hand/f",
                    call_index=0, code="def f(x):\n    return x\n", entry_point="f", args="1",
                    data=OutputQuestion(value, repr_text).to_record())


@pytest.mark.parametrize(("response", "verdict", "matched"), [
    ("[ANSWER]\nassert f(1) == abcdefghij\n[/ANSWER]", UNPARSABLE, True),
    ("[ANSWER]\nabcdefghij\n[/ANSWER]", UNPARSABLE, True),
    ("[ANSWER]\nassert f(1) == 'abcdefghij'\n[/ANSWER]", CORRECT, True),
    ("[ANSWER]\nassert f(1) == \"abcdefghij\"\n[/ANSWER]", CORRECT, True),
    ("[ANSWER]\nassert f(1) == ABCDEFGHIJ\n[/ANSWER]", UNPARSABLE, True),
    ("[ANSWER]\nassert f(1) == 'abc'\n[/ANSWER]", INCORRECT, False),
    ("[ANSWER]\nassert f(1) == abc def\n[/ANSWER]", UNPARSABLE, False),
    (None, UNPARSABLE, False),
])
def test_an_unquoted_string_is_unparsable_strict_and_right_by_string_match(
        response: str | None, verdict: str, matched: bool) -> None:
    score = OUTPUT.judging.score(_output(["str", "abcdefghij"], "'abcdefghij'"), response,
                                 None)
    assert (score.verdict, score.extra["string_match"]) == (verdict, matched)


def test_a_strict_answer_written_otherwise_is_not_a_string_match() -> None:
    """The string comparison is the published one, not strict-or-text: an answer right by
    value but spaced otherwise than the truth's repr is strict-right only."""
    score = OUTPUT.judging.score(_output(["list", [["int", 1], ["int", 2]]], "[1, 2]"),
                                 "[ANSWER]\nassert f(1) == [1,2]\n[/ANSWER]", None)
    assert (score.verdict, score.extra["string_match"]) == (CORRECT, False)


def _sample(instance: str, verdict: str, matched: bool | None, source: str = "a") -> Kept:
    return Kept(instance_id=instance, task="output", source=source, sample=0, verdict=verdict,
                correct=verdict == CORRECT,
                extra=None if matched is None else {"string_match": matched})


def test_the_output_summary_has_both_shares_over_all_and_per_source() -> None:
    samples = [_sample("x", CORRECT, True), _sample("y", UNPARSABLE, True),
               _sample("z", INCORRECT, False, "b"), _sample("w", "error", None, "b")]
    plain = {s.instance_id: _output(["int", 1], "1") for s in samples}
    summary = OUTPUT.reporting.summarize(samples, plain)
    assert summary == ValueSummary(Share(4, 0.25, 0.5),
                                   {"a": Share(2, 0.5, 1.0), "b": Share(2, 0.0, 0.0)})
    record = json.loads(json.dumps(summary.to_record()))
    assert record["all"] == {"samples": 4, "strict": 0.25, "string_match": 0.5}
    assert ValueSummary.from_record(record) == summary
    metric = next(m for m in OUTPUT.reporting.metrics() if m.name == "string match")
    assert metric.headline and metric.at.keys == ("task_metrics", "output", "all",
                                                  "string_match")
    assert metric.at.in_source("b") is not None


@pytest.mark.parametrize("record", [None, [], {}, {"all": 3, "by_source": {"a": "x"}}])
def test_an_older_or_malformed_output_summary_reads_as_none(record: object) -> None:
    read = ValueSummary.from_record(record)  # type: ignore[arg-type]
    assert read.overall == Share() and all(s == Share() for s in read.by_source.values())


def _facts(variant: str) -> PairFacts:
    return PairFacts(variant, False, 3)


ABC, ABD = Outcome(["str", "abc"], "'abc'"), Outcome(["str", "abd"], "'abd'")


def _paired(task: str, data: dict) -> Instance:
    return Instance(id=f"{task}/hand/f/0", task=task, source="hand", program_id="hand/f",
                    call_index=0, code="def f(x):\n    return x\n", entry_point="f", args="1",
                    data=data)


def test_mutation_records_the_string_match_of_the_asked_program() -> None:
    made = _paired("mutation", MutationQuestion(_facts("original"), ABC, ABD).to_record())
    unquoted = MUTATION.judging.score(made, "[ANSWER]\nassert f(1) == abc\n[/ANSWER]", None)
    assert (unquoted.verdict, unquoted.extra["string_match"]) == (UNPARSABLE, True)
    reverted = MUTATION.judging.score(made, "[ANSWER]\nassert f(1) == 'abd'\n[/ANSWER]", None)
    assert (reverted.extra["reverted"], reverted.extra["string_match"]) == (True, False)


def test_choice_records_the_string_match_of_the_chosen_program() -> None:
    made = _paired("choice", ChoiceQuestion(_facts("OM"), Shown("a", ABC),
                                            Shown("b", ABD)).to_record())

    def scored(label: str, value: str) -> tuple[str, bool]:
        answer = json.dumps({"chosen_program": label, "assertion": f"assert f(1) == {value}"})
        score = CHOICE.judging.score(made, f"[ANSWER]\n{answer}\n[/ANSWER]", None)
        return score.verdict, bool(score.extra["string_match"])

    assert scored("A", "abc") == (UNPARSABLE, True)
    assert scored("B", "abd") == (UNPARSABLE, True)
    assert scored("B", "abc") == (UNPARSABLE, False)
    no_choice = CHOICE.judging.score(made, "[ANSWER]\nabc\n[/ANSWER]", None)
    assert (no_choice.verdict, no_choice.extra["string_match"]) == (UNPARSABLE, False)


def test_simulation_records_the_string_match_of_its_output_line(sandbox: Sandbox) -> None:
    made = simulation_instance(sandbox, "def f(s):\n    return s.upper()\n", "f", "'ab'")

    def scored(output: str) -> tuple[str, bool, bool | None]:
        score = SIMULATION.score(made, f"[ANSWER]\n[output] = {output}\n[/ANSWER]", sandbox)
        return (score.verdict, bool(score.extra["output_string_match"]),
                score.extra.get("output_right"))

    assert scored("AB") == (UNPARSABLE, True, None)
    assert scored("'AB'") == (CORRECT, True, True)
    assert scored("'ABC'") == (INCORRECT, False, False)
    empty = SIMULATION.score(made, "[ANSWER]\nnothing\n[/ANSWER]", sandbox)
    assert empty.verdict == UNPARSABLE and not empty.extra["output_string_match"]
    declared = {m.name: m.at.keys for m in SIMULATION.metrics()}
    assert declared["output string match"] == ("task_metrics", "simulation", "all",
                                               "output_string_match")
    assert declared["output right"] == ("task_metrics", "simulation", "all", "output_right")
