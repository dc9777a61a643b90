"""Reading a model's program (``sources.written``): each rule of the class refused with its
reason, inputs that are not literals refused, replies of any shape read in one pass."""

from __future__ import annotations

import pytest

from execbench.sources.written import (
    MAX_INPUTS,
    MAX_REPLY_CHARS,
    STYLES,
    Dropped,
    class_rule,
    duplicate_key,
    prompt,
    read_reply,
)


def _reply(code: str, inputs: str = "[1]") -> str:
    return f"```python\n{code}```\n```inputs\n{inputs}\n```"


@pytest.mark.parametrize(("code", "reason"), [
    ("import os\ndef f(xs):\n    return xs\n", "line 1: imports os"),
    ("from sys import modules\ndef f(xs):\n    return xs\n", "line 1: imports sys"),
    ("import builtins\ndef f(xs):\n    return xs\n", "line 1: imports builtins"),
    ("def f(xs):\n    return xs.__class__\n", "line 2: uses __class__"),
    ("def f(xs):\n    return __builtins__\n", "line 2: uses __builtins__"),
    ("n = 0\ndef f(xs):\n    return xs\n", "line 1: a top-level statement other than"),
    ("def f(xs):\n    global n\n    return xs\n", "line 2: a global statement"),
    ("def f(xs):\n    return eval('xs')\n", "line 2: calls eval"),
    ("def f(xs):\n    return getattr(xs, 'copy')()\n", "line 2: calls getattr"),
    ("import math\ndef f(xs):\n    del math.pi\n    return xs\n", "line 3: changes math.pi"),
    ("import collections as c\ndef f(xs):\n    c.Counter = list\n    return xs\n",
     "line 3: changes c.Counter"),
    ("def f(xs):\n    return xs\ndef g(xs):\n    return xs\n", "2 top-level functions, not one"),
    # a forbidden name passed, bound or imported rather than called
    ("def f(xs):\n    return list(map(eval, ['1 + 1']))\n", "line 2: names eval"),
    ("def f(xs):\n    g = getattr\n    return g(xs, 'copy')()\n", "line 2: names getattr"),
    # attributes reached by a name built at run time, past the dunder rule
    ("import operator\ndef f(xs):\n    return operator.attrgetter('_' * 2 + 'class' + '_' * 2)"
     "(xs)\n", "line 3: uses .attrgetter"),
    ("from operator import methodcaller\ndef f(xs):\n    return xs\n",
     "line 1: imports operator.methodcaller"),
    ("from operator import *\ndef f(xs):\n    return attrgetter('real')(1)\n",
     "line 3: calls attrgetter"),
    ("def f(xs):\n    return '{0.__class__}'.format(xs)\n", "line 2: uses .format"),
    ("def f(xs):\n    return '{x.real}'.format_map({'x': 1})\n", "line 2: uses .format_map"),
    ("import string\ndef f(xs):\n    return string.Formatter().get_field('0.real', [1], {})\n",
     "line 3: uses .Formatter"),
    # a module or a class reached through another name, then changed for every later call
    ("import math\ndef f(xs):\n    m = math\n    m.pi = 3\n    return xs\n",
     "line 4: changes m.pi"),
    ("from collections import Counter\ndef f(xs):\n    Counter.most_common = len\n"
     "    return xs\n", "line 3: changes Counter.most_common"),
    ("def f(xs):\n    f.seen = xs\n    return xs\n", "line 2: changes f.seen"),
    ("def f(xs):\n    return (\n", "the code does not parse (SyntaxError)"),
    ("x = '" + "a" * 9_000 + "'\n", "code longer than 8,000 characters"),
])
def test_each_class_rule_is_a_reason(code: str, reason: str) -> None:
    with pytest.raises(Dropped) as raised:
        class_rule(code)
    assert raised.value.rule == "class" and str(raised.value).startswith(reason)


def test_a_program_of_the_class_gives_its_entry_point() -> None:
    code = ('"""Module text."""\nimport math\nfrom itertools import pairwise\n'
            "def spread(xs):\n    return [math.floor(b - a) for a, b in pairwise(xs)]\n")
    assert class_rule(code) == "spread"


@pytest.mark.parametrize(("inputs", "reason"), [
    ("[1, 2]\n__import__('os').getcwd()", "is not a literal argument list"),
    ("[1] * 10", "is not a literal argument list"),
    ("*[1, 2]", "is not a literal argument list (a starred argument)"),
    ("**{'xs': [1]}", "is not a literal argument list"),
    ("[1, 2", "is not a literal argument list"),
])
def test_inputs_must_be_literals(inputs: str, reason: str) -> None:
    with pytest.raises(Dropped) as raised:
        read_reply(_reply("def f(xs):\n    return xs\n", inputs))
    assert raised.value.rule == "input" and reason in str(raised.value)


NO_BLOCKS = "no ```python block and ```inputs block"


def test_replies_of_every_shape() -> None:
    written = read_reply("Some words.\n```py\ndef f(xs, k=1):\n    return xs\n```\n"
                         "```inputs\n[1], k=2\n\n[1], k=2\n[]\n```\n```python\nignored\n```")
    assert (written.entry_point, written.calls) == ("f", ("[1], k=2", "[]"))  # once each
    for text, reason in [
            ("no blocks at all", NO_BLOCKS),
            ("```python\ndef f(xs):\n    return xs\n```", NO_BLOCKS),
            ("```python\ndef f(xs):\n    return xs\n```\n```inputs\n\n```",
             "the inputs block is empty"),
            ("```python\ndef f(xs):\n    return xs\n```\n```inputs\n[1]\n", NO_BLOCKS),
            (_reply("def f(xs):\n    return xs\n", "\n".join(["[1]"] * (MAX_INPUTS + 1))),
             f"more than {MAX_INPUTS} inputs"),
            ("`" * (MAX_REPLY_CHARS + 1), "reply longer than 64,000 characters")]:
        with pytest.raises(Dropped) as raised:
            read_reply(text)
        assert str(raised.value) == reason


def test_a_reply_of_many_fences_is_read_in_one_pass() -> None:
    """Unclosed and empty fences by the thousand: a scan of lines, no backtracking."""
    with pytest.raises(Dropped, match="no ```python block"):
        read_reply("```\n" * 15_000)


def test_prompts_are_seeded() -> None:
    style = STYLES["list"]
    assert prompt(style, 3, 3) == prompt(style, 3, 3)
    themes = {prompt(style, seed, 3)[0]["content"].split("about ")[1].split(".")[0]
              for seed in range(40)}
    assert themes <= set(style.themes) and len(themes) > 3


EVENS = 'def f(xs):\n    """Sum of the even ones."""\n    return sum(x for x in xs if x % 2 == 0)\n'


@pytest.mark.parametrize(("code", "same"), [
    # the same program under other names, another docstring, or none
    ('def total(values):\n    """Adds the evens."""\n'
     "    return sum(v for v in values if v % 2 == 0)\n", True),
    ("def g(ys):\n    return sum(y for y in ys if y % 2 == 0)\n", True),
    ("def f(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s\n", False),
    ("def f(xs):\n    return max(x for x in xs if x % 2 == 0)\n", False),  # another builtin
    ("def f(xs):\n    return sum(x for x in xs if x % 2 == 1)\n", False),
    ("def f(sum):\n    return sum(x for x in sum if x % 2 == 0)\n", False),  # sum is bound
])
def test_a_copy_under_other_names_is_a_duplicate(code: str, same: bool) -> None:
    """A model paid per kept program cannot pass one program off as several by renaming
    it, its parameters and its variables, or by rewording its docstring."""
    assert (duplicate_key(code) == duplicate_key(EVENS)) is same
