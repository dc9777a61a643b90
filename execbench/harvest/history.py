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
repository's configuration starts); no transport allowed (``GIT_ALLOW_PROTOCOL`` names
none), so a repository that says it is a partial clone cannot make a missing object
fetched, which would run its ``remote.*.uploadpack`` or ``core.sshCommand``; its
``blame.ignoreRevsFile`` dropped (``--no-ignore-revs-file``) and its mailmap files unset,
with an empty folder as the work tree, so no file it names (``/dev/zero``, a FIFO, its own
``.mailmap``) is read; pathspecs literal; an environment of ``PATH`` and ``LC_ALL`` only,
with an empty ``HOME``, no system or global configuration and no other ``GIT_*`` variable
(none of the user's ``GIT_DIR`` or the like applies); standard input closed, the working
folder empty. Each run's output is read within ``MAX_OUTPUT_BYTES`` and ``SECONDS``, and
its memory bounded by ``MAX_MEMORY_BYTES`` (a small repository can hold a blob of
gigabytes of zeros that blame would inflate); past any of them it is stopped and the file
undated. A time git gives that is no date (out of range) or more than a day ahead of now
undates its file too.
What is not guarded: dates are the repository's word (a commit may claim any past time),
and git itself reads the repository's configuration and objects.
"""

from __future__ import annotations

import functools
import os
import re
import resource
import subprocess
import tempfile
import threading
import time
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
MAX_MEMORY_BYTES = 1 << 30
"""Bytes of data one git run may hold (``RLIMIT_DATA``: files git maps to read its packs
do not count). Blame of a 4 MiB module takes tens of MB; of a 300 MB blob in the
history, which a repository of 1.5 MB can hold, about 2.3 GB."""
FUTURE_SECONDS = 86_400
"""How far after now a commit's time may be (clocks differ) before it reads as forged."""
_SAFE = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
         "-c", "core.untrackedCache=false", "-c", "mailmap.file=", "-c", "mailmap.blob=")
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


def _memory_bound() -> Callable[[], None]:
    """The step that bounds a git run's data at ``MAX_MEMORY_BYTES`` (or the lower hard
    limit this process has), made here so the child between fork and exec only calls C."""
    hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
    limit = MAX_MEMORY_BYTES if hard == resource.RLIM_INFINITY else min(MAX_MEMORY_BYTES, hard)
    return functools.partial(resource.setrlimit, resource.RLIMIT_DATA, (limit, limit))


def _day(timestamp: int) -> date:
    return datetime.fromtimestamp(timestamp, UTC).date()


def head(checkout: Path) -> str:
    """The commit checked out; ``HarvestError`` if ``checkout`` is in no git repository
    with one."""
    with tempfile.TemporaryDirectory(prefix="execbench-git-") as home:
        try:
            said = _git(_inside(checkout), Path(home), ["rev-parse", "--verify",
                                                        "HEAD^{commit}"])
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
        place, prefix = _repository(checkout, Path(home))
        for file in files:
            try:
                lines[file] = _dated(tree, place, Path(home), commit, file, prefix)
            except HarvestError as exc:
                undated[file] = str(exc)
                warn(f"{file}: its functions have no date: {exc}")
    return SinceCommit(since, commit, lines, undated)


def _inside(checkout: Path) -> list[str]:
    """git's arguments that find the repository from the checkout (its work tree)."""
    return ["-C", str(checkout.resolve())]


def _repository(checkout: Path, home: Path) -> tuple[list[str], str]:
    """git's arguments that name the checkout's repository with the empty ``home`` as its
    work tree (nothing of the checkout's files is read by git then), and the checkout's
    place in the repository's tree ('' at its top, else a path ending in ``/``)."""
    said = _git(_inside(checkout), home, ["rev-parse", "--absolute-git-dir", "--show-prefix"])
    found = said.split(b"\n")
    if len(found) < 2 or not found[0].startswith(b"/"):
        raise HarvestError(f"{checkout}: git named no repository folder")
    return ["--git-dir", os.fsdecode(found[0]), "--work-tree", str(home)], \
        os.fsdecode(found[1])


def _dated(tree: Tree, place: list[str], home: Path, commit: str, file: str, prefix: str
           ) -> tuple[tuple[int, str], ...]:
    """One file's lines, dated (``prefix``: the checkout's place in the repository's
    tree); ``HarvestError`` says why they cannot be."""
    try:
        working = tree.read(file, MAX_MODULE_BYTES)
    except (Refused, OSError) as exc:
        raise HarvestError(f"not read: {exc}") from None
    committed = _git(place, home, ["cat-file", "blob", f"{commit}:{prefix}{file}"])
    if committed != working:
        raise HarvestError("differs from the last commit (commit it to date its lines)")
    if _LONE_RETURN.search(working):
        raise HarvestError("ends lines with a lone carriage return, which git does not count")
    blamed = _blame(_git(place, home, ["blame", "--line-porcelain", "--no-textconv",
                                       "--no-ignore-revs-file", commit, "--", prefix + file]))
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
            when = _time(line.split(b" ")[1])
    return tuple(dated)


def _time(said: bytes) -> int:
    """A committer time blame gave; ``HarvestError`` if it is no date or a future one."""
    try:
        when = int(said)
        _day(when)
    except (ValueError, OverflowError, OSError):
        raise HarvestError(f"git blame gave a time that is no date: {said[:30]!r}") from None
    if when > time.time() + FUTURE_SECONDS:
        raise HarvestError(f"a commit is dated {_day(when)}, in the future")
    return when


def _git(place: list[str], home: Path, args: list[str]) -> bytes:
    """git's output for ``args`` in the repository ``place`` names, run as the module doc
    says; what it says on failure (its first line) in a ``HarvestError``."""
    env = {"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C", "HOME": str(home),
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0",
           "GIT_ALLOW_PROTOCOL": "none", "GIT_LITERAL_PATHSPECS": "1"}
    command = ["git", "--no-pager", *_SAFE, *place, *args]
    with tempfile.TemporaryFile() as errors:
        try:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=errors, env=env,
                                       cwd=home, start_new_session=True,
                                       preexec_fn=_memory_bound())
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
