"""When a harvest's test session did not run its tests, and what pytest said about it.

A suite whose tests fail is harvested: its calls were recorded all the same. A session
that never ran its tests is not: a test module that cannot be imported (a dependency the
interpreter lacks), one that does not parse, a conftest or plugin that fails at the start,
no tests found, a process that died before pytest's end. Each of those recorded nothing
worth keeping, and taking one for a harvest would cache an empty result that no later run
retries, so the harvest fails instead (``TestsNotRun``), with pytest's own error lines and
a hint at the flag that usually mends it.

pytest's output is read here from the log the child wrote, and only for a session judged
from its counts not to have run its tests: line by line, only the part kept for the user
(the tests may print a great deal, the log is bounded only by ``max_file_bytes``: its
first and last halves of ``MAX_LOG_BYTES``, the middle never read), keeping the first
error block whole and the names of the modules that could not be imported. That kept
part is written for the user beside the harvest, raw (it is the tests' own output).
"""

from __future__ import annotations

import io
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from execbench.harvest.options import HarvestError, HarvestOptions, HarvestResult

MAX_LOG_BYTES = 2 << 20
"""Bytes of pytest's output kept beside the harvest: its first and last halves when it is
longer (a collection error is at the start, the summary at the end)."""
MAX_LINE_CHARS = 500
"""Characters of one log line read for error lines (the rest is cut)."""
MAX_ERROR_LINES = 40
"""Lines of the first error block shown."""
TAIL_LINES = 10
"""Lines of the log's end shown when it holds no error block pytest marks (a crash)."""
MAX_NAMES = 10
"""Missing modules and uncollected files kept (the hint names the first few)."""

EXIT_MEANINGS = {2: "interrupted, by errors during collection or a stop",
                 3: "internal error, in pytest, a plugin or a conftest hook",
                 4: "usage error, in its arguments, its configuration or a conftest",
                 5: "no tests collected"}
"""pytest's exit statuses for a session that did not run its tests (``pytest.ExitCode``);
0 (all passed) and 1 (some failed) are harvests."""

_COLLECTING = re.compile(r"^_+ (ERROR collecting .+?) _+$")
_MISSING = re.compile(r"No module named '([^']+)'")
_SECTION = re.compile(r"^(=|_){3,}")
_PADDING = re.compile(r"\s{4,}")
"""Runs of whitespace in a shown line, collapsed so padding cannot push text to the start
of a terminal's next row and pass for a line of execbench's own."""
_PLAIN_PATH = re.compile(r"[A-Za-z0-9_./-]+")


@dataclass
class PytestSaid:
    """What pytest's output says went wrong, read from its log."""

    errors: list[str] = field(default_factory=list)
    """The first error block pytest printed (a collection error's title and ``E`` lines,
    a conftest that could not be loaded, an internal error's last lines, a usage error),
    then its interrupted or no-tests line; the log's last lines when it marks none."""
    missing: list[str] = field(default_factory=list)
    """Modules that could not be imported (``No module named 'x'``), first met first
    (``MAX_NAMES`` at most)."""
    collecting: list[str] = field(default_factory=list)
    """Test files pytest could not collect, in its order (``MAX_NAMES`` at most)."""


def read_log(path: Path, root: Path | None = None) -> PytestSaid:
    """What went wrong, read from pytest's log at ``path`` (see the module doc); paths
    under ``root`` (the scratch copy, gone once the harvest ends) said relative to it."""
    said = PytestSaid()
    inside = [] if root is None else sorted({f"{root}{os.sep}", f"{root.resolve()}{os.sep}"},
                                            key=len, reverse=True)
    block: list[str] = []
    in_block = done = False
    internal: list[str] = []
    summary: list[str] = []
    tail: list[str] = []
    for part in _kept_parts(path):
        log = io.StringIO(part.decode("utf-8", errors="replace"))
        while line := log.readline(MAX_LINE_CHARS):
            if not line.endswith("\n"):  # a long line: its rest skipped
                while (rest := log.readline(1 << 16)) and not rest.endswith("\n"):
                    pass
            line = line.rstrip("\r\n")
            for prefix in inside:
                line = line.replace(prefix, "")
            if line.strip():
                tail = [*tail[-(TAIL_LINES - 1):], line]
            if len(said.missing) < MAX_NAMES:
                said.missing += [name for name in _MISSING.findall(line)
                                 if name not in said.missing][:MAX_NAMES - len(said.missing)]
            collecting = _COLLECTING.match(line)
            if collecting and len(said.collecting) < MAX_NAMES:
                said.collecting.append(collecting.group(1).removeprefix("ERROR collecting "))
            if line.startswith("INTERNALERROR>"):
                internal = [*internal[-2:], line]
            stripped = line.strip("!= ")
            if not summary and stripped.startswith(("Interrupted:", "no tests ran")):
                summary.append(stripped)
            if in_block:
                if _SECTION.match(line) or (not line.strip() and block[0].startswith("Import")):
                    in_block, done = False, True
                elif line.startswith(("E ", "ImportError while")) \
                        and len(block) < MAX_ERROR_LINES:
                    block.append(line)
            if not done and not in_block:
                if collecting:
                    block, in_block = [collecting.group(1)], True
                elif line.startswith(("ImportError while loading conftest", "ERROR: ")):
                    block, in_block = [line], line.startswith("ImportError")
                    done = not in_block
    if in_block or done:
        said.errors = block
    elif internal:
        said.errors = internal
    said.errors += summary
    if not said.errors:
        said.errors = tail
    said.errors = [_PADDING.sub(" \N{HORIZONTAL ELLIPSIS} ", line) for line in said.errors]
    return said


def _kept_parts(path: Path) -> list[bytes]:
    """The parts of the log ``keep_log`` keeps: the whole when it is within
    ``MAX_LOG_BYTES``, else its first and last halves (the middle sought past, unread)."""
    half = MAX_LOG_BYTES // 2
    with open(path, "rb") as log:
        size = os.fstat(log.fileno()).st_size
        if size <= MAX_LOG_BYTES:
            return [log.read(MAX_LOG_BYTES)]
        head = log.read(half)
        log.seek(size - half)
        return [head, log.read(half)]


def keep_log(source: Path, target: Path) -> None:
    """pytest's output from ``source`` into ``target`` for the user, within
    ``MAX_LOG_BYTES``: the middle of a longer one left out, saying how much."""
    size = source.stat().st_size
    half = MAX_LOG_BYTES // 2
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(source, "rb") as log, open(target, "wb") as kept:
        if size <= MAX_LOG_BYTES:
            kept.write(log.read())
            return
        kept.write(log.read(half))
        kept.write(f"\n[... {size - 2 * half:,} bytes of pytest's output left out "
                   "...]\n".encode())
        log.seek(size - half)
        kept.write(log.read(half))


class TestsNotRun(HarvestError):
    """The test session did not run the project's tests (see the module doc): ``str`` is
    the one-line reason; ``errors`` pytest's own lines and ``hint`` what to try."""

    __test__ = False  # not a test class, whatever pytest makes of its name

    def __init__(self, reason: str, errors: list[str], hint: str) -> None:
        super().__init__(reason)
        self.errors = errors
        self.hint = hint


def not_run(result: HarvestResult, log: Path, root: Path | None, options: HarvestOptions
            ) -> TestsNotRun | None:
    """Why the session of ``result`` did not run its tests, or ``None`` if it did (some
    test finished, however the session ended: ``ended_badly`` says so). Decided from the
    counts; pytest's ``log`` is read (``read_log``) only for a session that did not."""
    done, total = result.tests
    if done > 0:
        return None
    why = _ending(result)
    said = read_log(log, root)
    reason = f"the tests did not run: {why}; {done} of {total} tests finished"
    return TestsNotRun(reason, said.errors, _hint(result, said, options))


def ended_badly(result: HarvestResult) -> str | None:
    """A warning for a session whose tests ran (some finished, their records kept) but
    which did not end as pytest ends a run (0 or 1) or at --timeout; ``None`` otherwise."""
    done, total = result.tests
    if done == 0 or result.pytest_exit in (0, 1) or result.timed_out:
        return None
    return (f"the test session ended with an error after {done} of {total} tests finished "
            f"({_ending(result)}); the records of those tests are kept")


def _ending(result: HarvestResult) -> str:
    """How the session ended, in words."""
    exit_status = result.pytest_exit
    if exit_status in EXIT_MEANINGS:
        return f"pytest exit status {exit_status} ({EXIT_MEANINGS[exit_status]})"
    if result.timed_out:
        return "stopped at --timeout"
    if result.stopped:
        return f"stopped: {result.stopped}"
    if result.ended_early:
        return "the test process ended before pytest's end"
    return f"pytest exit status {exit_status}"


def _hint(result: HarvestResult, said: PytestSaid, options: HarvestOptions) -> str:
    """The flag that usually mends what ``said`` shows."""
    if said.missing:
        names = ", ".join(f"'{name}'" for name in said.missing[:3]) + (
            ", ..." if len(said.missing) > 3 else "")
        if options.install_deps:
            return (f"the tests import {names}, which --install-deps did not install (the "
                    "project's word; not declared, or left out: see the warnings): declare "
                    "it in the project's requirements")
        return (f"the tests import {names}, which is not installed (the project's word): "
                "declare it in the project's requirements and use --install-deps")
    if said.collecting:
        return (f"pytest could not collect {said.collecting[0]}: leave it out with "
                f"{ignoring(said.collecting[0])}, or run the rest with "
                "--pytest-args '--continue-on-collection-errors'")
    if result.pytest_exit == 5:
        return ("pytest found no tests: name their folder or file with --pytest-args "
                "(e.g. --pytest-args 'tests'), or check the project's pytest settings")
    if result.pytest_exit == 4:
        return "pytest refused its arguments or configuration: check --pytest-args"
    if result.timed_out:
        return "no test finished within --timeout: give it more"
    return ("the session failed before its tests ran (a conftest.py or plugin); pytest's "
            "whole output says more, and --pytest-args '-p no:NAME' leaves a plugin out")


def ignoring(path: str) -> str:
    """The ``--pytest-args`` flag that leaves ``path`` out, safe to paste into a shell: its
    value quoted once for the shell and once for execbench's own ``shlex.split`` of it."""
    argument = f"--ignore={path}"
    if _PLAIN_PATH.fullmatch(path):
        return f"--pytest-args '{argument}'"
    return f"--pytest-args {shlex.quote(shlex.join([argument]))}"
