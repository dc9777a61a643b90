"""The CodeSense prompts: one question about one run of a function, in our words.

Every prompt shows the function with its line numbers, then the question: for a
statement, the statement and the values of the variables it reads just before it runs;
for the other tasks, the call. With ``--shots k`` the first k worked examples of the task
come first, answered in the same format (a concrete value, or, with abstract values, the
category name after the category definitions). The examples are questions about small
functions of our own, answered by running them (a test checks each against the facts
derived from its run).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from execbench.sandbox.values import to_literal
from execbench.tasks.codesense import abstract

FORMAT = {
    "concrete": "Write the value as a Python literal (no variables, calls or expressions). "
                "Put the answer, and nothing else, between [ANSWER] and [/ANSWER] (or "
                "between <ans> and </ans>).",
    "abstract": "Do not give the value itself: give the name of its category, chosen from "
                "the definitions below, between [ANSWER] and [/ANSWER] (or between <ans> "
                "and </ans>).\n\nCategories, by the type of the value:\n"
                + abstract.DEFINITIONS,
    "mapping": "Write the answer as a Python dict literal from variable name to value, "
               "such as {'x': 1, 'items': [2]}, with every value a Python literal. Put it, "
               "and nothing else, between [ANSWER] and [/ANSWER] (or between <ans> and "
               "</ans>).",
    "yes/no": "Answer yes or no, between [ANSWER] and [/ANSWER] (or between <ans> and "
              "</ans>).",
}

INTRO = {
    "statement": "Below is a Python function, one of its statements, and the values the "
                 "variables that statement reads hold just before it runs. Work out the "
                 "statement's value once it has run: for an assignment, the value it gives "
                 "its target (a tuple of the values, in order, when it assigns several "
                 "names); for an `if`, `elif` or `while` line, True if execution enters "
                 "its body and False if not.",
    "block": "Below is a Python function and a call to it. Follow the call from the start "
             "of the function through its first statements (every statement executed "
             "counts, a loop header each time it is reached) and say which local "
             "variables then hold a value different from the one they had when the call "
             "began (including variables created by then), and what those values are.",
    "loop": "Below is a Python function and a call to it. The question is about the loop "
            "on the given line, the first time the call reaches it (that one run of the "
            "loop, until execution leaves it).",
    "branch": "Below is a Python function and a call to it. Say whether the given line is "
              "executed at any point during the call (in any call of the function the "
              "call makes, recursive ones included).",
    "output": "Below is a Python function together with a call to it. Work out what the "
              "call returns by following the code step by step.",
}


def numbered(code: str) -> str:
    lines = code.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{n:>{width}}  {line}" for n, line in enumerate(lines, 1))


def _values(names: dict[str, list]) -> str:
    if not names:
        return "(it reads no variables)"
    return ", ".join(f"{name} = {_shown(value)}" for name, value in names.items())


def _shown(value: list) -> str:
    """A value as a prompt shows it: a literal, or the recorded text of an opaque one."""
    try:
        return to_literal(value)
    except ValueError:
        return str(value[-1])


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _body_question(fact: dict[str, Any]) -> str:
    """A published in-loop fact counts the values its variable took at one line (``at``),
    not the loop's iterations: a line inside the body may run several times per
    iteration, or not at all, so the question names that line."""
    variable, nth = fact.get("variable"), _ordinal(fact.get("iteration", 0))
    if "at" in fact:
        return (f"What is the value of `{variable}` just after line {fact['at']} has run "
                f"for the {nth} time?")
    return f"What is the value of `{variable}` at the end of the {nth} iteration of this loop?"


def question(task: str, code: str, call: str, fact: dict[str, Any]) -> str:
    """The question part of a prompt (without the format line)."""
    parts = [f"[PYTHON]\n{numbered(code)}\n[/PYTHON]"]
    if task == "statement":
        parts.append(f"Statement (line {fact['line']}):\n{fact['statement']}\n\nValues "
                     f"just before it runs: {_values(fact['before'])}\n\nWhat is the "
                     "statement's value once it has run?")
    elif task == "block":
        parts.append(f"Call: {call}\n\nWhich local variables differ from their values at "
                     f"the start of the call once the first {fact['size']} statement(s) "
                     f"have run (lines {', '.join(map(str, fact['lines']))}, in that "
                     "order), and what are their values?")
    elif task == "loop":
        asked = {"iterations": "How many times does the body of this loop run?",
                 "body": _body_question(fact),
                 "after": f"What is the value of `{fact.get('variable')}` just after "
                          "execution leaves this loop?"}[fact["question"]]
        parts.append(f"Call: {call}\n\nLoop on line {fact['line']}. {asked}")
    elif task == "branch":
        parts.append(f"Call: {call}\n\nIs line {fact['line']} executed during this call?")
    else:
        parts.append(f"Call: {call}\n\nWhat does the call return?")
    return "\n\n".join(parts)


@dataclass(frozen=True)
class Example:
    code: str
    call: str
    fact: dict[str, Any]
    value: list
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


def _block(size: int, lines: list[int], after: dict[str, list]) -> Example:
    return Example(_SWAP, "swap([5, 7, 9], 0, 2)",
                   {"task": "block", "size": size, "lines": lines, "after": after},
                   ["dict", [[["str", k], v] for k, v in after.items()]])


_LIST_957 = ["list", [["int", 9], ["int", 7], ["int", 9]]]
EXAMPLES: dict[str, tuple[Example, ...]] = {
    "statement": (
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
    "block": (
        _block(1, [2], {"temp": ["int", 5]}),
        _block(2, [2, 3], {"a": _LIST_957, "temp": ["int", 5]}),
        _block(3, [2, 3, 4], {"a": ["list", [["int", 9], ["int", 7], ["int", 5]]],
                              "temp": ["int", 5]}),
    ),
    "loop": (
        Example(_VOWELS, "count_vowels('idea')",
                {"task": "loop", "line": 3, "question": "iterations"}, ["int", 4]),
        Example(_VOWELS, "count_vowels('idea')",
                {"task": "loop", "line": 3, "question": "body", "variable": "n",
                 "iteration": 2}, ["int", 1]),
        Example(_VOWELS, "count_vowels('idea')",
                {"task": "loop", "line": 3, "question": "after", "variable": "n"},
                ["int", 3]),
    ),
    "branch": (
        Example(_SIGN, "sign(-2)", {"task": "branch", "line": 3}, ["bool", False]),
        Example(_SIGN, "sign(-2)", {"task": "branch", "line": 5}, ["bool", True]),
        Example(_SIGN, "sign(-2)", {"task": "branch", "line": 6}, ["bool", False]),
    ),
    "output": (
        Example(_JOIN, "f(['ox', 'cat', 'bird'], '-')", {}, ["str", "CAT-BIRD"]),
        Example(_JOIN, "f(['ox', 'cat'], '+')", {}, ["str", "CAT"]),
        Example(_JOIN, "f(['ox'], '+')", {}, ["str", ""]),
    ),
}
"""Worked examples of each task, in the order ``--shots`` takes them."""


def answer_text(task: str, values: str, value: list) -> str:
    """The answer stating ``value`` in the task's format."""
    if values == "abstract":
        text = abstract.category(value)
    elif task == "branch":
        text = "yes" if value[1] else "no"
    else:
        text = to_literal(value)
    return f"[ANSWER]\n{text}\n[/ANSWER]"


def _format(task: str, values: str) -> str:
    if values == "abstract":
        return FORMAT["abstract"]
    return FORMAT["mapping" if task == "block" else "yes/no" if task == "branch" else
                  "concrete"]


def render(task: str, values: str, shots: int, code: str, call: str,
           fact: dict[str, Any]) -> str:
    """The whole prompt: intro, answer format, ``shots`` worked examples, the question."""
    parts = [INTRO[task], _format(task, values)]
    for example in EXAMPLES[task][:shots]:
        parts.append("Example:\n\n" + question(task, example.code, example.call, example.fact))
        parts.append(answer_text(task, values, example.value))
    parts.append(question(task, code, call, fact))
    return "\n\n".join(parts)
