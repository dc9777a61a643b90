"""A folder of Python scripts, each exercised by its own ``if __name__ == "__main__":`` block.

Every ``*.py`` file below the folder (recursively, in sorted order, hidden folders left
out) is read without being run. The calls inside its ``__main__`` block to functions that
the file defines at top level become the program's calls, wherever they appear there:
``f(3)``, ``print(f(3))`` or ``assert f(3) == 9`` (which also records ``9`` as expected).
The program is the file with the ``__main__`` block cut out, the rest kept verbatim.
Files are read as ``safe_read`` reads a tree: a symbolic link (to anywhere), a file other
users cannot read when execbench runs as root, or a script over ``MAX_SCRIPT_BYTES`` is
skipped with its reason, and a link to a folder is not entered.

The record id is the file's path without ``.py`` (``utils/strings``). A file whose block
calls several of its functions gives one program per function, ``utils/strings::slugify``.
A call whose arguments use a variable of the block itself (rather than a literal, a
builtin or a top-level name of the file) cannot be replayed alone and is left out.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import io
from pathlib import Path

from execbench.program import Call
from execbench.safe_read import Refused, Tree
from execbench.sources.base import Loaded, Skipped
from execbench.sources.generic import build_program, parse_module, top_level_names
from execbench.sources.humaneval import FoundCall, find_calls
from execbench.sources.jsonl import MAX_RECORD_BYTES, Record, RecordError

NO_CALLS = "no calls in an if __name__ == '__main__' block"
MAX_SCRIPT_BYTES = MAX_RECORD_BYTES
"""A script is one record of its folder, bounded as a JSONL record is."""


def python_files(tree: Tree) -> list[str]:
    """The folder's ``.py`` entries by relative path, sorted, hidden files and folders left
    out. Links (and anything else not a plain file) are listed too, to be refused by name
    when read; a link to a folder is never entered."""
    entries = tree.entries(lambda relative: not _hidden(relative))
    return sorted(e.relative for e in entries
                  if e.relative.endswith(".py") and not _hidden(e.relative))


def _hidden(relative: str) -> bool:
    return relative.rpartition("/")[2].startswith(".")


def folder_sha256(folder: Path) -> str:
    """A digest of the folder's sources: one ``path<TAB>sha256`` line per file (``-`` for
    a file that is not read), hashed."""
    with Tree(folder) as tree:
        lines = "".join(f"{relative}\t{_file_sha256(tree, relative)}\n"
                        for relative in python_files(tree))
    return hashlib.sha256(lines.encode()).hexdigest()


def _file_sha256(tree: Tree, relative: str) -> str:
    try:
        return hashlib.sha256(tree.read(relative, MAX_SCRIPT_BYTES)).hexdigest()
    except OSError:
        return "-"


def load(loaded: Loaded, folder: Path) -> None:
    """Add the programs of every script in ``folder`` to ``loaded``. Scripts are read as
    ``safe_read`` reads a tree: a link, a file other users cannot read (when this runs as
    root) or one over ``MAX_SCRIPT_BYTES`` is skipped with the reason."""
    with Tree(folder) as tree:
        for relative in python_files(tree):
            try:
                _load_file(loaded, Path(relative),
                           tree.read(relative, MAX_SCRIPT_BYTES).decode("utf-8-sig"))
                continue
            except Refused as exc:
                reason = str(exc)
            except OSError as exc:
                reason = f"cannot read: {exc.strerror}"
            except UnicodeDecodeError:
                reason = "not UTF-8 text"
            except RecordError as exc:
                reason = str(exc)
            where, file_id = _labels(loaded, Path(relative))
            loaded.skip(where, reason, file_id)


def _load_file(loaded: Loaded, relative: Path, text: str) -> None:
    """Add one program per function the file's ``__main__`` block calls."""
    where, file_id = _labels(loaded, relative)
    tree = parse_module(text)
    mains = [node for node in tree.body if _is_main_guard(node)]
    rest = ast.Module(body=[n for n in tree.body if n not in mains], type_ignores=[])
    functions = {n.name for n in rest.body if isinstance(n, ast.FunctionDef)}
    known = top_level_names(rest)
    block = ast.Module(body=[stmt for m in mains for stmt in m.body], type_ignores=[])
    found = find_calls(text, block, functions,
                       lambda name: name in known or hasattr(builtins, name))
    if not found:
        raise RecordError(NO_CALLS)
    code = _without_lines(text, mains)
    by_function: dict[str, list[FoundCall]] = {}
    for item in found:
        by_function.setdefault(item.func, []).append(item)
    for func, items in by_function.items():
        pid = file_id if len(by_function) == 1 else f"{file_id}::{func}"
        calls: list[Call] = []
        notes: list[Skipped] = []
        for index, item in enumerate(items, 1):
            if item.foreign_name is None:
                calls.append(item.call)
            else:
                reason = (f"call {index} of {func}() uses a name local to the __main__ "
                          f"block {item.foreign_name!r}")
                notes.append(Skipped(f"{where}:{item.lineno}", reason, pid, kind="call",
                                     position=len(loaded.programs)))
        meta = {"path": relative.as_posix(), "skipped_calls": len(notes)}
        try:
            program = build_program(Record({}, pid, loaded.name), code, func, calls, meta)
        except RecordError as exc:
            loaded.skip(where, str(exc), pid)
            continue
        loaded.programs.append(program)
        loaded.skipped.extend(notes)


def _labels(loaded: Loaded, relative: Path) -> tuple[str, str]:
    """Where a file is (for the manifest) and the id of its program."""
    return (str(Path(loaded.origin) / relative),
            f"{loaded.name}/{relative.with_suffix('').as_posix()}")


def _is_main_guard(node: ast.stmt) -> bool:
    """True for ``if __name__ == "__main__":`` (either way round)."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    test = node.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = {_plain(test.left), _plain(test.comparators[0])}
    return sides == {("name", "__name__"), ("str", "__main__")}


def _plain(node: ast.expr) -> tuple[str, str] | None:
    if isinstance(node, ast.Name):
        return ("name", node.id)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return ("str", node.value)
    return None


def _without_lines(text: str, nodes: list[ast.stmt]) -> str:
    """``text`` minus the lines that ``nodes`` span.

    Lines are split the way the tokenizer counts them (``\\n``, ``\\r\\n``, ``\\r``), not by
    ``str.splitlines``, which also breaks at form feeds and would shift the numbers.
    """
    cut = {line for n in nodes for line in range(n.lineno, (n.end_lineno or n.lineno) + 1)}
    lines = io.StringIO(text, newline="").readlines()
    return "".join(line for number, line in enumerate(lines, 1) if number not in cut)
