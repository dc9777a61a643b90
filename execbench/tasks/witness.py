"""Finding an input that reaches a target line: the ground truth of counterfactual tasks.

A target is only fair if some input reaches it, and ``reference/oracle`` needs one to
answer with. The search first looks at the other calls the source already has for the
program, then mutates the literal arguments of the chosen call (type-aware edits plus
the program's own constants, one argument at a time, then a second edit on the first
round's candidates, then, for targets still unreached, every element of an argument edited
every way and pairs of arguments edited together), running candidates in the sandbox under
a short step budget. The rounds only add candidates after the earlier ones, so a target an
earlier round reaches keeps its witness. It is
deterministic: candidates are generated and tried in a fixed order and the first that
reaches the target wins.

A witness is the oracle's answer, so it must be an answer the scorer accepts: arguments
written as literals (a dataset argument that is not a literal only where the chosen call
has that very text). Another call's arguments are source text (HumanEval writes
``candidate(3 * 19)``), so they are restated from the values the sandbox traced for them,
and the restated call is run again to check that it still reaches the target. A candidate
the caller's ``accepts`` refuses is never chosen.
"""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from execbench.tasks.base import build_step_budget
from execbench.values import (
    LiteralError,
    decode,
    encode,
    is_exact,
    parse_call_nodes,
    to_literal,
)

if TYPE_CHECKING:
    from execbench.analysis.shape import Shape
    from execbench.sandbox.pool import Sandbox
    from execbench.sandbox.trace import Trace

SEARCH_STEPS = 100_000
"""Steps a candidate may take (or the build's share of the limit, if smaller): a candidate
that loops forever costs a tenth of a second or so, and the same on every machine."""
BATCH = 48
FIRST_ROUND = 400
SECOND_ROUND_SEEDS = 40
SECOND_ROUND = 400
PAIR_EDITS = 24
"""Edits of each argument combined with each of another's, in the last round."""
LAST_ROUND = 1200


def reaches(shape: Shape, trace: Trace, target: frozenset[int]) -> bool:
    return bool(target & shape.normalise(trace.lines))


def _constants(code: str, values: list[Any]) -> tuple[list[int], list[str]]:
    """Ints and strings worth trying: the program's constants, then those in the arguments
    (so one argument can take a key or element that another one holds)."""
    ints: list[int] = []
    strs: list[str] = []

    def add(value: Any) -> None:
        if type(value) is int and value not in ints and abs(value) < 10**6:
            ints.append(value)
        elif type(value) is str and value not in strs and len(value) <= 40:
            strs.append(value)

    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Constant):
            add(node.value)
    stack = list(values)
    while stack and len(ints) + len(strs) < 40:
        value = stack.pop(0)
        if isinstance(value, dict):
            stack.extend(value)
            stack.extend(value.values())
        elif isinstance(value, list | tuple | set | frozenset):
            stack.extend(list(value)[:10])
        else:
            add(value)
            if type(value) is str and len(value) > 1:
                stack.extend(sorted(set(value))[:4])
    return ints[:12], strs[:12]


_OTHER_TYPES = (0, "", [], {}, "a", [1], {"a": 1}, None)


def _mutations(value: Any, ints: list[int], strs: list[str], depth: int = 0) -> Iterator[Any]:
    """Edits of one value, most plausible first; never the value itself."""
    t = type(value)
    if t is bool:
        yield not value
    elif t is int:
        yield from (value + 1, value - 1, 0, 1, -1, -value, 2 * value, value // 2, 10, -10, 100)
        for c in ints:
            yield from (c, c + 1, c - 1)
    elif t is float:
        yield from (value + 1, value - 1, 0.0, -value, 2 * value, value / 2, 0.5, 1.5)
    if t is int:
        yield value + 0.5
    elif t is str:
        yield from ("", value + value, value[1:], value[:-1], value[::-1], value.upper(),
                    value.lower(), value.swapcase(), value + " ", " " + value, value + "a",
                    "a", "A", "1", "123", "abc", "a b", "hello world", "Ab1 ", "é", value + "é",
                    "中文", "!", "-", "\n", "\t", value.title(), value.strip())
        for c in strs:
            yield from (c, value + c, c + value)
        for ch in sorted(set(value))[:4]:
            yield value.replace(ch, "")
    elif t in (list, tuple):
        items = list(value)
        edits: list[list[Any]] = [[], items + items, items[1:], items[:-1], items[::-1]]
        with contextlib.suppress(TypeError):
            edits.append(sorted(items))
        if items:
            edits += [items + [items[0]], [items[0]], items + [items[-1]] * 2]
        edits += [items + [0], items + [1], items + [""], items + ["a"]]
        edits += [items + [c] for c in ints[:3] + strs[:3]]
        if depth < 1:
            for i, item in enumerate(items[:3]):
                for edit in list(_mutations(item, ints, strs, depth + 1))[:6]:
                    edits.append(items[:i] + [edit] + items[i + 1:])
        for edit in edits:
            yield edit if t is list else tuple(edit)
    elif t is dict:
        keys = list(value)
        yield {}
        if keys:
            yield {k: value[k] for k in keys[1:]}
        for c in strs[:3] + ints[:3]:
            yield {**value, c: 0}
        if depth < 1:
            for k in keys[:2]:
                for edit in list(_mutations(value[k], ints, strs, depth + 1))[:4]:
                    yield {**value, k: edit}
                rest = {key: v for key, v in value.items() if key != k}
                for edit in list(_mutations(k, ints, strs, depth + 1))[:4]:
                    with contextlib.suppress(TypeError):
                        yield {**rest, edit: value[k]}
    elif t in (set, frozenset):
        yield t()
        yield t(value) | {0}
        if value:
            yield t(sorted(value, key=repr)[1:])
    if depth == 0:  # a value of another type reaches type checks and error paths
        yield from (other for other in _OTHER_TYPES if type(other) is not t)


def _resized(value: Any, ints: list[int]) -> Iterator[Any]:
    """A list, tuple or string made as long as a length the program tests (``len(x) < 10``):
    its items repeated, or a filler for an empty one."""
    t = type(value)
    for length in sorted({c + d for c in ints if 0 < c <= 64 for d in (0, 1)}):
        if len(value) == length:
            continue
        if t is str:
            yield ((value or "a") * length)[:length]
        else:
            items = list(value) or [0]
            resized = (items * length)[:length]
            yield resized if t is list else tuple(resized)


def _wide_mutations(value: Any, ints: list[int], strs: list[str]) -> Iterator[Any]:
    """Edits of one value for the last round: a container or string resized to the lengths
    the program tests, a string given the characters whose codes it tests (``ch == 61``)
    and joins of its string constants, a container's elements each edited every way
    ``_mutations`` knows (round-robin over the first positions, so every element changes
    early), then ``_mutations``' own edits. Where a target needs a value to pass a bound or
    several values to move together, one small edit at a time does not get there."""
    t = type(value)
    if t in (list, tuple, str):
        yield from _resized(value, ints)
    if t is str:
        for c in ints:
            if 32 <= c < 127:
                yield from (value + chr(c), chr(c) + value)
        for a in strs:
            for b in strs:
                if a != b:
                    yield from (a + b, value + a + b)
    if t in (list, tuple) and value:
        items = list(value)
        per_position = [list(_mutations(item, ints, strs, 1)) for item in items[:3]]
        for rank in range(max(len(edits) for edits in per_position)):
            for position, edits in enumerate(per_position):
                if rank < len(edits):
                    edited = items[:position] + [edits[rank]] + items[position + 1:]
                    yield edited if t is list else tuple(edited)
    yield from _mutations(value, ints, strs)


class _Arguments:
    """The chosen call's arguments: literal values to mutate, other source text kept as is."""

    def __init__(self, args: str, trace: Trace) -> None:
        nodes, keywords = parse_call_nodes(args)
        # After a starred argument, traced values no longer line up with the nodes.
        starred = any(isinstance(node, ast.Starred) for node in nodes)
        encoded = [] if starred else list(trace.args or [])
        self.items: list[tuple[str | None, str, Any]] = []  # (keyword, "value"|"text", ...)
        for i, node in enumerate(nodes):
            enc = encoded[i] if i < len(encoded) else None
            if enc is not None and is_exact(enc):
                self.items.append((None, "value", decode(enc)))
            else:
                self.items.append((None, "text", ast.unparse(node)))
        kwargs = trace.kwargs or {}
        for kw in keywords:
            enc = kwargs.get(kw.arg) if kw.arg else None
            if enc is not None and is_exact(enc):
                self.items.append((kw.arg, "value", decode(enc)))
            else:
                self.items.append((kw.arg, "text", ast.unparse(kw.value)))

    def text(self, items: list[tuple[str | None, str, Any]]) -> str:
        parts = []
        for keyword, kind, value in items:
            source = to_literal(encode(value)) if kind == "value" else value
            parts.append(source if keyword is None else f"{keyword}={source}")
        return ", ".join(parts)

    def neighbours(self, items, ints, strs) -> Iterator[list]:
        for i, (keyword, kind, value) in enumerate(items):
            if kind != "value":
                continue
            for edit in _mutations(value, ints, strs):
                yield items[:i] + [(keyword, "value", edit)] + items[i + 1:]

    def combined(self, ints: list[int], strs: list[str]) -> Iterator[list]:
        """Each argument edited the wide way alone, then every pair of arguments edited
        together (``PAIR_EDITS`` edits of each)."""
        items = self.items
        editable = [i for i, (_, kind, _) in enumerate(items) if kind == "value"]
        wide = {i: list(_wide_mutations(items[i][2], ints, strs)) for i in editable}
        for i in editable:
            for edit in wide[i]:
                yield items[:i] + [(items[i][0], "value", edit)] + items[i + 1:]
        for a, i in enumerate(editable):
            for j in editable[a + 1:]:
                for first in wide[i][:PAIR_EDITS]:
                    for second in wide[j][:PAIR_EDITS]:
                        both = list(items)
                        both[i] = (items[i][0], "value", first)
                        both[j] = (items[j][0], "value", second)
                        yield both


def _restated(args: str, trace: Trace) -> str | None:
    """A traced call's arguments with every exact value written as its literal (other
    arguments keep their text); None if the text cannot be read."""
    try:
        arguments = _Arguments(args, trace)
        return arguments.text(arguments.items)
    except (LiteralError, ValueError, RecursionError):
        return None


def find_witness(sandbox: Sandbox, code: str, entry_point: str, shape: Shape,
                 target: frozenset[int], args: str, trace: Trace,
                 others: list[tuple[str, Trace]], accepts: Callable[[str], bool]) -> str | None:
    """Argument text of an input reaching ``target`` that ``accepts`` takes as an answer, or
    None if the search finds none.

    Every candidate runs under a share of the step limit (``build_step_budget``), so the
    answer check, which has the whole limit, never hinges on it; being counted, the budget
    makes the same candidate win on every machine."""
    from execbench.sandbox.pool import Job
    from execbench.sandbox.trace import RESULT_ONLY

    seen = {args}
    budget = min(SEARCH_STEPS, build_step_budget(sandbox))

    def first_hit(pool: list[tuple[str, Any]]) -> str | None:
        for start in range(0, len(pool), BATCH):
            batch = pool[start:start + BATCH]
            traces = sandbox.map(Job(code, entry_point, text, RESULT_ONLY, max_steps=budget)
                                 for text, _ in batch)
            for (text, _), result in zip(batch, traces, strict=True):
                if reaches(shape, result, target) and accepts(text):
                    return text
        return None

    stated = []
    for other_args, other in others:
        text = _restated(other_args, other) if reaches(shape, other, target) else None
        if text is not None and text not in seen:
            seen.add(text)
            stated.append((text, None))
    hit = first_hit(stated)
    if hit is not None:
        return hit
    try:
        arguments = _Arguments(args, trace)
    except (LiteralError, ValueError):
        return None
    ints, strs = _constants(code, [value for _, kind, value in arguments.items
                                   if kind == "value"])

    def candidates(start: list, limit: int, edits: Iterator[list] | None = None
                   ) -> list[tuple[str, list]]:
        found = []
        for items in edits or arguments.neighbours(start, ints, strs):
            try:
                text = arguments.text(items)
            except (LiteralError, ValueError, RecursionError):
                continue
            if text not in seen and len(text) < 10_000:
                seen.add(text)
                found.append((text, items))
                if len(found) >= limit:
                    break
        return found

    first = candidates(arguments.items, FIRST_ROUND)
    hit = first_hit(first)
    if hit is not None:
        return hit
    second: list[tuple[str, list]] = []
    for _, items in first[:SECOND_ROUND_SEEDS]:
        second += candidates(items, SECOND_ROUND // SECOND_ROUND_SEEDS)
    hit = first_hit(second)
    if hit is not None:
        return hit
    return first_hit(candidates([], LAST_ROUND, arguments.combined(ints, strs)))
