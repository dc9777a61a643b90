"""Reading a simulation answer: one line per placeholder, ``[3a] = [0, 1, 2]``, and
``[output] = VALUE``.

Reasoning text is tolerated around and between those lines: a line that does not start
with a known tag is ignored, a tag may be followed by its label as the prompt showed it
(``[3a] i = [0, 1]``), a value may run over several lines, and when a tag is given more
than once the last readable value wins (a model drafting, then correcting). Values are read
with the literal parser only. A list may elide its middle with ``...`` (at any depth, once
per list, with at least one item on each side): the items stated before and after it
must then match the first and last items of the true list, which must be long enough to
hold them.

Reading takes time linear in the answer: a value is parsed once, at the first line where
it can end (``_value_end``), never once per line of a growing text.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from execbench.values import (
    LiteralError,
    encode,
    equal,
    is_view,
    literal_value,
    parse_expression,
    view_items,
)

OUTPUT = "output"
# Linear on one line: only the tag's own parts may backtrack, each over characters the
# next part cannot take, and the value runs to the line's end.
_TAG = re.compile(r"^\s*[`*]*\[(\w+)\][`*]*\s*(.*)$")
_CODE_MARK = re.compile(r"[\\'\"#()\[\]{}]")
"""What changes a value's nesting outside a string: a bracket, a quote, a comment, a
backslash."""
_STRING_MARK = {'"': re.compile(r'[\\"]'), "'": re.compile(r"[\\']")}


@dataclass(frozen=True)
class Elided:
    """A list or tuple written with ``...``: its first and last items."""

    kind: str
    head: tuple[Any, ...]
    tail: tuple[Any, ...]


Pattern = Any
"""A predicted value: typed JSON (``values.encode``), or an ``Elided`` (whose items are
patterns), or a ("list"/"tuple", [patterns]) pair for a container with an elided part."""


def read_answer(text: str, labels: dict[str, str]) -> dict[str, str]:
    """The value text given for each tag (``labels``: tag -> label; ``output`` is always
    known), the last readable one where a tag appears more than once."""
    found: dict[str, str] = {}
    lines = text.splitlines()
    for number, line in enumerate(lines):
        match = _TAG.match(line)
        if not match or (match.group(1) not in labels and match.group(1) != OUTPUT):
            continue
        tag = match.group(1)
        rest = _after_label(match.group(2), labels.get(tag))
        if rest is None:
            continue
        following = []
        after = number + 1  # an index, not a slice: nothing copied or skipped per tag line
        while after < len(lines) and not _TAG.match(lines[after]):
            following.append(lines[after])
            after += 1
        value = _first_readable(rest, following)
        if value is not None:
            found[tag] = value
    return found


def stated_output(text: str) -> str | None:
    """The text after ``=`` on the last ``[output]`` line, read as text: what the string
    comparison judges when the value does not parse (an unquoted string), which
    ``read_answer`` passes over; None without such a line. One pass over the lines."""
    stated = None
    for line in text.splitlines():
        match = _TAG.match(line)
        if match and match.group(1) == OUTPUT:
            stated = _after_label(match.group(2), None) or stated
    return stated


def _after_label(rest: str, label: str | None) -> str | None:
    """The text after ``=`` (or ``:``), skipping the label if it was repeated."""
    squeezed = rest.replace(" ", "")
    wanted = None if label is None else label.replace(" ", "")
    if wanted is not None and squeezed.startswith(wanted):
        kept = 0
        for position, char in enumerate(rest):
            if char != " ":
                kept += 1
            if kept == len(wanted):
                rest = rest[position + 1:]
                break
    rest = rest.strip()
    if rest[:1] in ("=", ":"):
        return rest[1:].strip()
    return None


def _first_readable(first: str, following: list[str]) -> str | None:
    """The shortest run of lines from ``first`` on that reads as one value.

    Only the run up to the first line where a value can end (``_value_end``) can read as
    one: a shorter run leaves a bracket, a string or a line continuation open, and in a
    longer one something follows a finished expression, unless it is blank lines and
    comments. So that run is parsed, and if it fails, the run to the next line that is not
    blank: the run is read stripped, so a value ended by a line continuation and a blank
    line reads only once a comment follows. Blank lines and comments after that change
    nothing."""
    lines = [first, *following]
    end = _value_end(lines)
    if end is None:
        return None
    after = next((number for number in range(end + 1, len(lines)) if lines[number].strip()),
                 None)
    for last in (end,) if after is None else (end, after):
        text = "\n".join(lines[:last + 1]).strip()
        try:
            parse_pattern(text)
        except LiteralError:
            continue
        return text
    return None


def _value_end(lines: list[str]) -> int | None:
    """The first line at whose end Python's tokenizer would end a logical line (brackets
    closed, no string or backslash continuation open, a token met), or None when there is
    none or an unmatched closing bracket or unterminated string comes first. One pass
    over the lines, jumping between the characters that matter."""
    depth, quote, seen = 0, "", False
    for number, line in enumerate(lines):
        at, joined = 0, False
        while at < len(line):
            if quote:
                at, quote, open_line = _in_string(line, at, quote)
                if open_line is None:
                    return None  # a one-quote string the line does not close
                if open_line:
                    break
                continue
            found = _CODE_MARK.search(line, at)
            stop = found.start() if found else len(line)
            seen = seen or bool(line[at:stop].strip())
            if found is None or found.group() == "#":
                break
            mark, at = found.group(), stop + 1
            if mark == "\\":
                joined = at == len(line)
                continue
            seen = True
            if mark in "([{":
                depth += 1
            elif mark in ")]}":
                depth -= 1
                if depth < 0:
                    return None
            else:
                quote = mark * 3 if line.startswith(mark * 3, stop) else mark
                at = stop + len(quote)
        if not quote and not joined and depth == 0 and seen:
            return number
    return None


def _in_string(line: str, at: int, quote: str) -> tuple[int, str, bool | None]:
    """Read on in a string opened by ``quote`` from ``at``: where reading goes on, the
    quote still open ("" once closed), and whether the string runs past the line's end
    (None when a one-quote string ends with the line, which Python refuses)."""
    found = _STRING_MARK[quote[0]].search(line, at)
    if found is None:
        return len(line), quote, True if len(quote) == 3 else None
    at = found.start()
    if found.group() == "\\":
        if at + 1 == len(line):  # an escaped line end: the string goes on
            return len(line), quote, True
        return at + 2, quote, False
    if line.startswith(quote, at):
        return at + len(quote), "", False
    return at + 1, quote, False


def parse_pattern(text: str) -> Pattern:
    """A predicted value from its text (see the module doc); ``LiteralError`` otherwise."""
    node = parse_expression(text)
    return _pattern(node, _with_ellipsis(node))


def _pattern(node: ast.expr, dotted: set[int]) -> Pattern:
    """The pattern of ``node``; ``dotted`` holds the nodes with a ``...`` at any depth."""
    if id(node) not in dotted:
        return encode(literal_value(node))
    if is_view(node):  # dict_keys([1, ..., 9]): the list it holds, as the reader reads it
        assert isinstance(node, ast.Call)
        view_items(node)
        return _pattern(node.args[0], dotted)
    if isinstance(node, ast.List | ast.Tuple):
        kind = "list" if isinstance(node, ast.List) else "tuple"
        dots = [i for i, e in enumerate(node.elts) if _is_ellipsis(e)]
        if not dots:
            return (kind, [_pattern(e, dotted) for e in node.elts])
        if len(dots) > 1 or dots[0] in (0, len(node.elts) - 1):
            raise LiteralError("'...' must stand once inside a list, between stated items")
        head = tuple(_pattern(e, dotted) for e in node.elts[:dots[0]])
        tail = tuple(_pattern(e, dotted) for e in node.elts[dots[0] + 1:])
        return Elided(kind, head, tail)
    raise LiteralError("'...' may only stand for items of a list or tuple")


def _is_ellipsis(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def _with_ellipsis(root: ast.AST) -> set[int]:
    """``id`` of every node that is or holds ``...``, in one pass over the tree (asking
    each node in turn would walk a deep value once per level). Constants are looked at
    where they stand, never stacked: a long list of them costs little."""
    dotted = {id(root)} if _is_ellipsis(root) else set()
    parent: dict[int, ast.AST] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if type(child) is ast.Constant:
                if child.value is Ellipsis:
                    dotted.add(id(child))
                    above: ast.AST | None = node
                    while above is not None and id(above) not in dotted:
                        dotted.add(id(above))
                        above = parent.get(id(above))
            elif not isinstance(child, ast.expr_context):
                parent[id(child)] = node
                stack.append(child)
    return dotted


def is_full(pattern: Pattern) -> bool:
    """True when nothing in the value is elided: it is plain typed JSON."""
    return isinstance(pattern, list)


def matches(pattern: Pattern, truth: list) -> bool:
    """Does a predicted value agree with a true (typed JSON) one? Type-aware equality
    (``values.equal``) for stated values; elided ones as the module doc says."""
    if isinstance(pattern, list):
        return equal(pattern, truth)
    if isinstance(pattern, Elided):
        if truth[0] != pattern.kind:
            return False
        items = truth[1]
        if len(items) < len(pattern.head) + len(pattern.tail):
            return False
        tail = items[len(items) - len(pattern.tail):]
        return all(matches(p, t) for p, t in zip(pattern.head, items, strict=False)) and \
            all(matches(p, t) for p, t in zip(pattern.tail, tail, strict=True))
    kind, items = pattern
    return truth[0] == kind and len(truth[1]) == len(items) and \
        all(matches(p, t) for p, t in zip(items, truth[1], strict=True))


def sequence(text: str) -> tuple[list[Pattern], list[Pattern], bool] | None:
    """A placeholder's list of values over the run as (first items, last items, whole):
    for a list without a top-level ``...`` both are the whole list. None if the text is
    not a list."""
    try:
        pattern = parse_pattern(text)
    except LiteralError:
        return None
    if isinstance(pattern, Elided) and pattern.kind == "list":
        return list(pattern.head), list(pattern.tail), False
    if isinstance(pattern, tuple) and pattern[0] == "list":
        return list(pattern[1]), list(pattern[1]), True
    if isinstance(pattern, list) and pattern[0] == "list":
        return list(pattern[1]), list(pattern[1]), True
    return None
