"""PythonSaga records, built into programs as the DexBench authors build them.

A PythonSaga file (``basic185.jsonl``, 185 records) has HumanEval's keys, but its
``canonical_solution`` is usually the function's body written flush left, so
``prompt + canonical_solution`` (the ``humaneval`` format) does not compile. Each record is::

    {"task_id": "PythonSaga/0", "entry_point": "total",
     "prompt": "def total(xs: list) -> int:\\n    \\"\\"\\"Add them up.\\"\\"\\"\\n",
     "canonical_solution": "\\nresult = 0\\nfor x in xs:\\n    result += x\\nreturn result",
     "test": "def check(candidate):\\n    assert candidate([1, 2]) == 3\\n"}

The program, as in DexBench's ``benchmark_filtering_script``: a solution that itself
defines ``entry_point`` is the whole module, under the prompt's own import lines; any
other solution is a body, indented to sit under the prompt's first ``def`` (after
removing the indentation common to its lines, which the authors keep, so a body written
already indented does not end up indented twice; and on a line of its own, where the
authors append it to a prompt that may end mid-line). The authors run every program
under a header that imports ``sys``, ``io``, ``datetime``, ``math`` and ``heapq``; of
those, the program gets the modules its code reads without importing them, and no others.
The docstring stays (the authors strip docstrings), as in the ``humaneval`` format.

The calls are every ``candidate(...)`` (or ``entry_point(...)``) call written in the test,
in order, read from the syntax tree as literal text; ``assert ... == <literal>`` gives the
expected output. A call whose arguments use a name the test makes while it runs is left
out, with a note: the authors turn a test's assertions into module-level statements, where
such a name does not exist. A test that does not parse as a whole (a published one writes a
list without commas) is read one assertion line at a time, as the authors read it as text,
each line that does not parse left out with a note. A record with no solution
(31 of the published ones) or no usable call is skipped, saying why.
"""

from __future__ import annotations

import ast
import builtins
import re
import textwrap

from execbench.program import Call, Program
from execbench.sources.generic import build_program, parse_module, size_problem, top_level_names
from execbench.sources.humaneval import FoundCall, find_calls
from execbench.sources.jsonl import Record, RecordError

ID_KEY = "task_id"
AUTHORS_IMPORTS = ("datetime", "heapq", "io", "math", "sys")
"""The modules DexBench's runner imports above every PythonSaga program (and
``unittest``, which only its own assertion uses)."""
_IMPORT_LINE = re.compile(r"(import\s+\S|from\s+\S+\s+import\s+\S)")
"""A prompt line the authors copy above a solution that is a whole module."""


def build(record: Record) -> Program:
    """A program from one PythonSaga record, with the calls its test writes."""
    prompt = record.get("prompt")
    solution = record.get("canonical_solution")
    entry_point = record.get("entry_point")
    test = record.get("test")
    if not solution.strip():
        raise RecordError("key 'canonical_solution' is empty: there is no program to run")
    code = program_code(prompt, solution, entry_point)
    calls = [_call(index, item, record) for index, item in
             enumerate(test_calls(test, entry_point, record.notes), 1)]
    kept = [call for call in calls if call is not None]
    if not kept:
        raise RecordError(f"no call of {entry_point} in 'test' could be read"
                          + (f" ({'; '.join(record.notes)})" if record.notes else ""))
    meta = {"task_id": record.get(ID_KEY, (str, int)), "prompt": prompt,
            "skipped_calls": len(record.notes)}
    return build_program(record, code, entry_point, kept, meta)


def program_code(prompt: str, solution: str, entry_point: str) -> str:
    """The module the authors run for a record, less their assertion and docstring removal,
    with only the header imports it uses."""
    if f"def {entry_point}" in solution:
        imports = [line for line in prompt.splitlines() if _IMPORT_LINE.match(line)]
        code = "\n".join(imports) + "\n\n" + solution if imports else solution
    else:
        code = _under_def(prompt, solution)
    tree = parse_module(code)  # bounded, and a clear reason for code that does not compile
    used = {node.id for node in ast.walk(tree)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    header = [f"import {name}" for name in AUTHORS_IMPORTS
              if name in used and name not in top_level_names(tree)]
    return "\n".join(header) + "\n\n" + code if header else code


def _under_def(prompt: str, body: str) -> str:
    """``body`` indented one level under the prompt's first ``def``, on a line of its own."""
    indent = next((len(line) - len(line.lstrip()) for line in prompt.splitlines()
                   if line.lstrip().startswith("def ")), None)
    if indent is None:
        raise RecordError("key 'prompt' has no def for the solution's body to go under")
    indented = textwrap.indent(textwrap.dedent(body), " " * (indent + 4))
    return prompt + ("" if prompt.endswith("\n") else "\n") + indented + "\n"


def test_calls(test: str, entry_point: str, notes: list[str]) -> list[FoundCall]:
    """The calls of the function the test writes, in order; problems go to ``notes``."""
    if (too_large := size_problem(test)) is not None:
        raise RecordError(f"key 'test' of {too_large}")
    wanted = {"candidate", entry_point}
    try:
        return find_calls(test, ast.parse(test), wanted, _is_builtin)
    except SyntaxError:
        pass
    except (ValueError, RecursionError, MemoryError) as exc:
        raise RecordError(f"key 'test' does not parse: {type(exc).__name__}") from None
    found: list[FoundCall] = []
    for lineno, line in enumerate(test.splitlines(), 1):
        statement = line.strip()
        if not statement.startswith("assert "):
            continue
        try:
            tree = ast.parse(statement)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            notes.append(f"test line {lineno} does not parse: its call is left out")
            continue
        found.extend(find_calls(statement, tree, wanted, _is_builtin))
    return found


def _call(index: int, item: FoundCall, record: Record) -> Call | None:
    if item.foreign_name is None:
        return item.call
    record.notes.append(f"call {index} uses the test-local name {item.foreign_name!r}: "
                        "left out")
    return None


def _is_builtin(name: str) -> bool:
    return hasattr(builtins, name)
