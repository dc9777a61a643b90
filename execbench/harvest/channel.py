"""The harvest child's channel read as lines: what the Python harvest's records
(``records``) and a native harvest's recording (``native.recording``) share.

The tests write on the channel too (the recorder runs in their processes), so nothing
about its lines is trusted: a line longer than any record is dropped unread, up to its
newline, so a flood without newlines cannot fill this process's memory, and a line still
unfinished when the channel closes is refused; each is counted by reason.
"""

from __future__ import annotations

import os
from collections import Counter

REFUSED_LONG = "a line longer than any record"
REFUSED_CUT = "cut off when the channel closed"


def drain(fd: int) -> bytes:
    """What a non-blocking descriptor holds now."""
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


class Lines:
    """Complete lines of the channel, each handed to ``_take`` in order (a subclass's)."""

    def __init__(self, max_line: int) -> None:
        self.max_line = max_line
        self.pending = b""
        """A line still being written: it waits for the next read."""
        self.skipping = False
        """Inside a line too long to keep: its bytes are dropped up to its newline."""
        self.lines = 0
        """Complete lines read, those too long included."""
        self.refused: Counter[str] = Counter()

    def feed(self, data: bytes) -> None:
        if self.skipping:
            end = data.find(b"\n")
            if end < 0:
                return
            data, self.skipping = data[end + 1:], False
        lines = (self.pending + data).split(b"\n")
        self.pending = lines.pop()
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
        raise NotImplementedError

    def _closed(self) -> None:
        """The channel has closed: a line it cut short is refused."""
        if self.pending:
            self.refused[REFUSED_CUT] += 1
            self.pending = b""
