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
from typing import Any

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
from execbench.tasks.protocol import DIRECT, REASONING, Protocol
from execbench.tasks.templating import CALL, NUMBERED_CODE, TemplateVar
from execbench.values import Encoded


@dataclass(frozen=True)
class Example:
    code: str
    call: str
    fact: JSONObject
    value: Encoded
    """The answer's value (typed JSON)."""
    worked: str = ""
    """The run worked out, shown before the answer in reasoning style."""


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


_SCALE_RUN = ("total starts at 0. The loop takes x = 1 (total becomes 1 * 3 = 3), then "
              "x = 2 (total becomes 3 + 6 = 9). name = 'Box'.lower() is 'box'. 9 > 3, so "
              "the call returns 'box'.")
_SWAP_RUN = ("temp = a[0] is 5. a[0] = a[2] makes a [9, 7, 9]. a[2] = temp makes a "
             "[9, 7, 5], which the call returns.")
_VOWELS_RUN = ("The loop on line 3 takes 'i', 'd', 'e', 'a': four turns. n is 1 after 'i', "
               "still 1 after 'd', 2 after 'e' and 3 after 'a'; the call returns 3.")
_SIGN_RUN = ("x is -2. x > 0 is false, so line 3 does not run; x < 0 is true, so line 5 runs "
             "and returns 'negative': line 6 never runs.")


def _joined(words: list[str], sep: str) -> str:
    kept = [w.upper() for w in words if len(w) > 2]
    return (f"kept holds the words longer than two letters, upper-cased: {kept!r}; joined "
            f"with {sep!r} that is {sep.join(kept)!r}, which the call returns.")


def _block(size: int, lines: list[int], after: dict[str, Encoded]) -> Example:
    return Example(_SWAP, "swap([5, 7, 9], 0, 2)",
                   BlockRun(size, tuple(lines), after).to_record(),
                   ["dict", [[["str", k], v] for k, v in after.items()]], _SWAP_RUN)


_LIST_957 = ["list", [["int", 9], ["int", 7], ["int", 9]]]
EXAMPLES: dict[type[Fact], tuple[Example, ...]] = {
    StatementFact: (
        Example(_SCALE, "scale([1, 2], 3)",
                {"task": "statement", "line": 4, "statement": "total += x * k",
                 "kind": "arithmetic", "before": {"total": ["int", 0], "x": ["int", 1],
                                                  "k": ["int", 3]}}, ["int", 3], _SCALE_RUN),
        Example(_SCALE, "scale([1, 2], 3)",
                {"task": "statement", "line": 5, "statement": "name = 'Box'.lower()",
                 "kind": "call", "before": {}}, ["str", "box"], _SCALE_RUN),
        Example(_SCALE, "scale([1, 2], 3)",
                {"task": "statement", "line": 6, "statement": "if total > 3:",
                 "kind": "branch", "before": {"total": ["int", 9]}}, ["bool", True],
                _SCALE_RUN),
    ),
    BlockFact: (
        _block(1, [2], {"temp": ["int", 5]}),
        _block(2, [2, 3], {"a": _LIST_957, "temp": ["int", 5]}),
        _block(3, [2, 3, 4], {"a": ["list", [["int", 9], ["int", 7], ["int", 5]]],
                              "temp": ["int", 5]}),
    ),
    LoopFact: (
        Example(_VOWELS, "count_vowels('idea')",
                {"task": "loop", "line": 3, "question": "iterations"}, ["int", 4],
                _VOWELS_RUN),
        Example(_VOWELS, "count_vowels('idea')",
                {"task": "loop", "line": 3, "question": "body", "variable": "n",
                 "iteration": 2}, ["int", 1], _VOWELS_RUN),
        Example(_VOWELS, "count_vowels('idea')",
                {"task": "loop", "line": 3, "question": "after", "variable": "n"},
                ["int", 3], _VOWELS_RUN),
    ),
    BranchFact: (
        Example(_SIGN, "sign(-2)", {"task": "branch", "line": 3}, ["bool", False], _SIGN_RUN),
        Example(_SIGN, "sign(-2)", {"task": "branch", "line": 5}, ["bool", True], _SIGN_RUN),
        Example(_SIGN, "sign(-2)", {"task": "branch", "line": 6}, ["bool", False], _SIGN_RUN),
    ),
    OutputFact: (
        Example(_JOIN, "f(['ox', 'cat', 'bird'], '-')", {}, ["str", "CAT-BIRD"],
                _joined(["ox", "cat", "bird"], "-")),
        Example(_JOIN, "f(['ox', 'cat'], '+')", {}, ["str", "CAT"], _joined(["ox", "cat"], "+")),
        Example(_JOIN, "f(['ox'], '+')", {}, ["str", ""], _joined(["ox"], "+")),
    ),
}
"""Worked examples of each kind, in the order ``--shots`` takes them."""


def answer_text(fact: Fact, values: str, value: Encoded) -> str:
    """The answer stating ``value`` in the format ``fact``'s prompt asks for."""
    text = abstract.category(value) if values == "abstract" else fact.answer_text(value)
    return f"[ANSWER]\n{text}\n[/ANSWER]"


def variables(fact: Fact, values: str, protocol: Protocol, code: str, call: str,
              objects: bool = False) -> dict[str, Any]:
    """The variables of the ``codesense`` template: the fact's introduction (in the
    protocol's style), answer format and question, the numbered code, and the first
    ``protocol.shots`` worked examples of its kind.
    The worked examples are Python functions answered with Python literals, so a question
    in another language gets none (its format line says how its values are written).
    With ``objects`` (the run's values hold objects) the format says how they are
    written."""
    examples = EXAMPLES.get(type(fact), ()) if fact.language.key == PYTHON else ()
    shown = [_asked(type(fact)(example.fact), example.code, example.call)
             | {"answer": answer_text(type(fact)(example.fact), values, example.value),
                "worked": example.worked if protocol.style == REASONING else ""}
             for example in examples[:protocol.shots]]
    introduction = fact.direct_introduction if protocol.style == DIRECT else fact.introduction
    return {**_asked(fact, code, call), "introduction": introduction,
            "answer_format": ABSTRACT if values == "abstract" else fact.format_line,
            "objects": objects, "objects_note": OBJECTS_NOTE, "call": call,
            "examples": shown}


def _asked(fact: Fact, code: str, call: str) -> dict[str, Any]:
    """The question's part of the variables: the code as shown, and what is asked."""
    return {"code": code, "numbered_code": numbered(code), "code_tag": fact.language.tag,
            "question": fact.question(call)}


TEMPLATE_VARS = (
    TemplateVar("introduction", "what the question is about, for its kind of fact"),
    TemplateVar("answer_format", "how to write the answer (a value, or with -T "
                "values=abstract its category after the category definitions)"),
    TemplateVar("question", "the question itself (the call, the statement, the line)"),
    NUMBERED_CODE,
    TemplateVar("code_tag", "the tag around the code: PYTHON, C or JAVA"),
    CALL,
    TemplateVar("objects", "True when the run's values hold objects"),
    TemplateVar("objects_note", "how an object is written in an answer"),
)
"""The ``codesense`` template's variables beyond the common ones."""
