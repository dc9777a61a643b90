"""Streamed replies: server-sent events, assembled into the shape of a whole reply."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import aiohttp

from execbench.models.http.replies import MALFORMED, MalformedReply, Reader, json_reader
from execbench.models.http.timing import Deadline

T = TypeVar("T")


class Assembly(ABC):
    """Builds one reply from a protocol's server-sent events, in the non-streamed reply's
    shape, so that the provider's ``parse`` reads both and a streamed sample is recorded
    exactly as a non-streamed one would be."""

    @abstractmethod
    def feed(self, event: str, data: str) -> bool:
        """Take one event (its ``event:`` name, '' if none, and its data); True once the
        stream's last event has come. Raises :class:`MalformedReply` for an error event and
        one of ``MALFORMED`` for an event that does not fit the protocol."""

    @abstractmethod
    def body(self) -> dict[str, Any]:
        """The reply as the non-streaming API would have sent it."""


async def server_sent_events(response: aiohttp.ClientResponse) -> AsyncIterator[tuple[str, str]]:
    """The ``(event, data)`` pairs of an ``text/event-stream`` body, as the SSE standard
    delimits them (a blank line ends an event; ``data:`` lines join with newlines; comment
    lines, which servers send to keep a connection alive, are skipped). Chunks are split at
    line ends here rather than with aiohttp's line reader, which refuses lines over 128 KiB."""
    pending = b""
    name = ""
    data: list[str] = []
    async for chunk in response.content.iter_any():
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            line = raw.rstrip(b"\r").decode("utf-8")
            if not line:
                if data or name:
                    yield name, "\n".join(data)
                name, data = "", []
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
    if data:
        yield name, "\n".join(data)


def stream_reader(assembly: Callable[[], Assembly], parse: Callable[[Any], T]) -> Reader[T]:
    """Read a streamed reply event by event and ``parse`` what :class:`Assembly` made of it.

    A server that answers a streaming request with a plain JSON body (some compatible
    servers ignore ``stream``) is read as JSON. A stream that stops before its last event
    (the connection closed mid-way) or sends an error event is a :class:`MalformedReply`,
    retried like any unusable reply; the text received so far goes into the error record.
    """
    whole = json_reader(parse)

    async def read(response: aiohttp.ClientResponse, deadline: Deadline) -> T:
        if response.content_type == "application/json":
            return await whole(response, deadline)
        built = assembly()
        last = ""
        try:
            async for event, data in server_sent_events(response):
                if deadline.passed():
                    raise TimeoutError("the sample's deadline passed mid-stream")
                last = data
                if built.feed(event, data):
                    return parse(built.body())
            reason = "the stream ended before its last event"
        except MalformedReply:
            raise
        except MALFORMED as exc:
            reason = f"{type(exc).__name__} {exc}"
        raise MalformedReply(reason, last)

    return read
