"""Reading a tree of files someone else wrote (a folder of scripts, a project to harvest)
for a process that may be root: never through a link, never a file the tree's author could
not have read.

Every reader of such a tree goes through :class:`Tree`. It holds the tree's folder open and
reaches each file one name at a time from it, each step opened with ``O_NOFOLLOW``, so a
symbolic link anywhere below the folder (to ``/etc/shadow``, or to a file elsewhere the
caller may read) is refused, also one put there after the listing; ``..`` and absolute
names are refused before anything is opened. Links are refused whatever they point at,
inside the tree too: telling the two apart is what attacks race. When the process is root,
a file is read only if other users may read it (``S_IROTH``): a private file, or a hard
link to one, is what root alone could have read. Only regular files are read (a FIFO
would block, a device is the host's), up to a byte bound.

Standard library only: the harvest's child, which runs under the user's interpreter,
imports it too.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_BLOCK = 1 << 16

FILE, FOLDER, LINK, OTHER = "file", "folder", "link", "other"
"""What an entry of a tree is: a regular file, a folder, a symbolic link, anything else."""

LINK_REFUSED = "a symbolic link: links are not followed"
PRIVATE_REFUSED = "other users cannot read it: not read as root"
NOT_A_FILE = "not a regular file"


class Refused(OSError):
    """A file not read, for the one-line reason its message gives."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Entry:
    relative: str
    """The path below the tree's folder, ``/``-separated."""
    kind: str
    """``FILE``, ``FOLDER``, ``LINK`` or ``OTHER``."""


def private_to_root(mode: int) -> bool:
    """Whether root reading a file of this mode would read what other users cannot."""
    return os.geteuid() == 0 and not mode & stat.S_IROTH


class Tree:
    """A folder whose files are read without following links (see the module doc). The
    folder itself is the caller's choice and may be reached through a link."""

    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder)
        self.fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def __enter__(self) -> Tree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def entries(self, keep_folder: Callable[[str], bool] = lambda relative: True,
                folders: bool = False) -> Iterator[Entry]:
        """Every entry below the folder, a folder's own entries (sorted by name) before
        those of its subfolders (in name order, each only if ``keep_folder`` of its
        relative path, and itself an entry before its own with ``folders``): the order
        ``os.walk`` gives. Links to folders are entries, never entered."""
        stack: list[tuple[int, str, Iterator[str]]] = []
        fd, prefix = os.dup(self.fd), ""
        try:
            while fd >= 0:
                inside: list[str] = []
                yield from _listed(fd, prefix, inside)
                stack.append((fd, prefix, iter(inside)))
                fd = -1
                while stack and fd < 0:  # the next folder to list, depth first
                    parent, above, names = stack[-1]
                    name = next(names, None)
                    if name is None:
                        os.close(stack.pop()[0])
                    elif keep_folder(above + name):
                        fd, prefix = _subfolder(parent, name), f"{above}{name}/"
                        if fd >= 0 and folders:
                            yield Entry(above + name, FOLDER)
        finally:
            for parent, _, _ in stack:
                os.close(parent)
            if fd >= 0:
                os.close(fd)

    def open(self, relative: str) -> int:
        """A descriptor of the regular file ``relative``, reached without following any
        link; ``Refused`` says why not."""
        parts = relative.split("/")
        if relative.startswith("/") or any(part in ("", ".", "..") for part in parts):
            raise Refused(f"not a plain path below the folder: {relative!r}")
        folder = self._folder(parts[:-1])
        try:
            found = _step(folder, parts[-1], _FILE)
        finally:
            self._done(folder)
        try:
            mode = os.fstat(found).st_mode
            if not stat.S_ISREG(mode):
                raise Refused(NOT_A_FILE)
            if private_to_root(mode):
                raise Refused(PRIVATE_REFUSED)
            os.set_blocking(found, True)
        except BaseException:
            os.close(found)
            raise
        return found

    def read(self, relative: str, limit: int) -> bytes:
        """The bytes of the file ``relative`` (see ``open``), refused over ``limit``."""
        fd = self.open(relative)
        try:
            if os.fstat(fd).st_size > limit:
                raise Refused(f"over {limit} bytes")
            chunks, total = [], 0
            while block := os.read(fd, _BLOCK):
                total += len(block)
                if total > limit:  # it grew since the check
                    raise Refused(f"over {limit} bytes")
                chunks.append(block)
        finally:
            os.close(fd)
        return b"".join(chunks)

    def exists(self, relative: str) -> bool:
        """Whether ``relative`` names an entry (a link counts, unfollowed)."""
        *head, name = relative.split("/")
        try:
            folder = self._folder(head)
        except OSError:
            return False
        try:
            os.stat(name, dir_fd=folder, follow_symlinks=False)
            return True
        except OSError:
            return False
        finally:
            self._done(folder)

    def link_target(self, relative: str) -> str:
        """What the link ``relative`` says (``os.readlink``), reached as ``open`` reaches a
        file: it names the link in a digest, and is never followed."""
        *head, name = relative.split("/")
        folder = self._folder(head)
        try:
            return os.readlink(name, dir_fd=folder)
        finally:
            self._done(folder)

    def _folder(self, parts: list[str]) -> int:
        """The folder ``parts`` below the tree's, opened a name at a time."""
        fd = self.fd
        for part in parts:
            try:
                sub = _step(fd, part, _FOLDER)
            finally:
                self._done(fd)
            fd = sub
        return fd

    def _done(self, fd: int) -> None:
        """Close a folder ``_folder`` opened (never the tree's own)."""
        if fd != self.fd:
            os.close(fd)


def _listed(fd: int, prefix: str, inside: list[str]) -> Iterator[Entry]:
    """The entries of the folder ``fd`` but its subfolders, sorted by name; the names of
    its subfolders go to ``inside``, in order."""
    with os.scandir(fd) as listing:
        found = sorted(listing, key=lambda entry: entry.name)
    for entry in found:
        if entry.is_symlink():
            yield Entry(prefix + entry.name, LINK)
        elif entry.is_dir(follow_symlinks=False):
            inside.append(entry.name)
        else:
            kind = FILE if entry.is_file(follow_symlinks=False) else OTHER
            yield Entry(prefix + entry.name, kind)


def _subfolder(fd: int, name: str) -> int:
    """The subfolder ``name`` of ``fd`` opened, or -1 when it is no longer one (replaced
    by a link, removed) or cannot be opened: left out, as ``os.walk`` leaves it."""
    try:
        return os.open(name, _FOLDER, dir_fd=fd)
    except OSError:
        return -1


def _step(fd: int, name: str, flags: int) -> int:
    """``name`` opened in the folder ``fd``; a link there is ``Refused``. ``O_NOFOLLOW``
    fails on a link with ``ELOOP``, or with ``ENOTDIR`` when a folder is asked for, which
    a plain file gives too: ``lstat`` tells the two apart."""
    try:
        return os.open(name, flags, dir_fd=fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP or exc.errno == errno.ENOTDIR and _is_link(fd, name):
            raise Refused(LINK_REFUSED) from None
        raise


def _is_link(fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False
