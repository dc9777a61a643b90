"""``execbench harvest``: record calls of a project's functions while its own tests run.

The parent side. It lists the project's functions (source files only: not tests, not
``conftest.py``, not ``setup.py`` or docs), decides which pass the filters, copies the
project to a scratch folder, and runs its pytest suite there in a child process
(``sandbox.harvest_child``) with the given interpreter, so the project's dependencies are
the user's environment. It then writes the generic JSONL format (``sources.generic``): one
record per function with its kept calls, each call's argument text and recorded trace, so
``execbench build FILE.jsonl`` builds tasks on them without running anything.

What a record's ``code`` is: the function's own source from its ``def`` line to its last
line, decorators left out (the recorded frame is the undecorated function's, and line 1 of
``code`` is the ``def`` line), dedented when it is a method or nested function. It compiles
on its own and defines the function at module level; it is shown, never run (it may need
its module's globals).

Filters (CodeSense, section 2.3), each drop counted by reason: functions with no
statements (comments, a docstring, ``pass``), with one statement (a wrapper when that
statement only calls another function), generators and coroutines (their calls return
an iterator, not a value), longer than ``max_lines``, or whose source does not compile on
its own once dedented; calls whose arguments are not builtin values (they cannot be
written as argument text) or are over the value bound, repeated arguments, calls not
sampled (at most ``max_calls`` per function, reservoir sampling with the seed), calls over
the line-event or size bound.

What guards the run: the tests are untrusted code. They run on a scratch copy with a
scrubbed environment (``confine.ENV_ALLOWED``, with ``HOME`` and ``TMPDIR`` in the scratch
folder and a fixed hash seed), inside ``sandbox.harvest_jail`` (namespaces, a fresh
``/proc``, ``nobody`` without capabilities, Landlock, seccomp, file and temp-folder
bounds; each layer the machine lacks is warned about), stopped with its process group at
``timeout``. Records come over a pipe only this process reads, and ``_Records`` refuses
those it can show did not come from the recorder, by reason (the summary lists them).
What nothing here can guard: the recorder runs in the tests' process, so a hostile
project can forge plausible records about its own functions; harvested traces are as
trustworthy as the project.
"""

from __future__ import annotations

import ast
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from execbench import registry
from execbench.analysis.spans import first_line
from execbench.sandbox import confine, harvest_child, harvest_jail, tracer, values
from execbench.sandbox.process_group import stop_group

_TEST_DIRS = frozenset({"tests", "test", "testing"})
_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".venv", "venv", "env",
                           ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
                           "node_modules", "build", "dist", "docs", "doc", "site-packages",
                           ".eggs"})
_CHILD_MODULES = (registry, tracer, values, harvest_child)
_POLL_SECONDS = 0.2
_GRACE_SECONDS = 3.0
REPLACED = "replaced in the sample by a later call"
NO_CALL_KEPT = "no call kept"
NEVER_CALLED = "never called by the tests"
REFUSED_NOT_JSON = "not a record"
REFUSED_JAIL = "a jail report not first on the channel"
REFUSED_AFTER_END = "written after the end of the run"
REFUSED_FUNCTION = "not a listed function, or a filtered one"
REFUSED_MALFORMED = "malformed call record"
REFUSED_SLOT = "reservoir slot out of range or not its ordinal's"
REFUSED_DUPLICATE = "a second record for one ordinal"
REFUSED_ORDINAL = "ordinal beyond the calls the child counted"
REFUSED_CUT = "cut off when the channel closed"
REFUSED_LONG = "a line longer than any record"


class HarvestError(ValueError):
    """The harvest cannot run: no such folder, no interpreter, or the tests could not start
    under it (pytest missing). A suite that fails or hangs is not an error."""


@dataclass(frozen=True)
class HarvestOptions:
    """What ``execbench harvest`` takes; the bounds keep the run and the file small."""

    python: str = sys.executable
    pytest_args: tuple[str, ...] = ()
    seed: int = 0
    max_calls: int = 5
    """Calls kept per function."""
    max_events: int = 1_000
    """Line events per call; a longer call is dropped (its states would be cut)."""
    max_value_nodes: int = 100
    """Nodes per encoded value (``values.encode``)."""
    max_trace_chars: int = 500_000
    """Characters of one call's record."""
    max_lines: int = 200
    """Lines of a function's source."""
    timeout: float = 600.0
    """Wall-clock seconds for the whole test run."""
    max_file_bytes: int = harvest_jail.MAX_FILE_BYTES
    """Bytes of any one file the tests write (``RLIMIT_FSIZE``; the pytest log included)."""
    max_temp_bytes: int = harvest_jail.MAX_TEMP_BYTES
    """Bytes of the temp folder, and of ``/dev/shm``, each a private tmpfs where the
    machine allows a mount namespace."""


@dataclass
class HarvestResult:
    """What happened, for the summary the command prints (the file holds only records)."""

    functions: Counter = field(default_factory=Counter)
    """``kept`` and each reason a function called by the tests was dropped, plus
    ``NEVER_CALLED`` (listed functions the tests never called)."""
    calls: Counter = field(default_factory=Counter)
    """``kept`` and each reason a call was dropped: they add up to ``seen``."""
    seen: int = 0
    """Calls of the listed functions the tests made (a generator's resumptions count)."""
    tests: tuple[int, int] = (0, 0)
    """Tests finished, tests collected."""
    pytest_exit: int | None = None
    timed_out: bool = False
    network: str = "unknown"
    layers: dict[str, str] = field(default_factory=dict)
    """The jail's layers, a line each (``harvest_jail``)."""
    jail_warnings: list[str] = field(default_factory=list)
    """A warning per layer this machine lacks."""
    refused: Counter = field(default_factory=Counter)
    """Records on the channel refused, by reason (``_Records``): none from an honest run."""
    log: str = ""
    """The end of pytest's output."""
    warnings: list[str] = field(default_factory=list)


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


# --------------------------------------------------------------------------- listing


def is_test_file(relative: Path) -> bool:
    name = relative.name
    return (name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py")
            or any(part in _TEST_DIRS for part in relative.parts[:-1]))


def source_files(root: Path) -> Iterator[Path]:
    """The project's own source files, relative to ``root``, in a fixed order."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.startswith(".")
                         and not (Path(folder) / d / "pyvenv.cfg").exists())
        for name in sorted(files):
            relative = (Path(folder) / name).relative_to(root)
            if name.endswith(".py") and name != "setup.py" and not is_test_file(relative):
                yield relative


def list_functions(root: Path, max_lines: int, warn: Callable[[str], None]) -> list[Function]:
    """Every ``def`` in the project's source files, each with why it is skipped (or None)."""
    functions: list[Function] = []
    for relative in source_files(root):
        try:
            text = (root / relative).read_text(encoding="utf-8")
            tree = ast.parse(text)
        except (SyntaxError, UnicodeDecodeError, ValueError) as exc:
            warn(f"{relative}: not read ({type(exc).__name__}: {exc})")
            continue
        module = ".".join(relative.with_suffix("").parts)
        module = module.removesuffix(".__init__")
        lines = text.splitlines(keepends=True)
        for node, qualname in _defs(tree.body, ""):
            code = textwrap.dedent("".join(lines[node.lineno - 1:node.end_lineno]))
            first = first_line(node)
            functions.append(Function(f"{module}.{qualname}", node.name, relative.as_posix(),
                                      first, node.lineno, code,
                                      _skip_reason(node, code, max_lines)))
    counts = Counter(f.id for f in functions)
    return [f if counts[f.id] == 1 else replace(f, id=f"{f.id}:{f.def_line}")
            for f in functions]


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
    if _without_docstrings(tree.body[0]) != _without_docstrings(node):
        return "dedenting would change a string in it"
    return None


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


# --------------------------------------------------------------------------- running


def harvest(project: Path, out: Path, options: HarvestOptions = HarvestOptions(),
            progress: Callable[[dict[str, Any]], None] | None = None,
            warn: Callable[[str], None] = lambda message: None) -> HarvestResult:
    """Run ``project``'s tests with the recorder and write ``out``; see the module doc."""
    project = project.resolve()
    if not project.is_dir():
        raise HarvestError(f"{project} is not a folder")
    if shutil.which(options.python) is None and not Path(options.python).is_file():
        raise HarvestError(f"no interpreter {options.python!r}")
    result = HarvestResult()
    functions = list_functions(project, options.max_lines, result.warnings.append)
    for message in result.warnings:
        warn(message)
    with tempfile.TemporaryDirectory(prefix="execbench-harvest-") as scratch:
        records = _run(project, Path(scratch), functions, options, result, progress)
    _write(out, functions, records)
    return result


def _run(project: Path, scratch: Path, functions: list[Function], options: HarvestOptions,
         result: HarvestResult, progress: Callable[[dict[str, Any]], None] | None
         ) -> dict[tuple[str, int], dict[str, Any]]:
    root = scratch / "project"
    shutil.copytree(project, root, symlinks=True,
                    ignore=shutil.ignore_patterns(".git", "__pycache__", "*.pyc", ".tox",
                                                  ".nox", ".pytest_cache", ".mypy_cache"))
    lib = scratch / "lib"
    (lib / "execbench" / "sandbox").mkdir(parents=True)
    for package in ("execbench", "execbench/sandbox"):
        (lib / package / "__init__.py").write_text("")
    for module in _CHILD_MODULES:
        shutil.copy(module.__file__, lib.joinpath(*module.__name__.split(".")[:-1]))
    for folder in ("home", "tmp"):
        (scratch / folder).mkdir()
    files: dict[str, dict[str, Any]] = {}
    for f in functions:
        files.setdefault(f.file, {})[str(f.first_line)] = {
            "id": f.id, "name": f.name, "def_line": f.def_line, "skip": f.skip}
    child = {"root": str(root), "files": files,
             "paths": [str(p) for p in (root, root / "src") if p.is_dir()],
             "pytest_args": ["-p", "no:cacheprovider", *options.pytest_args],
             "seed": options.seed, "max_calls": options.max_calls,
             "max_events": options.max_events, "max_value_nodes": options.max_value_nodes,
             "max_trace_chars": options.max_trace_chars}
    env = confine.scrubbed_environment(os.environ)
    env.update(HOME=str(scratch / "home"), TMPDIR=str(scratch / "tmp"), PYTHONHASHSEED="0",
               PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([str(lib), *filter(None, [env.get("PYTHONPATH")])]))
    python = os.path.abspath(shutil.which(options.python) or options.python)
    jail = {"scratch": str(scratch), "project": str(root), "home": str(scratch / "home"),
            "tmp": str(scratch / "tmp"),
            "read": [str(lib), str(scratch / "config.json"),
                     *_interpreter_paths(python, env, scratch)],
            "argv": [python, "-m", "execbench.sandbox.harvest_child",
                     str(scratch / "config.json")],
            "env": env, "max_file_bytes": options.max_file_bytes,
            "max_temp_bytes": options.max_temp_bytes}
    log_path = scratch / "pytest.log"
    reader = _Records(functions, options.max_calls,
                      max_line=options.max_trace_chars + 200 * len(functions) + (1 << 16))
    start = time.monotonic()
    with open(log_path, "wb") as log:
        process, channel = harvest_jail.start(jail, child, scratch, log)
        try:
            while process.poll() is None:
                ready, _, _ = select.select([channel], [], [], _POLL_SECONDS)
                if ready:
                    reader.feed(_drain(channel))
                if progress is not None:
                    progress({"seconds": time.monotonic() - start, **reader.status()})
                if time.monotonic() - start > options.timeout:
                    result.timed_out = True
                    break
        finally:
            stop_group(process, _GRACE_SECONDS)
            reader.feed(_drain(channel))  # what was written before every writer ended
            os.close(channel)
    kept = reader.finish()
    if progress is not None:
        progress({"seconds": time.monotonic() - start, **reader.status()})
    result.log = log_path.read_text(errors="replace")[-4000:]
    if reader.jail is None:
        said = (result.log.strip().splitlines() or ["no output"])[-1]
        raise HarvestError(f"the harvest jail did not start: {said}")
    result.layers = reader.jail["layers"]
    result.jail_warnings = list(reader.jail["warnings"])
    result.network = result.layers.get("network", result.network)
    result.refused = reader.refused
    counts = reader.counts
    result.pytest_exit = counts.get("exit")
    result.tests = tuple(counts.get("tests", (0, 0)))
    if "error" in counts or "tests" not in counts:
        said = counts.get("error") or (result.log.strip().splitlines() or ["no output"])[-1]
        raise HarvestError(f"the tests did not start under {options.python}: {said}")
    result.calls.update({k: n for k, n in counts.get("dropped", {}).items() if n})
    if reader.accepted > len(kept):
        result.calls[REPLACED] = reader.accepted - len(kept)
    called = counts.get("calls", {})
    result.seen = sum(called.values())
    by_function = Counter(function for function, _ in kept)
    result.calls["kept"] = len(kept)
    for f in functions:
        if by_function[f.id]:
            result.functions["kept"] += 1
        elif not called.get(f.id):
            result.functions[NEVER_CALLED] += 1
        else:
            result.functions[f.skip or NO_CALL_KEPT] += 1
    return kept


def _interpreter_paths(python: str, env: dict[str, str], scratch: Path) -> list[str]:
    """The trees the tests may read to run ``python``: its installation, its
    site-packages and whatever else its ``sys.path`` holds (``.pth`` files, PYTHONPATH),
    asked of the interpreter itself; none of them inside the scratch folder."""
    code = ("import json, os, site, sys; print(json.dumps([sys.prefix, sys.exec_prefix, "
            "sys.base_prefix, sys.base_exec_prefix, os.path.dirname(os.path.realpath("
            "sys.executable)), *getattr(site, 'getsitepackages', list)(), *sys.path]))")
    try:
        said = subprocess.run([python, "-c", code], env=env, cwd=scratch / "home",
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        paths = json.loads(said.stdout.decode().strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as exc:
        raise HarvestError(f"{python} did not say where it is installed: {exc}") from exc
    paths += [os.path.dirname(python), os.path.dirname(os.path.realpath(python))]
    kept: list[str] = []
    for path in paths:
        real = os.path.realpath(path) if path else ""
        if real not in ("", "/") and os.path.exists(real) and real not in kept \
                and not Path(real).is_relative_to(scratch.resolve()):
            kept.append(real)
    return kept


def _drain(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 1 << 20)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


class _Records:
    """The child's records, taken from the pipe only the parent reads and checked as far as
    the parent can: the tests run in the recorder's process and can write on the pipe too.

    The first line is the jail's report of its layers, written before the tests' code ran.
    After it, a call record is refused when it names a function that is not listed (or is
    filtered), a reservoir slot out of range or not its ordinal's (the first ``max_calls``
    ordinals fill slots in order), an ordinal already received for its function, or, at
    the end, an ordinal above the sampling candidates the child counted for the function;
    nothing is taken after the child's last counts (``end``). Of the rest, per function
    and slot, the call with the highest ordinal (the latest sampling decision) is kept.
    A line longer than ``max_line`` bytes (more than a record or the counts can be) is
    dropped unread, so a flood without newlines cannot fill this process's memory.
    """

    def __init__(self, functions: list[Function], max_calls: int, max_line: int) -> None:
        self.listed = {f.id for f in functions if f.skip is None}
        self.max_calls = max_calls
        self.max_line = max_line
        self.skipping = False
        """Inside a line too long to keep: its bytes are dropped up to its newline."""
        self.pending = b""
        self.jail: dict[str, Any] | None = None
        self.lines = 0
        self.ended = False
        self.calls: dict[tuple[str, int], dict[str, Any]] = {}
        """Keyed by function and ordinal."""
        self.accepted = 0
        self.counts: dict[str, Any] = {}
        self.refused: Counter = Counter()

    def feed(self, data: bytes) -> None:
        if self.skipping:
            end = data.find(b"\n")
            if end < 0:
                return
            data, self.skipping = data[end + 1:], False
        lines = (self.pending + data).split(b"\n")
        self.pending = lines.pop()  # a line still being written waits for the next read
        for line in lines:
            self.lines += 1
            if len(line) > self.max_line:
                self.refused[REFUSED_LONG] += 1
            else:
                self._take(line)
        if len(self.pending) > self.max_line:
            self.refused[REFUSED_LONG] += 1
            self.pending, self.skipping = b"", True

    def _take(self, line: bytes) -> None:
        try:
            record = json.loads(line)
            kind = record["kind"]
        except (ValueError, TypeError, KeyError):
            self.refused[REFUSED_NOT_JSON] += 1
            return
        if self.lines == 1 and kind == "jail":
            self.jail = record
        elif self.jail is None or kind == "jail":
            self.refused[REFUSED_JAIL] += 1
        elif self.ended:
            self.refused[REFUSED_AFTER_END] += 1
        elif kind == "counts":
            self.counts = {**self.counts, **record}
            self.ended = bool(record.get("end"))
        elif kind == "call":
            self._call(record)
        else:
            self.refused[REFUSED_NOT_JSON] += 1

    def _call(self, record: dict[str, Any]) -> None:
        function, slot, ordinal = record.get("function"), record.get("slot"), record.get("ordinal")
        if function not in self.listed:
            self.refused[REFUSED_FUNCTION] += 1
        elif type(slot) is not int or type(ordinal) is not int or ordinal < 1 \
                or not isinstance(record.get("args"), str) \
                or not isinstance(record.get("trace"), dict):
            self.refused[REFUSED_MALFORMED] += 1
        elif not 0 <= slot < self.max_calls or (ordinal <= self.max_calls
                                                 and slot != ordinal - 1):
            self.refused[REFUSED_SLOT] += 1
        elif (function, ordinal) in self.calls:
            self.refused[REFUSED_DUPLICATE] += 1
        else:
            self.calls[function, ordinal] = record

    def finish(self) -> dict[tuple[str, int], dict[str, Any]]:
        """The kept calls by function and slot, once the child's channel has closed."""
        if self.pending:
            self.refused[REFUSED_CUT] += 1
            self.pending = b""
        candidates = self.counts.get("candidates", {})
        kept: dict[tuple[str, int], dict[str, Any]] = {}
        for (function, ordinal), record in sorted(self.calls.items(), key=lambda i: i[0][1]):
            bound = candidates.get(function) if isinstance(candidates, dict) else None
            if not isinstance(bound, int) or ordinal > bound:
                self.refused[REFUSED_ORDINAL] += 1
                continue
            self.accepted += 1
            kept[function, record["slot"]] = record
        return kept

    def status(self) -> dict[str, Any]:
        done, total = self.counts.get("tests", (0, 0))
        slots = {(record["function"], record["slot"]) for record in self.calls.values()}
        return {"tests": done, "total": total, "calls": len(slots),
                "functions": len({function for function, _ in slots})}


def _write(out: Path, functions: list[Function], records: dict[tuple[str, int], dict[str, Any]]
           ) -> None:
    by_function: dict[str, list[dict[str, Any]]] = {}
    for (function, _), record in records.items():
        by_function.setdefault(function, []).append(record)
    lines = []
    for f in functions:
        calls = sorted(by_function.get(f.id, []), key=lambda r: r["ordinal"])
        if calls:
            lines.append(json.dumps({
                "id": f.id, "code": f.code, "entry_point": f.name,
                "calls": [{"args": r["args"], "trace": r["trace"]} for r in calls],
                "meta": {"file": f.file, "line": f.def_line}}))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
