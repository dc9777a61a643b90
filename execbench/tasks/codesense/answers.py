"""Reading CodeSense answers, and CodeSense's own string comparison.

The answer text is the first ``<ans>...</ans>`` block (CodeSense's tags; the first, as its
evaluation takes) if the response has one, else what ``extract.answer_text`` reads (our
``[ANSWER]`` block, or the whole response). Reasoning blocks are dropped first either way.
A value is then read with the literal parser only: a bare literal, ``name = literal``, or
``assert ... == literal``. Nothing is ever run.

``string_match`` replays how CodeSense's evaluation compares an answer with the truth: both
as text, stripped, lower-cased, with quotes trimmed from the ends and runs of whitespace
made one space, then compared for equality. It is recorded beside our verdict so results
can be set against the published numbers.
"""

from __future__ import annotations

import ast
import re

from execbench.sandbox.values import LiteralError, encode, literal_value
from execbench.tasks.answers import equality, parse_statement
from execbench.tasks.extract import answer_text, strip_reasoning

_ANS = re.compile(r"<ans>(.*?)</ans>", re.DOTALL | re.IGNORECASE)


def read_text(response: str | None) -> str | None:
    """The answer part of a response (see the module docstring), or None."""
    if response is None:
        return None
    tagged = _ANS.findall(strip_reasoning(response))
    if tagged:
        return tagged[0].strip() or None
    return answer_text(response)


def _assigned(text: str) -> ast.AST | None:
    """The value of ``name = value`` (or ``a, b = value``), if that is all the text is."""
    try:
        tree = ast.parse(text.strip())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if len(tree.body) == 1 and isinstance(tree.body[0], ast.Assign | ast.AnnAssign):
        return tree.body[0].value
    return None


def read_value(text: str) -> list:
    """The typed-JSON value an answer states; ``LiteralError`` says why there is none."""
    node = _assigned(text)
    if node is None:
        node = parse_statement(text)
        pair = equality(node)
        node = pair[1] if pair else node
    if node is None:
        raise LiteralError("not a Python literal")
    return encode(literal_value(node))


def read_mapping(text: str) -> list:
    """A ``{name: value}`` answer, as a dict literal or as ``name = value`` lines, encoded
    as a typed-JSON dict with string keys."""
    try:
        value = read_value(text)
    except LiteralError:
        value = None
    if value is not None and value[0] == "dict":
        return value
    pairs = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            tree = ast.parse(line.strip())
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            raise LiteralError(f"not a dict literal or `name = value` line: {line.strip()[:60]}"
                               ) from None
        stmt = tree.body[0] if len(tree.body) == 1 else None
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1 or \
                not isinstance(stmt.targets[0], ast.Name):
            raise LiteralError(f"not a `name = value` line: {line.strip()[:60]}")
        pairs.append([["str", stmt.targets[0].id], encode(literal_value(stmt.value))])
    if not pairs:
        raise LiteralError("no dict literal or `name = value` lines")
    return ["dict", pairs]


def read_yes_no(text: str) -> bool | None:
    word = text.strip().strip("'\"`.!").lower()
    if word in ("yes", "true"):
        return True
    if word in ("no", "false"):
        return False
    return None


def _normalised(text: str) -> str:
    text = text.rstrip(";").strip().lower()
    text = text.strip().strip("'").strip('"')
    return " ".join(text.split())


def string_match(answer: str | None, truth: str) -> bool:
    """Whether CodeSense's string comparison accepts ``answer`` for the truth's text."""
    return answer is not None and _normalised(answer) == _normalised(truth)
