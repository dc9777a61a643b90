"""Reading a model's answer: the parts every task shares.

Answers are parsed into syntax trees and read with the literal parser; a call's arguments
are rebuilt from literals (or, for a dataset argument that is not a literal, from the
dataset's own text when the answer repeats it exactly). Nothing here evaluates model text.
When nothing can be read, the ``unparsable`` score's detail names what was expected.

``string_match`` replays how CodeSense's evaluation compares an answer with the truth, and
is the one lenient comparison every task with a value answer records beside its strict
verdict (``extra["string_match"]``). Both texts are normalised the same way, then compared
for equality: trailing semicolons dropped, surrounding whitespace stripped, lower-cased,
every quote character (``'`` then ``"``) trimmed from both ends, and each run of
whitespace made one space. Nothing is parsed, so an answer the literal parser refuses can
still match: ``abcdefghij`` for ``'abcdefghij'`` (unquoted), ``TRUE`` for ``True``. It is
a text comparison, so it also refuses what strict accepts when written otherwise than
the truth's repr (``[1,2]`` for ``[1, 2]``, keys in another order, ``1.50`` for ``1.5``).
Tasks that ask for an assertion compare its right-hand side (``stated_text``). Tasks that
ask in CodeSense's style compare the answer as CodeSense does, so results can be set
against the published numbers.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from execbench.results import Metric, Place
from execbench.tasks.base import UNPARSABLE, Score, SkipInstance
from execbench.tasks.common.json_fields import (
    int_or_none,
    objects_of,
    text_of,
    text_or_none,
)
from execbench.values import (
    Encoded,
    LiteralError,
    encode,
    literal_value,
    parse_call_nodes,
    parse_literal,
    read_encoded,
    to_literal,
)

if TYPE_CHECKING:
    from execbench.json_types import JSON, JSONObject

EMPTY = "empty response"
"""The detail of an ``unparsable`` score when the response has no answer text at all."""


def unparsable(answer: str | None, why: str, extra: JSONObject | None = None, *,
               score: float | None = None) -> Score:
    """The verdict on an answer nothing could be read from; ``why`` names what was expected
    (``EMPTY`` when there was no answer text). ``score`` is the partial credit of a task
    that gives one."""
    return Score(UNPARSABLE, answer=answer, score=score, detail=why, extra=extra or {})


def read_value(text: str | None, *, assignment: bool = False) -> Encoded:
    """The typed-JSON value an answer states: a literal ``V`` or ``assert ... == V`` (the
    value an output question asks for) and, with ``assignment``, ``name = V`` too.
    ``LiteralError`` names what was expected when there is no such value."""
    if text is None:
        raise LiteralError(EMPTY)
    node = _assigned(text) if assignment else None
    if node is None:
        node = parse_statement(text)
        pair = equality(node)
        node = pair[1] if pair else node
    if node is None:
        raise LiteralError("not a Python literal, `name = literal` or `assert ... == literal`"
                           if assignment else "not a Python literal or `assert ... == literal`")
    return read_encoded(node)


def _assigned(text: str) -> ast.AST | None:
    """The value of ``name = value`` (or ``a, b = value``), if that is all the text is."""
    try:
        tree = ast.parse(text.strip())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if len(tree.body) == 1 and isinstance(tree.body[0], ast.Assign | ast.AnnAssign):
        return tree.body[0].value
    return None


def _candidates(text: str) -> list[str]:
    """Readings of an answer to try in turn: all of it, then its last ``assert`` line,
    then its first line (a value followed by an explanation)."""
    lines = [line for line in text.splitlines() if line.strip()]
    asserts = [line for line in reversed(lines) if line.strip().startswith("assert")]
    return [text, *asserts[:1], *lines[:1]]


def parse_statement(text: str) -> ast.AST | None:
    """The answer as one statement or expression (see ``_candidates``)."""
    for candidate in _candidates(text):
        try:
            tree = ast.parse(candidate.strip())
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        if len(tree.body) == 1:
            stmt = tree.body[0]
            if isinstance(stmt, ast.Assert):
                return stmt.test
            if isinstance(stmt, ast.Expr):
                return stmt.value
    return None


def equality(node: ast.AST | None) -> tuple[ast.AST, ast.AST] | None:
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
        return node.left, node.comparators[0]
    return None


@dataclass(frozen=True)
class Given:
    """A dataset argument that is not a literal (a ``lambda``), at a position or a keyword:
    an answer must repeat it verbatim, since a model's text is never run."""

    text: str
    position: int | None = None
    keyword: str | None = None

    def to_record(self) -> JSONObject:
        where: JSONObject = {"position": self.position} if self.keyword is None \
            else {"keyword": self.keyword}
        return {**where, "text": self.text}

    @classmethod
    def from_record(cls, record: Mapping[str, JSON]) -> Given:
        return cls(text_of(record, "text"), int_or_none(record, "position"),
                   text_or_none(record, "keyword"))

    @classmethod
    def listed(cls, record: Mapping[str, JSON]) -> tuple[Given, ...]:
        """The arguments a record's ``given`` list names."""
        return tuple(cls.from_record(item) for item in objects_of(record, "given"))


def given_arguments(args: str) -> tuple[Given, ...]:
    """The dataset arguments that are not literals, which an answer must repeat verbatim."""
    nodes, keywords = parse_call_nodes(args)
    if any(kw.arg is None for kw in keywords):
        raise SkipInstance("the call unpacks **kwargs")
    return (*(Given(ast.unparse(node), position=i) for i, node in enumerate(nodes)
              if not is_literal(node)),
            *(Given(ast.unparse(kw.value), keyword=kw.arg) for kw in keywords
              if not is_literal(kw.value)))


def given_note(given: Sequence[Given]) -> str:
    """A prompt sentence naming the dataset arguments an answer must repeat verbatim."""
    if not given:
        return ""
    fixed = "; ".join(f"argument {g.position + 1}: {g.text}" if g.position is not None
                      else f"keyword {g.keyword}: {g.text}" for g in given)
    return (" Some arguments cannot be written as literals; write those exactly as given "
            f"here: {fixed}.")


def is_literal(node: ast.AST) -> bool:
    try:
        literal_value(node)
    except LiteralError:
        return False
    return True


def answer_arguments(call: ast.Call, args: str, given: Sequence[Given]) -> str:
    """The argument-list text to run for a model's call, built from literals only.

    A non-literal argument passes only when it is the very expression the dataset gave at
    that place; the dataset's text is then used, so the model's text never runs.
    """
    original_args, original_keywords = parse_call_nodes(args)
    given_positions = {g.position for g in given if g.position is not None}
    given_keywords = {g.keyword for g in given if g.keyword is not None}
    parts: list[str] = []
    for i, node in enumerate(call.args):
        if isinstance(node, ast.Starred):
            raise LiteralError("argument unpacking (*) is not a literal")
        if i in given_positions and i < len(original_args) and \
                ast.dump(node) == ast.dump(original_args[i]):
            parts.append(ast.unparse(original_args[i]))
        else:
            parts.append(to_literal(encode(literal_at(node, f"argument {i + 1}"))))
    originals = {kw.arg: kw.value for kw in original_keywords}
    for kw in call.keywords:
        if kw.arg is None:
            raise LiteralError("keyword unpacking (**) is not a literal")
        if kw.arg in given_keywords and ast.dump(kw.value) == ast.dump(originals[kw.arg]):
            parts.append(f"{kw.arg}={ast.unparse(originals[kw.arg])}")
        else:
            parts.append(f"{kw.arg}={to_literal(encode(literal_at(kw.value, kw.arg)))}")
    return ", ".join(parts)


def literal_at(node: ast.AST, where: str) -> Any:
    try:
        return literal_value(node)
    except LiteralError as exc:
        raise LiteralError(f"{where}: {exc}") from None


def answer_call(text: str, entry_point: str) -> ast.Call | None:
    """The call an answer proposes: ``f(...)``, ``assert f(...) == ...``, or a bare
    argument list such as ``[1, 2], 'a'``."""
    node = parse_statement(text)
    pair = equality(node)
    candidate = pair[0] if pair else node
    if isinstance(candidate, ast.Call) and isinstance(candidate.func, ast.Name) and \
            candidate.func.id == entry_point:
        return candidate
    for reading in _candidates(text):
        try:
            args, keywords = parse_call_nodes(reading.strip())
        except LiteralError:
            continue
        return ast.Call(func=ast.Name(entry_point), args=args, keywords=keywords)
    return None


def json_value(text: str) -> Any:
    """A JSON (or Python-literal) value from an answer: all of it, or the outermost
    ``{...}`` or ``[...]`` span in it (prose around it is ignored). None if there is none."""
    spans = [text]
    for open_, close in (("{", "}"), ("[", "]")):
        start, end = text.find(open_), text.rfind(close)
        if 0 <= start < end:
            spans.append(text[start:end + 1])
    for span in spans:
        try:
            return json.loads(span)
        except (ValueError, RecursionError):
            pass
        try:
            return parse_literal(span)
        except LiteralError:
            pass
    return None


def signature_of(code: str, entry_point: str) -> inspect.Signature | None:
    """The entry point's signature read from its ``def`` (None if it is not a plain def)."""
    for node in ast.parse(code).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == entry_point:
            a = node.args
            params: list[inspect.Parameter] = []
            positional = [*a.posonlyargs, *a.args]
            first_default = len(positional) - len(a.defaults)
            for i, arg in enumerate(positional):
                kind = inspect.Parameter.POSITIONAL_ONLY if i < len(a.posonlyargs) else \
                    inspect.Parameter.POSITIONAL_OR_KEYWORD
                default = None if i >= first_default else inspect.Parameter.empty
                params.append(inspect.Parameter(arg.arg, kind, default=default))
            if a.vararg:
                params.append(inspect.Parameter(a.vararg.arg, inspect.Parameter.VAR_POSITIONAL))
            for arg, given in zip(a.kwonlyargs, a.kw_defaults, strict=True):
                params.append(inspect.Parameter(
                    arg.arg, inspect.Parameter.KEYWORD_ONLY,
                    default=inspect.Parameter.empty if given is None else None))
            if a.kwarg:
                params.append(inspect.Parameter(a.kwarg.arg, inspect.Parameter.VAR_KEYWORD))
            return inspect.Signature(params)
    return None


def fits_signature(signature: inspect.Signature | None, call: ast.Call) -> bool:
    if signature is None:
        return True
    try:
        signature.bind(*range(len(call.args)), **{kw.arg: 0 for kw in call.keywords if kw.arg})
    except TypeError:
        return False
    return True


def _normalised(text: str) -> str:
    text = text.rstrip(";").strip().lower()
    text = text.strip().strip("'").strip('"')
    return " ".join(text.split())


def string_match(answer: str | None, truth: str) -> bool:
    """Whether CodeSense's string comparison accepts ``answer`` for the truth's text."""
    return answer is not None and _normalised(answer) == _normalised(truth)


def string_match_metric(task: str, *where: str, name: str = "string match",
                        key: str = "string_match") -> Metric:
    """The string-match share a task's summary holds at ``where`` + ``key``, declared as a
    headline metric so that the default report and the leaderboard show it beside the
    strict one."""
    return Metric(name, Place.summary(task, *where, key), headline=True,
                  description="share of samples whose answer, read as text, equals the "
                  "truth's text once both are normalised as CodeSense compares them "
                  "(lenient: an unquoted string counts; see execbench/tasks/common/"
                  "answers.py)")


def value_string_match(answer: str | None, truth: str) -> bool:
    """``string_match`` of the value an answer states (``stated_text``) with the truth's
    text: the lenient column of every task whose answer is a value."""
    return string_match(stated_text(answer), truth)


_MARKS = re.compile(r"==|[\\'\"()\[\]{}]")
"""What ``stated_text`` looks at: an equality, a quote, an escape, a bracket."""


def stated_text(answer: str | None) -> str | None:
    """The text an answer gives as its value, read as text (it may not parse): from its
    last line that starts with ``assert`` to its end (else all of it), the part after
    the first ``==`` outside strings and brackets, else that whole part without the
    ``assert``. One pass, jumping between the characters that matter."""
    if answer is None:
        return None
    lines = answer.splitlines()
    asserts = [i for i, line in enumerate(lines) if _ASSERT.match(line)]
    text = "\n".join(lines[asserts[-1]:]).strip() if asserts else answer.strip()
    if asserts:
        text = text[len("assert"):]
    right = _after_equality(text)
    return (text if right is None else right).strip()


_ASSERT = re.compile(r"\s*assert\b")


def _after_equality(text: str) -> str | None:
    """What follows the first ``==`` outside strings (one or three quotes) and brackets;
    None without one."""
    depth, quote, at = 0, "", 0
    while (found := _MARKS.search(text, at)) is not None:
        mark, start, at = found.group(), found.start(), found.end()
        if quote:
            if mark == "\\":
                at += 1  # the escaped character, whatever it is
            elif text.startswith(quote, start):
                quote, at = "", start + len(quote)
        elif mark == "==":
            if depth == 0:
                return text[at:]
        elif mark in "'\"":
            quote = mark * 3 if text.startswith(mark * 3, start) else mark
            at = start + len(quote)
        elif mark in "([{":
            depth += 1
        elif mark in ")]}":
            depth = max(depth - 1, 0)
    return None
