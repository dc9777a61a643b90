"""Calls whose arguments a test builds while it runs, recorded by running the test.

HumanEval's tests mostly write their calls with literal arguments (``candidate([1, 2])``),
which are read from the syntax tree. Some build the arguments first: random inputs in a
loop (HumanEval/32, /38, /50, /53), a loop variable (/44), a list computed a line before
(/151). Such a call cannot be replayed from its text, so the test itself is run once, in
the sandbox, with a ``candidate`` that records the arguments it receives at those call
sites and then calls the real entry point; each recorded argument list becomes an
ordinary call, written back as literals.

The run is deterministic: the sandbox reseeds ``random`` with 0 before every call, so the
same interpreter records the same inputs in every build (unseeded tests such as
HumanEval/38 included). Arguments are copied before the entry point can change them. A
site inside a loop is recorded at its first ``PER_SITE`` executions, in the test's order.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from execbench.sandbox.pool import Job, Sandbox
from execbench.sandbox.trace import RESULT_ONLY
from execbench.values import LiteralError, decode, is_exact, to_literal

PER_SITE = 10
"""Executions of one call site kept: a loop of a hundred random inputs gives ten calls,
about as many as a HumanEval test writes out by hand."""
DRIVER = "__execbench_test_calls__"
"""The function added after the test that runs it; named so no test can collide with it."""
_DRIVER_CODE = '''

def {driver}(__sites, __per_site):
    import copy as __copy
    import sys as __sys
    __seen = {{}}
    __calls = []

    def __candidate(*args, **kwargs):
        line = __sys._getframe(1).f_lineno
        if line in __sites and __seen.get(line, 0) < __per_site:
            __seen[line] = __seen.get(line, 0) + 1
            __calls.append((line, __copy.deepcopy(args), __copy.deepcopy(kwargs)))
        return {entry_point}(*args, **kwargs)

    try:
        {check}(__candidate)
    except AssertionError:
        pass
    return __calls
'''
"""A failing assertion ends the test but keeps what was recorded before it (the calls
made up to then are still the test's calls); any other exception means the test could not
run as written, and the recording fails with it."""


class ReplayError(Exception):
    """The test could not be run to record its calls; the message says why."""


@dataclass(frozen=True)
class Recorded:
    """The argument-list texts recorded at each call site (a line of the test)."""

    by_line: dict[int, list[str]]
    unwritable: int
    """Recorded argument lists left out because a value has no literal form."""


class TestCalls:
    """Runs tests in a sandbox of its own, started on first need (most records have no
    call to record) and stopped on ``close``."""

    __test__ = False  # not a pytest class, whatever the name suggests

    def __init__(self) -> None:
        self._sandbox: Sandbox | None = None

    def record(self, code: str, entry_point: str, test: str, check: str,
               lines: set[int]) -> Recorded:
        """Run ``check`` of ``test`` (test-relative ``lines`` are the call sites to record)
        after the program ``code``. The test's top-level statements other than definitions
        and assignments (``check(f)`` at the end of a HumanEvalPack test) are blanked, so
        only the recording run calls the entry point."""
        head = code if code.endswith("\n") else code + "\n"
        offset = head.count("\n")
        driver = _DRIVER_CODE.format(driver=DRIVER, entry_point=entry_point, check=check)
        program = head + definitions_only(test) + driver
        sites = ", ".join(str(line + offset) for line in sorted(lines))
        if self._sandbox is None:
            self._sandbox = Sandbox(workers=1)
        trace = self._sandbox.run(Job(program, DRIVER, f"{{{sites}}}, {PER_SITE}",
                                      RESULT_ONLY))
        if trace.status != "ok" or trace.value is None:
            why = trace.detail or (trace.exception["type"] if trace.exception else trace.status)
            raise ReplayError(f"running the test to record its calls failed ({why})")
        return _read(trace.value, offset)

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None

    def __enter__(self) -> TestCalls:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_KEPT = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom,
         ast.Assign, ast.AnnAssign)


def definitions_only(test: str) -> str:
    """``test`` with its other top-level statements blanked line by line, so every line
    keeps its number (the call sites are named by line)."""
    lines = test.splitlines(keepends=True)
    for node in ast.parse(test).body:
        if not isinstance(node, _KEPT):
            for index in range(node.lineno - 1, node.end_lineno or node.lineno):
                lines[index] = "\n"
    return "".join(lines)


def _read(value: Any, offset: int) -> Recorded:
    """The driver's ``[(line, args, kwargs), ...]`` as argument texts per test line. The
    value came out of the sandbox: anything not of that shape is a ``ReplayError``."""
    by_line: dict[int, list[str]] = {}
    unwritable = 0
    try:
        for item in _items(value, "list"):
            line_enc, args_enc, kwargs_enc = _items(item, "tuple")
            line = decode(line_enc)
            if type(line) is not int:
                raise ReplayError("the recording run gave a malformed line")
            if not is_exact(args_enc) or not is_exact(kwargs_enc):
                unwritable += 1
                continue
            parts = [to_literal(a) for a in _items(args_enc, "tuple")]
            parts += [f"{decode(k)}={to_literal(v)}"
                      for k, v in _items(kwargs_enc, "dict")]
            by_line.setdefault(line - offset, []).append(", ".join(parts))
    except (LiteralError, ValueError, TypeError) as exc:
        raise ReplayError(f"the recording run gave a malformed result: {exc}") from None
    return Recorded(by_line, unwritable)


def _items(enc: Any, tag: str) -> list[Any]:
    if not isinstance(enc, list) or len(enc) != 2 or enc[0] != tag \
            or not isinstance(enc[1], list):
        raise ReplayError(f"the recording run gave a malformed result (expected a {tag})")
    return enc[1]
