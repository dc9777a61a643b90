"""Getting the answer out of a model's response text.

Reasoning models wrap their thinking in ``<think>...</think>``, and some prompts ask for
``<REASONING>...</REASONING>``; both are dropped (and a lone ``</think>``, whose opening
tag some servers strip, drops everything before it).
The answer is the last ``[ANSWER]...[/ANSWER]`` block; a missing closing tag is tolerated.
Without tags, the last fenced code block is used, then the whole remaining text.
"""

from __future__ import annotations

import re

_THINK = re.compile(r"<(think|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_ANSWER = re.compile(r"\[ANSWER\](.*?)(?:\[/ANSWER\]|$)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z0-9_+-]*\n(.*?)```", re.DOTALL)


def strip_reasoning(text: str) -> str:
    text = _THINK.sub("", text)
    lowered = text.lower()
    if "</think>" in lowered:  # an opening tag the server already removed
        text = text[lowered.rindex("</think>") + len("</think>"):]
    return text


def answer_text(response: str | None) -> str | None:
    """The answer part of a response, or None when there is nothing to read."""
    if response is None:
        return None
    text = strip_reasoning(response)
    blocks = _ANSWER.findall(text)
    if blocks:
        answer = blocks[-1]
    else:
        fences = _FENCE.findall(text)
        answer = fences[-1] if fences else text
    answer = answer.strip()
    return answer or None
