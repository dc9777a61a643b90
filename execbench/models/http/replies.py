"""Reading a 2xx reply into the caller's result, and what makes a reply unusable."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aiohttp

from execbench.models.http.timing import Deadline

T = TypeVar("T")

MALFORMED = (ValueError, KeyError, IndexError, TypeError)
"""What decoding or ``parse`` raise on a body that is not JSON or has the wrong shape."""

REPLY_BYTES = 64 * 1024 * 1024
"""The most of a whole (not streamed) reply body that is read: far above any answer a
request's token limit allows, so one reply's memory stays bounded whatever the server
sends (streams have the same bound, ``sse.STREAM_BYTES``)."""
ERROR_BYTES = 64 * 1024
"""The most of an error reply's body kept for the sample's error record."""


class MalformedReply(Exception):
    """A 2xx reply that cannot be used: a body that is not JSON or has the wrong shape, a
    stream that ends before its last event or carries an error event. Usually a proxy or
    server hiccup, so worth another attempt; ``body`` is what came, for the error record."""

    def __init__(self, reason: str, body: str) -> None:
        super().__init__(reason)
        self.body = body

    @property
    def summary(self) -> str:
        """What kind of failure, as the sample's error record starts."""
        return f"malformed response ({self})"


class Interrupted(MalformedReply):
    """A stream that ended without saying why generation stopped (no finish reason): the
    server cut it short (llama.cpp's server does when another request arrives) or the
    connection dropped. What came is part of an answer at best, so it is retried, and if it
    stays interrupted recorded as an error of its own, never scored."""

    @property
    def summary(self) -> str:
        return f"interrupted stream ({self})"


Reader = Callable[[aiohttp.ClientResponse, Deadline], Awaitable[T]]
"""Turns a 2xx response into the caller's result, raising :class:`MalformedReply` when the
reply is unusable (and aiohttp's errors when the connection fails while it reads). The
second argument is the sample's deadline, which a stream, whose length no read timeout
bounds, is cut at with TimeoutError."""


async def read_bounded(response: aiohttp.ClientResponse, limit: int) -> tuple[bytes, bool]:
    """The body's first ``limit`` bytes, and whether there was more (the rest is not read:
    the connection is closed with the response). ``read(n)`` gives what has arrived, up
    to ``n`` bytes, so it is called until the body ends or passes the bound."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit and (chunk := await response.content.read(limit + 1 - size)):
        chunks.append(chunk)
        size += len(chunk)
    body = b"".join(chunks)
    return body[:limit], size > limit


def json_reader(parse: Callable[[Any], T]) -> Reader[T]:
    """Read the whole body as JSON and ``parse`` it (which raises one of ``MALFORMED`` on
    missing fields). A body over ``REPLY_BYTES`` is malformed without being read on."""

    async def read(response: aiohttp.ClientResponse, deadline: Deadline) -> T:
        body, more = await read_bounded(response, REPLY_BYTES)
        if more:
            raise MalformedReply(f"reply body over {REPLY_BYTES} bytes",
                                 body[:ERROR_BYTES].decode("utf-8", "replace"))
        try:
            return parse(json.loads(body))
        except MALFORMED as exc:
            raise MalformedReply(f"{type(exc).__name__} {exc}",
                                 body.decode("utf-8", "replace")) from None

    return read
