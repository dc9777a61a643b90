"""The CodeSense prompts: one question about one run of a function, in our words.

Every prompt shows the function with its line numbers, then the question its fact asks
(``facts``): for a statement, the statement and the values of the variables it reads just
before it runs; for the other kinds, the call. With ``--shots k`` the first k worked
examples of the kind come first, answered in the same format (a concrete value, or, with
abstract values, the category name after the category definitions). The examples are
questions about small functions of our own, answered by running them (a test checks each
against the facts derived from its run).
"""

from __future__ import annotations

from dataclasses import dataclass

from execbench.json_types import JSONObject
from execbench.program import PYTHON
from execbench.tasks.codesense.derive import BlockRun
from execbench.tasks.codesense.facts import (
    ABSTRACT,
    BlockFact,
    BranchFact,
    Fact,
    LoopFact,
    OutputFact,
    StatementFact,
)
from execbench.tasks.common import abstract
from execbench.tasks.common.code import numbered
from execbench.tasks.common.objects import OBJECTS_NOTE
from execbench.values import Encoded


@dataclass(frozen=True)
class Example:
    code: str
    call: str
    fact: JSONObject
    value: Encoded
    """The answer's value (typed JSON)."""


_SCALE = """\
def scale(xs, k):
    total = 0
    for x in xs:
        total += x * k
    name = 'Box'.lower()
    if total > 3:
        return name
    return total"""

_SWAP = """\
def swap(a, i, j):
    temp = a[i]
    a[i] = a[j]
    a[j] = temp
    return a"""

_VOWELS = """\
def count_vowels(word):
    n = 0
    for ch in word:
        if ch in 'aeiou':
            n += 1
    return n"""

_SIGN = """\
def sign(x):
    if x > 0:
        return 'positive'
    elif x < 0:
        return 'negative'
    return 'zero'"""

_JOIN = """\
def f(words, sep):
    kept = [w.upper() for w in words if len(w) > 2]
    return sep.join(kept)"""


def _block(size: int, lines: list[int], after: dict[str, Encoded]) -> Example:
    return Example(_SWAP, "swap([5, 7, 9], 0, 2)",
                   BlockRun(size, tuple(lines), after).to_record(),
                   ["dict", [[["str", k], v] for k, v in after.items()]])


_LIST_957 = ["list", [["int", 9], ["int", 7], ["int", 9]]]
EXAMPLES: dict[type[Fact], tuple[Example, ...]] = {
    StatementFact: (
        Example(_SCALE, "scale([1, 2], 3)",
                {"task": "statement", "line": 4, "statement": "total += x * k",
                 "kind": "arithmetic", "before": {"total": ["int", 0], "x": ["int", 1],
                                                  "k": ["int", 3]}}, ["int", 3]),
        Example(_SCALE, "scale([1, 2], 3)",
                {"task": "statement", "line": 5, "statement": "name = 'Box'.lower()",
                 "kind": "call", "before": {}}, ["str", "box"]),
        Example(_SCALE, "scale([1, 2], 3)",
                {"task": "statement", "line": 6, "statement": "if total > 3:",
                 "kind": "branch", "before": {"total": ["int", 9]}}, ["bool", True]),
    ),
    BlockFact: (
        _block(1, [2], {"temp": ["int", 5]}),
        _block(2, [2, 3], {"a": _LIST_957, "temp": ["int", 5]}),
        _block(3, [2, 3, 4], {"a": ["list", [["int", 9], ["int", 7], ["int", 5]]],
                              "temp": ["int", 5]}),
    ),
    LoopFact: (
        Example(_VOWELS, "count_vowels('idea')",
                {"task": "loop", "line": 3, "question": "iterations"}, ["int", 4]),
        Example(_VOWELS, "count_vowels('idea')",
                {"task": "loop", "line": 3, "question": "body", "variable": "n",
                 "iteration": 2}, ["int", 1]),
        Example(_VOWELS, "count_vowels('idea')",
                {"task": "loop", "line": 3, "question": "after", "variable": "n"},
                ["int", 3]),
    ),
    BranchFact: (
        Example(_SIGN, "sign(-2)", {"task": "branch", "line": 3}, ["bool", False]),
        Example(_SIGN, "sign(-2)", {"task": "branch", "line": 5}, ["bool", True]),
        Example(_SIGN, "sign(-2)", {"task": "branch", "line": 6}, ["bool", False]),
    ),
    OutputFact: (
        Example(_JOIN, "f(['ox', 'cat', 'bird'], '-')", {}, ["str", "CAT-BIRD"]),
        Example(_JOIN, "f(['ox', 'cat'], '+')", {}, ["str", "CAT"]),
        Example(_JOIN, "f(['ox'], '+')", {}, ["str", ""]),
    ),
}
"""Worked examples of each kind, in the order ``--shots`` takes them."""


def answer_text(fact: Fact, values: str, value: Encoded) -> str:
    """The answer stating ``value`` in the format ``fact``'s prompt asks for."""
    text = abstract.category(value) if values == "abstract" else fact.answer_text(value)
    return f"[ANSWER]\n{text}\n[/ANSWER]"


def question(fact: Fact, code: str, call: str) -> str:
    """The question part of a prompt (without the format line)."""
    return f"{fact.language.code(numbered(code))}\n\n{fact.question(call)}"


def render(fact: Fact, values: str, shots: int, code: str, call: str,
           objects: bool = False) -> str:
    """The whole prompt: intro, answer format, ``shots`` worked examples, the question.
    The worked examples are Python functions answered with Python literals, so a question
    in another language gets none (its format line says how its values are written).
    With ``objects`` (the run's values hold objects) the format says how they are
    written."""
    answer_format = ABSTRACT if values == "abstract" else fact.format_line
    parts = [fact.introduction, f"{answer_format}\n{OBJECTS_NOTE}" if objects
             else answer_format]
    examples = EXAMPLES.get(type(fact), ()) if fact.language.key == PYTHON else ()
    for example in examples[:shots]:
        shown = type(fact)(example.fact)
        parts.append("Example:\n\n" + question(shown, example.code, example.call))
        parts.append(answer_text(shown, values, example.value))
    parts.append(question(fact, code, call))
    return "\n\n".join(parts)
