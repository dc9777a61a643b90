"""Programs that read standard input and print: most contest code, CodeMind's CodeNet and
Avatar sets. Such a program has no function to call (its entry point is ``program.STDIN``);
each call is the text it reads, kept as a string literal, and its result is what it prints.

Two shapes are read:

``stdin`` (JSONL): one program a line::

    {"id": "sum", "code": "n = int(input())\\nprint(n * 2)\\n",
     "inputs": ["3\\n", {"stdin": "5\\n", "stdout": "10\\n"}]}

``inputs`` holds the texts to feed it, each a string or an object whose optional
``stdout`` is what the source says it prints (compared with the run as judges compare:
``program.printed_alike``; the build lists a difference, as for a function's ``expected``).
``meta`` is kept as in the generic format.

``codemind`` (a folder): one program a folder below it, in sorted order, as CodeMind lays
out its sets: the program in ``main.py``, a test as ``input.txt`` (with ``output.txt``),
and more as ``all_tests/input/K_input.txt`` (with ``all_tests/output/K_output.txt``), by
K in number order. Files are read as ``safe_read`` reads a tree (no link followed, only
regular files, each at most ``MAX_FILE_BYTES``); a folder whose program or tests cannot be
read is skipped with its reason, and the rest of the folder still loads.

The text of an input is data only: it is never evaluated, by the build or by the sandbox,
where the call reads it back from its string literal with no builtins at hand.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from execbench.program import STDIN, Call, Program
from execbench.safe_read import Refused, Tree
from execbench.sources.base import Loaded
from execbench.sources.generic import build_program
from execbench.sources.jsonl import MAX_RECORD_BYTES, Record, RecordError

ID_KEY = "id"
PROGRAM_FILE = "main.py"
MAX_FILE_BYTES = MAX_RECORD_BYTES
"""A program or a test file is one record of its folder, bounded as a JSONL record is."""
_NUMBERED = re.compile(r"all_tests/input/(\d+)_input\.txt")


def build(record: Record) -> Program:
    """A program from one ``stdin`` record."""
    inputs = record.get("inputs", list)
    calls = [_call(index, item) for index, item in enumerate(inputs, 1)]
    return build_program(record, record.get("code"), STDIN, calls,
                         record.optional("meta", dict) or {})


def _call(index: int, item: Any) -> Call:
    if isinstance(item, str):
        return Call(repr(item))
    if isinstance(item, dict) and isinstance(item.get("stdin"), str) \
            and isinstance(item.get("stdout", ""), str):
        printed = item.get("stdout")
        return Call(repr(item["stdin"]), None if printed is None else repr(printed))
    raise RecordError(f"key 'inputs': item {index} should be a string or an object with "
                      "string 'stdin' and optional string 'stdout'")


def is_codemind(folder: Path) -> bool:
    """Whether ``folder`` is laid out as CodeMind's sets are: a program folder holding
    ``main.py`` and ``input.txt`` or ``all_tests/input/``."""
    with Tree(folder) as tree:
        return any(_listing(tree).values())


def load(loaded: Loaded, folder: Path) -> None:
    """Add the program of every program folder of ``folder`` to ``loaded``."""
    with Tree(folder) as tree:
        listed = _listing(tree)
        for program, files in sorted(listed.items()):
            where = str(Path(loaded.origin) / program)
            pid = f"{loaded.name}/{program}"
            try:
                loaded.programs.append(_program(tree, loaded.name, program, files))
            except Refused as exc:
                loaded.skip(where, str(exc), pid)
            except OSError as exc:
                loaded.skip(where, f"cannot read: {exc.strerror}", pid)
            except UnicodeDecodeError:
                loaded.skip(where, "not UTF-8 text", pid)
            except RecordError as exc:
                loaded.skip(where, str(exc), pid)


def folder_sha256(folder: Path) -> str:
    """A digest of what the folder's programs are read from: one ``path<TAB>sha256`` line
    per file (``-`` for one that is not read), hashed."""
    lines = []
    with Tree(folder) as tree:
        for program, files in sorted(_listing(tree).items()):
            for relative in [f"{program}/{PROGRAM_FILE}", *(f for pair in files for f in pair
                                                             if f is not None)]:
                try:
                    digest = hashlib.sha256(tree.read(relative, MAX_FILE_BYTES)).hexdigest()
                except OSError:
                    digest = "-"
                lines.append(f"{relative}\t{digest}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def _listing(tree: Tree) -> dict[str, list[tuple[str, str | None]]]:
    """Per program folder (its path below the root), its tests as (input file, output file
    or None), ``input.txt`` first, then ``all_tests`` by number."""
    names = {entry.relative for entry in tree.entries()}
    found: dict[str, list[tuple[int, str, str | None]]] = {}
    for name in names:
        folder, _, base = name.rpartition("/")
        if base == PROGRAM_FILE and folder:
            found.setdefault(folder, [])
    for folder, tests in found.items():
        if f"{folder}/input.txt" in names:
            printed = f"{folder}/output.txt"
            tests.append((-1, f"{folder}/input.txt", printed if printed in names else None))
        for name in names:
            matched = _NUMBERED.fullmatch(name[len(folder) + 1:]) \
                if name.startswith(folder + "/") else None
            if matched:
                number = matched.group(1)
                printed = f"{folder}/all_tests/output/{number}_output.txt"
                tests.append((int(number), name, printed if printed in names else None))
    return {folder: [(given, printed) for _, given, printed in sorted(tests)]
            for folder, tests in found.items()}


def _program(tree: Tree, source: str, program: str,
             files: list[tuple[str, str | None]]) -> Program:
    if not files:
        raise RecordError("no input.txt or all_tests/input/K_input.txt beside main.py")
    code = _text(tree, f"{program}/{PROGRAM_FILE}")
    calls = [Call(repr(_text(tree, given)),
                  None if printed is None else repr(_text(tree, printed)))
             for given, printed in files]
    record = Record({}, f"{source}/{program}", source)
    return build_program(record, code, STDIN, calls, {"path": program})


def _text(tree: Tree, relative: str) -> str:
    return tree.read(relative, MAX_FILE_BYTES).decode("utf-8-sig")
