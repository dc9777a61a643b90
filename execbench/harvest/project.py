"""``execbench harvest``: record calls of a project's functions while its own tests run.

The parent side. It copies the project to a scratch folder, lists the copy's functions
(source files only: not tests, not ``conftest.py``, not ``setup.py`` or docs), decides
which pass the filters, and runs its pytest suite there in a child process
(``child``) with the given interpreter, so the project's dependencies are
the user's environment. A test that hangs costs itself, not the run: each has its own
time limit (``test_timeout``), the whole run another (``timeout``); processes the tests
fork are not traced. It then writes the generic JSONL format (``sources.generic``): one
record per function with its kept calls, each call's argument text and recorded trace, so
``execbench build FILE.jsonl`` builds tasks on them without running anything. A session
that did not run its tests (``failures``) writes nothing: it raises, with pytest's words.

What a record's ``code`` is: the function's own source from its ``def`` line to its last
line, decorators left out (the recorded frame is the undecorated function's, and line 1 of
``code`` is the ``def`` line), dedented when it is a method or nested function. It compiles
on its own and defines the function at module level; it is shown, never run (it may need
its module's globals).

Filters (CodeSense, section 2.3), each drop counted by reason: functions with no
statements (comments, a docstring, ``pass``), with one statement (a wrapper when that
statement only calls another function), generators and coroutines (their calls return
an iterator, not a value), longer than ``max_lines``, or whose source does not compile on
its own once dedented; calls with an argument that cannot be written as text (an opaque
value: a file, a function, an object of a C type; an object held twice; any object at
all with ``objects`` off) or over the value bound, repeated arguments, calls not
sampled (at most ``max_calls`` per function, reservoir sampling with the seed), calls over
the line-event or size bound.

What guards the parent: the project is read as ``safe_read`` reads a tree, as it may be
root's reading anyone's project: links are copied as links but never followed by the
parent (a module that is a link is not listed), and a file other users cannot read is
left out of the copy, each with a warning; the listing is made from the copy before the
tests run and never read again, so a test that re-points a module cannot change it.

What guards the run: the tests are untrusted code. They run on a scratch copy with a
scrubbed environment (``confine.ENV_ALLOWED``, with ``HOME`` and ``TMPDIR`` in the scratch
folder and a fixed hash seed), inside ``jail`` (namespaces, a fresh
``/proc``, ``nobody`` without capabilities, Landlock, seccomp, file and temp-folder
bounds; each layer the machine lacks is warned about), stopped with its process group at
``timeout``. Records come over a pipe only this process reads, and ``Records`` refuses
those it can show did not come from the recorder, by reason (the summary lists them).
What nothing here can guard: the recorder runs in the tests' process, so a hostile
project can forge plausible records about its own functions; harvested traces are as
trustworthy as the project.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import os
import select
import shutil
import stat
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from execbench import registry, safe_read, values
from execbench.harvest import ages, child, deps, failures, jail
from execbench.harvest.ages import Dating
from execbench.harvest.channel import drain
from execbench.harvest.listing import Function, list_functions
from execbench.harvest.options import DEFAULTS, HarvestError, HarvestOptions, HarvestResult
from execbench.harvest.records import Records
from execbench.safe_read import FOLDER, LINK, Tree
from execbench.sandbox import confine, monitor, recording, script, tracer
from execbench.sandbox.process_group import stop_group

_CHILD_MODULES = (registry, safe_read, values, recording, monitor, script, tracer, child)
"""What the child imports of execbench, shipped beside the scratch copy (a package whole)."""
_POLL_SECONDS = 0.2
_GRACE_SECONDS = 3.0
REPLACED = "replaced in the sample by a later call"
NO_CALL_KEPT = "no call kept"
NEVER_CALLED = "never called by the tests"
COPY_IGNORED = (".git", "__pycache__", "*.pyc", ".tox", ".nox", ".pytest_cache", ".mypy_cache")
"""What the scratch copy of a project leaves out."""


def harvest(project: Path, out: Path, options: HarvestOptions = DEFAULTS,
            progress: Callable[[dict[str, Any]], None] | None = None,
            warn: Callable[[str], None] = lambda message: None,
            log: Path | None = None, dating: Dating | None = None) -> HarvestResult:
    """Run ``project``'s tests with the recorder and write ``out``; see the module doc.
    pytest's whole output goes to ``log`` (within ``failures.MAX_LOG_BYTES``), if given. A
    session that did not run its tests writes nothing and raises ``failures.TestsNotRun``.
    A ``dating`` stamps each function (``ages``): its date goes into its record, and one
    not new since the date is skipped."""
    if options.language != "python":  # a compiled language: its recorder is a debugger
        from execbench.harvest.languages import NATIVE

        return NATIVE.get("harvest")(project, out, options, progress, warn, log)
    project = project.resolve()
    if not project.is_dir():
        raise HarvestError(f"{project} is not a folder")
    if shutil.which(options.python) is None and not Path(options.python).is_file():
        raise HarvestError(f"no interpreter {options.python!r}")
    result = HarvestResult()
    if options.install_deps:
        python = deps.environment(project, options.python, options.pip_args,
                                          result.warnings.append)
        options = dataclasses.replace(options, python=python)
    with tempfile.TemporaryDirectory(prefix="execbench-harvest-") as scratch:
        copy = Path(scratch) / "project"
        copy_project(project, copy, result.warnings.append)
        functions = list_functions(copy, options.max_lines, result.warnings.append)
        stamps = {} if dating is None else dating.stamps(functions)
        if stamps:
            functions = [dataclasses.replace(f, skip=f.skip or ages.skip_reason(stamps.get(f.id)))
                         for f in functions]
            result.ages.update(s.state for s in stamps.values() if s.state is not None)
        for message in result.warnings:
            warn(message)
        log_path = Path(scratch) / "pytest.log"
        try:
            records = _run(Path(scratch), functions, options, result, progress)
        finally:
            if log is not None and log_path.is_file():
                _keep_log(log_path, log, warn)
        failed = failures.not_run(result, log_path, copy, options)
    if failed is not None:
        raise failed
    ended = failures.ended_badly(result)
    if ended is not None:
        result.warnings.append(ended)
        warn(ended)
    _write(out, functions, records, stamps)
    return result


def _keep_log(source: Path, target: Path, warn: Callable[[str], None]) -> None:
    """pytest's output kept for the user (``failures.keep_log``); a place it cannot be
    written (a folder there, no permission) is warned about, the harvest stands."""
    try:
        failures.keep_log(source, target)
    except OSError as exc:
        warn(f"pytest's output not kept in {target}: {exc.strerror or exc}")


def copy_project(project: Path, copy: Path, warn: Callable[[str], None]) -> None:
    """The scratch copy the tests run on, made as ``safe_read`` reads a tree: folders and
    plain files, and links as links (followed only in the jail, by its user). A file other
    users cannot read (when this runs as root: the jail's user could not have either) or
    one that is not a plain file is left out, with a warning; so is ``COPY_IGNORED``."""
    copy.mkdir()
    with Tree(project) as tree:
        for entry in tree.entries(lambda relative: not copy_ignored(relative), folders=True):
            target = copy / entry.relative
            if copy_ignored(entry.relative):
                continue
            if entry.kind == FOLDER:
                target.mkdir()
            elif entry.kind == LINK:
                os.symlink(tree.link_target(entry.relative), target)
            else:
                try:
                    _copy_file(tree, entry.relative, target)
                except OSError as exc:
                    warn(f"{entry.relative}: left out of the copy the tests run on: {exc}")


def copy_ignored(relative: str) -> bool:
    """Whether the scratch copy leaves this entry out (``COPY_IGNORED``)."""
    name = relative.rpartition("/")[2]
    return any(fnmatch.fnmatch(name, pattern) for pattern in COPY_IGNORED)


def _copy_file(tree: Tree, relative: str, target: Path) -> None:
    """One file copied with its permissions (less setuid and setgid) and times."""
    fd = tree.open(relative)
    try:
        found = os.fstat(fd)
        with open(fd, "rb", closefd=False) as source, open(target, "xb") as copied:
            shutil.copyfileobj(source, copied)
    finally:
        os.close(fd)
    os.chmod(target, stat.S_IMODE(found.st_mode) & 0o777)
    os.utime(target, ns=(found.st_atime_ns, found.st_mtime_ns))


def _run(scratch: Path, functions: list[Function], options: HarvestOptions,
         result: HarvestResult, progress: Callable[[dict[str, Any]], None] | None
         ) -> dict[tuple[str, int], dict[str, Any]]:
    jail_config, child_config = _prepare(scratch, functions, options)
    log_path = scratch / "pytest.log"
    reader = Records(functions, options.max_calls,
                     max_line=options.max_trace_chars + 200 * len(functions) + (1 << 16))
    start = time.monotonic()
    with open(log_path, "wb") as log:
        process, channel = jail.start(jail_config, child_config, scratch, log)
        try:
            while process.poll() is None:
                ready, _, _ = select.select([channel], [], [], _POLL_SECONDS)
                if ready:
                    reader.feed(drain(channel))
                if progress is not None:
                    progress({"seconds": time.monotonic() - start, **reader.status()})
                if time.monotonic() - start > options.timeout:
                    result.timed_out = True
                    break
        finally:
            stop_group(process, _GRACE_SECONDS)
            reader.feed(drain(channel))  # what was written before every writer ended
            os.close(channel)
    kept = reader.finish()
    if progress is not None:
        progress({"seconds": time.monotonic() - start, **reader.status()})
    with open(log_path, "rb") as handle:  # its end only: the tests may print gigabytes
        handle.seek(max(0, os.fstat(handle.fileno()).st_size - 4000))
        result.log = handle.read().decode(errors="replace")
    _tally(result, reader, kept, functions, options.python)
    return kept


def _ship(module: ModuleType, lib: Path) -> None:
    """Copy ``module`` under ``lib`` by its name, each package above it an empty one: the
    child runs in the project's interpreter, where execbench is not installed and the
    rest of it (and its dependencies) would not import."""
    parts = module.__name__.split(".")
    for depth in range(1, len(parts)):
        package = lib.joinpath(*parts[:depth])
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").touch()
    source = Path(str(module.__file__))
    if source.name == "__init__.py":
        shutil.copytree(source.parent, lib.joinpath(*parts),
                        ignore=shutil.ignore_patterns("__pycache__"))
    else:
        shutil.copy(source, lib.joinpath(*parts[:-1]))


def _prepare(scratch: Path, functions: list[Function], options: HarvestOptions
             ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The child's modules beside the scratch copy, and the jail's and the child's
    configurations."""
    root = scratch / "project"
    lib = scratch / "lib"
    for module in _CHILD_MODULES:
        _ship(module, lib)
    for folder in ("home", "tmp"):
        (scratch / folder).mkdir()
    files: dict[str, dict[str, Any]] = {}
    for f in functions:
        files.setdefault(f.file, {})[str(f.first_line)] = {
            "id": f.id, "name": f.name, "def_line": f.def_line, "skip": f.skip}
    child_config = {"root": str(root), "files": files,
                    "paths": [str(p) for p in (root, root / "src") if p.is_dir()],
                    "pytest_args": ["-p", "no:cacheprovider", *options.pytest_args],
                    "seed": options.seed, "max_calls": options.max_calls,
                    "max_events": options.max_events,
                    "max_value_nodes": options.max_value_nodes, "objects": options.objects,
                    "max_trace_chars": options.max_trace_chars,
                    "test_timeout": options.test_timeout}
    env = confine.scrubbed_environment(os.environ)
    env.update(HOME=str(scratch / "home"), TMPDIR=str(scratch / "tmp"), PYTHONHASHSEED="0",
               PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([str(lib), *filter(None, [env.get("PYTHONPATH")])]))
    python = os.path.abspath(shutil.which(options.python) or options.python)
    jail_config = {"scratch": str(scratch), "project": str(root),
                   "home": str(scratch / "home"), "tmp": str(scratch / "tmp"),
                   "read": [str(lib), str(scratch / "config.json"),
                            *_interpreter_paths(python, env, scratch)],
                   "argv": [python, "-m", child.__name__, str(scratch / "config.json")],
                   "env": env, "max_file_bytes": options.max_file_bytes,
                   "max_temp_bytes": options.max_temp_bytes}
    return jail_config, child_config


def _tally(result: HarvestResult, reader: Records, kept: dict[tuple[str, int], dict[str, Any]],
           functions: list[Function], python: str) -> None:
    """What the run says (the jail's layers, the child's counts, the refusals) into
    ``result``; a run whose jail or tests did not start is a ``HarvestError``."""
    if reader.jail is None:
        said = result.last_line
        raise HarvestError(f"the harvest jail did not start: {said}")
    result.layers = reader.jail["layers"]
    result.jail_warnings = list(reader.jail["warnings"])
    result.network = result.layers.get("network", result.network)
    result.refused = reader.refused
    if reader.malformed:
        raise HarvestError("the child's counts are malformed")
    counts = reader.counts
    result.pytest_exit = counts.get("exit")
    result.tests = tuple(counts.get("tests", (0, 0)))
    hung = counts.get("hung")
    result.hung = [str(test) for test in hung] if isinstance(hung, list) else []
    if isinstance(counts.get("stopped"), str):
        result.stopped = counts["stopped"]
    if "error" in counts or "tests" not in counts:
        said = counts.get("error") or result.last_line
        raise HarvestError(f"the tests did not start under {python}: {said}")
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


def _interpreter_paths(python: str, env: dict[str, str], scratch: Path) -> list[str]:
    """The trees the tests may read to run ``python``: its installation, its
    site-packages and whatever else its ``sys.path`` holds (``.pth`` files, PYTHONPATH),
    asked of the interpreter itself (of its base for an environment ``deps`` made:
    ``query_interpreter``); none of them inside the scratch folder."""
    asked, own = deps.query_interpreter(python)
    code = ("import json, os, site, sys; print(json.dumps([sys.prefix, sys.exec_prefix, "
            "sys.base_prefix, sys.base_exec_prefix, os.path.dirname(os.path.realpath("
            "sys.executable)), *getattr(site, 'getsitepackages', list)(), *sys.path]))")
    try:
        said = subprocess.run([asked, "-c", code], env=env, cwd=scratch / "home",
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        paths = json.loads(said.stdout.decode().strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as exc:
        raise HarvestError(f"{python} did not say where it is installed: {exc}") from exc
    paths += [*own, os.path.dirname(python), os.path.dirname(os.path.realpath(python))]
    kept: list[str] = []
    for path in paths:
        real = os.path.realpath(path) if path else ""
        if real not in ("", "/") and os.path.exists(real) and real not in kept \
                and not Path(real).is_relative_to(scratch.resolve()):
            kept.append(real)
    return kept


def _write(out: Path, functions: list[Function], records: dict[tuple[str, int], dict[str, Any]],
           stamps: dict[str, ages.Stamp]) -> None:
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
                "meta": {"file": f.file, "line": f.def_line,
                         **(stamps[f.id].meta if f.id in stamps else {})}}))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
