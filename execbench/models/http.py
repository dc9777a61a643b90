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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import aiohttp

from execbench.models.base import (
    GenerateConfig,
    Generation,
    ModelBase,
    ModelError,
    Request,
    Unreachable,
)

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
    """No usable response was obtained; ``attempts`` says how many requests were sent and
    ``endpoint`` where the last one went."""

    def __init__(self, message: str, attempts: int, endpoint: Endpoint) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.endpoint = endpoint


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


BENCH_AFTER = 3
"""Failed attempts in a row after which an endpoint is benched, when there is another."""

BENCH_SECONDS = 2.0
"""How long a failing endpoint is first left out; doubled each time it fails again on its
return, up to ``MAX_DELAY``."""

PROBE_TIMEOUT = 10.0
"""Seconds the health probe waits for a server to answer before calling it unreachable."""


@dataclass(eq=False)
class Endpoint:
    """One server a model's requests can go to, and how it has been doing lately."""

    base_url: str
    """As the user gave it: what sample records name."""
    url: str
    """Where requests are posted."""
    proxy: str | None
    in_flight: int = 0
    failures: int = 0
    """Attempts in a row that found the server failing (no connection, a timeout, a 5xx, a
    malformed body); a reply from a working server resets it."""
    unreached: int = 0
    """Attempts in a row that could not connect; any attempt that connects resets it."""
    benched_until: float = 0.0
    bench: float = 0.0
    """The length of the current (or last) bench; 0 once the endpoint answers again."""
    last_failure: str = ""


class Endpoints:
    """The servers one model's requests go to (``--model-base-url`` may list several
    replicas of one model), the routing between them and the circuit breaker.

    Each attempt goes to the endpoint with the fewest requests in flight, so a fast replica
    takes more of the work than a slow one. An endpoint that fails ``BENCH_AFTER`` attempts
    in a row is benched: left out while any other endpoint is not, then tried again with one
    request (a dead server refuses at once, so least-in-flight would otherwise send it the
    most). The breaker trips when every endpoint has failed to connect
    ``max_connection_failures`` times in a row: then no server is there to answer, and each
    sample backing off on its own would take minutes to end in a table of errors.
    """

    def __init__(self, base_urls: Sequence[str], path: str) -> None:
        self.all = [Endpoint(base, f"{base.rstrip('/')}{path}", proxy_for(base))
                    for base in base_urls]

    def pick(self) -> Endpoint:
        """The endpoint for the next attempt, counted as in flight until :meth:`done`."""
        if len(self.all) == 1:
            endpoint = self.all[0]
        else:
            now = time.monotonic()
            ready = [e for e in self.all if e.benched_until <= now]
            endpoint = (min(ready, key=lambda e: e.in_flight) if ready
                        else min(self.all, key=lambda e: e.benched_until))
        endpoint.in_flight += 1
        return endpoint

    def done(self, endpoint: Endpoint, *, healthy: bool, connected: bool,
             failure: str = "") -> None:
        """Record how an attempt ended: ``healthy`` (the server answered as a working server
        does, an answer or a complaint about the request), ``connected`` (it reached a
        server at all), and, for a failure, why, in one line."""
        endpoint.in_flight -= 1
        if connected:
            endpoint.unreached = 0
        if healthy:
            endpoint.failures = 0
            endpoint.bench = 0.0
            return
        endpoint.failures += 1
        endpoint.last_failure = failure
        if not connected:
            endpoint.unreached += 1
        if endpoint.failures >= BENCH_AFTER:
            self._bench(endpoint)

    def _bench(self, endpoint: Endpoint) -> None:
        """Leave ``endpoint`` out for a while, if another can take its requests. Failures of
        attempts sent before the bench began do not lengthen it."""
        now = time.monotonic()
        if len(self.all) > 1 and now >= endpoint.benched_until:
            endpoint.bench = min(MAX_DELAY, 2 * endpoint.bench or BENCH_SECONDS)
            endpoint.benched_until = now + endpoint.bench

    def elsewhere(self, endpoint: Endpoint) -> bool:
        """Whether another endpoint than ``endpoint`` is ready to take a request now."""
        now = time.monotonic()
        return any(e is not endpoint and e.benched_until <= now for e in self.all)

    def check_breaker(self, limit: int) -> None:
        """Raise :class:`Unreachable` once no endpoint has connected for ``limit`` attempts."""
        if all(endpoint.unreached >= limit for endpoint in self.all):
            raise Unreachable(
                f"no model server answers: {limit} requests in a row could not connect to "
                f"{self.describe()}; the samples logged so far are kept: once the server "
                "is up, run the same command again to resume")

    def describe(self) -> str:
        """Each endpoint with its last failure, for one line of an error message."""
        return "; ".join(f"{e.base_url} ({e.last_failure})" if e.last_failure else e.base_url
                         for e in self.all)

    async def probe(self, session: aiohttp.ClientSession, path: str,
                    headers: dict[str, str], limit: int) -> None:
        """Check every endpoint answers HTTP at all before the first request is sent.

        Any reply counts, even an error status (authentication and the request itself are
        the requests' business); only a server that cannot be reached does not. A dead
        endpoint among live ones is benched as if it had failed ``limit`` times; with none
        alive, :class:`Unreachable` is raised, before anything is logged.
        """

        async def reach(endpoint: Endpoint) -> str | None:
            timeout = aiohttp.ClientTimeout(total=PROBE_TIMEOUT)
            url = f"{endpoint.base_url.rstrip('/')}{path}"
            try:
                async with session.get(url, headers=headers, timeout=timeout,
                                       allow_redirects=False, proxy=endpoint.proxy):
                    return None
            except TimeoutError:
                return f"no reply in {PROBE_TIMEOUT:g} s"
            except aiohttp.ClientError as exc:
                return _one_line(f"{type(exc).__name__} {exc}")

        failures = await asyncio.gather(*(reach(e) for e in self.all))
        for endpoint, failure in zip(self.all, failures, strict=True):
            if failure is not None:
                endpoint.failures, endpoint.unreached = BENCH_AFTER, limit
                endpoint.last_failure = failure
                self._bench(endpoint)
        if all(failure is not None for failure in failures):
            raise Unreachable(f"cannot reach the model server: {self.describe()}; check "
                              "--model-base-url and that the server is running")


async def post_json(
    session: aiohttp.ClientSession,
    endpoints: Endpoints,
    payload: dict[str, Any],
    headers: dict[str, str],
    config: GenerateConfig,
    parse: Callable[[Any], T],
) -> tuple[T, int, Endpoint]:
    """POST ``payload`` and return ``(parse(response JSON), attempts, endpoint)``.

    Each attempt goes to the endpoint :meth:`Endpoints.pick` chooses, so a retry may go to
    another replica. ``parse`` extracts what the caller needs and raises one of
    ``MALFORMED`` when fields are missing: a 200 with a truncated or incomplete body is
    treated like a server error and retried, since it is usually a proxy or server hiccup.
    At most ``config.max_retries`` retries are made; 4xx statuses other than 408/429 mean
    the request itself is wrong and fail at once. Raises :class:`RequestFailed` describing
    the last failure, :class:`OutOfQuota` at the first out-of-quota reply, or
    :class:`Unreachable` when the circuit breaker trips.
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
        connected, healthy = True, False
        endpoint = endpoints.pick()
        try:
            async with session.post(
                endpoint.url, data=data, headers=headers, timeout=timeout,
                allow_redirects=False, proxy=endpoint.proxy,
            ) as response:
                status, body = response.status, await response.read()
                reply_headers = response.headers
        except TimeoutError as exc:
            connected = not isinstance(exc, aiohttp.ConnectionTimeoutError)
            phase = "ReadTimeout" if connected else "ConnectTimeout"
            summary, detail = "timed out", f"{phase} (limit {config.timeout:g} s)"
            retryable = True
        except RETRYABLE_TRANSPORT as exc:
            summary, detail = "connection error", f"{type(exc).__name__} {exc}"
            connected, retryable = False, True
        except aiohttp.ClientError as exc:
            summary, detail = "request error", f"{type(exc).__name__} {exc}"
            retryable = False
        else:
            if 200 <= status < 300:
                try:
                    result = parse(json.loads(body))
                except MALFORMED as exc:
                    summary = f"malformed response ({type(exc).__name__} {exc})"
                    detail, retryable = body.decode("utf-8", "replace"), True
                else:
                    endpoints.done(endpoint, healthy=True, connected=True)
                    return result, attempts, endpoint
            else:
                text = body.decode("utf-8", "replace")
                quota = _quota_message(status, text)
                if quota is not None:
                    endpoints.done(endpoint, healthy=True, connected=True)
                    raise OutOfQuota(
                        f"the API refused {endpoint.url} as out of quota (HTTP 429 "
                        f"{OUT_OF_QUOTA}: {_one_line(quota)}); add credit or use another key, "
                        "then run the same command again to resume"
                    )
                summary, detail = f"HTTP {status}", text
                # A 4xx is about the request (or the account), not the server's health.
                healthy = status < 500
                retryable = status >= 500 or status in RETRY_STATUSES
                wait = retry_after(reply_headers)
        endpoints.done(endpoint, healthy=healthy, connected=connected,
                       failure=f"{summary}: {_one_line(detail)}")
        endpoints.check_breaker(config.max_connection_failures)
        if not retryable or attempts > config.max_retries:
            noun = "attempt" if attempts == 1 else "attempts"
            raise RequestFailed(
                f"{summary} after {attempts} {noun}: {_one_line(detail)}", attempts, endpoint
            )
        # A replica that cannot be reached says nothing about the others: go there at once.
        if connected or not endpoints.elsewhere(endpoint):
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
    model_args: Mapping[str, str],
    reserved: Mapping[str, str],
    provider: str,
    documented: frozenset[str] | None = None,
) -> dict[str, Any]:
    """``-M key=value`` pairs as extra request fields.

    A value is read as JSON when it is JSON (``-M chat_template_kwargs={"enable_thinking":
    false}``, ``-M top_k=20``) and kept as text otherwise (``-M reasoning_effort=high``), so
    the common cases need no quoting. ``reserved`` maps the fields the provider fills itself
    to what sets them instead: a second way to set, say, the temperature would leave the run
    record saying one thing and the request another. ``documented``, for an API that
    publishes its request fields, is that list: a misspelt field is refused here rather than
    by every request (or, worse, ignored by the API); None for servers that extend the API
    with fields of their own (vLLM's ``top_k``, ``min_p``, ``chat_template_kwargs``).
    """
    taken = sorted(key for key in model_args if key in reserved)
    if taken:
        ways = "; ".join(f"{key}: {reserved[key]}" for key in taken)
        raise ModelError(f"{provider} sets these request fields itself, not with -M: {ways}")
    unknown = sorted(set(model_args) - documented) if documented is not None else []
    if unknown:
        known = ", ".join(sorted(documented - set(reserved)))
        raise ModelError(f"{provider} has no documented request field {', '.join(unknown)}; "
                         f"-M takes {known}")
    fields: dict[str, Any] = {}
    for key, value in model_args.items():
        try:
            fields[key] = json.loads(value)
        except ValueError:
            fields[key] = value
    return fields


class HttpModel(ModelBase, ABC):
    """A model behind an HTTP JSON endpoint, or several replicas of one; subclasses only
    translate the protocol.

    The session is created on first use so that it belongs to the event loop that runs the
    generations, and its connection pool is sized from the config the runner actually
    passes. A model must be used from a single event loop and closed with :meth:`aclose`
    when done; a generation after ``aclose`` opens a new session.
    """

    path: str
    """Where requests go, under each base URL."""
    probe_path: str
    """What the health probe asks for, under each base URL: the model list, which every
    server of the protocol serves, cheaply."""

    def __init__(
        self,
        name: str,
        base_urls: str | Sequence[str],
        headers: dict[str, str],
        extra_fields: dict[str, Any],
    ) -> None:
        self.name = name
        self.endpoints = Endpoints([base_urls] if isinstance(base_urls, str) else base_urls,
                                   self.path)
        self.headers = headers
        self.extra_fields = extra_fields
        """Fields from ``-M`` added to every request body."""
        self._session: aiohttp.ClientSession | None = None

    @property
    def urls(self) -> list[str]:
        """Where requests are posted, one URL per endpoint."""
        return [endpoint.url for endpoint in self.endpoints.all]

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

    async def start(self, config: GenerateConfig, run_dir: Path) -> None:
        """Probe the endpoints, so that a dead server ends the run before it begins."""
        await self.endpoints.probe(self._session_for(config), self.probe_path, self.headers,
                                   config.max_connection_failures)

    async def generate(self, request: Request, config: GenerateConfig) -> Generation:
        """Generate one answer; request failures come back as ``Generation.error``.

        A failed sample is data for the report, not a reason to abort the run, hence no
        exception; the exceptions are :class:`OutOfQuota` and :class:`Unreachable`, which no
        sample can get past. Latency spans all attempts, back-off included, because that is
        what the run actually waited.
        """
        session = self._session_for(config)
        payload = {**self.payload(request, config), **self.extra_fields}
        start = time.perf_counter()
        try:
            generation, attempts, endpoint = await post_json(
                session, self.endpoints, payload, self.headers, config, self.parse
            )
        except RequestFailed as exc:
            return Generation(
                text=None,
                error=str(exc),
                attempts=exc.attempts,
                latency=time.perf_counter() - start,
                endpoint=exc.endpoint.base_url,
            )
        generation.attempts = attempts
        generation.latency = time.perf_counter() - start
        generation.endpoint = endpoint.base_url
        return generation

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
