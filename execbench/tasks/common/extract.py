"""Getting the answer out of a model's response text.

Reasoning models wrap their thinking in ``<think>...</think>``, and some prompts ask for
``<REASONING>...</REASONING>``; both are dropped (and a lone ``</think>``, whose opening
tag some servers strip, drops everything before it).
The answer is the last ``[ANSWER]...[/ANSWER]`` block; a missing closing tag is tolerated.
Without tags, the whole remaining text is the answer; a code fence inside it is unwrapped.
Questions in CodeSense's style also accept its ``<ans>...</ans>`` tags
(``codesense_answer_text``).

A response is a model's to write, so reading it takes time linear in its length: every
tag is found once (a pattern with no repetition), and an opening tag is paired with the
first closing tag after it by a pointer that only moves forward. A lazy pattern such as
``<think>.*?</think>`` would instead scan to the end of the text once per opening tag
that has no closing one, which is quadratic in a response of repeated opening tags. Tags
match case-insensitively in ASCII only (``re.IGNORECASE | re.ASCII``: a long s or a Kelvin
sign is no letter of a tag).

An answer longer than ``MAX_ANSWER_CHARS`` is cut to that length before any task reads
it; ``judge`` records how much was cut (``answer_cut``).
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

MAX_ANSWER_CHARS = 1 << 20
"""The most characters of one answer (what is left once reasoning is dropped and the
answer block is taken) that a task reads; the rest is cut, and the verdict says how much
(``base.judge``). Far above any answer the shipped data asks for (see docs/tasks.md)."""

_THINK_OPEN = re.compile(r"<(think|reasoning)>", re.IGNORECASE | re.ASCII)
_THINK_CLOSE = re.compile(r"</(think|reasoning)>", re.IGNORECASE | re.ASCII)
_LONE_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE | re.ASCII)
_ANSWER_OPEN = re.compile(r"\[ANSWER\]", re.IGNORECASE | re.ASCII)
_ANSWER_CLOSE = re.compile(r"\[/ANSWER\]", re.IGNORECASE | re.ASCII)
_ANS_OPEN = re.compile(r"<ans>", re.IGNORECASE | re.ASCII)
_ANS_CLOSE = re.compile(r"</ans>", re.IGNORECASE | re.ASCII)
# Linear: a language run holds no backtick, so candidate fences never share one; and once
# a fence finds no closing one, no later fence can.
_FENCE = re.compile(r"```[a-zA-Z0-9_+-]*\n(.*?)```", re.DOTALL)

Tag = tuple[int, int, int]
"""A tag found in a text: its start, its end, and its kind (the length of its name, which
tells ``think`` from ``reasoning``)."""

_CUT: ContextVar[int] = ContextVar("answer_cut", default=0)
"""Characters cut from the answer being scored, for ``judge`` to record: a context
variable, so that each thread scoring rows (the rewards do) counts its own."""


def _tags(pattern: re.Pattern[str], text: str) -> list[Tag]:
    return [(m.start(), m.end(), m.end(1) - m.start(1) if m.re.groups else 0)
            for m in pattern.finditer(text)]


def _pairs(opens: list[Tag], closes: list[Tag]) -> Iterator[tuple[int, int, int, int]]:
    """What ``finditer`` of ``OPEN(.*?)CLOSE`` (the close of the open's kind) finds, as
    (start, body start, body end, end), in one forward pass: matches do not overlap, and
    an opening tag with no closing tag after it is passed over."""
    by_kind: dict[int, list[Tag]] = {}
    for tag in closes:
        by_kind.setdefault(tag[2], []).append(tag)
    next_close = dict.fromkeys(by_kind, 0)
    done = 0
    for start, end, kind in opens:
        if start < done:
            continue
        found = by_kind.get(kind, [])
        i = next_close.get(kind, 0)
        while i < len(found) and found[i][0] < end:
            i += 1
        next_close[kind] = i
        if i < len(found):
            yield start, end, found[i][0], found[i][1]
            done = found[i][1]


def _leading(text: str, opens: list[Tag]) -> list[Tag]:
    """The opening tags that begin a line (after spaces or tabs), each as starting at the
    newline before it (or at 0), as ``(?:^|\\n)[ \\t]*TAG`` matches them."""
    leading = []
    for start, end, kind in opens:
        j = start
        while j > 0 and text[j - 1] in " \t":
            j -= 1
        if j == 0:
            leading.append((0, end, kind))
        elif text[j - 1] == "\n":
            leading.append((j - 1, end, kind))
    return leading


def strip_reasoning(text: str) -> str:
    if "<" not in text:  # no tag can be there: most answers, at no cost
        return text
    kept, at = [], 0
    for start, _, _, end in _pairs(_tags(_THINK_OPEN, text), _tags(_THINK_CLOSE, text)):
        kept.append(text[at:start])
        at = end
    kept.append(text[at:])
    text = "".join(kept)
    lone = [found.end() for found in _LONE_THINK_CLOSE.finditer(text)]
    return text[lone[-1]:] if lone else text  # an opening tag the server removed


def answer_text(response: str | None) -> str | None:
    """The answer part of a response, or None when there is nothing to read.

    The last closed, non-empty ``[ANSWER]`` block wins, preferring blocks whose tag opens a
    line (prose that merely names the tags is ignored); an unclosed block is used only
    when there is no closed one. A code fence or inline backticks around the answer are
    removed.
    """
    if response is None:
        return None
    return _answer_of(strip_reasoning(response))


def _answer_of(text: str) -> str | None:
    opens, closes = _tags(_ANSWER_OPEN, text), _tags(_ANSWER_CLOSE, text)
    blocks = [text[body:stop] for _, body, stop, _ in _pairs(opens, closes)]
    leading = [text[body:stop] for _, body, stop, _ in _pairs(_leading(text, opens), closes)]
    closed = [block for block in leading if block.strip()] or \
        [block for block in blocks if block.strip()]
    if closed:
        answer = closed[-1]
    elif blocks:  # only empty blocks: the model answered nothing
        return None
    elif opens:  # an unclosed block runs to the end
        answer = text[opens[0][1]:]
    else:
        answer = text
    answer = _capped(answer)
    fences = _FENCE.findall(answer)
    if fences:
        answer = fences[-1]
    answer = answer.strip()
    if len(answer) > 1 and answer[0] == answer[-1] == "`":
        answer = answer.strip("`").strip()
    return answer or None


def codesense_answer_text(response: str | None) -> str | None:
    """The answer part of a response to a question in CodeSense's style: the first
    ``<ans>...</ans>`` block (the first, as CodeSense's evaluation takes) if there is one,
    else what ``answer_text`` reads. Reasoning blocks are dropped first either way."""
    if response is None:
        return None
    text = strip_reasoning(response)
    first = next(_pairs(_tags(_ANS_OPEN, text), _tags(_ANS_CLOSE, text)), None)
    if first is not None:
        return _capped(text[first[1]:first[2]]).strip() or None
    return _answer_of(text)


def _capped(answer: str) -> str:
    """The answer cut to ``MAX_ANSWER_CHARS``, the cut noted for ``judge``."""
    if len(answer) <= MAX_ANSWER_CHARS:
        return answer
    _CUT.set(max(_CUT.get(), len(answer) - MAX_ANSWER_CHARS))
    return answer[:MAX_ANSWER_CHARS]


def start_counting_cuts() -> None:
    """Forget earlier cuts: ``judge`` calls it before a task scores one response."""
    _CUT.set(0)


def answer_cut() -> int:
    """Characters cut from the longest answer read since ``start_counting_cuts``."""
    return _CUT.get()
