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


def json_reader(parse: Callable[[Any], T]) -> Reader[T]:
    """Read the whole body as JSON and ``parse`` it (which raises one of ``MALFORMED`` on
    missing fields)."""

    async def read(response: aiohttp.ClientResponse, deadline: Deadline) -> T:
        body = await response.read()
        try:
            return parse(json.loads(body))
        except MALFORMED as exc:
            raise MalformedReply(f"{type(exc).__name__} {exc}",
                                 body.decode("utf-8", "replace")) from None

    return read
