"""Streamed replies: server-sent events, assembled into the shape of a whole reply."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import aiohttp

from execbench.models.base import CUT_BY_CLIENT
from execbench.models.http.replies import (
    MALFORMED,
    Interrupted,
    MalformedReply,
    Reader,
    json_reader,
)
from execbench.models.http.timing import Deadline

T = TypeVar("T")


EVENTS_PER_TOKEN = 4
EVENTS_SLACK = 256
"""A stream is cut after ``EVENTS_PER_TOKEN * max_tokens + EVENTS_SLACK`` events: servers
send about one event per token (llama.cpp was seen a few tokens over the limit), so no
reply within its limit comes near, while one that never stops is bounded in time."""

STREAM_BYTES = 64 * 1024 * 1024
"""Bytes of events after which any stream is cut, limit or not: one reply's memory stays
bounded whatever the server does."""


class Assembly(ABC):
    """Builds one reply from a protocol's server-sent events, in the non-streamed reply's
    shape, so that the provider's ``parse`` reads both and a streamed sample is recorded
    exactly as a non-streamed one would be."""

    @abstractmethod
    def feed(self, event: str, data: str) -> bool:
        """Take one event (its ``event:`` name, '' if none, and its data); True once the
        protocol's last event has come. Raises :class:`MalformedReply` for an error event
        and one of ``MALFORMED`` for an event that does not fit the protocol."""

    @abstractmethod
    def finished(self) -> bool:
        """Whether the reply has said why generation stopped (a finish or stop reason):
        only then is it whole, whether the protocol's last event follows or the server
        just closes the stream (``transformers serve`` does)."""

    @abstractmethod
    def stop(self, reason: str) -> None:
        """Record ``reason`` as the reply's stop reason (the client cut it)."""

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


def stream_reader(assembly: Callable[[], Assembly], parse: Callable[[Any], T],
                  max_tokens: int | None) -> Reader[T]:
    """Read a streamed reply event by event and ``parse`` what :class:`Assembly` made of it.

    A server that answers a streaming request with a plain JSON body (some compatible
    servers ignore ``stream``) is read as JSON. The reply is whole once it carries a
    finish reason, whether the protocol's last event follows or the body just ends; one
    that ends without (the connection closed mid-way, or a server that stops a stream early
    and still sends its last event) is :class:`Interrupted`, and an error event a
    :class:`MalformedReply`: both are retried, and the text received so far goes into the
    error record. A reply that runs far past ``max_tokens`` (see ``EVENTS_PER_TOKEN``) or
    over ``STREAM_BYTES`` is cut here and recorded as cut (stop reason ``CUT_BY_CLIENT``).
    """
    whole = json_reader(parse)
    events_cap = None if max_tokens is None else EVENTS_PER_TOKEN * max_tokens + EVENTS_SLACK

    async def read(response: aiohttp.ClientResponse, deadline: Deadline) -> T:
        if response.content_type == "application/json":
            return await whole(response, deadline)
        built = assembly()
        last = ""
        events = size = 0
        ended = "the stream ended before a finish reason"
        try:
            async for event, data in server_sent_events(response):
                if deadline.passed():
                    raise TimeoutError("the sample's deadline passed mid-stream")
                last = data
                if built.feed(event, data):
                    ended = "the server ended the stream without a finish reason"
                    break
                events += 1
                size += len(data)
                if size > STREAM_BYTES or (events_cap is not None and events > events_cap):
                    built.stop(CUT_BY_CLIENT)
                    response.close()
                    return parse(built.body())
            if not built.finished():
                raise Interrupted(ended, last)
            return parse(built.body())
        except MalformedReply:
            raise
        except MALFORMED as exc:
            raise MalformedReply(f"{type(exc).__name__} {exc}", last) from None

    return read
