"""What ``execbench harvest`` records: the functions of a project's own source files (not
its tests, ``conftest.py``, ``setup.py`` or docs), each with the reason it is left out, if
it is (CodeSense's filters, section 2.3; the harvest module's docstring lists them)."""

from __future__ import annotations

import ast
import textwrap
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from execbench.analysis.spans import first_line
from execbench.safe_read import Refused, Tree
from execbench.sources.generic import size_problem

_TEST_DIRS = frozenset({"tests", "test", "testing"})
_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".venv", "venv", "env",
                           ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
                           "node_modules", "build", "dist", "docs", "doc", "site-packages",
                           ".eggs"})
MAX_MODULE_BYTES = 4 << 20
"""Bytes of one source file; a longer one (generated tables) is not listed."""
MAX_MODULE_TOKENS = 400_000
"""Words and symbols of one source file (``generic.count_tokens``), counted before it is
parsed, here in the parent: at most about 350 MB of syntax tree (``generic``'s
``MAX_PARSED_TOKENS`` says why). The three shared projects' largest module has 50,000;
the largest modules of SciPy or SymPy some 130,000 to 155,000."""
_TOO_MUCH = {RecursionError: "nested too deeply", MemoryError: "too large to parse"}


@dataclass(frozen=True)
class Function:
    """A function of the project's source, as listed for the child."""

    id: str
    name: str
    file: str
    first_line: int
    """The line ``co_firstlineno`` gives: the first decorator's, else the ``def`` line."""
    def_line: int
    code: str
    skip: str | None


def is_test_file(relative: Path) -> bool:
    name = relative.name
    return (name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py")
            or any(part in _TEST_DIRS for part in relative.parts[:-1]))


def source_files(tree: Tree) -> Iterator[Path]:
    """The project's own source files, relative to the tree's folder, in a fixed order;
    links and special files among them too, for the reader to refuse by name."""
    def keep(relative: str) -> bool:
        name = relative.rpartition("/")[2]
        return name not in _SKIPPED_DIRS and not name.startswith(".") \
            and not tree.exists(f"{relative}/pyvenv.cfg")

    for entry in tree.entries(keep):
        relative = Path(entry.relative)
        if relative.name.endswith(".py") and relative.name != "setup.py" \
                and not is_test_file(relative):
            yield relative


def list_functions(root: Path, max_lines: int, warn: Callable[[str], None]) -> list[Function]:
    """Every ``def`` in the project's source files, each with why it is skipped (or None).
    The files are read as ``safe_read`` reads a tree (the caller may be root and the
    project anyone's): a link, a file other users cannot read, one over
    ``MAX_MODULE_BYTES`` or ``MAX_MODULE_TOKENS`` or one nested too deeply for ``ast`` is
    left out with a warning."""
    functions: list[Function] = []
    with Tree(root) as tree:
        for relative in source_files(tree):
            try:
                text = tree.read(relative.as_posix(), MAX_MODULE_BYTES).decode("utf-8")
                too_large = size_problem(text, MAX_MODULE_BYTES, MAX_MODULE_TOKENS)
                if too_large is not None:
                    warn(f"{relative}: not read: {too_large}")
                    continue
                functions += _functions(relative, text, ast.parse(text), max_lines)
            except Refused as exc:
                warn(f"{relative}: not read: {exc}")
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError) as exc:
                warn(f"{relative}: not read ({type(exc).__name__}: {exc})")
            except (RecursionError, MemoryError) as exc:
                warn(f"{relative}: not read ({_TOO_MUCH[type(exc)]}: {type(exc).__name__})")
    counts = Counter(f.id for f in functions)
    return [f if counts[f.id] == 1 else replace(f, id=f"{f.id}:{f.def_line}")
            for f in functions]


def _functions(relative: Path, text: str, tree: ast.Module, max_lines: int
               ) -> list[Function]:
    """The functions one module defines."""
    functions = []
    module = ".".join(relative.with_suffix("").parts).removesuffix(".__init__")
    lines = text.splitlines(keepends=True)
    for node, qualname in _defs(tree.body, ""):
        code = textwrap.dedent("".join(lines[node.lineno - 1:node.end_lineno]))
        functions.append(Function(f"{module}.{qualname}", node.name, relative.as_posix(),
                                  first_line(node), node.lineno, code,
                                  _skip_reason(node, code, max_lines)))
    return functions


def _defs(body: list[ast.stmt], prefix: str
          ) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]]:
    """Function definitions with their qualified names, as ``__qualname__`` spells them."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node, prefix + node.name
            yield from _defs(node.body, f"{prefix}{node.name}.<locals>.")
        elif isinstance(node, ast.ClassDef):
            yield from _defs(node.body, f"{prefix}{node.name}.")
        else:
            for name in ("body", "orelse", "finalbody", "handlers"):
                block = getattr(node, name, None)
                if block:
                    yield from _defs(block, prefix)


def _skip_reason(node: ast.FunctionDef | ast.AsyncFunctionDef, code: str, max_lines: int
                 ) -> str | None:
    if isinstance(node, ast.AsyncFunctionDef) or _yields(node):
        return "generator or coroutine"
    body = [s for s in node.body if not _is_docstring(s) and not isinstance(s, ast.Pass)
            and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                     and s.value.value is Ellipsis)]
    if not body:
        return "no statements (comments, docstring or pass only)"
    if len(body) == 1:
        only = body[0]
        value = only.value if isinstance(only, ast.Return | ast.Expr) else None
        return "wrapper of another call" if isinstance(value, ast.Call) else "one statement"
    if node.end_lineno - node.lineno + 1 > max_lines:
        return f"longer than {max_lines} lines"
    try:
        tree = ast.parse(code)
        compile(tree, "<harvest>", "exec", dont_inherit=True)
    except SyntaxError:
        return "does not compile on its own"
    except (RecursionError, MemoryError) as exc:  # the compiler's depth is below the parser's
        return f"too deeply nested to check ({type(exc).__name__})"
    try:
        changed = _without_docstrings(tree.body[0]) != _without_docstrings(node)
    except (RecursionError, MemoryError) as exc:  # unparse and dump recurse in Python
        return f"too deeply nested to check ({type(exc).__name__})"
    return "dedenting would change a string in it" if changed else None


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
        and isinstance(statement.value.value, str)


def _yields(node: ast.AST) -> bool:
    """Whether the function itself (not a nested function) contains ``yield``."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        if isinstance(child, ast.Yield | ast.YieldFrom):
            return True
        if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
                          | ast.ClassDef):
            stack.extend(ast.iter_child_nodes(child))
    return False


def _without_docstrings(node: ast.AST) -> str:
    """The tree's dump with docstrings blanked and decorators dropped: what dedenting may
    change harmlessly."""
    tree = ast.parse(ast.unparse(node))
    for child in ast.walk(tree):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                child.decorator_list = []
            if child.body and _is_docstring(child.body[0]):
                child.body[0] = ast.Pass()
    return ast.dump(tree)
