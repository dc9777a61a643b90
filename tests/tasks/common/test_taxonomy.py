"""The error taxonomy on hand-made wrong answers: small programs traced with the real
tracer in the sandbox, instances built as a suite builds them, answers written by hand,
each with the label and the line its first divergence should get; right answers get no
label, and hostile answers get ``format`` (or a label) without a crash."""

from __future__ import annotations

import json

import pytest

from execbench.program import Call, Program
from execbench.sandbox.pool import Job, Sandbox
from execbench.tasks import get_task
from execbench.tasks.base import CORRECT, INCORRECT, UNPARSABLE, BuildContext, Instance
from execbench.tasks.common.extract import MAX_ANSWER_CHARS
from execbench.tasks.common.taxonomy_payload import LABEL_KEY, LABELS, LINE_KEY
from execbench.tasks.registry import judge
from tests.helpers.programs import EVERY_STATEMENT, SPLIT_SUM

RANGE = """\
def g(n):
    hits = 0
    for i in range(n):
        if i > 0 and i % 2 == 0:
            hits += 1
    return hits * 10
"""
WHILE = """\
def h(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps
"""
PICK = """\
def p(xs):
    best = xs[0]
    for x in xs:
        if x > best:
            best = x
    return best
"""
BRANCHY = """\
def f(x, ys):
    total = 0
    if x > 0:
        total += x
    else:
        total -= x
    for y in ys:
        if y % 2:
            total += y
    # nothing runs here
    return total
"""
UPPER = """\
def g(words):
    out = []
    for w in words:
        out.append(w.upper())
    return out
"""
CALLS = {"split": (SPLIT_SUM, "f", "'a,bcd,ef,ghij'"), "range": (RANGE, "g", "5"),
         "while": (WHILE, "h", "6"), "pick": (PICK, "p", "[3, 9, 4]"),
         "branchy": (BRANCHY, "f", "2, [2, 4]"), "facts": (EVERY_STATEMENT, "f", "[1, 2, 9], 4"),
         "upper": (UPPER, "g", "['a', 'b']")}
BUILT = {"simulation": ("split", "range", "while", "pick"), "coverage": ("branchy",),
         "statement": ("facts",), "loop": ("facts", "upper"), "branch": ("facts",),
         "output": ("pick",)}


@pytest.fixture(scope="module")
def instances(sandbox: Sandbox) -> dict[str, Instance]:
    """Every instance of the tasks above, by ``task/program[/variant]``."""
    found = {}
    for task_name, programs in BUILT.items():
        task = get_task(task_name)
        for key in programs:
            code, entry, args = CALLS[key]
            program = Program(f"t/{key}", "t", code, entry, (Call(args),))
            trace = sandbox.run(Job(code, entry, args, task.building.trace_options))
            ctx = BuildContext(seed=0, sandbox=sandbox, options={"questions": "20"}
                               if task_name in ("statement", "loop", "branch") else {})
            for payload in task.building.build(program, 0, trace, ctx):
                made = Instance.build(task_name, program, 0, payload)
                variant = f"/{made.variant}" if made.variant else ""
                found[f"{task_name}/{key}{variant}"] = made
    return found


def simulation(values: dict[str, str], output: str) -> str:
    lines = "\n".join(f"[{tag}] = {value}" for tag, value in values.items())
    return f"I follow the run.\n[ANSWER]\n{lines}\n[output] = {output}\n[/ANSWER]"


SPLIT_RIGHT = {"4a": "['bcd', 'ef', 'ghij']", "4b": "[['bcd', 'ef', 'ghij']]",
               "4c": "[['a', 'bcd', 'ef', 'ghij']]", "5a": "[True, False, True]",
               "5b": "[True, False, True]"}
RANGE_RIGHT = {"3a": "[0, 1, 2, 3, 4]", "3b": "[[0, 1, 2, 3, 4]]", "3c": "[5]",
               "4a": "[False, False, True, False, True]",
               "4b": "[False, True, True, True, True]",
               "4c": "[None, False, True, False, True]",
               "4d": "[False, False, True, False, True]"}
WHILE_RIGHT = {"3a": "[6, 3, 10, 5, 16, 8, 4, 2, 1]",
               "3b": "[True, True, True, True, True, True, True, True, False]",
               "3c": "[True, True, True, True, True, True, True, True, False]"}
PICK_RIGHT = {"3a": "[3, 9, 4]", "3b": "[[3, 9, 4]]", "4a": "[False, True, False]",
              "4b": "[False, True, False]"}


def changed(right: dict[str, str], **tags: str | None) -> dict[str, str]:
    """The right values with some replaced (None leaves the placeholder out)."""
    return {tag: tags.get(f"t{tag}", value) for tag, value in right.items()
            if tags.get(f"t{tag}", value) is not None}


def answer(text: str) -> str:
    return f"[ANSWER]\n{text}\n[/ANSWER]"


def coverage(lines: list[int]) -> str:
    return answer(json.dumps({"executed_lines": lines}))


# (instance key, response, label, line): each wrong answer written by hand, with the
# label and line its first divergence gets (see the module doc of common.taxonomy).
WRONG = [
    # simulation: the slice taken as the whole list, a value the run held elsewhere
    ("simulation/split", simulation(changed(
        SPLIT_RIGHT, t4b="[['a', 'bcd', 'ef', 'ghij']]"), "7"), "computation", 4),
    # a predicate misjudged on the second turn (the branch follows it)
    ("simulation/split", simulation(changed(
        SPLIT_RIGHT, t5a="[True, True, True]", t5b="[True, True, True]"), "9"),
     "control_flow", 5),
    # every property right, a returned total no value of the run holds: made up
    ("simulation/split", simulation(SPLIT_RIGHT, "9"), "hallucination", 7),
    # a branch placeholder left out
    ("simulation/split", simulation(changed(SPLIT_RIGHT, t5b=None), "7"), "format", 5),
    # a loop variable with one turn too many
    ("simulation/split", simulation(changed(SPLIT_RIGHT, t4a="['bcd', 'ef', 'ghij', 'k']"),
                                    "7"), "control_flow", 4),
    # range read as running to n inclusive: the builtin's behaviour
    ("simulation/range", simulation(changed(
        RANGE_RIGHT, t3b="[[1, 2, 3, 4, 5]]", t3a="[1, 2, 3, 4, 5]"), "20"),
     "api_behaviour", 3),
    # the second clause of an `and` misjudged
    ("simulation/range", simulation(changed(
        RANGE_RIGHT, t4c="[None, True, True, False, True]"), "20"), "control_flow", 4),
    # every property right, the product in the return miscomputed
    ("simulation/range", simulation(RANGE_RIGHT, "2"), "computation", 6),
    # a while loop's variable miscomputed on its third value (3 * 3 + 1 taken as 9)
    ("simulation/while", simulation(changed(
        WHILE_RIGHT, t3a="[6, 3, 9, 5, 16, 8, 4, 2, 1]"), "8"), "computation", 4),
    # the loop's condition stated for one evaluation fewer
    ("simulation/while", simulation(changed(
        WHILE_RIGHT, t3b="[True, True, True, True, True, True, True, False]",
        t3c="[True, True, True, True, True, True, True, False]"), "7"), "control_flow", 3),
    # the list's items taken in another order: values of the run, in the wrong place
    ("simulation/pick", simulation(changed(PICK_RIGHT, t3a="[3, 4, 9]"), "9"),
     "computation", 3),
    # an item the list never holds
    ("simulation/pick", simulation(changed(PICK_RIGHT, t3a="[3, 7, 4]"), "9"),
     "hallucination", 3),
    # every property right, the first item returned (a value the run held)
    ("simulation/pick", simulation(PICK_RIGHT, "3"), "computation", 6),
    # every property right, a maximum no value of the run holds
    ("simulation/pick", simulation(PICK_RIGHT, "12"), "hallucination", 6),
    # coverage: a comment line stated as run
    ("coverage/branchy", coverage([1, 2, 3, 4, 7, 8, 10, 11]), "hallucination", 10),
    # the else arm stated as run: the `if` on line 3 misjudged
    ("coverage/branchy", coverage([1, 2, 3, 6, 7, 8, 11]), "control_flow", 3),
    # the inner `if` taken for an even number
    ("coverage/branchy", coverage([1, 2, 3, 4, 7, 8, 9, 11]), "control_flow", 8),
    # the inner `if` left out: the loop on line 7 stated not to enter its body
    ("coverage/branchy", coverage([1, 2, 3, 4, 7, 11]), "control_flow", 7),
    # a statement skipped in a block stated to run (line 3 is in its block)
    ("coverage/branchy", coverage([1, 3, 4, 7, 8, 11]), "control_flow", 2),
    # a line past the end of the program
    ("coverage/branchy", coverage([1, 2, 3, 4, 7, 8, 11, 42]), "hallucination", 42),
    # CodeSense statements, by kind
    ("statement/facts/L3", answer("9"), "computation", 3),
    ("statement/facts/L8", answer("'12'"), "api_behaviour", 8),
    ("statement/facts/L2", answer("10"), "hallucination", 2),
    ("statement/facts/L5", answer("True"), "control_flow", 5),
    # CodeSense loops: a count, a total summed wrong, a list built by a method
    ("loop/facts/L4-iterations", answer("2"), "control_flow", 4),
    ("loop/facts/L4-total-after", answer("20"), "computation", 7),
    ("loop/upper/L3-out-after", answer("['a', 'b']"), "api_behaviour", 4),
    # CodeSense branch: a line under the `if` on line 9 said to run
    ("branch/facts/L10", answer("yes"), "control_flow", 9),
    ("branch/facts/L6", answer("no"), "control_flow", 5),
    # output: a string where the call only ever holds ints
    ("output/pick", answer("'nine'"), "hallucination", None),
]

UNDECIDED = [
    # a loop variable copied from a list: without the run's values, not decidable
    ("loop/facts/L4-x-1", answer("4")),
    # an int output where ints were on the path: the output task keeps no states
    ("output/pick", answer("4")),
]


@pytest.mark.parametrize(("key", "response", "label", "line"), WRONG)
def test_a_wrong_answer_gets_its_label_and_line(instances: dict[str, Instance],
                                                sandbox: Sandbox, key: str, response: str,
                                                label: str, line: int | None) -> None:
    score = judge(instances[key], response, sandbox)
    assert score.verdict == INCORRECT, score.detail
    assert (score.extra.get(LABEL_KEY), score.extra.get(LINE_KEY)) == (label, line)


def test_there_are_enough_hand_made_answers_over_every_value_label() -> None:
    assert len(WRONG) >= 20
    assert {label for *_, label, _ in WRONG} == set(LABELS) - {"null"}


@pytest.mark.parametrize(("key", "response"), UNDECIDED)
def test_what_no_rule_decides_gets_no_label(instances: dict[str, Instance], sandbox: Sandbox,
                                            key: str, response: str) -> None:
    score = judge(instances[key], response, sandbox)
    assert score.verdict == INCORRECT
    assert LABEL_KEY not in score.extra


@pytest.mark.parametrize("key", sorted({key for key, *_ in WRONG} | {
    key for key, _ in UNDECIDED}))
def test_right_answers_get_no_label(instances: dict[str, Instance], sandbox: Sandbox,
                                    key: str) -> None:
    made = instances[key]
    score = judge(made, get_task(made.task).asking.reference_response(made), sandbox)
    assert score.verdict == CORRECT
    assert LABEL_KEY not in score.extra and LINE_KEY not in score.extra


@pytest.mark.parametrize(("response", "label"), [
    (None, "null"), ("", "null"), ("   \n", "null"), ("[ANSWER]\n[/ANSWER]", "null"),
    ("[ANSWER]\nthe lines that ran\n[/ANSWER]", "format"),
    ("[ANSWER]\n[1, 'two']\n[/ANSWER]", "format"),
])
def test_unreadable_answers_are_null_or_format(instances: dict[str, Instance],
                                               sandbox: Sandbox, response: str | None,
                                               label: str) -> None:
    score = judge(instances["coverage/branchy"], response, sandbox)
    assert score.verdict == UNPARSABLE
    assert (score.extra[LABEL_KEY], score.extra[LINE_KEY]) == (label, None)


HOSTILE = [
    "[ANSWER]\n" + "[" * 100_000 + "\n[/ANSWER]",
    "[ANSWER]\n" + "9" * (MAX_ANSWER_CHARS + 10) + "\n[/ANSWER]",
    "\u202e\x00" * 50_000,
    "[ANSWER]\n[" + ", ".join(["2305843009213693951"] * 70) + "]\n[/ANSWER]",
]


@pytest.mark.parametrize("key", ["coverage/branchy", "simulation/split", "output/pick",
                                 "statement/facts/L8", "loop/facts/L4-iterations"])
@pytest.mark.parametrize("response", HOSTILE, ids=["brackets", "over-cap", "controls",
                                                   "alike"])
def test_a_hostile_answer_gets_format_or_a_label_without_a_crash(
        instances: dict[str, Instance], sandbox: Sandbox, key: str, response: str) -> None:
    score = judge(instances[key], response, sandbox)
    assert score.verdict in (UNPARSABLE, INCORRECT), score.detail
    label = score.extra.get(LABEL_KEY)
    assert label == "format" if score.verdict == UNPARSABLE else label in (None, *LABELS)


def test_a_long_simulation_answer_is_labelled_from_what_scoring_read(
        instances: dict[str, Instance], sandbox: Sandbox) -> None:
    """A loop variable listed with 40,000 made-up turns: labelled by its count."""
    values = changed(PICK_RIGHT, t3a="[3, 9, 4" + ", 7" * 40_000 + "]")
    score = judge(instances["simulation/pick"], simulation(values, "9"), sandbox)
    assert (score.extra[LABEL_KEY], score.extra[LINE_KEY]) == ("control_flow", 3)
