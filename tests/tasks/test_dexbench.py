"""DexBench: call selection, Algorithm 1 targets, scoring of both tasks, and the dual score.

The CRUXEval and HumanEval suites are built once for the module and shared: from the whole
benchmarks under ``--run-slow`` (about 30 s together), else from a seeded sample of each
(``SAMPLE``, with the programs tests name kept; ``tests/helpers/corpus.py``). The reference
models run on the CRUXEval suite (scoring the whole of it takes about a second). Hand-written
instances are built by the task itself from a real sandbox trace.
coverage.py, run in one helper process, is the independent reference for ground truth.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from execbench.analysis.shape import analyse
from execbench.kept import Kept
from execbench.metrics import paired_summary
from execbench.program import Call, Program
from execbench.runner import RunConfig, run
from execbench.sandbox.pool import Job, Sandbox
from execbench.sources import load_source
from execbench.suite import BuildOptions, SuiteError, build_suite, load_suite
from execbench.tasks import get_task
from execbench.tasks.asking import ask
from execbench.tasks.base import BuildContext, Instance
from execbench.tasks.dexbench import choose_target, read_arguments
from execbench.tasks.dexbench_payload import (
    Complexity,
    CounterfactualQuestion,
    CoverageQuestion,
    Target,
)
from execbench.tasks.protocol import Protocol
from tests.conftest import QUICK
from tests.coverage_runner import measure
from tests.helpers.corpus import Corpus
from tests.helpers.data import shared_data

COVERAGE = get_task("coverage")
COUNTERFACTUAL = get_task("counterfactual")


def coverage_of(instance: Instance) -> CoverageQuestion:
    return CoverageQuestion.from_record(instance.data)


def counterfactual_of(instance: Instance) -> CounterfactualQuestion:
    return CounterfactualQuestion.from_record(instance.data)


def line_of(target: Target | None) -> int:
    assert target is not None
    return target.line


SAMPLE_492 = """\
def f(text, value):
    ls = list(text)
    if (ls.count(value)) % 2 == 0:
        while value in ls:
            ls.remove(value)
    else:
        ls.clear()
    return ''.join(ls)"""

# The `for` body runs 10 // x, which raises for x == 0.
DIVIDES = """\
def f(xs):
    total = 0
    for x in xs:
        total += 10 // x
    return total
"""

# f(4, 0) never leaves the loop; f(5, 2) ends with n == -1 and reaches line 5.
STEPS = """\
def f(n, step):
    while n > 0:
        n -= step
    if n < 0:
        return -1
    return n
"""

# Under f(0) both `if` bodies are unexecuted: three lines at line 2, one at line 6.
TWO_IFS = """\
def f(x):
    if x > 10:
        a = 1
        b = 2
        return a + b
    if x < -10:
        return -1
    return 0
"""

# Where shape and coverage.py disagree on a selected program's statements (not its
# executed lines): program id -> (lines only the shape analysis counts, why).
STATEMENT_DIFFERENCES = {
    "humaneval/HumanEval/150": (
        {16}, "line 16 is a `break` right after `return y`: CPython compiles no code for "
              "unreachable statements, so coverage.py has no statement there, while the shape "
              "analysis counts every statement in the source"),
}

SAMPLE = {"cruxeval": (150, {"sample_492"}),
          "humaneval": (30, {"HumanEval/25"} | {p.split("/", 1)[1] for p in STATEMENT_DIFFERENCES})}
"""Programs of each benchmark a default run builds, and those kept by name because tests
check them (all of them under ``--run-slow``)."""


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory, corpus: Corpus) -> dict[str, str]:
    """What the module's suites are built from and ``programs`` loads."""
    folder = tmp_path_factory.mktemp("sources")
    specs = {"cruxeval": str(shared_data("cruxeval.jsonl")), "humaneval": "humaneval"}
    return {name: corpus.source(spec, SAMPLE[name][0], folder, keep=SAMPLE[name][1])
            for name, spec in specs.items()}


@pytest.fixture(scope="module")
def cruxeval(tmp_path_factory: pytest.TempPathFactory,
             sources: dict[str, str]) -> tuple[Path, dict, list[dict]]:
    out = tmp_path_factory.mktemp("cruxeval")
    build_suite([sources["cruxeval"]], out, BuildOptions(tasks=["coverage", "counterfactual"]))
    manifest, instances, _ = load_suite(out)
    return out, manifest, instances


@pytest.fixture(scope="module")
def humaneval(tmp_path_factory: pytest.TempPathFactory,
              sources: dict[str, str]) -> tuple[dict, list[dict]]:
    out = tmp_path_factory.mktemp("humaneval")
    build_suite([sources["humaneval"]], out, BuildOptions(tasks=["coverage", "counterfactual"]))
    manifest, instances, _ = load_suite(out)
    return manifest, instances


@pytest.fixture(scope="module")
def programs(sources: dict[str, str]) -> dict[str, list[Program]]:
    return {name: load_source(spec).programs for name, spec in sources.items()}


@pytest.fixture(scope="module")
def measured(programs: dict[str, list[Program]],
             tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], dict]:
    """coverage.py's reading of every call of both sources, by (program id, call index)."""
    keys, calls = [], []
    for source in programs.values():
        for program in source:
            for index, call in enumerate(program.calls):
                keys.append((program.id, index))
                calls.append((program.code, program.entry_point, call.args))
    return dict(zip(keys, measure(calls, tmp_path_factory.mktemp("coverage")), strict=True))


SANDBOX_LIMITS = QUICK


def make_instance(task: Any, sandbox: Sandbox, code: str, args: str,
                  **options: str) -> Instance:
    """An instance of ``task`` for ``f(args)``, built by the task from a real trace."""
    program = Program(id="hand/f", source="hand", code=code, entry_point="f",
                      calls=(Call(args),))
    trace = sandbox.run(Job(code, "f", args))
    assert trace.status == "ok"
    ctx = BuildContext(seed=0, options=options, sandbox=sandbox, traced=[(0, trace)])
    assert task.building.choose_calls(program, [(0, trace)], ctx) == [0]
    [fields] = task.building.build(program, 0, trace, ctx)
    return Instance.build(task.name, program, 0, fields)


def by_task(instances: list[dict], task: str) -> dict[str, dict]:
    return {i.program_id: i for i in instances if i.task == task}


def answer(text: str) -> str:
    return f"<REASONING>...</REASONING>\n[ANSWER]\n{text}\n[/ANSWER]"


# --- selection ------------------------------------------------------------------------------

def test_cruxeval_selects_298_programs(cruxeval: tuple[Path, dict, list[dict]],
                                       corpus: Corpus) -> None:
    """298 of the 800 (one call each) under ``--run-slow``; on the default sample, one call
    of each selected program, each with control flow and a statement left unexecuted."""
    _, manifest, instances = cruxeval
    coverage = [i for i in instances if i.task == "coverage"]
    selected = len({i.program_id for i in coverage})
    assert manifest.counts.by_task["coverage"] == len(coverage) == selected
    assert (selected == 298) if corpus.full else (selected > manifest.counts.programs / 4)
    for instance in coverage:
        shape = analyse(instance.code)
        assert shape.has_control_flow
        assert shape.function_lines - set(coverage_of(instance).lines), instance.id


@pytest.mark.parametrize("source", ["cruxeval", "humaneval"])
def test_selection_is_what_coverage_py_implies(
        source: str, cruxeval: tuple[Path, dict, list[dict]],
        humaneval: tuple[dict, list[dict]], programs: dict[str, list[Program]],
        measured: dict[tuple[str, int], dict]) -> None:
    """A program is selected exactly when it has an if/for/while and some call of it
    returns normally with a function statement unexecuted (read with coverage.py), and the
    chosen call is one of those."""
    instances = cruxeval[2] if source == "cruxeval" else humaneval[1]
    selected = by_task(instances, "coverage")
    expected = set()
    for program in programs[source]:
        shape = analyse(program.code)
        qualifying = {index for index in range(len(program.calls))
                      if measured[(program.id, index)]["raised"] is None
                      and shape.function_lines - set(measured[(program.id, index)]["executed"])}
        if shape.has_control_flow and qualifying:
            expected.add(program.id)
            if program.id in selected:
                assert selected[program.id].call_index in qualifying
    assert set(selected) == expected


def test_humaneval_selects_at_most_one_call_per_program(
        humaneval: tuple[dict, list[dict]]) -> None:
    _, instances = humaneval
    for task in ("coverage", "counterfactual"):
        per_program = Counter(i.program_id for i in instances if i.task == task)
        assert per_program and max(per_program.values()) == 1
    for instance in by_task(instances, "coverage").values():
        shape = analyse(instance.code)
        assert shape.function_lines - set(coverage_of(instance).lines), instance.id


@pytest.mark.parametrize("source", ["cruxeval", "humaneval"])
def test_counterfactual_instances_pair_with_coverage(
        source: str, cruxeval: tuple[Path, dict, list[dict]],
        humaneval: tuple[dict, list[dict]]) -> None:
    manifest, instances = cruxeval[1:] if source == "cruxeval" else humaneval
    coverage, counterfactual = by_task(instances, "coverage"), by_task(instances, "counterfactual")
    assert counterfactual
    for program_id, instance in counterfactual.items():
        partner = coverage[program_id]
        assert [getattr(partner, k) for k in ("call_index", "args", "code", "entry_point")] == \
            [getattr(instance, k) for k in ("call_index", "args", "code", "entry_point")]
        assert partner.id.split("/", 1)[1] == instance.id.split("/", 1)[1]
        assert counterfactual_of(instance).original_lines == coverage_of(partner).lines
    # Every coverage instance without a partner is one the manifest says was skipped.
    skipped = {s.where for s in manifest.skipped
               if s.task == "counterfactual" and s.kind == "instance"}
    unpaired = {f"{i.program_id}#{i.call_index}" for p, i in coverage.items()
                if p not in counterfactual}
    assert unpaired == skipped


# --- CRUXEval sample_492 ----------------------------------------------------------------------

def test_sample_492_truth_and_target(sandbox: Sandbox) -> None:
    shape = analyse(SAMPLE_492)
    trace = sandbox.run(Job(SAMPLE_492, "f", "'abbkebanuuwrzvr', 'm'"))
    covered = shape.normalise(trace.lines)
    assert sorted(covered) == [1, 2, 3, 4, 8]  # no 'm': even count, the loop never enters
    target = choose_target(shape, covered, "max", random.Random(0))
    assert target == Target(4, "while", (5,), 4)


def test_sample_492_in_the_built_suite(cruxeval: tuple[Path, dict, list[dict]]) -> None:
    _, _, instances = cruxeval
    coverage = by_task(instances, "coverage")["cruxeval/sample_492"]
    assert coverage.code == SAMPLE_492
    assert coverage_of(coverage).lines == (1, 2, 3, 4, 8)
    assert coverage_of(coverage).shape == Complexity(8, 3, "LC")
    counterfactual = by_task(instances, "counterfactual").get("cruxeval/sample_492")
    if counterfactual is not None:
        target = counterfactual_of(counterfactual).target
        assert (target.line, target.kind, target.body) == (4, "while", (5,))


# --- counterfactual targets -------------------------------------------------------------------

def test_target_rules(sandbox: Sandbox) -> None:
    largest = make_instance(COUNTERFACTUAL, sandbox, TWO_IFS, "0")
    smallest = make_instance(COUNTERFACTUAL, sandbox, TWO_IFS, "0", target="min")
    drawn = make_instance(COUNTERFACTUAL, sandbox, TWO_IFS, "0", target="random")
    questions = [counterfactual_of(i) for i in (largest, smallest, drawn)]
    assert [(q.target.line, q.target.body) for q in questions[:2]] == [(2, (3, 4, 5)), (6, (7,))]
    assert questions[2].target.line in (2, 6)
    assert [q.target_rule for q in questions] == ["max", "min", "random"]
    # The witness each one carries reaches its own target.
    for instance in (largest, smallest, drawn):
        assert COUNTERFACTUAL.judging.score(instance, answer(counterfactual_of(instance).witness),
                                            sandbox).correct


def test_random_target_is_a_seeded_choice_among_candidates() -> None:
    shape = analyse(TWO_IFS)
    ran = {1, 2, 6, 8}
    picks = {seed: line_of(choose_target(shape, ran, "random", random.Random(seed)))
             for seed in range(30)}
    assert set(picks.values()) == {2, 6}
    assert all(line_of(choose_target(shape, ran, "random", random.Random(seed))) == line
               for seed, line in picks.items())


def test_target_ties_go_to_the_first_branch() -> None:
    shape = analyse("def f(x):\n    if x:\n        return 1\n    if x < 0:\n        return 2\n"
                    "    return 3\n")
    assert line_of(choose_target(shape, {1, 2, 4, 6}, "max", random.Random(0))) == 2
    assert line_of(choose_target(shape, {1, 2, 4, 6}, "min", random.Random(0))) == 2


# HumanEval/81's chain in small: under f(4.0) lines 5, 6, 7, 8 and 9 never run.
GRADES = """\
def f(gpa):
    if gpa == 4.0:
        return "A+"
    elif gpa > 3.7:
        return "A"
    elif gpa > 1.0:
        return "D"
    else:
        return "E"
"""


def test_chain_reading_takes_an_if_with_its_arms(sandbox: Sandbox) -> None:
    shape = analyse(GRADES)
    covered = {1, 2, 3}
    # Each arm alone: the first of the one-line bodies (line 4's); with its arms, the
    # `elif` at line 4 covers lines 5 to 9, and an `else` is no target of its own.
    assert line_of(choose_target(shape, covered, "max", random.Random(0), "arm")) == 4
    chain = choose_target(shape, covered, "max", random.Random(0), "chain")
    assert chain == Target(4, "elif", (5, 6, 7, 9), 4, arms=True)
    assert line_of(choose_target(shape, covered, "min", random.Random(0), "chain")) == 6
    instance = make_instance(COUNTERFACTUAL, sandbox, GRADES, "4.0")
    question = counterfactual_of(instance)
    assert (question.target, question.original_lines) == (chain, (1, 2, 3))
    assert "the body of the `elif` at line 4 or of an `elif`/`else` arm after it runs" in \
        ask(COUNTERFACTUAL, instance, Protocol(shots=0))[0]["content"]
    # Reaching line 9 (the last arm) reaches the target.
    assert COUNTERFACTUAL.judging.score(instance, answer("0.5"), sandbox).correct


def test_first_test_call_is_the_released_codes_choice(sandbox: Sandbox) -> None:
    program = Program(id="hand/f", source="hand", code=GRADES, entry_point="f",
                      calls=tuple(Call(a) for a in ("4.0", "3.9", "2.0", "0.5")))
    traced = [(i, sandbox.run(Job(GRADES, "f", c.args))) for i, c in enumerate(program.calls)]
    def chosen(**options: str) -> set[int]:
        return {index for seed in range(20) for index in COVERAGE.building.choose_calls(
            program, traced, BuildContext(seed=seed, sandbox=sandbox, options=options))}

    # f(4.0) is the first call that leaves lines unexecuted; every one of them does.
    assert len(chosen()) > 1 and chosen(test="first") == {0}


def test_standalone_target_when_no_branch_body_is_wholly_unexecuted() -> None:
    shape = analyse("def f(x):\n    if x:\n        a = 1\n        b = 2\n    return a\n")
    # The `if` body ran in part (say line 4 raised), so the first unexecuted line outside
    # every branch body is the target; with no such line Algorithm 1 names none (each arm
    # alone), while the released code (the chain reading) names the first unexecuted line.
    assert choose_target(shape, {1, 2, 3}, "max", random.Random(0)) == \
        Target(5, "line", (5,), None)
    assert choose_target(shape, {1, 2, 3, 5}, "max", random.Random(0), "arm") is None
    assert choose_target(shape, {1, 2, 3, 5}, "max", random.Random(0), "chain") == \
        Target(4, "line", (4,), None)


@pytest.mark.parametrize("option", ["target=xyz", "mode=xyz"])
def test_bad_task_option_stops_the_build(tmp_path: Path, option: str) -> None:
    source = tmp_path / "programs.jsonl"
    source.write_text(json.dumps({"id": "two", "code": TWO_IFS, "entry_point": "f",
                                  "calls": ["0"]}) + "\n")
    key, value = option.split("=")
    with pytest.raises(SuiteError, match=f"-T {key} must be one of .*'{value}'"):
        build_suite([str(source)], tmp_path / "suite",
                    BuildOptions(tasks=["counterfactual"], task_options={key: value}, workers=1))
    assert not (tmp_path / "suite").exists()


def test_a_match_statement_does_not_stop_the_build(tmp_path: Path) -> None:
    source = tmp_path / "programs.jsonl"
    matching = "def f(x):\n    match x:\n        case 1:\n            return 'one'\n" \
               "        case _:\n            return 'other'\n"
    source.write_text("".join(json.dumps(record) + "\n" for record in (
        {"id": "match", "code": matching, "entry_point": "f", "calls": ["1"]},
        {"id": "two", "code": TWO_IFS, "entry_point": "f", "calls": ["0"]})))
    build_suite([str(source)], tmp_path / "suite",
                BuildOptions(tasks=["coverage"], workers=1))
    _, instances, _ = load_suite(tmp_path / "suite")
    assert [i.program_id for i in instances] == ["programs/two"]


def test_generate_mode_hides_the_original_call(sandbox: Sandbox) -> None:
    args = "'abbkebanuuwrzvr', 'm'"
    mutate = make_instance(COUNTERFACTUAL, sandbox, SAMPLE_492, args)
    generate = make_instance(COUNTERFACTUAL, sandbox, SAMPLE_492, args, mode="generate")
    assert counterfactual_of(generate).mode == "generate"
    mutate_text = ask(COUNTERFACTUAL, mutate, Protocol(shots=1))[0]["content"]
    generate_text = ask(COUNTERFACTUAL, generate, Protocol(shots=1))[0]["content"]
    assert f"`f({args})`" in mutate_text
    assert "abbkebanuuwrzvr" not in generate_text
    assert "the body of the `while` at line 4 runs" in generate_text


# --- witnesses: the oracle's answers -----------------------------------------------------------

# f(1) leaves the `if` body unexecuted; the source's other call, written `3 * 19` as in
# HumanEval/25's test, reaches it.
THRESHOLD = "def f(n):\n    size = 'small'\n    if n > 50:\n        size = 'big'\n    return size\n"


def build_counterfactual(tmp_path: Path, code: str, calls: list[str]) -> tuple[dict, list[dict]]:
    source = tmp_path / "programs.jsonl"
    source.write_text(json.dumps({"id": "p", "code": code, "entry_point": "f",
                                  "calls": calls}) + "\n")
    manifest = build_suite([str(source)], tmp_path / "suite",
                           BuildOptions(tasks=["counterfactual"], workers=1))
    return manifest, load_suite(tmp_path / "suite")[1]


def test_a_witness_written_as_an_expression_is_stated_as_its_value(tmp_path: Path,
                                                                   sandbox: Sandbox) -> None:
    _, [instance] = build_counterfactual(tmp_path, THRESHOLD, ["1", "3 * 19"])
    assert instance.args == "1"
    assert counterfactual_of(instance).witness == "57"
    response = COUNTERFACTUAL.asking.reference_response(instance)
    assert COUNTERFACTUAL.judging.score(instance, response, sandbox).verdict == "correct"


def test_a_witness_with_no_literal_form_is_not_chosen(tmp_path: Path) -> None:
    """A lambda cannot be written as a literal, and the scorer takes a non-literal argument
    only where the chosen call has that very text: no witness, so no instance."""
    code = THRESHOLD.replace("(n):", "(g):").replace("n > 50", "g() > 50")
    manifest, instances = build_counterfactual(tmp_path, code, ["lambda: 1", "lambda: 57"])
    assert instances == []
    [skip] = [s for s in manifest.skipped if s.task == "counterfactual"]
    assert skip.reason == "no input reaching line 3 that can be written as literal " \
                             "arguments was found"


def test_humaneval_witnesses_are_answers_the_scorer_reads(
        humaneval: tuple[dict, list[dict]]) -> None:
    """HumanEval/25's test writes ``candidate(3 * 19)``: its witness is the value, 57."""
    _, instances = humaneval
    witnesses = {i.program_id: counterfactual_of(i).witness
                 for i in instances if i.task == "counterfactual"}
    assert witnesses["humaneval/HumanEval/25"] == "57"
    for instance in by_task(instances, "counterfactual").values():
        assert isinstance(read_arguments(counterfactual_of(instance).witness, instance), str), \
            instance.id


# --- counterfactual scoring -------------------------------------------------------------------

@pytest.fixture(scope="module")
def sample_492(sandbox: Sandbox) -> dict[str, Any]:
    return make_instance(COUNTERFACTUAL, sandbox, SAMPLE_492, "'abbkebanuuwrzvr', 'm'")


def test_answer_reaching_the_target_is_correct(sample_492: dict, sandbox: Sandbox) -> None:
    for text in ("'aa', 'a'", "f('xmmx', 'm')", "assert f('mm', value='m') == ''"):
        score = COUNTERFACTUAL.judging.score(sample_492, answer(text), sandbox)
        assert score.verdict == "correct", text
        assert "raised" not in score.extra


def test_reaching_only_the_header_is_a_prompt_misread(sample_492: dict,
                                                      sandbox: Sandbox) -> None:
    score = COUNTERFACTUAL.judging.score(sample_492, answer("'xyz', 'q'"), sandbox)
    assert score.verdict == "incorrect"
    assert score.extra["failure"] == "prompt_misread"
    # An odd count takes the `else`: the `while` header never runs, so no label.
    score = COUNTERFACTUAL.judging.score(sample_492, answer("'ab', 'a'"), sandbox)
    assert (score.verdict, score.extra) == ("incorrect", {})


@pytest.mark.parametrize("text", ["'abc'", "'a', 'b', 'c'", "f('a', wrong='b')"])
def test_arguments_that_do_not_fit_are_unparsable_with_a_format_error(sample_492: Instance,
                                                                       text: str) -> None:
    # No sandbox: scoring would raise if it tried to run anything.
    score = COUNTERFACTUAL.judging.score(sample_492, answer(text), None)
    assert (score.verdict, score.extra["failure"]) == ("unparsable", "format_error")


@pytest.mark.parametrize("text", ["__import__('os'), 'm'",
                                  "open('/etc/passwd').read(), 'm'",
                                  "f(*['a', 'b'])",
                                  "'a' + 'b', 'm'"])
def test_non_literal_answer_is_never_run(sample_492: dict, text: str) -> None:
    score = COUNTERFACTUAL.judging.score(sample_492, answer(text), None)
    assert (score.verdict, score.extra["failure"]) == ("unparsable", "format_error")


def test_answer_raising_after_the_target_ran_is_correct(sandbox: Sandbox) -> None:
    instance = make_instance(COUNTERFACTUAL, sandbox, DIVIDES, "[]")
    target = counterfactual_of(instance).target
    assert (target.kind, target.body) == ("for", (4,))
    score = COUNTERFACTUAL.judging.score(instance, answer("[5, 0]"), sandbox)
    assert score.verdict == "correct"
    assert score.extra["raised"] == "ZeroDivisionError"


def test_looping_answer_is_contained(sandbox: Sandbox) -> None:
    instance = make_instance(COUNTERFACTUAL, sandbox, STEPS, "4, 2")
    target = counterfactual_of(instance).target
    assert (target.kind, target.line) == ("if", 4)
    score = COUNTERFACTUAL.judging.score(instance, answer("4, 0"), sandbox)
    assert (score.verdict, score.detail) == ("incorrect", "program timeout")
    assert COUNTERFACTUAL.judging.score(instance, answer("5, 2"), sandbox).verdict == "correct"


@pytest.mark.parametrize("response", [None, "", "[ANSWER] [/ANSWER]", "<think>'aa', 'a'</think>"])
def test_empty_counterfactual_answer(sample_492: dict, response: str | None) -> None:
    score = COUNTERFACTUAL.judging.score(sample_492, response, None)
    assert (score.verdict, score.extra["failure"]) == ("unparsable", "null_response")


@pytest.mark.parametrize("task", [COVERAGE, COUNTERFACTUAL])
def test_reasoning_without_an_answer_is_a_null_response(sample_492: dict,
                                                        coverage_492: dict, task: Any) -> None:
    instance = coverage_492 if task is COVERAGE else sample_492
    score = task.judging.score(instance, "<REASONING>line 4 runs, so f('mm', 'm')</REASONING>",
                               None)
    assert score.extra["failure"] == "null_response"


# --- coverage scoring -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def coverage_492(sandbox: Sandbox) -> dict[str, Any]:
    instance = make_instance(COVERAGE, sandbox, SAMPLE_492, "'abbkebanuuwrzvr', 'm'")
    assert coverage_of(instance).lines == (1, 2, 3, 4, 8)
    return instance


@pytest.mark.parametrize(("text", "verdict", "score", "failure"), [
    ('{"executed_lines": [1, 2, 3, 4, 8]}', "correct", 1.0, None),
    ("[8, 4, 3, 2, 1]", "correct", 1.0, None),
    # Lines 2 and 3 form one basic block: reporting 2 alone skips a statement.
    ('{"executed_lines": [1, 2, 4, 8]}', "incorrect", 4 / 5, "skipping_statements"),
    ('{"executed_lines": [1, 4, 8]}', "incorrect", 3 / 5, None),
    # Line 6 is the `else:` keyword: no statement starts there.
    ('{"executed_lines": [1, 2, 3, 4, 6, 8]}', "incorrect", 5 / 6, "hallucination"),
    ('{"executed_lines": [1, 2, 3, 4, 5, 8]}', "incorrect", 5 / 6, None),
    ('{"executed_lines": "x"}', "unparsable", 0.0, "format_error"),
    ('{"executed_lines": [1, 2.0]}', "unparsable", 0.0, "format_error"),
    ("", "unparsable", 0.0, "null_response"),
])
def test_coverage_scoring(coverage_492: dict, text: str, verdict: str, score: float,
                          failure: str | None) -> None:
    result = COVERAGE.judging.score(coverage_492, answer(text) if text else text, None)
    assert result.verdict == verdict
    assert result.score == pytest.approx(score)
    assert result.extra.get("failure") == failure


def test_coverage_prompt_numbers_the_lines(coverage_492: dict) -> None:
    text = ask(COVERAGE, coverage_492, Protocol(shots=0))[0]["content"]
    assert "6      else:" in text
    assert "`f('abbkebanuuwrzvr', 'm')`" in text


# --- reference models through the runner ------------------------------------------------------

def test_oracle_scores_full_marks(cruxeval: tuple[Path, dict, list[dict]],
                                  tmp_path: Path) -> None:
    suite, _, instances = cruxeval
    results = run(RunConfig(suite=str(suite), model="reference/oracle"), tmp_path / "oracle")
    pairs = len(by_task(instances, "counterfactual"))
    for task in ("coverage", "counterfactual"):
        assert results["metrics"][task]["all"]["pass@1"] == 1.0
    assert results["metrics"]["coverage"]["all"]["score"] == 1.0
    dual = results["paired_metrics"]["dual"]["all"]
    assert dual == {"pairs": pairs, "pass@1": 1.0, "paired_pass@1": 1.0,
                    "quadrants": {"both": 1.0, "first_only": 0.0, "second_only": 0.0,
                                  "neither": 0.0}}


def test_constant_answer_gets_partial_relaxed_credit(cruxeval: tuple[Path, dict, list[dict]],
                                                     tmp_path: Path) -> None:
    suite, _, _ = cruxeval
    config = RunConfig(suite=str(suite), model="reference/constant", tasks=["coverage"],
                       model_args={"answer": answer('{"executed_lines": [1, 2, 3]}')})
    group = run(config, tmp_path / "constant")["metrics"]["coverage"]["all"]
    assert 0 < group["score"] < 1
    assert group["pass@1"] < group["score"]


# --- the dual score ---------------------------------------------------------------------------

def record(task: str, key: str, sample: int, correct: bool, *, source: str = "s",
           verdict: str | None = None) -> Kept:
    return Kept(task=task, instance_id=f"{task}/{key}", sample=sample, source=source,
                correct=correct, verdict=verdict or ("correct" if correct else "incorrect"))


def test_paired_summary_independent_versus_paired() -> None:
    samples = [record("coverage", "p/0", 0, True), record("coverage", "p/0", 1, False),
               record("counterfactual", "p/0", 0, False),
               record("counterfactual", "p/0", 1, True)]
    block = paired_summary(samples, 2, "coverage", "counterfactual").to_record()["all"]
    assert block["pairs"] == 1
    assert block["pass@1"] == pytest.approx(0.5 * 0.5)
    assert block["paired_pass@1"] == 0.0  # no sample index solves both
    assert block["pass@2"] == 1.0
    assert block["paired_pass@2"] == 0.0


def test_paired_summary_same_sample_solves_both() -> None:
    samples = [record("coverage", "p/0", 0, True), record("coverage", "p/0", 1, False),
               record("counterfactual", "p/0", 0, True),
               record("counterfactual", "p/0", 1, False)]
    block = paired_summary(samples, 2, "coverage", "counterfactual").to_record()["all"]
    assert block["pass@1"] == pytest.approx(0.25)
    assert block["paired_pass@1"] == pytest.approx(0.5)


def test_paired_summary_pairs_sources_and_errors() -> None:
    samples = [
        record("coverage", "a/0", 0, True, source="one"),
        record("counterfactual", "a/0", 0, True, source="one"),
        record("coverage", "b/0", 0, True, source="two"),
        # A failed request never counts, whatever it claims.
        record("counterfactual", "b/0", 0, True, source="two", verdict="error"),
        record("coverage", "lonely/0", 0, True, source="two"),  # no partner: not a pair
        record("output", "a/0", 0, False, source="one"),  # another task: ignored
    ]
    summary = paired_summary(samples, 1, "coverage", "counterfactual").to_record()
    assert summary["tasks"] == ["coverage", "counterfactual"]
    quadrant = dict.fromkeys(("both", "first_only", "second_only", "neither"), 0.0)
    assert summary["all"] == {"pairs": 2, "pass@1": 0.5, "paired_pass@1": 0.5,
                              "quadrants": {**quadrant, "both": 0.5, "first_only": 0.5}}
    assert summary["by_source"] == {
        "one": {"pairs": 1, "pass@1": 1.0, "paired_pass@1": 1.0,
                "quadrants": {**quadrant, "both": 1.0}},
        "two": {"pairs": 1, "pass@1": 0.0, "paired_pass@1": 0.0,
                "quadrants": {**quadrant, "first_only": 1.0}},
    }


def test_each_call_falls_in_a_quadrant_and_weighs_one() -> None:
    """Four calls with one sample, one in each quadrant, and a fifth with two samples, one
    right on both and one on neither: each call weighs a fifth."""
    answers = {"a/0": [(True, True)], "b/0": [(True, False)], "c/0": [(False, True)],
               "d/0": [(False, False)], "e/0": [(True, True), (False, False)]}
    samples = [record(task, key, index, right)
               for key, pairs in answers.items() for index, both in enumerate(pairs)
               for task, right in zip(("coverage", "counterfactual"), both, strict=True)]
    shares = paired_summary(samples, 1, "coverage", "counterfactual").all.quadrants
    assert shares is not None
    assert (shares.both, shares.first_only, shares.second_only, shares.neither) == \
        pytest.approx((0.3, 0.2, 0.2, 0.3))


# --- ground truth against coverage.py ---------------------------------------------------------

@pytest.mark.parametrize("source", ["cruxeval", "humaneval"])
def test_truth_is_coverage_py_statement_lines(
        source: str, cruxeval: tuple[Path, dict, list[dict]],
        humaneval: tuple[dict, list[dict]], measured: dict[tuple[str, int], dict],
        programs: dict[str, list[Program]], corpus: Corpus) -> None:
    """For every selected call, the coverage truth is the set of statement lines coverage.py
    reports executed, and the executable lines are coverage.py's statements."""
    instances = cruxeval[2] if source == "cruxeval" else humaneval[1]
    selected = by_task(instances, "coverage").values()
    least = {"cruxeval": 298, "humaneval": 90}[source] if corpus.full \
        else len(programs[source]) / 4
    assert len(selected) >= least
    executed_differ, statements_differ = [], {}
    for instance in selected:
        reading = measured[(instance.program_id, instance.call_index)]
        question = coverage_of(instance)
        if list(question.lines) != reading["executed"]:
            executed_differ.append(instance.id)
        ours, theirs = set(question.executable), set(reading["statements"])
        if ours != theirs:
            statements_differ[instance.program_id] = (ours - theirs, theirs - ours)
    assert executed_differ == []
    documented = {program: (lines, set()) for program, (lines, _) in STATEMENT_DIFFERENCES.items()
                  if program.startswith(source)}
    assert statements_differ == documented


def test_listed_options_hold_the_truth_and_the_oracle_picks_it(tmp_path: Path) -> None:
    """``-T options=listed``: each coverage question offers a few executed-line sets in
    ascending order, the truth among them, and the prompt lists them; without the option
    the instance has no options field (a suite keeps its bytes)."""
    listed, free = tmp_path / "listed", tmp_path / "free"
    build_suite(["humaneval"], listed, BuildOptions(tasks=["coverage"], limit=25,
                                                    task_options={"options": "listed"}))
    build_suite(["humaneval"], free, BuildOptions(tasks=["coverage"], limit=25))
    instances = load_suite(listed)[1]
    assert instances and all("options" not in i.data for i in load_suite(free)[1])
    several = 0
    for instance in instances:
        question = CoverageQuestion.from_record(instance.data)
        assert question.lines in question.options and len(question.options) <= 6
        assert list(question.options) == sorted(question.options)
        several += len(question.options) > 1
        prompt = ask(COVERAGE, instance, Protocol())[0]["content"]
        assert all(f"- {', '.join(map(str, option))}\n" in prompt + "\n"
                   for option in question.options)
    assert several >= len(instances) // 2
    run(RunConfig(suite=str(listed), model="reference/oracle"), tmp_path / "run")
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").open()]
    assert samples and all(s["verdict"] == "correct" for s in samples)
