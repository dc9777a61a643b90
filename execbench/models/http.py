"""Request plumbing shared by the HTTP providers: retries, back-off, timing and the client.

Benchmark runs send thousands of requests, so transient failures (rate limits, overloaded
servers, dropped connections, truncated bodies) are expected and must not cost a sample.
Everything that is worth retrying is retried here, in one place, so that every provider
behaves the same way and the number of attempts can be reported with each generation.

The client is aiohttp: against a local server answering in 50 ms, httpx topped out near
100 requests/s whatever the number of connections, ten times below what the server could
serve, while aiohttp keeps up (``bench/generation_engine.py`` measures both ends).
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import time
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

import aiohttp

from execbench.models.base import GenerateConfig, Generation, ModelError, Request

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


class RequestFailed(Exception):
    """No usable response was obtained; ``attempts`` says how many requests were sent."""

    def __init__(self, message: str, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts


class OutOfQuota(ModelError):
    """The API refused a request because the account is out of quota.

    Every further request would be refused the same way, so this stops the run (the CLI
    reports a :class:`ModelError` as one clear error) instead of each sample backing off
    and failing on its own; the samples already logged are kept, and running the same
    command again resumes once there is credit.
    """


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


def retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """The wait in seconds a reply's headers ask for, or None if they name none.

    OpenAI sends ``retry-after-ms`` (milliseconds, more precise, so it wins); the standard
    ``Retry-After`` is either seconds or an HTTP date, which some gateways and CDNs use. A
    date in the past, or a value that is not a finite number, means no wait or no advice.
    """
    millis = _finite(headers.get("retry-after-ms"))
    if millis is not None:
        return max(0.0, millis / 1000)
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _finite(value)
    if seconds is not None:
        return max(0.0, seconds)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000": UTC, with no statement about the sender's zone
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _finite(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else math.nan
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _one_line(text: str) -> str:
    """Collapse whitespace and shorten, so a failure fits one line of a results file."""
    return " ".join(text.split())[:DETAIL_CHARS]


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


async def post_json(
    session: aiohttp.ClientSession,
    url: str,
    payload: dict[str, Any],
    headers: dict[str, str],
    config: GenerateConfig,
    parse: Callable[[Any], T],
    proxy: str | None = None,
) -> tuple[T, int]:
    """POST ``payload`` and return ``(parse(response JSON), attempts)``.

    ``parse`` extracts what the caller needs and raises one of ``MALFORMED`` when fields are
    missing: a 200 with a truncated or incomplete body is treated like a server error and
    retried, since it is usually a proxy or server hiccup. At most ``config.max_retries``
    retries are made; 4xx statuses other than 408/429 mean the request itself is wrong and
    fail at once. Raises :class:`RequestFailed` describing the last failure, or
    :class:`OutOfQuota` at the first out-of-quota reply.
    """
    # Waiting for a free pooled connection is not the server being slow, so only the
    # network phases are bounded; otherwise a deep queue would turn into timeouts. Like
    # httpx's read timeout, sock_read bounds each wait for data, not the whole reply.
    timeout = aiohttp.ClientTimeout(
        total=None, connect=None, sock_connect=config.timeout, sock_read=config.timeout
    )
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    headers = {**headers, "content-type": "application/json"}
    attempts = 0
    while True:
        attempts += 1
        wait: float | None = None
        try:
            async with session.post(
                url, data=data, headers=headers, timeout=timeout, allow_redirects=False, proxy=proxy
            ) as response:
                status, body = response.status, await response.read()
                reply_headers = response.headers
        except TimeoutError as exc:
            connecting = isinstance(exc, aiohttp.ConnectionTimeoutError)
            phase = "ConnectTimeout" if connecting else "ReadTimeout"
            summary, detail = "timed out", f"{phase} (limit {config.timeout:g} s)"
            retryable = True
        except RETRYABLE_TRANSPORT as exc:
            summary, detail = "connection error", f"{type(exc).__name__} {exc}"
            retryable = True
        except aiohttp.ClientError as exc:
            summary, detail = "request error", f"{type(exc).__name__} {exc}"
            retryable = False
        else:
            if 200 <= status < 300:
                try:
                    return parse(json.loads(body)), attempts
                except MALFORMED as exc:
                    summary = f"malformed response ({type(exc).__name__} {exc})"
                    detail, retryable = body.decode("utf-8", "replace"), True
            else:
                text = body.decode("utf-8", "replace")
                quota = _quota_message(status, text)
                if quota is not None:
                    raise OutOfQuota(
                        f"the API refused {url} as out of quota (HTTP 429 {OUT_OF_QUOTA}: "
                        f"{_one_line(quota)}); add credit or use another key, then run the "
                        "same command again to resume"
                    )
                summary, detail = f"HTTP {status}", text
                retryable = status >= 500 or status in RETRY_STATUSES
                wait = retry_after(reply_headers)
        if not retryable or attempts > config.max_retries:
            noun = "attempt" if attempts == 1 else "attempts"
            raise RequestFailed(f"{summary} after {attempts} {noun}: {_one_line(detail)}", attempts)
        await asyncio.sleep(retry_delay(attempts, config, wait))


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``HTTP_PROXY``,
    ``ALL_PROXY``, minus ``NO_PROXY``), or None.

    Users behind a proxy relied on httpx reading these. aiohttp's ``trust_env`` would look
    them up again for every request, in a worker thread (two thread hops per request, a
    tenth of the throughput at hundreds of connections), although the URL never changes;
    so it is looked up once per model.
    """
    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(parts.netloc):
        return None
    return proxy


def parse_model_args(
    model_args: Mapping[str, str], reserved: Mapping[str, str], provider: str
) -> dict[str, Any]:
    """``-M key=value`` pairs as extra request fields.

    A value is read as JSON when it is JSON (``-M chat_template_kwargs={"enable_thinking":
    false}``, ``-M top_k=20``) and kept as text otherwise (``-M reasoning_effort=high``), so
    the common cases need no quoting. ``reserved`` maps the fields the provider fills itself
    to what sets them instead: a second way to set, say, the temperature would leave the run
    record saying one thing and the request another.
    """
    taken = sorted(key for key in model_args if key in reserved)
    if taken:
        ways = "; ".join(f"{key}: {reserved[key]}" for key in taken)
        raise ModelError(f"{provider} sets these request fields itself, not with -M: {ways}")
    fields: dict[str, Any] = {}
    for key, value in model_args.items():
        try:
            fields[key] = json.loads(value)
        except ValueError:
            fields[key] = value
    return fields


class HttpModel(ABC):
    """A model behind an HTTP JSON endpoint; subclasses only translate the protocol.

    The session is created on first use so that it belongs to the event loop that runs the
    generations, and its connection pool is sized from the config the runner actually
    passes. A model must be used from a single event loop and closed with :meth:`aclose`
    when done; a generation after ``aclose`` opens a new session.
    """

    def __init__(
        self, name: str, url: str, headers: dict[str, str], extra_fields: dict[str, Any]
    ) -> None:
        self.name = name
        self.url = url
        self.headers = headers
        self.extra_fields = extra_fields
        """Fields from ``-M`` added to every request body."""
        self.proxy = proxy_for(url)
        self._session: aiohttp.ClientSession | None = None

    @abstractmethod
    def payload(self, request: Request, config: GenerateConfig) -> dict[str, Any]:
        """The request body for one generation, before ``extra_fields`` are added."""

    @abstractmethod
    def parse(self, body: Any) -> Generation:
        """A generation from a 200 response body; raises one of ``MALFORMED`` if unusable."""

    def _session_for(self, config: GenerateConfig) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=config.max_connections)
            self._session = aiohttp.ClientSession(connector=connector)
        return self._session

    async def generate(self, request: Request, config: GenerateConfig) -> Generation:
        """Generate one answer; request failures come back as ``Generation.error``.

        A failed sample is data for the report, not a reason to abort the run, hence no
        exception; the exception is :class:`OutOfQuota`, which no sample can get past.
        Latency spans all attempts, back-off included, because that is what the run
        actually waited.
        """
        session = self._session_for(config)
        payload = {**self.payload(request, config), **self.extra_fields}
        start = time.perf_counter()
        try:
            generation, attempts = await post_json(
                session, self.url, payload, self.headers, config, self.parse, self.proxy
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
        if self._session is not None:
            await self._session.close()
            self._session = None
