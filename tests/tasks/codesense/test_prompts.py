"""The CodeSense prompts, and their worked examples checked against real runs."""

from __future__ import annotations

import pytest

from execbench.sandbox.pool import Job, Sandbox
from execbench.sandbox.trace import TraceOptions
from execbench.tasks.codesense.facts import BranchFact, Fact, LoopFact, OutputFact, facts_for
from execbench.tasks.codesense.prompts import EXAMPLES, variables
from execbench.tasks.protocol import Protocol
from execbench.tasks.templating import render as render_template
from execbench.tasks.templating import shipped
from execbench.values import equal


def render(fact: Fact, values: str, shots: int, code: str, call: str) -> str:
    """The shipped CodeSense prompt of ``fact``, as shipped."""
    protocol = Protocol(shots=shots)
    return render_template(shipped("codesense"), {
        "style": protocol.style, "shots": shots,
        **variables(fact, values, protocol, code, call)})


def _run(sandbox: Sandbox, code: str, call: str):
    entry, _, args = call.partition("(")
    return sandbox.run(Job(code, entry, args[:-1], TraceOptions(states=True)))


@pytest.mark.parametrize("kind", list(EXAMPLES), ids=lambda kind: kind.task)
def test_every_worked_example_states_what_its_run_does(sandbox: Sandbox,
                                                       kind: type[Fact]) -> None:
    for example in EXAMPLES[kind]:
        trace = _run(sandbox, example.code, example.call)
        if kind is OutputFact:
            assert equal(trace.value, example.value), example.call
            continue
        if kind is BranchFact:
            assert (example.fact["line"] in trace.lines) is example.value[1], example.fact
            continue
        entry = example.call.partition("(")[0]
        derived = facts_for(kind, example.code, entry, trace)
        keys = ("line", "question", "variable", "iteration", "size", "before")
        same = [f for f in derived if all(f.get(k) == example.fact.get(k) for k in keys)]
        assert same, example.fact
        fact = kind.read(same[0])
        assert fact is not None and equal(fact.asked, example.value), example.fact


def test_a_prompt_numbers_the_code_and_shows_k_examples() -> None:
    code = "def f(x):\n    return x\n"
    fact = BranchFact({"task": "branch", "line": 2})
    zero = render(fact, "concrete", 0, code, "f(1)")
    assert "1  def f(x):\n2      return x" in zero and "Example" not in zero
    assert "Is line 2 executed" in zero and "yes or no" in zero
    three = render(fact, "concrete", 3, code, "f(1)")
    assert three.count("Example:") == 3 and three.count("[ANSWER]\nno\n[/ANSWER]") == 2


def test_abstract_prompts_define_the_categories_and_answer_with_one() -> None:
    fact = LoopFact({"task": "loop", "line": 3, "question": "iterations"})
    text = render(fact, "abstract", 2, "def f():\n    pass\n", "f()")
    assert "Positive Regular (0 < v <= 10)" in text and "a bool is never filed" in text
    assert text.count("[ANSWER]\nPositive Regular\n[/ANSWER]") == 2


def test_a_published_in_loop_fact_asks_about_its_line_not_the_loop_iteration() -> None:
    code = "def f(xs):\n    for x in xs:\n        y = x * 2\n    return y\n"
    derived = {"task": "loop", "line": 2, "question": "body", "variable": "y", "iteration": 2}
    published = {**derived, "at": 3}
    assert "at the end of the 2nd iteration of this loop" in render(
        LoopFact(derived), "concrete", 0, code, "f([1, 2])")
    text = render(LoopFact(published), "concrete", 0, code, "f([1, 2])")
    assert "Loop on line 2" in text
    assert "value of `y` just after line 3 has run for the 2nd time" in text
