"""The sandbox's wire format, shared by the parent, the zygote and the runners.

A message is a 4-byte big-endian length and a body: the parent's messages to the zygote
and the zygote's to a runner are one JSON body (a batch of jobs); the answers going the
other way are *frames*: a length, a one-byte tag and a body, never more than ``PIPE_BUF``
bytes in all, so each is written by one atomic ``write``. Tag ``J`` is a JSON message with
a ``kind``; tag ``C`` is the next chunk of the payload the last ``result`` message
announced.

Everything a reader takes from a pipe whose writer runs program code is untrusted:
``FrameReader`` refuses any frame that is not of this form (``Broken``) and never waits
without a deadline.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

JSON, CHUNK = b"J", b"C"
FRAME_BYTES = select.PIPE_BUF
"""The most a frame may hold: one ``write`` of up to ``PIPE_BUF`` bytes to a pipe is atomic."""
CHUNK_BYTES = FRAME_BYTES - 5
MAX_RESULT_BYTES = 256 * 1024 * 1024
"""The largest result payload accepted (results of tens of MB come back whole); a writer
announcing more is broken, so a program cannot make a reader buffer without end."""


class Broken(Exception):
    """The writer said something the protocol does not allow."""


class Interrupted(Exception):
    """A watched descriptor became readable while a frame was awaited (a runner died, the
    parent closed its pipe); ``ready`` lists which."""

    def __init__(self, ready: list[int]) -> None:
        super().__init__(ready)
        self.ready = ready


def frame(tag: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body) + 1) + tag + body


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def send(fd: int, message: dict[str, Any]) -> None:
    """One JSON frame."""
    write_all(fd, frame(JSON, json.dumps(message).encode()))


def send_result(fd: int, message: dict[str, Any], payload: bytes) -> None:
    """A ``result`` frame and the payload in chunks, several frames per write where they fit."""
    frames = [frame(JSON, json.dumps({**message, "size": len(payload)}).encode())]
    frames += [frame(CHUNK, payload[i:i + CHUNK_BYTES])
               for i in range(0, len(payload), CHUNK_BYTES)]
    batch = b""
    for piece in frames:
        if len(batch) + len(piece) > FRAME_BYTES:
            write_all(fd, batch)
            batch = b""
        batch += piece
    write_all(fd, batch)


def pack(message: dict[str, Any]) -> bytes:
    """A length-prefixed JSON message (a batch of jobs, the limits)."""
    data = json.dumps(message).encode()
    return struct.pack(">I", len(data)) + data


def read_exact(fd: int, size: int) -> bytes | None:
    """``size`` bytes from a blocking pipe whose writer is trusted; None at its end."""
    parts = []
    while size:
        chunk = os.read(fd, size)
        if not chunk:
            return None
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


def receive_raw(fd: int) -> bytes | None:
    """The body of the next length-prefixed message; None at the pipe's end."""
    header = read_exact(fd, 4)
    return read_exact(fd, struct.unpack(">I", header)[0]) if header else None


def receive(fd: int) -> dict[str, Any] | None:
    body = receive_raw(fd)
    return None if body is None else json.loads(body)


class FrameReader:
    """Frames from an untrusted writer, each awaited until a deadline.

    ``watch`` names further descriptors (a runner's pidfd, the parent's pipe) whose turning
    readable while a frame is awaited ends the wait with ``Interrupted``; data already in
    the pipe is read first, so a writer's last frames before it died are not lost.
    """

    def __init__(self, fd: int, watch: tuple[int, ...] = ()) -> None:
        self.fd = fd
        self.watch = watch
        self.buffer = bytearray()

    def _read(self, size: int, deadline: float) -> bytes | None:
        while len(self.buffer) < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready = select.select([self.fd, *self.watch], [], [], remaining)[0]
            if not ready:
                raise TimeoutError
            if self.fd not in ready:
                raise Interrupted(ready)
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    def next(self, deadline: float, grace: float = 5.0) -> tuple[bytes, Any] | None:
        """The next frame as (tag, message or chunk bytes); None when the writer is gone.
        The rest of a frame whose header came follows at once: ``grace`` seconds past
        ``deadline`` are ample for it."""
        header = self._read(4, deadline)
        if header is None:
            return None
        size = struct.unpack(">I", header)[0]
        if not 1 <= size <= FRAME_BYTES:
            raise Broken(f"frame of {size} bytes")
        body = self._read(size, max(deadline, time.monotonic() + grace))
        if body is None:
            return None
        tag, body = body[:1], body[1:]
        if tag == CHUNK:
            return CHUNK, body
        if tag != JSON:
            raise Broken(f"unknown frame tag {tag!r}")
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):  # deeply nested or not JSON: not a message
            raise Broken("frame is not JSON") from None
        if not isinstance(message, dict) or not isinstance(message.get("kind"), str):
            raise Broken("frame is not a message")
        return JSON, message
