"""The source formats ``--format`` names: what each reads, how a file in it is recognised,
and how one of its records becomes a program. ``execbench ls formats``, ``--format`` and
format detection all read ``FORMATS``, so a new format is one registration here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from execbench.program import Program
from execbench.registry import Registry
from execbench.sources import (
    codesense,
    contest,
    cruxeval,
    evalplus,
    generic,
    humaneval,
    pythonsaga,
    stdin,
)
from execbench.sources.base import SourceError
from execbench.sources.jsonl import Record, first_keys
from execbench.sources.replay import TestCalls


@dataclass(frozen=True)
class Reading:
    """What a load passes to every record's builder."""

    plus_inputs: bool
    """Add EvalPlus's generated ``plus_input`` calls."""
    test_calls: TestCalls
    """The sandbox in which HumanEval's tests are run to record their calls, started only
    when a record needs it."""


@dataclass(frozen=True)
class Format:
    description: str
    """One line of ``execbench ls formats``."""
    id_key: str | None = None
    """The record key that names a program; None for a format that is not JSONL."""
    build: Callable[[Record, Reading], Program] | None = None
    detect: tuple[frozenset[str], ...] = ()
    """Key sets: a file whose first record has every key of one of them is in this format."""
    tasks: Callable[[list[Program]], list[str]] | None = None
    """The tasks a build without ``--tasks`` makes of a file's programs, for a format whose
    files each hold one published task; None for the usual output and input prediction."""
    line_ids: bool = False
    """A record without ``id_key`` is named by its line number (CodeSense's C block file
    has no ids)."""
    licence: str | None = None
    """The licence of the publisher's files in this format (SPDX), for a format that is
    one publisher's; ``export`` states it as the rows' licence unless told another."""


FORMATS: Registry[Format] = Registry("format", plugins="execbench.formats")
"""Every format, in the order detection tries them: a format whose records also have
another's keys comes before it (an EvalPlus record has HumanEval's keys, a CodeSense
input/output record and a contest record CRUXEval's). Formats of other packages (entry
points, ``execbench.plugins``) come after the built-in ones, so none takes a file that a
built-in format reads."""

FORMATS.register("codesense", Format(
    "CodeSense's published task files (Python: statement, branch, loop, input/output, "
    "quantized; C: statement, block, input/output, aliasing; Java: input/output); "
    "recorded truth, never run",
    codesense.ID_KEY, lambda record, _: codesense.build(record), codesense.KEY_SETS,
    codesense.held_tasks, line_ids=True, licence="CC-BY-4.0"))
FORMATS.register("contest", Format(
    "contest solutions with dates (LiveCodeBench's execution records): code, "
    "function_name, input (the call), output, contest_date, difficulty",
    contest.ID_KEY, lambda record, _: contest.build(record), (contest.KEYS,)))
FORMATS.register("cruxeval", Format(
    "JSONL with id, code, input, output (CRUXEval); entry point f",
    cruxeval.ID_KEY, lambda record, _: cruxeval.build(record),
    (frozenset({"code", "input", "output"}),), licence="MIT"))
FORMATS.register("evalplus", Format(
    "HumanEval+ / MBPP+ JSONL(.gz); calls from base_input (--plus-inputs adds plus_input)",
    evalplus.ID_KEY,
    lambda record, reading: evalplus.build(record, plus_inputs=reading.plus_inputs),
    (frozenset({"base_input"}),), licence="Apache-2.0"))
FORMATS.register("humaneval", Format(
    "JSONL(.gz) with task_id, prompt, canonical_solution, test, entry_point; calls from the "
    "test's candidate(...) lines; also the built-in name humaneval",
    humaneval.ID_KEY,
    lambda record, reading: humaneval.build(record, test_calls=reading.test_calls),
    (frozenset({"prompt", "canonical_solution", "test", "entry_point"}),), licence="MIT"))
FORMATS.register("generic", Format(
    "JSONL with id, code, entry_point, calls (argument texts or {args, expected})",
    generic.ID_KEY, lambda record, _: generic.build(record), (frozenset({"code", "calls"}),)))
FORMATS.register("pythonsaga", Format(
    "PythonSaga JSONL (HumanEval's keys, so never detected: name it): the solution body "
    "under the prompt's def, as DexBench builds it; calls from the test's candidate(...) "
    "lines", pythonsaga.ID_KEY, lambda record, _: pythonsaga.build(record)))
FORMATS.register("stdin", Format(
    "JSONL with id, code, inputs: programs that read standard input and print (each input "
    "a text, or {stdin, stdout})",
    stdin.ID_KEY, lambda record, _: stdin.build(record), (frozenset({"code", "inputs"}),)))
FORMATS.register("pyfolder", Format(
    "a folder of .py files; calls from each file's __main__ block"))
FORMATS.register("codemind", Format(
    "a folder of programs that read standard input, as CodeMind lays them out: "
    "NAME/main.py with NAME/input.txt and output.txt, or all_tests/input/K_input.txt"))

GENERATED_DESCRIPTION = ("built-in name, not a file format: sampled DSL-List programs "
                         "(--count, --seed)")
"""The line ``execbench ls formats`` adds for ``dsl``, a generator that ``--format``
cannot name."""


def detect_format(path: Path) -> str:
    """The JSONL format whose keys the file's first JSON object has."""
    keys = first_keys(path)
    named = ", ".join(FORMATS.names())
    if keys is None:
        raise SourceError(f"{path} holds no JSON object to detect its format from; "
                          f"name one with --format ({named})")
    present = set(keys)
    for name, known in FORMATS.entries().items():
        if any(present >= key_set for key_set in known.detect):
            return name
    raise SourceError(f"cannot tell the format of {path} from its keys "
                      f"({', '.join(sorted(present)) or 'none'}); "
                      f"name one with --format ({named})")
