"""``execbench harvest --changed-since DATE`` for a git checkout: each function dated by
the last commit that changed one of its lines, kept when that commit is after DATE.

Lines are dated with ``git blame --line-porcelain HEAD``, one run per source file that
defines functions: it names the commit that last changed every line in one pass over the
history, where ``git log -L`` follows one range at a time (a run per function) and says
what changed, which is not needed here. A function's lines are its decorators through its
last line; its date is the committer time (the day, in UTC) of the newest of them, and it
is ``new`` when every line is after DATE, ``changed`` when some are, ``unchanged`` when
none is. The committer time says when the code entered the history (a rebase renews it),
where the author time can predate a late publication. A file whose bytes differ from the
last commit's (uncommitted edits) or that is not in it has no dates for its lines: its
functions are ``undated`` and skipped, with the reason.

The repository is the project author's, so git runs as a tool that trusts nothing in it:
blame and ``cat-file`` read only committed objects at ``HEAD`` (never the working tree,
so no clean or smudge filter of the repository's configuration runs); ``--no-textconv``;
``core.fsmonitor`` off and ``core.hooksPath`` at ``/dev/null`` (no program of the
repository's configuration starts); an environment of
``PATH`` and ``LC_ALL`` only, with an empty ``HOME``, no system or global configuration
and no other ``GIT_*`` variable (none of the user's ``GIT_DIR`` or the like applies);
standard input closed, the working folder empty. Each run's output is read within
``MAX_OUTPUT_BYTES`` and ``SECONDS``; past either it is stopped and the file undated.
What is not guarded: dates are the repository's word (a commit may claim any time, and
its ``blame.ignoreRevsFile`` setting, which git applies and an empty value does not
reset in git 2.39, may skip commits), and git itself reads the repository's
configuration and objects.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from execbench.harvest.ages import CHANGED, NEW, UNCHANGED, UNDATED, Stamp
from execbench.harvest.listing import MAX_MODULE_BYTES, Function, list_functions
from execbench.harvest.options import HarvestError
from execbench.safe_read import Refused, Tree

MAX_OUTPUT_BYTES = 64 << 20
"""Bytes of one git run's output (a 10,000-line module's blame takes about 3 MB)."""
SECONDS = 300.0
"""Seconds of one git run."""
_SAFE = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
         "-c", "core.untrackedCache=false")
_COMMIT = re.compile(rb"[0-9a-f]{40}( |$)")
_LONE_RETURN = re.compile(rb"\r(?!\n)")


@dataclass(frozen=True)
class SinceCommit:
    """A checkout's source lines dated by their last commit (see the module doc)."""

    since: date
    head: str
    lines: dict[str, tuple[tuple[int, str], ...]] = field(default_factory=dict)
    """Per file (as the listing names it), each line's committer time and commit."""
    undated: dict[str, str] = field(default_factory=dict)
    """Per file without dates, why."""

    def stamps(self, functions: list[Function]) -> dict[str, Stamp]:
        return {f.id: self._stamp(f) for f in functions}

    def _stamp(self, function: Function) -> Stamp:
        dated = self.lines.get(function.file)
        if dated is None:
            why = self.undated.get(function.file, "not in the last commit")
            return Stamp(UNDATED, {}, f"no date: {function.file} {why}")
        code = function.code
        last = function.def_line + code.count("\n") - (1 if code.endswith("\n") else 0)
        span = dated[function.first_line - 1:last]
        if len(span) != last - function.first_line + 1:
            return Stamp(UNDATED, {}, "no date: its lines are not all in the last commit")
        when, commit = max(span)
        after = [_day(time) > self.since for time, _ in span]
        state = NEW if all(after) else CHANGED if any(after) else UNCHANGED
        day = _day(when)
        return Stamp(state, {"date": day.isoformat(),
                             "committed": datetime.fromtimestamp(when, UTC).isoformat(),
                             "commit": commit, "since": state},
                     f"last changed on {day}, not after {self.since}")


def _day(timestamp: int) -> date:
    return datetime.fromtimestamp(timestamp, UTC).date()


def head(checkout: Path) -> str:
    """The commit checked out; ``HarvestError`` if ``checkout`` is in no git repository
    with one."""
    with tempfile.TemporaryDirectory(prefix="execbench-git-") as home:
        try:
            said = _git(checkout, Path(home), ["rev-parse", "--verify", "HEAD^{commit}"])
        except HarvestError as exc:
            raise HarvestError(f"{checkout}: not a git checkout with a commit (--changed-since "
                               f"dates lines by their commits): {exc}") from None
    if not _COMMIT.match(said):
        raise HarvestError(f"{checkout}: git named no commit checked out")
    return said[:40].decode()


def since_commit(checkout: Path, since: date, warn: Callable[[str], None]) -> SinceCommit:
    """Every line of the checkout's source files that define functions, dated."""
    commit = head(checkout)
    files = sorted({f.file for f in list_functions(checkout, 1, lambda message: None)})
    lines: dict[str, tuple[tuple[int, str], ...]] = {}
    undated: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="execbench-git-") as home, Tree(checkout) as tree:
        for file in files:
            try:
                lines[file] = _dated(tree, checkout, Path(home), commit, file)
            except HarvestError as exc:
                undated[file] = str(exc)
                warn(f"{file}: its functions have no date: {exc}")
    return SinceCommit(since, commit, lines, undated)


def _dated(tree: Tree, checkout: Path, home: Path, commit: str, file: str
           ) -> tuple[tuple[int, str], ...]:
    """One file's lines, dated; ``HarvestError`` says why they cannot be."""
    try:
        working = tree.read(file, MAX_MODULE_BYTES)
    except (Refused, OSError) as exc:
        raise HarvestError(f"not read: {exc}") from None
    committed = _git(checkout, home, ["cat-file", "blob", f"{commit}:./{file}"])
    if committed != working:
        raise HarvestError("differs from the last commit (commit it to date its lines)")
    if _LONE_RETURN.search(working):
        raise HarvestError("ends lines with a lone carriage return, which git does not count")
    blamed = _blame(_git(checkout, home, ["blame", "--line-porcelain", "--no-textconv",
                                          commit, "--", file]))
    if len(blamed) != working.count(b"\n") + (not working.endswith(b"\n") and bool(working)):
        raise HarvestError("git blame's lines do not match the file's")
    return blamed


def _blame(output: bytes) -> tuple[tuple[int, str], ...]:
    """``--line-porcelain`` output as each line's committer time and commit: every line
    comes after a full header, its text after a tab."""
    dated: list[tuple[int, str]] = []
    commit, when = "", None
    for line in output.split(b"\n"):
        if line.startswith(b"\t"):
            if when is None or not commit:
                raise HarvestError("git blame's output lacks a commit or its time")
            dated.append((when, commit))
            commit, when = "", None
        elif _COMMIT.match(line):
            commit = line[:40].decode()
        elif line.startswith(b"committer-time "):
            try:
                when = int(line.split(b" ")[1])
            except ValueError:
                raise HarvestError("git blame gave a time that is not a number") from None
    return tuple(dated)


def _git(checkout: Path, home: Path, args: list[str]) -> bytes:
    """git's output for ``args`` in ``checkout``, run as the module doc says; what it
    says on failure (its first line) in a ``HarvestError``."""
    env = {"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C", "HOME": str(home),
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}
    command = ["git", "--no-pager", *_SAFE, "-C", str(checkout.resolve()), *args]
    with tempfile.TemporaryFile() as errors:
        try:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=errors, env=env,
                                       cwd=home, start_new_session=True)
        except OSError as exc:
            raise HarvestError(f"cannot run git: {exc.strerror or exc}") from None
        timer = threading.Timer(SECONDS, process.kill)
        with process:
            timer.start()
            try:
                output = process.stdout.read(MAX_OUTPUT_BYTES + 1) if process.stdout else b""
                if len(output) > MAX_OUTPUT_BYTES:
                    process.kill()
                    raise HarvestError(f"git {args[0]} said more than {MAX_OUTPUT_BYTES} bytes")
                status = process.wait()
            finally:
                timer.cancel()
        if status != 0:
            errors.seek(0)
            said = errors.read(2000).decode(errors="replace").strip().splitlines()
            raise HarvestError(f"git {args[0]} failed: " + (
                said[0][:300] if said else f"stopped after {SECONDS:g} s" if status < 0
                else f"exit status {status}"))
    return output
