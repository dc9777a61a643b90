"""The mutation and choice tasks: the reference models' documented scores, reversion only
over non-boolean problems, parsing of choice answers, lines-of-code bins, and the
generalization report with its plot.

One suite (mutation and choice on the first 60 CRUXEval programs) is built for the module
and answered once by ``reference/oracle`` and once by ``reference/original``.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from execbench.analysis.shape import LOC_BINS, analyse, bin_order, loc_bin
from execbench.kept import Kept
from execbench.runner import RunConfig, read_samples, run
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks import get_task
from execbench.tasks.asking import ask
from execbench.tasks.base import Instance
from execbench.tasks.generalization_payload import (
    ChoiceMetrics,
    ChoiceQuestion,
    ChoiceSummary,
    MutationMetrics,
    MutationQuestion,
    MutationSummary,
    Outcome,
    PairFacts,
    Rates,
    Shown,
)
from execbench.tasks.protocol import Protocol
from tests.helpers.cli import execbench
from tests.helpers.data import shared_data

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

MUTATION = get_task("mutation")
CHOICE = get_task("choice")


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("generalization") / "suite"
    build_suite([str(shared_data("cruxeval.jsonl"))], folder,
                BuildOptions(tasks=["mutation", "choice"], limit=60, workers=2))
    _, instances, _ = load_suite(folder)
    return {"folder": folder, "instances": instances}


@pytest.fixture(scope="module")
def runs(suite: dict[str, Any]) -> dict[str, Path]:
    folders = {}
    for model in ("reference/oracle", "reference/original"):
        out = suite["folder"].parent / model.split("/")[1]
        run(RunConfig(suite=str(suite["folder"]), model=model), out)
        folders[model] = out
    return folders


def task_metrics(folder: Path, task: str) -> dict[str, Any]:
    return json.loads((folder / "results.json").read_text())["task_metrics"][task]


def by_variant(instances: list[dict[str, Any]], task: str) -> dict[str, dict[str, Any]]:
    """Per program, its instances of ``task`` keyed by variant."""
    grouped: dict[str, dict[str, Any]] = {}
    for instance in instances:
        if instance.task == task:
            grouped.setdefault(instance.program_id, {})[facts(instance).variant] = instance
    return grouped


def facts(instance: Instance) -> PairFacts:
    return PairFacts.from_record(instance.data)


def asked(instance: Instance) -> ChoiceQuestion:
    return ChoiceQuestion.from_record(instance.data)


def test_each_instance_reads_back_to_its_own_record(suite: dict[str, Any]) -> None:
    """The typed questions hold every task field the build wrote (the common ``code``
    and ``mutation`` fields are the instance's own)."""
    for instance in suite["instances"]:
        kind = MutationQuestion if instance.task == "mutation" else ChoiceQuestion
        assert kind.from_record(instance.data).to_record() == instance.data


def test_the_suite_pairs_every_problem(suite: dict[str, Any]) -> None:
    mutation = by_variant(suite["instances"], "mutation")
    choice = by_variant(suite["instances"], "choice")
    assert 20 <= len(mutation) <= 45
    assert set(mutation) == set(choice)
    assert all(set(pair) == {"original", "mutant"} for pair in mutation.values())
    assert any(facts(pair["original"]).boolean for pair in mutation.values())
    assert not all(facts(pair["original"]).boolean for pair in mutation.values())


def test_choice_asks_each_problem_twice_with_a_and_b_swapped(suite: dict[str, Any]) -> None:
    mutation = by_variant(suite["instances"], "mutation")
    for program_id, pair in by_variant(suite["instances"], "choice").items():
        assert set(pair) == {"OM", "MO"}
        first, second = asked(pair["OM"]), asked(pair["MO"])
        assert (first.original_label, second.original_label) == ("A", "B")
        assert (first.a, first.b) == (second.b, second.a)
        original, mutant = mutation[program_id]["original"], mutation[program_id]["mutant"]
        assert first.a.code == original.code
        assert first.b.code == mutant.code
        assert first.a.outcome == MutationQuestion.from_record(original.data).truth
        assert first.b.outcome == MutationQuestion.from_record(mutant.data).truth
        first, second = pair["OM"], pair["MO"]
        assert first.args == second.args == original.args
        prompt = ask(CHOICE, first, Protocol(shots=0))[0]["content"]
        assert "mutant" not in prompt.lower() and "original" not in prompt.lower()


def test_the_summaries_read_back_to_the_records_the_runs_wrote(runs: dict[str, Path]) -> None:
    """results.json's summaries are the typed ones' records (the file sorts the keys)."""
    for folder in runs.values():
        for task, kind in (("mutation", MutationSummary), ("choice", ChoiceSummary)):
            record = task_metrics(folder, task)
            summary = kind.from_record(record)
            assert summary.to_record() == record
            assert kind.from_record(summary.to_record()) == summary


def test_oracle_scores(runs: dict[str, Path]) -> None:
    mutation = task_metrics(runs["reference/oracle"], "mutation")["all"]
    assert {k: mutation[k] for k in ("OC", "MC", "OR", "MR")} == {
        "OC": 1.0, "MC": 1.0, "OR": 0.0, "MR": 0.0}
    choice = task_metrics(runs["reference/oracle"], "choice")["all"]
    # The oracle always answers A, and A is the original in one order of two.
    assert {k: choice[k] for k in ("Pref", "OC", "MC", "OR", "MR")} == {
        "Pref": 0.5, "OC": 1.0, "MC": 1.0, "OR": 0.0, "MR": 0.0}
    assert choice["O_answers"] == choice["M_answers"] == choice["answers"] / 2
    assert choice["unparsable"] == 0


def test_original_model_scores(runs: dict[str, Path], suite: dict[str, Any]) -> None:
    mutation = task_metrics(runs["reference/original"], "mutation")["all"]
    problems = len(by_variant(suite["instances"], "mutation"))
    # The original's output, as its repr: the string comparison accepts it where the
    # strict one does (the original's half of the samples).
    assert mutation == {"OC": 1.0, "MC": 0.0, "OR": 0.0, "MR": 1.0,
                        "O_problems": problems, "M_problems": problems, "string_match": 0.5}
    choice = task_metrics(runs["reference/original"], "choice")["all"]
    assert choice == {"Pref": 1.0, "OC": 1.0, "OR": 0.0, "MC": None, "MR": None,
                      "O_answers": 2 * problems, "M_answers": 0, "answers": 2 * problems,
                      "unparsable": 0, "errors": 0, "string_match": 1.0}


def test_reversion_leaves_out_boolean_problems(runs: dict[str, Path],
                                               suite: dict[str, Any]) -> None:
    mutation = by_variant(suite["instances"], "mutation")
    boolean = next(pid for pid, pair in mutation.items() if facts(pair["mutant"]).boolean)
    other = next(pid for pid, pair in mutation.items() if not facts(pair["mutant"]).boolean)
    recalled = read_samples(runs["reference/original"] / "samples.jsonl")
    oracle = read_samples(runs["reference/oracle"] / "samples.jsonl")

    def sample(samples: dict, program_id: str, variant: str) -> Kept:
        return Kept.from_record(samples[(mutation[program_id][variant].id, 0)].to_record())

    # Recalling the original on a boolean problem's mutant is wrong, and is a reversion...
    wrong = sample(recalled, boolean, "mutant")
    assert (wrong.correct, wrong.added("reverted")) == (False, True)
    by_id = {inst.id: inst for inst in suite["instances"]}
    alone = MUTATION.reporting.summarize([wrong, sample(recalled, boolean, "original")],
                                         by_id).all
    assert alone == MutationMetrics(Rates(1.0, None), Rates(0.0, None), 1, 1, 0.5)
    # ...that counts for MC but not for MR next to a non-boolean problem solved right.
    mixed = MUTATION.reporting.summarize([wrong, sample(oracle, other, "mutant")], by_id).all
    assert (mixed.mutant, mixed.mutant_problems) == (Rates(0.5, 0.0), 2)


def test_choice_reversion_leaves_out_boolean_problems(suite: dict[str, Any]) -> None:
    choice = by_variant(suite["instances"], "choice")
    instance = next(pair["OM"] for pair in choice.values() if facts(pair["OM"]).boolean)
    call = f"{instance.entry_point}({instance.args})"
    # Chooses the mutant (B) but states the original's output.
    text = json.dumps({"chosen_program": "B",
                       "assertion": f"assert {call} == {asked(instance).a.outcome.repr}"})
    score = CHOICE.judging.score(instance, f"[ANSWER]{text}[/ANSWER]", None)
    assert (score.verdict, score.extra["chose"], score.extra["reverted"]) == (
        "incorrect", "mutant", True)
    sample = Kept(instance_id=instance.id, task="choice", source="cruxeval", sample=0,
                  verdict=score.verdict, correct=False, extra=score.extra)
    metrics = CHOICE.reporting.summarize([sample], {instance.id: instance}).all
    assert (metrics.preference, metrics.mutant) == (0.0, Rates(0.0, None))


@pytest.fixture(scope="module")
def choice_instance(suite: dict[str, Any]) -> dict[str, Any]:
    """The original-first choice instance of a problem with a non-boolean output."""
    return next(pair["OM"] for pair in by_variant(suite["instances"], "choice").values()
                if not facts(pair["OM"]).boolean)


def answer(instance: dict[str, Any], label: str, value_of: str) -> dict[str, str]:
    call = f"{instance.entry_point}({instance.args})"
    return {"chosen_program": label,
            "assertion": f"assert {call} == {asked(instance).shown(value_of).outcome.repr}"}


def test_choice_answer_as_json_in_tags(choice_instance: dict[str, Any]) -> None:
    text = json.dumps(answer(choice_instance, "B", "B"))
    score = CHOICE.judging.score(choice_instance, f"Thinking...\n[ANSWER]\n{text}\n[/ANSWER]", None)
    assert score.verdict == "correct"
    assert (score.extra["chose"], score.extra["reverted"]) == ("mutant", False)
    assert score.answer.startswith("B: ")


def test_choice_answer_as_json_inside_prose(choice_instance: dict[str, Any]) -> None:
    text = json.dumps(answer(choice_instance, "A", "B"))
    response = f"[ANSWER]I am surer of A, so my answer is {text} as asked.[/ANSWER]"
    score = CHOICE.judging.score(choice_instance, response, None)
    assert score.verdict == "incorrect"
    assert (score.extra["chose"], score.extra["reverted"]) == ("original", True)


@pytest.mark.parametrize("body", [
    {"chosen_program": "C", "assertion": "assert f(1) == 1"},
    {"chosen_program": "A"},
    {"chosen_program": "A", "assertion": 3},
    ["A", "assert f(1) == 1"],
])
def test_choice_answer_without_a_valid_label_or_assertion_is_unparsable(
        choice_instance: dict[str, Any], body: object) -> None:
    score = CHOICE.judging.score(choice_instance, f"[ANSWER]{json.dumps(body)}[/ANSWER]", None)
    assert score.verdict == "unparsable"
    assert "chose" not in score.extra


def test_choice_answer_with_a_non_literal_assertion_is_unparsable(
        choice_instance: dict[str, Any]) -> None:
    body = {"chosen_program": "A", "assertion": "assert f(1) == g(2)"}
    score = CHOICE.judging.score(choice_instance, f"[ANSWER]{json.dumps(body)}[/ANSWER]", None)
    assert score.verdict == "unparsable"
    assert score.extra["chose"] == "original"
    assert CHOICE.judging.score(choice_instance, None, None).verdict == "unparsable"
    assert CHOICE.judging.score(choice_instance, "[ANSWER]A[/ANSWER]", None).verdict == "unparsable"


def test_lines_of_code_bins() -> None:
    assert LOC_BINS == ((4, 7), (8, 11), (12, 15), (16, 19), (20, 24))
    assert [loc_bin(n) for n in (1, 3, 4, 7, 8, 11, 12, 15, 16, 19, 20, 24, 25, 90)] == [
        "<4", "<4", "4-7", "4-7", "8-11", "8-11", "12-15", "12-15", "16-19", "16-19",
        "20-24", "20-24", ">24", ">24"]
    names = ["<4", "4-7", "8-11", "12-15", "16-19", "20-24", ">24"]
    assert sorted(reversed(names), key=bin_order) == names
    assert sorted(names) != names  # why the order needs a key


def test_metrics_by_bin_follow_each_problems_lines_of_code(runs: dict[str, Path],
                                                          suite: dict[str, Any]) -> None:
    mutation = by_variant(suite["instances"], "mutation")
    expected: dict[str, int] = {}
    for pair in mutation.values():
        loc = facts(pair["original"]).loc
        assert loc == analyse(pair["original"].code).loc == facts(pair["mutant"]).loc
        expected[loc_bin(loc)] = expected.get(loc_bin(loc), 0) + 1
    by_loc = task_metrics(runs["reference/original"], "mutation")["by_loc"]
    assert {name: group["O_problems"] for name, group in by_loc.items()} == expected
    assert all(group["MR"] == 1.0 for group in by_loc.values())


def test_report_prints_the_table_and_writes_the_plot(runs: dict[str, Path],
                                                     tmp_path: Path) -> None:
    plot = tmp_path / "plots" / "generalization.png"
    done = execbench("report", runs["reference/oracle"], runs["reference/original"],
                     "--layout", "generalization", "--plot", plot, "--format", "csv")
    assert done.exit_code == 0, done.stderr
    assert plot.read_bytes().startswith(PNG_SIGNATURE)
    assert "plot written to" in done.stderr
    rows = list(csv.reader(io.StringIO(done.stdout)))
    assert rows[0] == ["table", "run", "source", "prediction OC", "prediction MC",
                       "prediction OR", "prediction MR", "choice Pref", "choice OC", "choice MC",
                       "choice OR", "choice MR", "LOC", "OC", "MC", "OR", "MR", "problems"]
    first = "Execution prediction and execution choice (%)"
    assert [first, "reference/oracle", "cruxeval", "100.0", "100.0", "0.0", "0.0", "50.0",
            "100.0", "100.0", "0.0", "0.0", *[""] * 6] in rows
    assert [first, "reference/original", "cruxeval", "100.0", "0.0", "0.0", "100.0", "100.0",
            "100.0", "", "0.0", "", *[""] * 6] in rows
    bins = [row[12] for row in rows[1:] if row[0] != first and row[1] == "reference/oracle"]
    assert bins == sorted(bins, key=bin_order)
    assert len(bins) >= 2


def test_a_failed_request_counts_as_a_failure_not_a_missing_problem(
        suite: dict[str, Any]) -> None:
    pair = next(iter(by_variant(suite["instances"], "mutation").values()))
    by_id = {inst.id: inst for inst in suite["instances"]}
    failed = Kept(instance_id=pair["mutant"].id, task="mutation", source="cruxeval", sample=0,
                  verdict="error", correct=False, extra=None)
    right = Kept(instance_id=pair["mutant"].id, task="mutation", source="cruxeval", sample=1,
                 verdict="correct", correct=True,
                 extra={"variant": "mutant", "reverted": False})
    metrics = MUTATION.reporting.summarize([failed, right], by_id).all
    assert (metrics.mutant_problems, metrics.mutant.correct) == (1, 0.5)


def test_the_build_poses_each_question_with_its_mutation_and_code(suite: dict[str, Any]) -> None:
    """``build`` gives typed questions that carry the common fields it sets: every
    instance states the mutation, and the mutant's shows the mutant's code."""
    mutation = by_variant(suite["instances"], "mutation")
    choice = by_variant(suite["instances"], "choice")
    for program_id, pair in mutation.items():
        original, mutant = pair["original"], pair["mutant"]
        assert original.mutation is not None
        assert set(original.mutation) == {"operator", "line", "column", "before", "after"}
        assert mutant.mutation == original.mutation == choice[program_id]["OM"].mutation
        assert mutant.code != original.code
        assert mutant.code == asked(choice[program_id]["OM"]).b.code


# --- the typed summaries and payloads ------------------------------------------------------

MUTATION_SUMMARY = MutationSummary(
    MutationMetrics(Rates(0.75, 0.125), Rates(0.5, None), 4, 4),
    {"cruxeval": MutationMetrics(Rates(0.75, 0.125), Rates(0.5, None), 4, 4)},
    {"<4": MutationMetrics(Rates(1.0, 0.0), Rates(0.0, None), 1, 1),
     "4-7": MutationMetrics(Rates(2 / 3, 1 / 6), Rates(2 / 3, None), 3, 3)})
CHOICE_SUMMARY = ChoiceSummary(
    ChoiceMetrics(0.5, 8, 1, 1, Rates(1.0, 0.0), Rates(None, None), 3, 0),
    {"cruxeval": ChoiceMetrics(0.5, 8, 1, 1, Rates(1.0, 0.0), Rates(None, None), 3, 0)},
    {})


def test_a_summary_record_has_the_keys_the_results_always_had() -> None:
    """``to_record`` writes what the summaries wrote as dicts, in the same order, so that
    results.json keeps its bytes."""
    record = MUTATION_SUMMARY.to_record()
    assert list(record) == ["all", "by_source", "by_loc"]
    assert record["all"] == {"OC": 0.75, "OR": 0.125, "O_problems": 4, "MC": 0.5, "MR": None,
                             "M_problems": 4}
    assert list(record["all"]) == ["OC", "OR", "O_problems", "MC", "MR", "M_problems"]
    assert list(record["by_loc"]) == ["<4", "4-7"]
    choice = CHOICE_SUMMARY.to_record()["all"]
    assert list(choice) == ["Pref", "answers", "errors", "unparsable", "OC", "OR",
                            "O_answers", "MC", "MR", "M_answers"]
    assert choice["Pref"] == 0.5 and choice["MC"] is None and choice["M_answers"] == 0


@pytest.mark.parametrize("summary", [MUTATION_SUMMARY, CHOICE_SUMMARY])
def test_a_summary_reads_back_from_its_record(summary: MutationSummary | ChoiceSummary) -> None:
    record = json.loads(json.dumps(summary.to_record()))
    assert type(summary).from_record(record) == summary


def test_an_old_or_partial_summary_record_reads_with_nothing_for_what_it_lacks() -> None:
    assert MutationSummary.from_record({}) == MutationSummary(
        MutationMetrics(Rates(None, None), Rates(None, None), 0, 0), {}, {})
    # A record from before a key was written, and one with a group missing its numbers.
    old = MutationSummary.from_record({"all": {"OC": 1.0, "MC": 0.5},
                                       "by_source": {"cruxeval": {"OC": 1, "OR": None}},
                                       "by_loc": {"<4": None}})
    assert old.all == MutationMetrics(Rates(1.0, None), Rates(0.5, None), 0, 0)
    assert old.by_source["cruxeval"].original == Rates(1, None)
    assert old.by_loc == {"<4": MutationMetrics(Rates(None, None), Rates(None, None), 0, 0)}
    choice = ChoiceSummary.from_record({"by_source": {"x": {"Pref": 0.25, "answers": 4}}})
    assert choice.all == ChoiceMetrics(None, 0, 0, 0, Rates(None, None), Rates(None, None), 0, 0)
    assert (choice.by_source["x"].preference, choice.by_source["x"].answers) == (0.25, 4)
    assert choice.by_loc == {}


def test_a_question_is_posed_with_its_common_fields_and_reads_back_without_them() -> None:
    facts = PairFacts("mutant", False, 5)
    posed = MutationQuestion(facts, Outcome(["int", 2], "2"), Outcome(["int", 1], "1"),
                             {"operator": "arithmetic", "line": 2}, "def f(x):\n    return x\n")
    record = posed.to_record()
    assert list(record) == ["variant", "boolean", "loc", "truth", "mutation", "code"]
    # the mutation and the code are the instance's, not its data's: a question reads back
    # without them
    assert MutationQuestion.from_record(record) == replace(posed, mutation=None, code=None)
    choice = ChoiceQuestion(PairFacts("MO", True, 5), Shown("b", Outcome(["bool", True], "True")),
                            Shown("a", Outcome(["bool", False], "False")), {"operator": "x"})
    assert list(choice.to_record()) == ["variant", "boolean", "loc", "original_label",
                                        "programs", "mutation"]
    assert ChoiceQuestion.from_record(choice.to_record()) == replace(choice, mutation=None)
