"""Every parser of what a model writes takes time linear in it, and reads a bounded part.

A model under training writes whatever earns reward, and a slow parse holds the
interpreter lock for every other client of the scorer. Each case below is a text a model
could write against one parser: repeated opening tags, a value left open over many lines,
members that all hash alike, a long string of escapes. Its parse must take less than 30
times as long on a text 8 times as long (a linear parser takes about 8 times, a quadratic
one 64), in CPU time, the best of 3; and one parse at the largest size read (the answer
cap, or the literal reader's own) must stay under a ceiling only a blowup reaches.
Nesting gets its own check: at the same size, a value nested 50 to 150 deep must not take
4 times as long as a flat one (the parts of a nested value were once walked, sorted or
written once per level above them). The texts and values are built before the clock
starts. Every case failed on the parsers as they were before (issue 36, class 4).
"""

from __future__ import annotations

import functools
import gc
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import pytest

from execbench.sources.debugger_values import read_text
from execbench.tasks.base import Instance
from execbench.tasks.ces.answers import parse_pattern, read_answer, stated_output
from execbench.tasks.common.answers import stated_text
from execbench.tasks.common.extract import MAX_ANSWER_CHARS, answer_text, codesense_answer_text
from execbench.tasks.dexbench import parse_lines
from execbench.tasks.registry import judge
from execbench.values import (
    MAX_ALIKE,
    MAX_LITERAL_CHARS,
    LiteralError,
    decode,
    distinct,
    encode,
    equal,
    parse_expression,
    parse_literal,
    read_encoded,
)

ALIKE = 2 ** 61 - 1
"""Every multiple of it hashes to 0 (Python hashes an int by its value modulo it)."""
RATIO = 30
FLOOR_S = 0.002
"""The shorter text's time is taken as at least this: below it, timer noise is all."""
CEILING_S = 2.0
CEILING_HONEST = 5
"""The ceiling at the cap: 2 s of CPU, or 5 times what this machine takes to parse an
honest literal as long (a list of small ints), whichever is more, so that a slow machine
does not fail a linear parser; the blowups it is for cost 12 to 150 times that."""


def _quiet(parse: Callable[[str], Any], text: str) -> None:
    """Run a parse, whatever it says of the text: only its time matters here."""
    with suppress(LiteralError, ValueError):
        parse(text)


def _cpu(parse: Callable[[str], Any], text: str) -> float:
    """The best of 3 parses' CPU time, with the cycle collector off: its passes over every
    live object grow with the heap, not with the parser's work, and once made an 8 times
    longer text take 38 times as long."""
    best = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            start = time.process_time()
            _quiet(parse, text)
            best = min(best, time.process_time() - start)
    finally:
        gc.enable()
    return best


class _TooSlow(Exception):
    pass


@contextmanager
def _cpu_limit(seconds: float) -> Iterator[None]:
    """Stop the block with ``_TooSlow`` once the process has used ``seconds`` of CPU."""
    def stop(signum: int, frame: Any) -> None:
        raise _TooSlow

    previous = signal.signal(signal.SIGPROF, stop)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def _deeper(frames: int, run: Callable[[], None]) -> None:
    if frames:
        _deeper(frames - 1, run)
    else:
        run()


@functools.cache
def _ceiling() -> float:
    honest = "[" + "2, " * (MAX_LITERAL_CHARS // 3 - 1) + "]"
    start = time.process_time()
    parse_expression(honest)
    return max(CEILING_S, CEILING_HONEST * (time.process_time() - start))


def _ceiling_time(parse: Callable[[str], Any], text: str, frames: int) -> float:
    """CPU seconds of one parse, run ``frames`` calls deeper; stopped past the ceiling."""
    start = time.process_time()
    try:
        with _cpu_limit(_ceiling() + 1):
            _deeper(frames, lambda: _quiet(parse, text))
    except _TooSlow:
        pass
    return time.process_time() - start


def _check(parse: Callable[[str], Any], text: Callable[[int], str], n: int, cap: int) -> None:
    """The linear-time check (n against 8n), then one parse of a text ``cap`` long.

    A parse over the ceiling is timed once more a few dozen calls deeper before it fails:
    CPython 3.11 gives frames memory in chunks and returns a chunk as soon as the call
    that opened it returns, so a loop whose calls straddle a chunk's end pays two system
    calls per call (ten times slower), wherever the caller's stack happens to put it."""
    small, large = text(n), text(8 * n)
    short, long = max(_cpu(parse, small), FLOOR_S), _cpu(parse, large)
    assert long < RATIO * short, f"{len(small)} chars: {short:.4f} s; " \
        f"{len(large)} chars: {long:.4f} s"
    count = n * cap // len(small)
    biggest = text(count)
    while len(biggest) > cap:
        count = count * 99 // 100
        biggest = text(count)
    spent = _ceiling_time(parse, biggest, 0)
    if spent >= _ceiling():
        spent = min(spent, _ceiling_time(parse, biggest, 40))
    assert spent < _ceiling(), f"{len(biggest)} chars: {spent:.2f} s (ceiling {_ceiling():.2f})"


def _alike_ints(n: int) -> str:
    return ", ".join(str(k * ALIKE) for k in range(n))


CASES = {
    # answer extraction: opening tags that never close
    "think": (answer_text, lambda n: "<think>" * n, 1500, MAX_ANSWER_CHARS),
    "reasoning": (answer_text, lambda n: "<REASONING> " * n, 1500, MAX_ANSWER_CHARS),
    "answer": (answer_text, lambda n: "[ANSWER]" * n, 1500, MAX_ANSWER_CHARS),
    "answer at line starts": (answer_text, lambda n: "\n [ANSWER]" * n, 1500,
                              MAX_ANSWER_CHARS),
    "ans": (codesense_answer_text, lambda n: "<ans>" * n, 1500, MAX_ANSWER_CHARS),
    # a simulation value left open, one short line after another
    "simulation lines": (lambda t: read_answer(t, {}), lambda n: "[output] = [\n" + "1,\n" * n,
                         600, MAX_ANSWER_CHARS),
    # one tag line after another (from an adversarial review: the lines after each were
    # copied once per tag line)
    "simulation tag lines": (lambda t: read_answer(t, {}), lambda n: "[output] = 1\n" * n,
                             2000, MAX_ANSWER_CHARS),
    # members and keys that all hash alike
    "set literal": (parse_literal, lambda n: "{" + _alike_ints(n) + "}", 1000,
                    MAX_LITERAL_CHARS),
    "dict keys": (parse_literal, lambda n: "{" + ", ".join(
        f"{k * ALIKE}: 0" for k in range(n)) + "}", 1000, MAX_LITERAL_CHARS),
    "frozenset call": (parse_literal, lambda n: "frozenset([" + _alike_ints(n) + "])", 1000,
                       MAX_LITERAL_CHARS),
    "dict call": (parse_literal, lambda n: "dict([" + ", ".join(
        f"({k * ALIKE}, 0)" for k in range(n)) + "])", 1000, MAX_LITERAL_CHARS),
    "tuples of -1 and -2": (parse_literal, lambda n: "{" + ", ".join(
        f"({-1 - (k >> 1 & 1)}, {-1 - (k & 1)}, {k * ALIKE})" for k in range(n)) + "}", 1000,
        MAX_LITERAL_CHARS),
    "set with an object": (lambda t: read_encoded(parse_expression(t)),
                           lambda n: "{P(x=1), " + _alike_ints(n) + "}", 1000,
                           MAX_LITERAL_CHARS),
    # dict views: keys that hash alike are listed, never built into a set; pairs checked
    # on the syntax tree once; an object among the items
    "dict view of keys": (parse_literal, lambda n: "dict_keys([" + _alike_ints(n) + "])",
                          1000, MAX_LITERAL_CHARS),
    "dict view of items": (parse_literal, lambda n: "dict_items([" + ", ".join(
        f"({k * ALIKE}, 0)" for k in range(n)) + "])", 1000, MAX_LITERAL_CHARS),
    "dict view with an object": (lambda t: read_encoded(parse_expression(t)),
                                 lambda n: "dict_values([P(x=1), " + _alike_ints(n) + "])",
                                 1000, MAX_LITERAL_CHARS),
    # the string comparison's reading of a stated value: quotes, brackets and equalities
    # that never settle, escapes, one assert line after another
    "stated text": (stated_text, lambda n: "assert f(" + "'==' == (\"" * n, 1500,
                    MAX_ANSWER_CHARS),
    "stated text escapes": (stated_text, lambda n: "assert f('" + "\\'==" * n, 1500,
                            MAX_ANSWER_CHARS),
    "stated text assert lines": (stated_text, lambda n: "assert f(1) == 2\n" * n, 1500,
                                 MAX_ANSWER_CHARS),
    "simulation output text": (stated_output, lambda n: "[output] = x\n" * n, 2000,
                               MAX_ANSWER_CHARS),
    # coverage answers: a JSON list of line numbers that hash alike
    "coverage json": (parse_lines, lambda n: '{"executed_lines": [' + _alike_ints(n) + "]}",
                      1500, MAX_ANSWER_CHARS),
    # C and Java answers: a string of escapes
    "debugger escapes": (read_text, lambda n: '"' + "\\n" * n + '"', 40_000,
                         MAX_LITERAL_CHARS),
}


@pytest.mark.parametrize("case", CASES)
def test_parse_time_grows_linearly(case: str) -> None:
    parse, text, n, cap = CASES[case]
    _check(parse, text, n, cap)


def _nested_frozensets(depth: int) -> Any:
    value: Any = tuple(range(30_000))
    for _ in range(depth):
        value = frozenset({value})
    return value


def _nested_dicts(depth: int) -> Any:
    value: Any = list(range(30_000))
    for _ in range(depth):
        value = {0: value}
    return value


def _both(value: Any) -> tuple[Any, Any]:
    return encode(value), encode(value)


DEPTH_CASES: dict[str, tuple[Callable[..., Any], Callable[[int], tuple[Any, ...]], int]] = {
    # a simulation value nested deep, '...' at the end of the innermost list
    "simulation nesting": (parse_pattern, lambda d: ("[" * d + "2, " * 20_000 + "..., 1"
                                                     + "]" * d,), 150),
    # dict views within dict views, as deep as Python's parser takes
    "nested dict views": (parse_literal, lambda d: ("dict_keys([" * d + "2, " * 20_000 + "1"
                                                    + "])" * d,), 90),
    # C and Java answers: braces nested to the reader's limit
    "debugger braces": (read_text, lambda d: ("{" * d + "1," * 3000 + "1" + "}" * d,), 49),
    # sets within sets, and dicts within dicts: their members sorted, written, compared
    "encoding nested sets": (encode, lambda d: (_nested_frozensets(d),), 90),
    "equality of nested sets": (equal, lambda d: _both(_nested_frozensets(d)), 90),
    "equality of nested dicts": (equal, lambda d: _both(_nested_dicts(d)), 90),
    "nested sets holding objects": (read_encoded, lambda d: (parse_expression(
        "{P(x=1), " * d + "(" + "2, " * 30_000 + ")" + "}" * d),), 90),
}
DEPTH_RATIO = 4


def _cpu_call(run: Callable[..., Any], args: tuple[Any, ...], frames: int = 0) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        _deeper(frames, lambda: _quiet_call(run, args))
        best = min(best, time.process_time() - start)
    return best


def _quiet_call(run: Callable[..., Any], args: tuple[Any, ...]) -> None:
    with suppress(LiteralError, ValueError):
        run(*args)


@pytest.mark.parametrize("case", DEPTH_CASES)
def test_parse_time_does_not_grow_with_nesting(case: str) -> None:
    """Flat against nested at about the same size; a slow nested parse is timed once
    more 40 calls deeper before it fails (see ``_check``)."""
    run, make, depth = DEPTH_CASES[case]
    flat, nested = make(1), make(depth)
    shallow = max(_cpu_call(run, flat), FLOOR_S)
    deep = _cpu_call(run, nested)
    if deep >= DEPTH_RATIO * shallow:
        deep = min(deep, _cpu_call(run, nested, 40))
    assert deep < DEPTH_RATIO * shallow, f"flat: {shallow:.4f} s; {depth} deep: {deep:.4f} s"


def test_sets_of_members_hashing_alike_still_compare_right() -> None:
    """Up to ``MAX_ALIKE`` members hashing alike are read exactly (equal when the same
    members, in any order; apart when one differs); beyond it the text is refused."""
    members = [k * ALIKE for k in range(MAX_ALIKE)]
    read = read_encoded(parse_expression("{" + ", ".join(map(str, members)) + "}"))
    again = read_encoded(parse_expression("{" + ", ".join(map(str, members[::-1])) + "}"))
    other = read_encoded(parse_expression("{" + ", ".join(map(str, members[1:])) + ", 1}"))
    assert equal(read, again) and not equal(read, other)
    assert decode(read) == set(members) and parse_literal("{-1, -2, -1}") == {-1, -2}
    assert parse_literal("{1, True, 1.0}") == {1} and parse_literal("{(-1, -2), (-2, -1)}") \
        == {(-1, -2), (-2, -1)}
    with pytest.raises(LiteralError, match="hash alike"):
        parse_literal("{" + _alike_ints(MAX_ALIKE + 1) + "}")
    assert distinct([0, 0, ALIKE, ALIKE]) == {0, ALIKE}
    assert parse_lines("[1, 2, 2]") == {1, 2}


def test_an_answer_over_the_cap_is_unparsable_and_the_verdict_says_so() -> None:
    """An answer over the cap is never judged on its head: a right start followed by a
    wrong end (an adversarial review's attack: ``1``, a megabyte of spaces, `` + 1``) would
    be counted right."""
    instance = Instance(id="output/p/0", task="output", source="p", program_id="p",
                        call_index=0, code="def f():\n    return 1\n", entry_point="f",
                        args="", data={"truth": {"value": ["int", 1], "repr": "1"}})
    over = 10
    for answer in ("1" + " " * (MAX_ANSWER_CHARS - 1 + over),
                   "1" + " " * (MAX_ANSWER_CHARS - 1) + " + 1" + " " * over):
        score = judge(instance, f"[ANSWER]{answer}[/ANSWER]", None)
        assert score.verdict == "unparsable" and score.extra["answer_cut"] >= over
        assert score.detail.startswith(f"answer over {MAX_ANSWER_CHARS} characters: ")
    assert judge(instance, "[ANSWER]1[/ANSWER]", None).correct
    assert "answer_cut" not in judge(instance, "[ANSWER]1[/ANSWER]", None).extra


def test_tags_fold_case_in_ascii_only() -> None:
    """A long s (U+017F) or a Kelvin sign (U+212A) folds to an ASCII letter under Unicode
    case rules: such lookalikes are text, not tags."""
    assert answer_text("[AN\u017fWER]7[/AN\u017fWER] [answer]1[/Answer]") == "1"
    assert answer_text("<thin\u212a>x</thin\u212a>[ANSWER]2[/ANSWER]").endswith("2")
