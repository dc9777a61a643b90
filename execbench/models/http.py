"""Request plumbing shared by the HTTP providers: retries, back-off, timing and the client.

Benchmark runs send thousands of requests, so transient failures (rate limits, overloaded
servers, dropped connections, truncated bodies) are expected and must not cost a sample.
Everything that is worth retrying is retried here, in one place, so that every provider
behaves the same way and the number of attempts can be reported with each generation.
"""

from __future__ import annotations

import asyncio
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, TypeVar

import httpx

from execbench.models.base import GenerateConfig, Generation, Request

T = TypeVar("T")

MAX_DELAY = 60.0
"""Upper bound in seconds on any wait between attempts, Retry-After included.

A server asking for a longer pause would stall a whole run; waiting the cap and trying
again costs one attempt at worst.
"""

RETRY_STATUSES = frozenset({408, 429})
"""Client-error statuses that describe a transient condition; every 5xx is retried too."""

DETAIL_CHARS = 200

MALFORMED = (ValueError, KeyError, IndexError, TypeError)
"""What decoding or ``parse`` raise on a body that is not JSON or has the wrong shape."""


class RequestFailed(Exception):
    """No usable response was obtained; ``attempts`` says how many requests were sent."""

    def __init__(self, message: str, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts


def retry_delay(retry: int, config: GenerateConfig, retry_after: float | None = None) -> float:
    """Seconds to wait before retry number ``retry`` (1 for the first retry).

    A server-supplied Retry-After wins because the server knows when it will have capacity.
    Otherwise the delay doubles from ``config.retry_base_delay``; the random factor spreads
    out the many concurrent requests that tend to fail together on a rate limit, so they do
    not all come back at the same instant.
    """
    if retry_after is not None:
        return min(MAX_DELAY, retry_after)
    nominal = min(MAX_DELAY, config.retry_base_delay * 2 ** (retry - 1))
    return nominal * random.uniform(0.5, 1.0)


def _retry_after(response: httpx.Response) -> float | None:
    """The Retry-After header in seconds; the HTTP-date form is rare for APIs and ignored."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return max(0.0, seconds)


def _one_line(text: str) -> str:
    """Collapse whitespace and shorten, so a failure fits one line of a results file."""
    return " ".join(text.split())[:DETAIL_CHARS]


async def post_json(
    client: httpx.AsyncClient,
    url: str,
    payload: dict[str, Any],
    headers: dict[str, str],
    config: GenerateConfig,
    parse: Callable[[Any], T],
) -> tuple[T, int]:
    """POST ``payload`` and return ``(parse(response JSON), attempts)``.

    ``parse`` extracts what the caller needs and raises one of ``MALFORMED`` when fields are
    missing: a 200 with a truncated or incomplete body is treated like a server error and
    retried, since it is usually a proxy or server hiccup. At most ``config.max_retries``
    retries are made; 4xx statuses other than 408/429 mean the request itself is wrong and
    fail at once. Raises :class:`RequestFailed` describing the last failure.
    """
    # Waiting for a free pooled connection is not the server being slow, so only the
    # network phases are bounded; otherwise a deep queue would turn into timeouts.
    timeout = httpx.Timeout(config.timeout, pool=None)
    attempts = 0
    while True:
        attempts += 1
        retry_after: float | None = None
        try:
            response = await client.post(url, json=payload, headers=headers, timeout=timeout)
        except httpx.TimeoutException as exc:
            summary, detail = "timed out", f"{type(exc).__name__} (limit {config.timeout:g} s)"
            retryable = True
        except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            summary, detail = "connection error", f"{type(exc).__name__} {exc}"
            retryable = True
        except httpx.TransportError as exc:
            summary, detail = "request error", f"{type(exc).__name__} {exc}"
            retryable = False
        else:
            status = response.status_code
            if response.is_success:
                try:
                    return parse(response.json()), attempts
                except MALFORMED as exc:
                    summary = f"malformed response ({type(exc).__name__} {exc})"
                    detail, retryable = response.text, True
            else:
                summary, detail = f"HTTP {status}", response.text
                retryable = status >= 500 or status in RETRY_STATUSES
                retry_after = _retry_after(response)
        if not retryable or attempts > config.max_retries:
            noun = "attempt" if attempts == 1 else "attempts"
            raise RequestFailed(f"{summary} after {attempts} {noun}: {_one_line(detail)}", attempts)
        await asyncio.sleep(retry_delay(attempts, config, retry_after))


class HttpModel(ABC):
    """A model behind an HTTP JSON endpoint; subclasses only translate the protocol.

    The client is created on first use so that it belongs to the event loop that runs the
    generations, and sized from the config the runner actually passes. A model must be used
    from a single event loop and closed with :meth:`aclose` when done.
    """

    def __init__(self, name: str, url: str, headers: dict[str, str]) -> None:
        self.name = name
        self.url = url
        self.headers = headers
        self._client: httpx.AsyncClient | None = None

    @abstractmethod
    def payload(self, request: Request, config: GenerateConfig) -> dict[str, Any]:
        """The request body for one generation."""

    @abstractmethod
    def parse(self, body: Any) -> Generation:
        """A generation from a 200 response body; raises one of ``MALFORMED`` if unusable."""

    def _client_for(self, config: GenerateConfig) -> httpx.AsyncClient:
        if self._client is None:
            limits = httpx.Limits(
                max_connections=config.max_connections,
                max_keepalive_connections=config.max_connections,
            )
            self._client = httpx.AsyncClient(limits=limits)
        return self._client

    async def generate(self, request: Request, config: GenerateConfig) -> Generation:
        """Generate one answer; request failures come back as ``Generation.error``.

        A failed sample is data for the report, not a reason to abort the run, hence no
        exception. Latency spans all attempts, back-off included, because that is what the
        run actually waited.
        """
        client = self._client_for(config)
        payload = self.payload(request, config)
        start = time.perf_counter()
        try:
            generation, attempts = await post_json(
                client, self.url, payload, self.headers, config, self.parse
            )
        except RequestFailed as exc:
            return Generation(
                text=None,
                error=str(exc),
                attempts=exc.attempts,
                latency=time.perf_counter() - start,
            )
        generation.attempts = attempts
        generation.latency = time.perf_counter() - start
        return generation

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
