"""Coherence and divergence on hand-written answers: one per rule, a wrong value carried
through coherently, a divergence found in run order rather than line order, elided lists,
and the oracle and shortcut answers."""

from __future__ import annotations

from execbench.program import Call, Program
from execbench.sandbox.pool import Job, Sandbox
from execbench.tasks.base import BuildContext, Instance, Score
from execbench.tasks.ces.payload import SimulationQuestion, SimulationTruth
from execbench.tasks.ces.simulation import PROPERTIES, Simulation
from tests.helpers.programs import SPLIT_SUM

TASK = Simulation()


COUNT = """\
def g(n):
    hits = 0
    for i in range(n):
        if i > 0 and i % 2 == 0:
            hits += 1
    return hits
"""

HELPER = """\
def double(ys):
    out = []
    for y in ys:
        out.append(2 * y)
    return out


def f(xs):
    total = 0
    for x in xs:
        if x > 1:
            total += x
    for z in double(xs):
        total += z
    return total
"""


def instance(sandbox: Sandbox, code: str, entry: str, args: str) -> Instance:
    """An instance built the way a suite builds it."""
    program = Program("t/1", "t", code, entry, (Call(args),))
    trace = sandbox.run(Job(code, entry, args, PROPERTIES))
    (fields,) = TASK.build(program, 0, trace, BuildContext(seed=0, sandbox=sandbox))
    return Instance.build(TASK.name, program, 0, fields)


def asked(made: Instance) -> SimulationQuestion:
    return SimulationQuestion.from_record(made.data)


def truth(made: Instance) -> SimulationTruth:
    return asked(made).truth


def answer(lines: dict[str, str], output: str) -> str:
    body = "\n".join(f"[{tag}] = {value}" for tag, value in lines.items())
    return f"<REASONING>I follow the loop.</REASONING>\n[ANSWER]\n{body}\n[output] = {output}\n" \
           "[/ANSWER]"


def judged(sandbox: Sandbox, code: str, entry: str, args: str, lines: dict[str, str],
           output: str) -> Score:
    made = instance(sandbox, code, entry, args)
    assert sorted(lines) == sorted(p.id for p in truth(made).properties)
    return TASK.score(made, answer(lines, output), sandbox)


SPLIT_RIGHT = {"4a": "['cde', 'f', 'ghij']", "4b": "[['cde', 'f', 'ghij']]",
               "4c": "[['ab', 'cde', 'f', 'ghij']]", "5a": "[True, False, True]",
               "5b": "[True, False, True]"}


def test_the_oracle_is_coherent_and_correct(sandbox: Sandbox) -> None:
    made = instance(sandbox, SPLIT_SUM, "f", "'ab,cde,f,ghij'")
    score = TASK.score(made, TASK.reference_response(made), sandbox)
    assert (score.verdict, score.extra["class"], score.extra["rules"]) == \
        ("correct", "coherent_correct", [])
    assert judged(sandbox, SPLIT_SUM, "f", "'ab,cde,f,ghij'", SPLIT_RIGHT, "7").correct


def test_a_wrong_value_carried_through_coherently_diverges_at_its_loop(
        sandbox: Sandbox) -> None:
    # The model splits off 'ghi' for 'ghij' and carries the mistake on, consistently.
    wrong = {"4a": "['cde', 'f', 'ghi']", "4b": "[['cde', 'f', 'ghi']]",
             "4c": "[['ab', 'cde', 'f', 'ghi']]", "5a": "[True, False, True]",
             "5b": "[True, False, True]"}
    score = judged(sandbox, SPLIT_SUM, "f", "'ab,cde,f,ghij'", wrong, "6")
    assert (score.verdict, score.extra["class"], score.extra["rules"]) == \
        ("incorrect", "coherent_incorrect", [])
    assert score.extra["divergence"] == {"kind": "iterable", "id": "4c", "line": 4,
                                         "label": "words", "quadruple": "FF--"}


def test_rule1_an_iterable_its_parts_cannot_give(sandbox: Sandbox) -> None:
    # The slice is forgotten: the iterable is not `words[1:]` of the stated `words`.
    wrong = {"4a": "['abc', 'de', 'fgh']", "4b": "[['abc', 'de', 'fgh']]",
             "4c": "[['abc', 'de', 'fgh']]", "5a": "[True, False, True]",
             "5b": "[True, False, True]"}
    score = judged(sandbox, SPLIT_SUM, "f", "'abc,de,fgh'", wrong, "6")
    assert (score.extra["class"], score.extra["fired"]) == \
        ("incoherent_incorrect", {"rule1": ["4b"]})
    assert "divergence" not in score.extra


COUNT_RIGHT = {"3a": "[0, 1, 2, 3]", "3b": "[[0, 1, 2, 3]]", "3c": "[4]",
               "4a": "[False, False, True, False]", "4b": "[False, True, True, True]",
               "4c": "[None, False, True, False]", "4d": "[False, False, True, False]"}


def test_rule1_a_predicate_its_clauses_cannot_give(sandbox: Sandbox) -> None:
    wrong = {**COUNT_RIGHT, "4a": "[False, False, True, True]",
             "4d": "[False, False, True, True]"}
    score = judged(sandbox, COUNT, "g", "4", wrong, "2")
    assert (score.extra["class"], score.extra["fired"]) == \
        ("incoherent_incorrect", {"rule1": ["4a"]})


def test_rule1_a_clause_stated_where_short_circuiting_skips_it(sandbox: Sandbox) -> None:
    wrong = {**COUNT_RIGHT, "4c": "[False, False, True, False]"}
    score = judged(sandbox, COUNT, "g", "4", wrong, "1")
    # The clause is a sub-property: Rule 3 leaves it to Rule 1.
    assert (score.extra["class"], score.extra["fired"]) == \
        ("incoherent_correct", {"rule1": ["4a"]})


def test_rule2_a_branch_against_its_predicate(sandbox: Sandbox) -> None:
    wrong = {**COUNT_RIGHT, "4d": "[False, False, True, True]"}
    score = judged(sandbox, COUNT, "g", "4", wrong, "2")
    assert (score.extra["class"], score.extra["fired"]) == \
        ("incoherent_incorrect", {"rule2": ["4d"]})


def test_rule3_the_right_output_after_a_wrong_loop_variable(sandbox: Sandbox) -> None:
    wrong = {**COUNT_RIGHT, "3a": "[0, 1, 2, 4]"}
    score = judged(sandbox, COUNT, "g", "4", wrong, "1")
    assert (score.verdict, score.extra["class"], score.extra["fired"]) == \
        ("incorrect", "incoherent_correct", {"rule3": ["3a"]})


def test_a_missing_placeholder_is_wrong(sandbox: Sandbox) -> None:
    made = instance(sandbox, COUNT, "g", "4")
    score = TASK.score(made, answer({k: v for k, v in COUNT_RIGHT.items() if k != "3a"}, "1"),
                       sandbox)
    assert (score.extra["class"], score.extra["unread"]) == ("incoherent_correct", ["3a"])


def test_the_divergence_point_follows_the_run_not_the_lines(sandbox: Sandbox) -> None:
    # Two mistakes no rule links: `3 > 1` judged false (line 11), then `y` misread in
    # the helper (line 3, above it in the file but run after it). (Had the misread `y`
    # changed what `double(xs)` is said to give, Rule 1 would fire: it runs the helper.)
    wrong = {"3a": "[1, 4]", "3b": "[[1, 3]]", "10a": "[1, 3]", "10b": "[[1, 3]]",
             "11a": "[False, False]", "11b": "[False, False]", "13a": "[2, 6]",
             "13b": "[[2, 6]]", "13c": "[[1, 3]]"}
    made = instance(sandbox, HELPER, "f", "[1, 3]")
    assert [p.id for p in truth(made).properties] == sorted(wrong, key=lambda t: (
        int(t[:-1]), t))
    score = TASK.score(made, answer(wrong, "8"), sandbox)
    assert score.extra["class"] == "coherent_incorrect"
    assert score.extra["divergence"]["id"] == "11a"
    assert score.extra["divergence"]["kind"] == "predicate"
    propagated = {**wrong, "13a": "[2, 8]", "13b": "[[2, 8]]"}
    assert TASK.score(made, answer(propagated, "10"), sandbox).extra["fired"] == \
        {"rule1": ["13b"]}


def test_elided_lists_are_read_and_checked(sandbox: Sandbox) -> None:
    lines = {"3a": "[0, 1, ..., 28, 29]", "3b": "[[0, 1, 2, ..., 29]]", "3c": "[30]",
             "4a": "[False, False, True, ..., False]",
             "4b": "[False, True, ..., True]", "4c": "[None, False, True, ..., False]",
             "4d": "[False, False, True, False, ..., True, False]"}
    assert judged(sandbox, COUNT, "g", "30", lines, "14").extra["class"] == "coherent_correct"
    wrong_end = {**lines, "3a": "[0, 1, ..., 30]"}
    score = judged(sandbox, COUNT, "g", "30", wrong_end, "14")
    assert score.extra["fired"] == {"rule3": ["3a"]}


def test_an_answer_without_an_output_is_unparsable(sandbox: Sandbox) -> None:
    made = instance(sandbox, COUNT, "g", "4")
    score = TASK.score(made, "[ANSWER]\n[3a] = [0, 1, 2, 3]\n[/ANSWER]", sandbox)
    assert score.verdict == "unparsable" and "[output]" in (score.detail or "")
    assert TASK.score(made, None, sandbox).verdict == "unparsable"


ANNOTATED_CODE = """\
[REASONING]
g counts the even i above 0 below 4: only i = 2, so it returns 1.
[/REASONING]

[PYTHON]
def g(n):
    hits = 0
    for i in range(n):  ## [STATE]i=[0, 1, 2, 3][/STATE]
        if i > 0 and i % 2 == 0:
            hits += 1
    return hits
[/PYTHON]

[OUTPUT]
1
[/OUTPUT]"""


def test_an_answer_in_another_format_is_told_the_format_expected(sandbox: Sandbox) -> None:
    """A simulation written as annotated code has text, just no placeholder lines: the
    detail says which lines were expected, never that the response was empty."""
    made = instance(sandbox, COUNT, "g", "4")
    score = TASK.score(made, ANNOTATED_CODE, sandbox)
    assert score.verdict == "unparsable"
    assert score.detail == ("expected one `[tag] = [values]` line per placeholder and "
                            "`[output] = VALUE`, between [ANSWER] and [/ANSWER]; found no "
                            "readable `[output]` line nor any placeholder's")
    tags_only = TASK.score(made, "[ANSWER]\n[3a] = [0, 1, 2, 3]\n[/ANSWER]", sandbox)
    assert (tags_only.detail or "").endswith("; found no readable `[output]` line")


def test_the_shortcut_is_incoherent_with_the_right_output(sandbox: Sandbox) -> None:
    for code, entry, args in ((SPLIT_SUM, "f", "'a,bcd'"), (COUNT, "g", "0"), (HELPER, "f", "[]")):
        made = instance(sandbox, code, entry, args)
        score = TASK.score(made, TASK.shortcut_response(made), sandbox)
        assert (score.extra["class"], score.extra["properties_right"]) == \
            ("incoherent_correct", 0)


EARLY = """\
def first_even(xs):
    for i in range(len(xs)):
        if xs[i] % 2 == 0:
            return i
    return -1
"""
EARLY_RIGHT = {"2a": "[0, 1, 2]", "2b": "[[0, 1, 2]]", "2c": "[5]",
               "3a": "[False, False, True]", "3b": "[False, False, True]"}


def test_a_loop_left_early_may_be_stated_with_its_whole_iterable(sandbox: Sandbox) -> None:
    """The loop returns at i = 2: its iterable is right as the items it took (execbench's
    truth) or as the whole range (CES's truth), in scoring as in Rule 1; any other list
    is wrong, and Rule 3 fires on it."""
    made = instance(sandbox, EARLY, "first_even", "[1, 3, 4, 5, 7]")
    iterable = next(p for p in truth(made).properties if p.id == "2b")
    assert iterable.whole == [["list", [["int", k] for k in range(5)]]]
    for stated in ("[[0, 1, 2]]", "[[0, 1, 2, 3, 4]]", "[[0, 1, ..., 4]]"):
        score = TASK.score(made, answer({**EARLY_RIGHT, "2b": stated}, "2"), sandbox)
        assert (score.extra["class"], score.extra["fired"]) == ("coherent_correct", {}), stated
    for stated in ("[[0, 1, 2, 3]]", "[[0, 1]]"):
        score = TASK.score(made, answer({**EARLY_RIGHT, "2b": stated}, "2"), sandbox)
        assert score.extra["fired"] == {"rule3": ["2b"]}, stated
    wrong_output = TASK.score(made, answer({**EARLY_RIGHT, "2b": "[[0, 1, 2, 3, 4]]"}, "4"),
                              sandbox)
    assert wrong_output.extra["divergence"]["kind"] == "output"


def test_a_loop_that_runs_to_its_end_has_one_truth(sandbox: Sandbox) -> None:
    made = instance(sandbox, EARLY, "first_even", "[1, 3]")
    assert all(p.whole is None and "whole" not in p.to_record() for p in truth(made).properties)


STATEFUL = """\
calls = []


def take(xs):
    calls.append(1)
    return xs[:len(calls)]


def f(xs):
    calls.append(0)
    out = []
    for x in take(xs):
        out.append(x)
    return out
"""


def test_a_compound_that_does_not_reproduce_outside_the_run_is_not_checked(
        sandbox: Sandbox) -> None:
    # `take` reads state the call changed first: evaluated again on the same `xs` it
    # gives another value, so Rule 1 cannot judge this iterable (found at build time).
    made = instance(sandbox, STATEFUL, "f", "[4, 5, 6]")
    assert truth(made).compounds == ()
    assert [u.id for u in truth(made).unchecked] == ["12b"]
    lines = {"12a": "[4]", "12b": "[[4]]", "12c": "[[4, 5, 6]]"}
    score = TASK.score(made, answer(lines, "[4]"), sandbox)
    assert (score.extra["class"], score.extra["fired"]) == ("coherent_incorrect", {})
