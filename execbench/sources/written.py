"""Programs a model writes (``execbench generate-programs``): the prompt that asks for
them, the reading of a reply, and the checks a program passes before it is kept.

Yang et al. measure how far mutated programs move from what models have seen against
programs a model writes itself, the in-distribution anchor. Such programs are untrusted
twice over: their code is a model's, run here only in the sandbox, one unit per call as
any dataset program; and a reply can carry anything. So a reply is read by a line scan
(no pattern that backtracks), bounded before ``ast`` sees it, and a program is kept only
when every rule below holds, each failure a one-line reason:

1. the reply holds a ``python`` block and an ``inputs`` block (one argument list a line);
2. the program is of the asked class (``WRITTEN_CLASS_RULES``): one function, imports
   only from a short list of standard modules, nothing that reaches past the function
   (dunder names, ``global``, ``eval`` and its kin however reached, attributes looked up
   by a name made at run time, writing to any attribute);
3. every input is a literal argument list (a model's input is never code);
4. it is not a duplicate: the same syntax tree as a program kept before, layout,
   comments, docstrings and the names it binds aside (``duplicate_key``);
5. run in the sandbox on each input, twice (``program_writing.run_checks``: in two
   sandboxes, so in two processes, as a later build runs it in another): each call
   returns, within the build's step budget and time nets (``suite.budget.refused``), and
   the two runs agree on status, steps and value. Calls that fail are dropped; a program
   with none left is dropped.

A kept program becomes a generic-source record (``sources.generic``) whose ``meta``
records where it came from: the model, the style, the prompt, the seed, the sample and
the time. Building a suite from that file is as deterministic as from any other.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Iterator
from dataclasses import dataclass

from execbench.analysis.syntax import tree_key
from execbench.values import LiteralError, parse_call_nodes
from execbench.values.literals import literal_value

MAX_REPLY_CHARS = 64_000
"""Characters of a reply read; a longer one is dropped unread (a program of the class
fits in a few hundred)."""
MAX_CODE_CHARS = 8_000
"""Characters of a program's code parsed: a function of the class has tens of lines."""
MAX_INPUTS = 10
"""Argument lists read from one reply; more are dropped with the reply's reason."""
ALLOWED_IMPORTS = frozenset({"bisect", "collections", "functools", "heapq", "itertools",
                             "math", "operator", "random", "string"})
"""Modules a written program may import: the standard library's data helpers. ``random``
is allowed because running twice catches its use; ``os``, ``sys``, ``builtins`` and the
rest reach past the function."""
FORBIDDEN_CALLS = frozenset({"eval", "exec", "compile", "open", "input", "globals", "locals",
                             "vars", "getattr", "setattr", "delattr", "breakpoint", "exit",
                             "quit", "help", "memoryview", "__import__", "attrgetter",
                             "methodcaller"})
"""Names a written program may not use at all, called or not (``map(eval, ...)``, ``g =
getattr`` call them later), nor import or reach as an attribute (``operator.attrgetter``):
each reads or changes what lies past the function, or waits for a reader.
``attrgetter`` and ``methodcaller`` look attributes up by a name made at run time, which
the dunder rule cannot see."""
FORMATTING = frozenset({"format", "format_map", "Formatter", "vformat"})
"""Attributes a written program may not use: a format string looks fields up by name
(``'{0.__class__}'.format(xs)``), past the dunder rule. The ``format`` builtin is allowed:
its spec names no field."""


@dataclass(frozen=True)
class Style:
    """A class of programs to ask for: what the prompt describes and its themes."""

    name: str
    description: str
    themes: tuple[str, ...]
    """One is drawn per request (seeded), so requests at temperature 0 still differ."""


STYLES = {
    "list": Style(
        "list",
        "a Python function named f that takes a list of integers (and, if it needs one, "
        "a second integer argument) and returns a list of integers or an integer. Use "
        "loops, conditions, comprehensions and built-in functions; no imports, no input "
        "or output, no randomness. Keep it between 3 and 15 lines.",
        ("filtering elements", "running totals", "comparing neighbours", "reordering",
         "counting", "sliding windows", "merging halves", "index arithmetic",
         "nested loops over pairs", "building a new list step by step")),
}
"""The program classes ``generate-programs --style`` takes; ``list`` is Yang et al.'s
LLM-List (list-manipulation functions)."""


def prompt(style: Style, seed: int, inputs: int) -> list[dict[str, str]]:
    """The chat messages asking for one program of ``style`` and ``inputs`` calls of it;
    the theme is drawn from ``seed``, so the same seed asks the same question."""
    theme = random.Random(f"{style.name}/{seed}").choice(style.themes)
    text = (f"Write {style.description} This one should be about {theme}.\n\n"
            f"Then give {inputs} different inputs to call it with, each an argument list "
            "as it would appear between the parentheses of a call (for example "
            "`[3, 1, 2], 2`), one per line, using only literal values.\n\n"
            "Reply with exactly two fenced blocks and nothing else:\n"
            "```python\n<the function>\n```\n```inputs\n<one argument list per line>\n```")
    return [{"role": "user", "content": text}]


@dataclass(frozen=True)
class Written:
    """A program read from a reply, before it is run."""

    code: str
    entry_point: str
    calls: tuple[str, ...]


class Dropped(ValueError):
    """Why a reply or a program is not kept: a one-line reason, and the rule's name."""

    def __init__(self, rule: str, reason: str) -> None:
        super().__init__(reason)
        self.rule = rule


def read_reply(text: str) -> Written:
    """The program and inputs of a reply (``Dropped`` when it breaks rules 1 to 3)."""
    if len(text) > MAX_REPLY_CHARS:
        raise Dropped("unreadable", f"reply longer than {MAX_REPLY_CHARS:,} characters")
    blocks = dict(_blocks(text))
    code = blocks.get("python")
    if code is None or "inputs" not in blocks:
        raise Dropped("unreadable", "no ```python block and ```inputs block")
    entry = class_rule(code)
    lines = [line.strip() for line in blocks["inputs"].splitlines() if line.strip()]
    if not lines:
        raise Dropped("unreadable", "the inputs block is empty")
    if len(lines) > MAX_INPUTS:
        raise Dropped("unreadable", f"more than {MAX_INPUTS} inputs")
    for line in lines:
        _literal_arguments(line)
    return Written(code, entry, tuple(dict.fromkeys(lines)))


def _blocks(text: str) -> Iterator[tuple[str, str]]:
    """Each fenced block's label (lower case, ``py`` read as ``python``) and body, the
    first of each label winning (``dict`` keeps the last: yielded in reverse); a scan of
    lines, linear in the text."""
    found: list[tuple[str, str]] = []
    label: str | None = None
    body: list[str] = []
    for line in text.splitlines():
        fence = line.strip()
        if label is None and fence.startswith("```"):
            label, body = fence[3:].strip().lower(), []
            label = "python" if label == "py" else label
        elif label is not None and fence == "```":
            found.append((label, "\n".join(body) + "\n"))
            label = None
        elif label is not None:
            body.append(line)
    yield from reversed(found)


def _literal_arguments(text: str) -> None:
    """Refuse an argument list that is not made of literals (``Dropped``)."""
    try:
        args, keywords = parse_call_nodes(text)
        for node in [*args, *(keyword.value for keyword in keywords)]:
            if isinstance(node, ast.Starred):
                raise LiteralError("a starred argument")
            literal_value(node)
        if any(keyword.arg is None for keyword in keywords):
            raise LiteralError("a ** argument")
    except LiteralError as exc:
        raise Dropped("input", f"input {text[:60]!r} is not a literal argument list "
                               f"({exc})") from None


WRITTEN_CLASS_RULES = ("one top-level function (a docstring and allowed imports beside it)",
                       "imports only from ALLOWED_IMPORTS",
                       "no name or attribute with double underscores",
                       "no global or nonlocal statement",
                       "no use of a FORBIDDEN_CALLS name (called, passed, imported or as "
                       "an attribute), nor of a FORMATTING attribute",
                       "no assignment to or deletion of an attribute")
"""What rule 2 checks, in order; the first broken one is the reason. Any attribute write is
refused, not only one through a module's name: ``m = math; m.pi = 3`` and ``from collections
import Counter; Counter.most_common = ...`` change what the unit's later calls see, and a
function of the class writes to none."""


def class_rule(code: str) -> str:
    """The entry point of ``code`` if it is of the class (``WRITTEN_CLASS_RULES``), else
    ``Dropped`` naming the rule it breaks."""
    if len(code) > MAX_CODE_CHARS:
        raise Dropped("class", f"code longer than {MAX_CODE_CHARS:,} characters")
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise Dropped("class", f"the code does not parse ({type(exc).__name__})") from None
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    for statement in tree.body:
        if isinstance(statement, ast.Import | ast.ImportFrom):
            continue
        if not (isinstance(statement, ast.FunctionDef) or _is_docstring(statement)):
            raise Dropped("class", f"line {statement.lineno}: a top-level statement other "
                                   "than the function and its imports")
    if len(functions) != 1:
        raise Dropped("class", f"{len(functions)} top-level functions, not one")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) \
                else [node.module or ""]
            for name in names:
                if name.split(".")[0] not in ALLOWED_IMPORTS:
                    raise Dropped("class", f"line {node.lineno}: imports {name or '.'}")
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name in FORBIDDEN_CALLS | FORMATTING:
                        raise Dropped("class", f"line {node.lineno}: imports "
                                               f"{node.module}.{alias.name}")
        named = node.id if isinstance(node, ast.Name) else node.attr \
            if isinstance(node, ast.Attribute) else node.name \
            if isinstance(node, ast.FunctionDef | ast.ClassDef) else None
        if named is not None and named.startswith("__") and named.endswith("__"):
            raise Dropped("class", f"line {getattr(node, 'lineno', '?')}: uses {named}")
        if isinstance(node, ast.Global | ast.Nonlocal):
            raise Dropped("class", f"line {node.lineno}: a {type(node).__name__.lower()} "
                                   "statement")
        # a call is walked before its callee's name, so a direct call says "calls"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in FORBIDDEN_CALLS:
            raise Dropped("class", f"line {node.lineno}: calls {node.func.id}")
        if isinstance(node, ast.Name) and node.id in FORBIDDEN_CALLS:
            raise Dropped("class", f"line {node.lineno}: names {node.id}")
        if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_CALLS | FORMATTING:
            raise Dropped("class", f"line {node.lineno}: uses .{node.attr}")
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
            owner = node.value.id if isinstance(node.value, ast.Name) else "an object"
            raise Dropped("class", f"line {node.lineno}: changes {owner}.{node.attr}")
    return functions[0].name


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
        and isinstance(node.value.value, str)


def duplicate_key(code: str) -> str:
    """The key rule 4 compares: ``tree_key`` of the program with its docstrings dropped
    and the names it binds (its function, parameters, variables) renamed in the order the
    tree is walked, so a copy under other names or another docstring is the program kept
    before. Builtins and imported names keep theirs (``sum`` and ``max`` stay apart). A
    tree too deep to write back as text keys as written."""
    tree = ast.parse(code)
    bound = {node.id for node in ast.walk(tree)
             if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)}
    bound |= {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg)}
    bound |= {node.name for node in ast.walk(tree)
              if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.ExceptHandler)
              and node.name}
    numbered: dict[str, str] = {}
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.FunctionDef) and body and _is_docstring(body[0]):
            node.body = body[1:] or [ast.Pass()]
        for field in ("id", "arg", "name"):
            name = getattr(node, field, None)
            if isinstance(name, str) and name in bound \
                    and not isinstance(node, ast.alias | ast.keyword):  # names of others
                setattr(node, field, numbered.setdefault(name, f"_{len(numbered)}"))
    try:
        return tree_key(ast.unparse(tree))
    except RecursionError:
        return tree_key(code)
