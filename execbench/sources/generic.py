"""The generic JSONL format, and the checks that every source's programs go through.

Use this format to bring your own programs. Each line of the file (plain or gzipped) is one
JSON object::

    {"id": "sum_list",
     "code": "def total(xs):\\n    return sum(xs)\\n",
     "entry_point": "total",
     "calls": ["[1, 2, 3]", {"args": "[], start=5", "expected": "5"}],
     "meta": {"author": "me"}}

``id`` (string)
    Unique within the file; the program id becomes ``<file name>/<id>``.
``code`` (string)
    A complete Python module. It must compile, and it must define ``entry_point`` at
    module level (with ``def``, ``class``, an assignment or an import).
``entry_point`` (string)
    The name of the function to call.
``calls`` (non-empty list)
    Each item is the text of an argument list, as written between the parentheses of a
    call (``"'abc', 2"``, ``"[1, 2], k=3"``, or ``""`` for no arguments), or an object
    ``{"args": ..., "expected": ...}`` whose optional ``expected`` is the literal text of
    the value the call should return (``"[1, 2]"``, ``"float('nan')"``). Argument texts are
    trusted benchmark data: they may be any expression that is valid in the program's
    namespace (``lambda x: x + 1``), and are only syntax-checked when loading.
    An object may also carry ``"trace"``: the call's trace recorded where it ran (a trace
    record as ``Trace.to_dict`` writes it, with at least ``status``). Such a call is never
    run: its recorded trace is the ground truth, so it suits functions that need their
    project around them (imports, globals) to run. Its instances say ``"recorded": true``
    and the suite's manifest lists them.
``language`` (string, optional)
    ``python`` (the default), ``c`` or ``java``. Only Python is ever run: a program in
    another language is shown, never compiled, and every call must bring its ``trace``;
    tasks that must run code skip it, saying so.
``meta`` (object, optional)
    Copied into the program's metadata. A ``"date"`` there (``YYYY-MM-DD``) is the
    program's date, which ``build --after``/``--before`` read (``sources.dates``).

Repeated argument texts within one program are kept once. A record that breaks any of these
rules is skipped and listed with its ``file:line``; the rest of the file still loads.

Every text of a record that is parsed here (code, argument lists, expected values) is
bounded before ``ast.parse`` sees it, whatever its format: ``ast`` builds a node for about
every word or symbol, each a few hundred bytes (up to ~900 with the compiler's own), so a
4 MiB record of ``a\n`` lines would take gigabytes. A text over ``MAX_PARSED_CHARS``
characters, or over ``MAX_PARSED_TOKENS`` words and symbols (counted by one linear scan),
is a skipped record naming the bound; one nested too deeply for the parser or the
compiler is skipped with the error that says so.
"""

from __future__ import annotations

import ast
import re
import warnings
from typing import Any

from execbench.program import LANGUAGES, PYTHON, STDIN, Call, Program
from execbench.sandbox.trace import Trace, TraceError
from execbench.sources.jsonl import Record, RecordError
from execbench.values import LiteralError, is_encoding, parse_call_nodes, parse_literal

ID_KEY = "id"
MAX_PARSED_CHARS = 1 << 20
"""Characters of one text parsed: a program's code, a call's arguments or expected value.
The largest in the shared sources: code 8,631 (a CodeSense statement record), arguments
8,204 (CodeSense); MBPP+'s generated inputs reach 102 KB, written by us and never parsed
here."""
MAX_PARSED_TOKENS = 200_000
"""Words and symbols of one text parsed (``count_tokens``): at most about 175 MB of syntax
tree and compiler state (100,000 ``a`` statements), where the largest code in the shared
sources has under 3,000 and real modules of 400 KB some 130,000."""
_TOKEN = re.compile(r"\w+|[^\w \t]")
"""A run of letters, digits and underscores, or any one other character but a blank: at
least one for each node ``ast`` makes (strings and comments count their words too)."""


def build(record: Record) -> Program:
    """A program from one generic record."""
    raw_calls = record.get("calls", list)
    calls = [_call(i, item) for i, item in enumerate(raw_calls, 1)]
    meta = record.optional("meta", dict) or {}
    return build_program(record, record.get("code"), record.get("entry_point"), calls, meta,
                         language=record.optional("language") or PYTHON)


def _call(index: int, item: Any) -> Call:
    if isinstance(item, str):
        return Call(item)
    if isinstance(item, dict):
        args, expected = item.get("args"), item.get("expected")
        if isinstance(args, str) and (expected is None or isinstance(expected, str)):
            return Call(args, expected, _recorded(index, item.get("trace")))
    raise RecordError(f"key 'calls': item {index} should be a string or an object with "
                      "string 'args', optional string 'expected' and optional 'trace'")


def _recorded(index: int, record: Any) -> Trace | None:
    if record is None:
        return None
    try:
        trace = Trace.from_dict(record)
    except TraceError as exc:
        raise RecordError(f"key 'calls': item {index}: recorded trace: {exc}") from None
    if not _typed_values(trace):
        raise RecordError(f"key 'calls': item {index}: recorded trace: a value or a state "
                          "is not typed JSON")
    return trace


def _typed_values(trace: Trace) -> bool:
    """Whether every value the trace records has the shape ``values.encode`` writes, so
    that no task meets a malformed one mid-build (a harvested project's tests can write
    records too)."""
    if not all(isinstance(state, dict) and isinstance(state.get("locals"), dict)
               for state in trace.states):
        return False
    return all(map(is_encoding, trace.recorded_values()))


def build_program(record: Record, code: str, entry_point: str, calls: list[Call],
                  meta: dict[str, Any], *, written_by_us: bool = False,
                  language: str = PYTHON) -> Program:
    """Check a record's parts and assemble the program; raises ``RecordError`` if unusable.

    Every format funnels through here, so all programs meet the same guarantees: the code
    compiles, the entry point is bound at module level (a program that reads standard
    input, ``STDIN``, has none), and every call's argument text
    parses as an argument list (and its expected text, if any, as a literal). Calls that
    repeat an earlier argument text are dropped. ``written_by_us`` skips the call check
    for texts produced by ``values.to_literal``, which parse by construction (EvalPlus has
    over 100,000 of them). A program in another ``language`` is never run, so none of this
    applies to it but one rule in its place: every call brings its recorded trace.
    """
    unique: dict[str, tuple[int, Call]] = {}
    for index, call in enumerate(calls, 1):
        unique.setdefault(call.args, (index, call))
    if not unique:
        raise RecordError("no calls")
    if language != PYTHON:
        if language not in LANGUAGES:
            raise RecordError(f"unknown language {language!r}")
        if "\x00" in code or any(call.recorded is None for _, call in unique.values()):
            raise RecordError(f"a {LANGUAGES[language]} program is never run: its code must "
                              "be text and every call must bring its recorded trace")
    else:
        tree = parse_module(code)
        if entry_point != STDIN and entry_point not in top_level_names(tree):
            raise RecordError(f"entry point {entry_point!r} is not defined at module level")
        if not written_by_us:
            for index, call in unique.values():
                check_call(index, call)
    return Program(id=record.id, source=record.source, code=code, entry_point=entry_point,
                   calls=tuple(call for _, call in unique.values()), meta=meta,
                   language=language)


def count_tokens(text: str) -> int:
    """How many words and symbols ``text`` holds (``_TOKEN``), in one linear scan."""
    return _TOKEN.subn("", text)[1]


def size_problem(text: str, max_chars: int = MAX_PARSED_CHARS,
                 max_tokens: int = MAX_PARSED_TOKENS) -> str | None:
    """Why ``text`` is too large to parse (its size and the bound it passes, in words the
    caller puts after what the text is), or None. A text shorter than ``max_tokens``
    characters is not scanned: it cannot hold more."""
    if len(text) > max_chars:
        return f"{len(text)} characters, over the bound of {max_chars}"
    if len(text) > max_tokens and (count := count_tokens(text)) > max_tokens:
        return f"{count} words and symbols, over the bound of {max_tokens}"
    return None


def check_call(index: int, call: Call) -> None:
    """Raise ``RecordError`` unless the call's texts parse as arguments and a literal."""
    if "\x00" in call.args or "\x00" in (call.expected or ""):
        raise RecordError(f"call {index} contains a NUL byte")
    for what, text in (("arguments", call.args), ("expected value", call.expected or "")):
        if (why := size_problem(text)) is not None:
            raise RecordError(f"call {index}: {what} of {why}")
    try:
        parse_call_nodes(call.args)
    except LiteralError as exc:
        raise RecordError(f"call {index}: arguments {excerpt(call.args)} do not parse "
                          f"({exc})") from None
    if call.expected is not None:
        try:
            parse_literal(call.expected)
        except LiteralError as exc:
            raise RecordError(f"call {index}: expected value {excerpt(call.expected)} "
                              f"is not a literal ({exc})") from None


def parse_module(code: str) -> ast.Module:
    """Parse and compile program code; a ``RecordError`` names the first problem and line.

    Compiling (not just parsing) also catches errors such as ``return`` outside a
    function, which would otherwise only show up in the sandbox. Code too large to parse
    in bounded memory (``size_problem``) is refused before the parse.
    """
    if "\x00" in code:
        raise RecordError("code contains a NUL byte")
    if (why := size_problem(code)) is not None:
        raise RecordError(f"code of {why}")
    try:
        with warnings.catch_warnings():  # e.g. "'is' with a literal": not our concern here
            warnings.simplefilter("ignore")
            tree = ast.parse(code)
            compile(tree, "<program>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise RecordError(f"code does not compile: {exc.msg} (line {exc.lineno})") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise RecordError(f"code does not compile: {type(exc).__name__}") from None
    return tree


def top_level_names(tree: ast.Module) -> set[str]:
    """Names that running the module binds directly at its top level."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(_bound(node.targets))
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            names.update(_bound([node.target]))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _bound(targets: list[ast.expr]) -> set[str]:
    """Names bound by assignment targets, including unpacking (``a, *b = ...``)."""
    return {n.id for t in targets for n in ast.walk(t)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def excerpt(text: str, limit: int = 60) -> str:
    """A quoted, one-line excerpt of user text for a skip reason."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "..."
