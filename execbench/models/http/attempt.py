"""One attempt: a request to one endpoint, its reply read, and how it failed if it did.

What an attempt's failure says (is it worth another attempt, did the server answer at all,
is the server still working, how long did it ask us to wait) is decided here; what to do
about it (wait, go elsewhere, give up) is the retry loop's business.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

import aiohttp

from execbench.models.http.endpoints import Endpoint, one_line
from execbench.models.http.replies import (
    ERROR_BYTES,
    MALFORMED,
    MalformedReply,
    Reader,
    read_bounded,
)
from execbench.models.http.timing import Deadline, retry_after

T = TypeVar("T")

RETRY_STATUSES = frozenset({408, 429})
"""Client-error statuses that describe a transient condition; every 5xx is retried too."""

OUT_OF_QUOTA = "insufficient_quota"
"""OpenAI's error code on a 429 that means the account has no credit left, not a rate
limit: waiting does not help, so it is never retried."""

RETRYABLE_TRANSPORT = (
    aiohttp.ClientConnectionError,
    aiohttp.ClientPayloadError,
    aiohttp.ClientResponseError,
)
"""Failures of the connection itself: refused, reset, closed mid-body, or a reply that is
not valid HTTP (``raise_for_status`` is off, so aiohttp raises ClientResponseError only for
those). Usually a restarting server or a flaky proxy, so worth another attempt."""


@dataclass(frozen=True)
class Failure:
    """Why one attempt brought no usable reply."""

    summary: str
    """What kind of failure, as error records start (``HTTP 503``, ``timed out``)."""
    detail: str
    """What came or what was raised, before it is cut to one line."""
    retryable: bool = True
    connected: bool = True
    """Whether a server was reached at all."""
    healthy: bool = False
    """Whether the server answered as a working one does (a complaint about the request)."""
    wait: float | None = None
    """The wait the reply's Retry-After asked for, if any."""
    quota: str | None = None
    """The API's message when the account is out of quota, which no retry gets past."""

    def line(self) -> str:
        """The failure in one line, as an endpoint's last failure."""
        return f"{self.summary}: {one_line(self.detail)}"


async def attempt(session: aiohttp.ClientSession, endpoint: Endpoint, data: bytes,
                  headers: dict[str, str], read: Reader[T], timeout: float,
                  deadline: Deadline) -> T | Failure:
    """POST ``data`` to ``endpoint`` once: ``read``'s result for a 2xx reply, else how the
    attempt failed. ``timeout`` bounds each wait for data (see :func:`retry.post`)."""
    try:
        async with session.post(endpoint.url, data=data, headers=headers,
                                timeout=_timeout(timeout), allow_redirects=False,
                                proxy=endpoint.proxy) as response:
            if 200 <= response.status < 300:
                return await read(response, deadline)
            body, _ = await read_bounded(response, ERROR_BYTES)
            return refused(response.status, body.decode("utf-8", "replace"), response.headers)
    except MalformedReply as exc:
        return Failure(exc.summary, exc.body)
    except TimeoutError as exc:
        connected = not isinstance(exc, aiohttp.ConnectionTimeoutError)
        if deadline.passed():
            return Failure("deadline passed", f"no answer within --sample-deadline "
                           f"{deadline.seconds:g} s", connected=connected)
        phase = "ReadTimeout" if connected else "ConnectTimeout"
        return Failure("timed out", f"{phase} (limit {timeout:g} s)", connected=connected)
    except RETRYABLE_TRANSPORT as exc:
        return Failure("connection error", f"{type(exc).__name__} {exc}", connected=False)
    except aiohttp.ClientError as exc:
        return Failure("request error", f"{type(exc).__name__} {exc}", retryable=False)


def refused(status: int, body: str, headers: Mapping[str, str]) -> Failure:
    """The failure a non-2xx reply stands for. A 4xx is about the request (or the
    account), not the server's health; only 408, 429 and 5xx are worth another attempt."""
    return Failure(f"HTTP {status}", body, retryable=status >= 500 or status in RETRY_STATUSES,
                   healthy=status < 500, wait=retry_after(headers),
                   quota=_quota_message(status, body))


def _quota_message(status: int, body: str) -> str | None:
    """The API's message if ``body`` is an out-of-quota error, else None."""
    if status != 429:
        return None
    try:
        error = json.loads(body)["error"]
        code = error.get("code") or error.get("type")
    except (*MALFORMED, AttributeError):
        return None
    return str(error.get("message") or code) if code == OUT_OF_QUOTA else None


_TIMEOUTS: dict[float, aiohttp.ClientTimeout] = {}


def _timeout(attempt: float) -> aiohttp.ClientTimeout:
    """The aiohttp timeout of one attempt, ``attempt`` on connecting and on each read; made
    once per limit, not once per request."""
    made = _TIMEOUTS.get(attempt)
    if made is None:
        made = _TIMEOUTS[attempt] = aiohttp.ClientTimeout(
            total=None, connect=None, sock_connect=attempt, sock_read=attempt)
    return made
