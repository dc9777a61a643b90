"""Single-site mutation: every operator on hand-written programs, Algorithm 1 in the real
sandbox, and mutation suites built from CRUXEval, HumanEval and MBPP+.

The real-data suites are built once per dataset for the module, with a 0.25 s CPU limit, on
every program under ``--run-slow`` and on a seeded sample (``SAMPLE`` programs of each,
``tests/helpers/corpus.py``) by default: a mutant that loops forever then costs at most
that instead of 2 s (one MBPP+ program alone would take 40 s). The few calls that need more
time out and are not mutated for. Every kept pair is then run again, with the default
limits, in a sandbox of the test's own.
"""

from __future__ import annotations

import ast
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from execbench.mutation.operators import ARITHMETIC, RELATIONAL, Mutant, mutants
from execbench.mutation.search import choose_mutant, mutant_budget
from execbench.runner import RunConfig, run
from execbench.sandbox.pool import Job, Limits, Sandbox
from execbench.sandbox.trace import Trace
from execbench.sources import load_source
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.values import equal
from tests.helpers.corpus import Corpus
from tests.helpers.data import shared_data

NO_MUTANT = "no mutant runs without error and changes the output"
OPERATORS = {"arithmetic", "relational", "logical", "keyword", "numeric"}

# Under f('ab') the `if` body runs. Of the mutants that change the output, `True -> False`
# on line 4 keeps every executed line; the others (`==` -> `!=`, `0` -> `1`, ...) skip line 4.
FOUND = """\
def f(s):
    done = False
    if s and s[0] == 'a':
        done = True
    return done
"""

# f(5) == 5; `i += 1` -> `i -= 1` (and `*=`, `/=`, ... and `1` -> `0`) never leave the loop.
COUNT_UP = """\
def f(n):
    i = 0
    while i < n:
        i += 1
    return i
"""

# Returns n whatever the loop does: every mutant either gives 5 again or never returns.
WAIT_FOR = """\
def f(n):
    i = 0
    while i != n:
        i += 1
    return n
"""

# No operator, keyword or number: nothing to mutate.
STRINGS_ONLY = "def f(s):\n    return s.strip().upper()\n"

# Every other arithmetic operator between two strings raises TypeError.
EXCLAIM = "def f(s):\n    return s + '!'\n"


def edits(code: str) -> set[tuple[str, int, str, str]]:
    return {(m.operator, m.line, m.before, m.after) for m in mutants(code)}


def offset(code: str, line: int, column: int) -> int:
    """Character offset of (line, column), counting lines at "\\n" only, as Python does."""
    return sum(len(text) + 1 for text in code.split("\n")[: line - 1]) + column


def assert_single_site(original: str, mutant: Mutant) -> None:
    """The mutant is the original with ``before`` replaced by ``after`` at the recorded place,
    nothing else changed, and it still parses."""
    start = offset(original, mutant.line, mutant.column)
    assert original[start:start + len(mutant.before)] == mutant.before
    assert mutant.code == original[:start] + mutant.after + original[start + len(mutant.before):]
    assert mutant.code.count("\n") == original.count("\n")
    ast.parse(mutant.code)


def trace_of(sandbox: Sandbox, code: str, args: str) -> Trace:
    trace = sandbox.run(Job(code, "f", args))
    assert trace.status == "ok", trace
    return trace


# --- operators --------------------------------------------------------------------------

@pytest.mark.parametrize("op", ARITHMETIC)
def test_arithmetic_operator_becomes_each_other_one(op: str) -> None:
    code = f"def f(a, b):\n    return a {op} b\n"
    assert edits(code) == {("arithmetic", 2, op, other) for other in ARITHMETIC if other != op}


@pytest.mark.parametrize("op", ARITHMETIC)
def test_augmented_assignment_becomes_each_other_one(op: str) -> None:
    code = f"def f(a, b):\n    a {op}= b\n    return a\n"
    assert edits(code) == {("arithmetic", 2, f"{op}=", f"{other}=")
                           for other in ARITHMETIC if other != op}


def test_plus_and_plus_equals_in_one_program() -> None:
    code = "def f(a, b):\n    c = a + b\n    c += a\n    return c\n"
    found = mutants(code)
    assert [(m.line, m.column, m.after) for m in found] == [
        *((2, 10, op) for op in ("-", "*", "/", "//", "%", "**")),
        *((3, 6, op) for op in ("-=", "*=", "/=", "//=", "%=", "**="))]
    assert found[0].code == "def f(a, b):\n    c = a - b\n    c += a\n    return c\n"
    assert found[6].code == "def f(a, b):\n    c = a + b\n    c -= a\n    return c\n"


@pytest.mark.parametrize("op", RELATIONAL)
def test_relational_operator_becomes_each_other_one(op: str) -> None:
    code = f"def f(a, b):\n    return a {op} b\n"
    assert edits(code) == {("relational", 2, op, other) for other in RELATIONAL if other != op}


def test_each_comparison_of_a_chain_is_a_site() -> None:
    found = mutants("def f(a, b, c):\n    return a < b <= c\n")
    assert Counter((m.column, m.before) for m in found) == {(13, "<"): 5, (17, "<="): 5}


def test_logical_operators_swap_and_not_is_dropped() -> None:
    assert [m.code for m in mutants("def f(a, b):\n    return a and b\n")] == [
        "def f(a, b):\n    return a or b\n"]
    assert [m.code for m in mutants("def f(a, b):\n    return a or b\n")] == [
        "def f(a, b):\n    return a and b\n"]
    found = mutants("def f(a, b):\n    return a and not b\n")
    assert [(m.operator, m.before, m.after, m.code) for m in found] == [
        ("logical", "and", "or", "def f(a, b):\n    return a or not b\n"),
        ("logical", "not ", "", "def f(a, b):\n    return a and b\n")]


def test_not_in_and_is_not_are_left_alone() -> None:
    assert mutants("def f(a, b):\n    return a not in b or a is not b\n") == [
        Mutant("def f(a, b):\n    return a not in b and a is not b\n", "logical", 2, 22,
               "or", "and")]


def test_keywords_swap() -> None:
    code = ("def f(xs):\n    found = False\n    for x in xs:\n        if x:\n"
            "            found = True\n            break\n        continue\n    return found\n")
    assert edits(code) == {("keyword", 2, "False", "True"), ("keyword", 5, "True", "False"),
                           ("keyword", 6, "break", "continue"),
                           ("keyword", 7, "continue", "break")}


def test_numbers_move_by_one_and_zero_one_swap() -> None:
    code = "def f(x):\n    a = 7\n    b = 0\n    c = 1\n    d = 2.5\n    return x, a, b, c, d\n"
    afters: dict[str, set[str]] = {}
    for m in mutants(code):
        assert m.operator == "numeric"
        afters.setdefault(m.before, set()).add(m.after)
    assert afters == {"7": {"8", "6"}, "0": {"1", "(-1)"}, "1": {"2", "0"},
                      "2.5": {"3.5", "1.5"}}


def test_star_args_unary_minus_and_strings_are_not_operators() -> None:
    code = ("def f(*args, **kwargs):\n    sign = -len(args)\n"
            "    text = 'a-b + c < d and not e'\n    return sign, text, kwargs\n")
    assert mutants(code) == []


def test_unary_minus_keeps_its_operand_mutable() -> None:
    assert edits("def f(x):\n    return -x * -3\n") == {
        *(("arithmetic", 2, "*", op) for op in ARITHMETIC if op != "*"),
        ("numeric", 2, "3", "4"), ("numeric", 2, "3", "2")}


def test_number_in_an_f_string_is_found_at_its_place() -> None:
    code = "def f(x):\n    return f'{x:5}-{3}'\n"
    found = mutants(code)
    assert [(m.before, m.after) for m in found] == [("3", "4"), ("3", "2")]
    for mutant in found:
        assert_single_site(code, mutant)


HAND_WRITTEN = [FOUND, COUNT_UP, WAIT_FOR, EXCLAIM,
                "def f(a, b):\n    c = a + b  # a + b\n    c += 2\n    return c ** 2 - 1\n",
                "def f(x):\n    if not x or x < 0:\n        return [-x, 1.5]\n"
                "    while True:\n        x //= 2\n        if x % 3 == 0:\n            break\n"
                "    return x"]


@pytest.mark.parametrize("code", HAND_WRITTEN)
def test_every_mutant_is_one_edit_at_its_site(code: str) -> None:
    found = mutants(code)
    assert found
    assert len({m.code for m in found}) == len(found)
    for mutant in found:
        assert_single_site(code, mutant)


def test_every_mutant_of_every_cruxeval_program_is_one_edit(corpus: Corpus) -> None:
    """Every CRUXEval program under ``--run-slow``; 200 of them by default."""
    programs = corpus.sample(load_source(str(shared_data("cruxeval.jsonl"))).programs, 200)
    total = 0
    for program in programs:
        for mutant in mutants(program.code):
            assert_single_site(program.code, mutant)
            total += 1
    assert total > 10 * len(programs)  # 8,000 and more on all 800


def test_not_before_parenthesised_operand_is_dropped() -> None:
    assert "def f(a, b):\n    return (a and b)\n" in {
        m.code for m in mutants("def f(a, b):\n    return not (a and b)\n")}


def test_sites_after_non_ascii_text_on_the_line() -> None:
    assert edits("def f(s):\n    return ['é', True, 3, not s]\n") == {
        ("keyword", 2, "True", "False"), ("numeric", 2, "3", "4"), ("numeric", 2, "3", "2"),
        ("logical", 2, "not ", "")}


def test_line_separator_inside_a_string_does_not_shift_edits() -> None:
    code = "def f(x):\n    s = 'a\u2028b'\n    return x + 1\n"
    found = mutants(code)
    assert found
    for mutant in found:
        assert_single_site(code, mutant)


# --- choosing a mutant (Algorithm 1) ----------------------------------------------------


def test_the_mutant_with_the_closest_lines_is_chosen(sandbox: Sandbox) -> None:
    original = trace_of(sandbox, FOUND, "'ab'")
    assert original.value == ["bool", True]
    # Two valid mutants with different executed lines.
    same_lines = FOUND.replace("done = True", "done = False")
    skips_body = FOUND.replace("==", "!=")
    for code, lines in ((same_lines, original.lines), (skips_body, [1, 2, 3, 5])):
        trace = trace_of(sandbox, code, "'ab'")
        assert trace.value == ["bool", False]
        assert trace.lines == lines
    assert set(original.lines) == {1, 2, 3, 4, 5}
    for seed in range(5):
        chosen = choose_mutant(sandbox, FOUND, "f", "'ab'", original, random.Random(seed))
        assert chosen is not None
        mutant, trace = chosen
        assert mutant.code == same_lines
        assert (mutant.operator, mutant.line, mutant.before) == ("keyword", 4, "True")
        assert trace.value == ["bool", False]


def test_ties_are_broken_by_the_seed(sandbox: Sandbox) -> None:
    code = "def f(x):\n    return x + 1\n"
    original = trace_of(sandbox, code, "3")
    # Every mutant changes f(3) == 4 and runs the same single line: all tie.
    assert len(mutants(code)) == 8

    def chosen(seed: int) -> str:
        found = choose_mutant(sandbox, code, "f", "3", original, random.Random(seed))
        assert found is not None
        return found[0].code

    picks = [chosen(seed) for seed in range(8)]
    assert picks == [chosen(seed) for seed in range(8)]
    assert len(set(picks)) > 1


def test_program_without_a_valid_mutant_gives_none(sandbox: Sandbox) -> None:
    assert mutants(STRINGS_ONLY) == []
    assert choose_mutant(sandbox, STRINGS_ONLY, "f", "' ab '",
                         trace_of(sandbox, STRINGS_ONLY, "' ab '"), random.Random(0)) is None
    assert len(mutants(EXCLAIM)) == 6
    for mutant in mutants(EXCLAIM):
        assert sandbox.run(Job(mutant.code, "f", "'ab'")).status == "exception"
    assert choose_mutant(sandbox, EXCLAIM, "f", "'ab'", trace_of(sandbox, EXCLAIM, "'ab'"),
                         random.Random(0)) is None


class _Recording:
    """The module's sandbox, keeping each job it was given and each trace it gave back."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.jobs: list[Job] = []
        self.traces: list[Trace] = []

    def map(self, jobs: Any) -> list[Trace]:
        jobs = list(jobs)
        traces = self.sandbox.map(jobs)
        self.jobs += jobs
        self.traces += traces
        return traces


@pytest.mark.parametrize("code", [COUNT_UP, WAIT_FOR], ids=["count-up", "wait-for"])
def test_mutants_that_loop_forever_are_discarded_quickly(sandbox: Sandbox, code: str) -> None:
    """Each mutant runs under the mutant budget (a small multiple of the original call's
    steps), far below the sandbox's limit, so one that never returns costs that budget and
    times out; counted, not timed, so a loaded machine cannot fail it. For ``WAIT_FOR`` the
    only mutants that change the output are the ones that never return."""
    original = trace_of(sandbox, code, "5")
    budget = mutant_budget(original)
    assert budget <= sandbox.limits.max_steps / 4
    recording = _Recording(sandbox)
    chosen = choose_mutant(recording, code, "f", "5", original,  # type: ignore[arg-type]
                           random.Random(0))
    assert len(recording.jobs) == len(mutants(code))
    assert {job.max_steps for job in recording.jobs} == {budget}
    assert Counter(t.status for t in recording.traces)["timeout"] >= 2
    if code == WAIT_FOR:
        assert chosen is None
    else:
        assert chosen is not None
        assert chosen[1].status == "ok"
        assert not equal(chosen[1].value, original.value)


def test_build_drops_a_program_without_mutant_from_both_tasks(tmp_path: Path) -> None:
    source = tmp_path / "programs.jsonl"
    records = [{"id": "plain", "code": STRINGS_ONLY, "entry_point": "f", "calls": ["' ab '"]},
               {"id": "exclaim", "code": EXCLAIM, "entry_point": "f", "calls": ["'ab'"]},
               {"id": "found", "code": FOUND, "entry_point": "f", "calls": ["'ab'"]}]
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    manifest = build_suite([str(source)], tmp_path / "suite",
                           BuildOptions(tasks=["mutation", "choice"], workers=2))
    _, instances, _ = load_suite(tmp_path / "suite")
    assert {(i.task, i.program_id) for i in instances} == {
        ("mutation", "programs/found"), ("choice", "programs/found")}
    assert manifest.counts.by_task == {"mutation": 2, "choice": 2}
    assert sorted((s.where, s.task, s.reason) for s in manifest.skipped) == [
        ("programs/exclaim#0", "choice", NO_MUTANT), ("programs/exclaim#0", "mutation", NO_MUTANT),
        ("programs/plain#0", "choice", NO_MUTANT), ("programs/plain#0", "mutation", NO_MUTANT)]


# --- real benchmarks --------------------------------------------------------------------

SAMPLE = {"cruxeval.jsonl": 100, "HumanEval.jsonl.gz": 30, "MbppPlus.jsonl.gz": 50}
"""Programs of each benchmark a default run builds (all of them under ``--run-slow``)."""


def _mutation_suite(tmp_path_factory: pytest.TempPathFactory, corpus: Corpus,
                    name: str) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp(name.split(".")[0])
    spec = corpus.source(str(shared_data(name)), SAMPLE[name], folder)
    out = folder / "suite"
    manifest = build_suite([spec], out, BuildOptions(
        tasks=["mutation"], limits=Limits(cpu_seconds=0.25)))
    _, instances, _ = load_suite(out)
    pairs: dict[str, dict[str, dict[str, Any]]] = {}
    for instance in instances:
        pairs.setdefault(instance.program_id, {})[instance.data["variant"]] = instance
    return {"manifest": manifest, "pairs": pairs}


@pytest.fixture(scope="module")
def cruxeval(tmp_path_factory: pytest.TempPathFactory, corpus: Corpus) -> dict[str, Any]:
    return _mutation_suite(tmp_path_factory, corpus, "cruxeval.jsonl")


@pytest.fixture(scope="module")
def humaneval(tmp_path_factory: pytest.TempPathFactory, corpus: Corpus) -> dict[str, Any]:
    return _mutation_suite(tmp_path_factory, corpus, "HumanEval.jsonl.gz")


@pytest.fixture(scope="module")
def mbppplus(tmp_path_factory: pytest.TempPathFactory, corpus: Corpus) -> dict[str, Any]:
    return _mutation_suite(tmp_path_factory, corpus, "MbppPlus.jsonl.gz")


DATASETS = ["cruxeval", "humaneval", "mbppplus"]

# Bounds on the share of programs with a valid mutant (seed 0).
EXPECTED_SHARE = {"cruxeval": (0.45, 0.70), "humaneval": (0.75, 0.95), "mbppplus": (0.55, 0.80)}


@pytest.mark.parametrize("dataset", DATASETS)
def test_every_kept_pair_changes_the_output(dataset: str, request: pytest.FixtureRequest
                                            ) -> None:
    pairs = request.getfixturevalue(dataset)["pairs"]
    jobs = []
    for pair in pairs.values():
        assert set(pair) == {"original", "mutant"}
        original, mutant = pair["original"], pair["mutant"]
        assert original.args == mutant.args
        jobs += [Job(original.code, original.entry_point, original.args),
                 Job(mutant.code, mutant.entry_point, mutant.args)]
    with Sandbox(workers=2) as fresh:
        traces = fresh.map(jobs)
    for index, pair in enumerate(pairs.values()):
        before, after = traces[2 * index], traces[2 * index + 1]
        assert before.status == after.status == "ok", pair["mutant"].id
        assert equal(before.value, pair["original"].data["truth"]["value"])
        assert equal(after.value, pair["mutant"].data["truth"]["value"])
        assert not equal(before.value, after.value), pair["mutant"].id


@pytest.mark.parametrize("dataset", DATASETS)
def test_every_kept_mutant_is_its_recorded_edit(dataset: str, request: pytest.FixtureRequest
                                                ) -> None:
    for pair in request.getfixturevalue(dataset)["pairs"].values():
        original, mutant = pair["original"], pair["mutant"]
        record = mutant.mutation
        assert original.mutation == record
        assert record["operator"] in OPERATORS
        assert_single_site(original.code, Mutant(mutant.code, **record))


@pytest.mark.parametrize("dataset", DATASETS)
def test_share_with_a_valid_mutant_and_operator_mix(dataset: str,
                                                    request: pytest.FixtureRequest) -> None:
    suite = request.getfixturevalue(dataset)
    manifest, pairs = suite["manifest"], suite["pairs"]
    programs = manifest.counts.programs
    skipped = {s.where.split("#")[0] for s in manifest.skipped if s.reason == NO_MUTANT}
    assert not skipped & set(pairs)
    assert len(pairs) + len(skipped) <= programs
    low, high = EXPECTED_SHARE[dataset]
    assert low <= len(pairs) / programs <= high
    mix = Counter(pair["mutant"].mutation["operator"] for pair in pairs.values())
    assert set(mix) <= OPERATORS
    for kind in ("arithmetic", "relational", "numeric"):
        assert mix[kind] >= 0.1 * len(pairs), mix
    assert max(mix.values()) <= 0.5 * len(pairs), mix


def test_mutate_option_builds_other_tasks_on_the_mutant(tmp_path: Path) -> None:
    path = shared_data("cruxeval.jsonl")
    suite = tmp_path / "suite"
    manifest = build_suite([str(path)], suite, BuildOptions(
        tasks=["output", "coverage"], limit=40, mutate=True, workers=2))
    assert manifest.recipe.mutate is True
    _, instances, _ = load_suite(suite)
    originals = {p.id: p for p in load_source(str(path)).programs[:40]}
    mutated = {i.program_id for i in instances}
    assert 15 <= len(mutated) <= 35
    assert {i.task for i in instances} == {"output", "coverage"}
    for instance in instances:
        assert instance.program_id.endswith("@mutant")
        record = instance.mutation
        original = originals[record["original_id"]]
        assert instance.program_id == f"{original.id}@mutant"
        assert instance.args == original.calls[record["original_call_index"]].args
        fields = {k: record[k] for k in ("operator", "line", "column", "before", "after")}
        assert_single_site(original.code, Mutant(instance.code, **fields))
    results = run(RunConfig(suite=str(suite), model="reference/oracle"), tmp_path / "run")
    for task in ("output", "coverage"):
        assert results["metrics"][task]["all"]["accuracy"] == 1.0
