"""Calls that return or hold dict views: their truth is what the view holds (a list, in
order; ``dict_items`` as ``(key, value)`` tuples), shown as Python prints it, and answered
either way. Before, a view was an opaque object: no question asked about it, and an
answer written ``dict_keys([...])`` was unreadable."""

from __future__ import annotations

import json

import pytest

from execbench.sandbox.pool import Sandbox
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks import get_task
from execbench.tasks.base import CORRECT, INCORRECT, Instance

PROGRAMS = [
    {"id": "keys", "entry_point": "f", "calls": ["{'b': 1, 'a': 2}"],
     "code": "def f(d):\n    d['c'] = 3\n    return d.keys()\n"},
    {"id": "items", "entry_point": "g", "calls": ["{'x': [1]}"],
     "code": "def g(d):\n    view = d.items()\n    return view\n"},
]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Instance]:
    folder = tmp_path_factory.mktemp("views")
    source = folder / "views.jsonl"
    source.write_text("".join(json.dumps(record) + "\n" for record in PROGRAMS))
    build_suite([str(source)], folder / "suite",
                BuildOptions(tasks=["output", "input", "statement"], workers=1))
    return {made.id: made for made in load_suite(folder / "suite")[1]}


def test_a_returned_view_is_asked_with_its_contents_as_truth(built: dict[str, Instance]) -> None:
    keys = built["output/views/keys/0"]
    assert keys.data["truth"] == {"repr": "dict_keys(['b', 'a', 'c'])",
                                  "value": ["list", [["str", "b"], ["str", "a"], ["str", "c"]]]}
    items = built["output/views/items/0"]
    assert items.data["truth"]["repr"] == "dict_items([('x', [1])])"
    assert built["input/views/keys/0"].data["truth"]["output_repr"] == \
        "dict_keys(['b', 'a', 'c'])"


@pytest.mark.parametrize(("answer", "verdict", "matched"), [
    ("dict_keys(['b', 'a', 'c'])", CORRECT, True),
    ("['b', 'a', 'c']", CORRECT, False),          # the contents: strict-right, other text
    ("dict_keys(['a', 'b', 'c'])", INCORRECT, False),  # another order
    ("dict_values(['b', 'a', 'c'])", CORRECT, False),  # a view is its contents, whichever
    ("{'b', 'a', 'c'}", INCORRECT, False),
])
def test_a_view_answer_reads_as_its_contents(built: dict[str, Instance], answer: str,
                                             verdict: str, matched: bool) -> None:
    score = get_task("output").judging.score(built["output/views/keys/0"],
                                             f"[ANSWER]\nassert f() == {answer}\n[/ANSWER]",
                                             None)
    assert (score.verdict, score.extra["string_match"]) == (verdict, matched)


def test_the_oracle_answers_every_view_question(built: dict[str, Instance],
                                                sandbox: Sandbox) -> None:
    for made in built.values():
        task = get_task(made.task)
        score = task.judging.score(made, task.asking.reference_response(made), sandbox)
        assert score.verdict == CORRECT, (made.id, score.detail)


def test_a_variable_holding_a_view_is_asked_about(built: dict[str, Instance]) -> None:
    """``view = d.items()`` is a statement whose value is now a value: its question is
    asked, and answered either way."""
    [made] = [m for m in built.values() if m.task == "statement"
              and m.program_id == "views/items" and m.data["fact"]["line"] == 2]
    assert made.data["truth"]["value"] == ["list", [["tuple", [["str", "x"],
                                                               ["list", [["int", 1]]]]]]]
    task = get_task("statement")
    for answer in ("dict_items([('x', [1])])", "[('x', [1])]"):
        score = task.judging.score(made, f"[ANSWER]\n{answer}\n[/ANSWER]", None)
        assert score.verdict == CORRECT, answer


def test_input_answers_are_checked_against_the_views_contents(
        built: dict[str, Instance], sandbox: Sandbox) -> None:
    made = built["input/views/keys/0"]
    task = get_task("input")
    right = task.judging.score(made, "[ANSWER]\nassert f({'b': 0, 'a': 0}) == "
                               "dict_keys(['b', 'a', 'c'])\n[/ANSWER]", sandbox)
    wrong = task.judging.score(made, "[ANSWER]\nassert f({'a': 0, 'b': 0}) == "
                               "dict_keys(['b', 'a', 'c'])\n[/ANSWER]", sandbox)
    assert (right.verdict, wrong.verdict) == (CORRECT, INCORRECT)
