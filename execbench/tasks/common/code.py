"""Showing a program in a prompt."""

from __future__ import annotations


def numbered(code: str) -> str:
    """The code with its line numbers, right-aligned, two spaces before each line: the
    numbers are what a question or an answer names lines by."""
    lines = code.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{n:>{width}}  {text}" for n, text in enumerate(lines, 1))


def shown_text(text: str) -> str:
    """A text as a prompt shows it between tags: without the newline that ends its last
    line (the tags already end it)."""
    return text[:-1] if text.endswith("\n") else text
