"""Getting the answer out of a model's response text.

Reasoning models wrap their thinking in ``<think>...</think>``, and some prompts ask for
``<REASONING>...</REASONING>``; both are dropped (and a lone ``</think>``, whose opening
tag some servers strip, drops everything before it).
The answer is the last ``[ANSWER]...[/ANSWER]`` block; a missing closing tag is tolerated.
Without tags, the whole remaining text is the answer; a code fence inside it is unwrapped.
Questions in CodeSense's style also accept its ``<ans>...</ans>`` tags
(``codesense_answer_text``).
"""

from __future__ import annotations

import re

_THINK = re.compile(r"<(think|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_CLOSED = re.compile(r"\[ANSWER\](.*?)\[/ANSWER\]", re.DOTALL | re.IGNORECASE)
# A block whose tag opens a line: prose that merely names the tags sits inside a sentence.
_LEADING = re.compile(r"(?:^|\n)[ \t]*\[ANSWER\](.*?)\[/ANSWER\]", re.DOTALL | re.IGNORECASE)
_OPEN = re.compile(r"\[ANSWER\](.*)$", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z0-9_+-]*\n(.*?)```", re.DOTALL)
_ANS = re.compile(r"<ans>(.*?)</ans>", re.DOTALL | re.IGNORECASE)


def strip_reasoning(text: str) -> str:
    text = _THINK.sub("", text)
    lowered = text.lower()
    if "</think>" in lowered:  # an opening tag the server already removed
        text = text[lowered.rindex("</think>") + len("</think>"):]
    return text


def answer_text(response: str | None) -> str | None:
    """The answer part of a response, or None when there is nothing to read.

    The last closed, non-empty ``[ANSWER]`` block wins, preferring blocks whose tag opens a
    line (prose that merely names the tags is ignored); an unclosed block is used only
    when there is no closed one. A code fence or inline backticks around the answer are
    removed.
    """
    if response is None:
        return None
    text = strip_reasoning(response)
    blocks = _CLOSED.findall(text)
    closed = [block for block in _LEADING.findall(text) if block.strip()] or \
        [block for block in blocks if block.strip()]
    unclosed = _OPEN.search(text)
    if closed:
        answer = closed[-1]
    elif blocks:  # only empty blocks: the model answered nothing
        return None
    elif unclosed:
        answer = unclosed.group(1)
    else:
        answer = text
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
    tagged = _ANS.findall(strip_reasoning(response))
    if tagged:
        return tagged[0].strip() or None
    return answer_text(response)
