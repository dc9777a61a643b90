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
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
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


class MalformedReply(Exception):
    """A 2xx reply that cannot be used: a body that is not JSON or has the wrong shape, a
    stream that ends before its last event or carries an error event. Usually a proxy or
    server hiccup, so worth another attempt; ``body`` is what came, for the error record."""

    def __init__(self, reason: str, body: str) -> None:
        super().__init__(reason)
        self.body = body


Reader = Callable[[aiohttp.ClientResponse, float | None], Awaitable[T]]
"""Turns a 2xx response into the caller's result, raising :class:`MalformedReply` when the
reply is unusable (and aiohttp's errors when the connection fails while it reads). The
second argument is the sample's deadline on the ``time.monotonic`` clock (None: none),
which a stream, whose length no read timeout bounds, is cut at with TimeoutError."""


def json_reader(parse: Callable[[Any], T]) -> Reader[T]:
    """Read the whole body as JSON and ``parse`` it (which raises one of ``MALFORMED`` on
    missing fields)."""

    async def read(response: aiohttp.ClientResponse, deadline: float | None) -> T:
        body = await response.read()
        try:
            return parse(json.loads(body))
        except MALFORMED as exc:
            raise MalformedReply(f"{type(exc).__name__} {exc}",
                                 body.decode("utf-8", "replace")) from None

    return read


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
    name, data = "", []
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

    async def read(response: aiohttp.ClientResponse, deadline: float | None) -> T:
        if response.content_type == "application/json":
            return await whole(response, deadline)
        built = assembly()
        last = ""
        try:
            async for event, data in server_sent_events(response):
                if deadline is not None and time.monotonic() >= deadline:
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


async def post(
    session: aiohttp.ClientSession,
    endpoints: Endpoints,
    data: bytes,
    headers: dict[str, str],
    config: GenerateConfig,
    read: Reader[T],
    attempt_timeout: float,
) -> tuple[T, int, Endpoint]:
    """POST ``data`` (JSON) and return ``(read(response), attempts, endpoint)``.

    Each attempt goes to the endpoint :meth:`Endpoints.pick` chooses, so a retry may go to
    another replica. A 2xx reply that ``read`` finds unusable is treated like a server
    error and retried. At most ``config.max_retries`` retries are made, and none starts
    after ``config.sample_deadline``; 4xx statuses other than 408/429 mean the request
    itself is wrong and fail at once. Raises :class:`RequestFailed` describing the last
    failure, :class:`OutOfQuota` at the first out-of-quota reply, or :class:`Unreachable`
    when the circuit breaker trips.

    ``attempt_timeout`` bounds each wait for data, not the whole reply (like httpx's read
    timeout): for a streamed reply the gap between events, for a whole one the time the
    server takes to send it. Waiting for a free pooled connection is not the server being
    slow, so it is not bounded by it; otherwise a deep queue would turn into timeouts. No
    attempt or back-off starts after the sample's deadline, and a stream is cut at it; a
    whole reply under way is bounded by ``attempt_timeout`` alone (an aiohttp ``total``
    timeout would add a timer to every request, a tenth of the client's time per request
    at hundreds of connections).
    """
    deadline = (None if config.sample_deadline is None
                else time.monotonic() + config.sample_deadline)
    attempts = 0
    while True:
        attempts += 1
        wait: float | None = None
        connected, healthy = True, False
        endpoint = endpoints.pick()
        try:
            async with session.post(
                endpoint.url, data=data, headers=headers,
                timeout=_timeout(attempt_timeout), allow_redirects=False,
                proxy=endpoint.proxy,
            ) as response:
                status = response.status
                if 200 <= status < 300:
                    result = await read(response, deadline)
                    endpoints.done(endpoint, healthy=True, connected=True)
                    return result, attempts, endpoint
                body = await response.read()
                reply_headers = response.headers
        except MalformedReply as exc:
            summary, detail = f"malformed response ({exc})", exc.body
            retryable = True
        except TimeoutError as exc:
            connected = not isinstance(exc, aiohttp.ConnectionTimeoutError)
            if deadline is not None and time.monotonic() >= deadline:
                summary = "deadline passed"
                detail = f"no answer within --sample-deadline {config.sample_deadline:g} s"
            else:
                phase = "ReadTimeout" if connected else "ConnectTimeout"
                summary, detail = "timed out", f"{phase} (limit {attempt_timeout:g} s)"
            retryable = True
        except RETRYABLE_TRANSPORT as exc:
            summary, detail = "connection error", f"{type(exc).__name__} {exc}"
            connected, retryable = False, True
        except aiohttp.ClientError as exc:
            summary, detail = "request error", f"{type(exc).__name__} {exc}"
            retryable = False
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
        delay = retry_delay(attempts, config, wait)
        # A replica that cannot be reached says nothing about the others: go there at once.
        if not connected and endpoints.elsewhere(endpoint):
            delay = 0.0
        late = deadline is not None and time.monotonic() + delay >= deadline
        if not retryable or attempts > config.max_retries or late:
            noun = "attempt" if attempts == 1 else "attempts"
            raise RequestFailed(
                f"{summary} after {attempts} {noun}: {_one_line(detail)}", attempts, endpoint
            )
        if delay:
            await asyncio.sleep(delay)


_TIMEOUTS: dict[float, aiohttp.ClientTimeout] = {}


def _timeout(attempt: float) -> aiohttp.ClientTimeout:
    """The aiohttp timeout of one attempt, ``attempt`` on connecting and on each read; made
    once per limit, not once per request."""
    made = _TIMEOUTS.get(attempt)
    if made is None:
        made = _TIMEOUTS[attempt] = aiohttp.ClientTimeout(
            total=None, connect=None, sock_connect=attempt, sock_read=attempt)
    return made


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


STREAM_ABOVE = 21_333
"""The largest ``max_tokens`` sent without streaming (when the provider streams long
replies). Anthropic's SDK refuses a non-streaming request that may take over ten
minutes, reckoning an hour for 128,000 tokens (``_calculate_nonstreaming_timeout``), which
puts the line here; a reply that long gives no sign of life for minutes, so intermediaries
cut such connections, and a stream shows progress with every event."""

TOKENS_PER_SECOND = 128_000 / 3600
"""The generation speed that reckoning assumes, which sizes a non-streamed attempt's
timeout from its ``max_tokens``."""

DEFAULT_TIMEOUT = 120.0
"""Seconds an attempt may wait for data, by default: for a short reply or between the
events of a stream."""

LONG_TIMEOUT = 600.0
"""Seconds an attempt may wait for data from a reasoning model, or for a long non-streamed
reply: both SDKs' default timeout (ten minutes). A reasoning model may think for minutes
before it sends anything, and OpenAI's stream nothing while they think."""

class HttpModel(ModelBase, ABC):
    """A model behind an HTTP JSON endpoint, or several replicas of one; subclasses only
    translate the protocol.

    The session is created on first use so that it belongs to the event loop that runs the
    generations, and its connection pool is sized from the config the runner actually
    passes. A model must be used from a single event loop and closed with :meth:`aclose`
    when done; a generation after ``aclose`` opens a new session.

    Replies are streamed when ``-M stream=true`` says so, or, unless ``-M stream=false``
    says not, when the provider streams long replies (:attr:`auto_stream`) and
    ``max_tokens`` exceeds :meth:`stream_above`. Streamed or not, a sample is recorded the
    same way: the stream is assembled into the non-streamed reply's shape and parsed by the
    same :meth:`parse`.
    """

    path: str
    """Where requests go, under each base URL."""
    probe_path: str
    """What the health probe asks for, under each base URL: the model list, which every
    server of the protocol serves, cheaply."""
    auto_stream: bool = True
    """Whether replies whose ``max_tokens`` exceeds :meth:`stream_above` are streamed
    without being asked."""

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
        self._post_headers = {**headers, "content-type": "application/json"}
        self.stream = _stream_choice(extra_fields.pop("stream", None), name)
        """``-M stream``: True or False as the user chose, None to follow the provider."""
        self.extra_fields = extra_fields
        """Fields from ``-M`` added to every request body."""
        self._session: aiohttp.ClientSession | None = None
        self._whole = json_reader(self.parse)
        self._streamed = stream_reader(self.assembly, self.parse)

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

    @abstractmethod
    def stream_fields(self) -> dict[str, Any]:
        """What a request body adds to be streamed."""

    @abstractmethod
    def assembly(self) -> Assembly:
        """A fresh assembly of one streamed reply."""

    def max_tokens(self, config: GenerateConfig) -> int | None:
        """The token limit requests carry (None: the server's own)."""
        return config.max_tokens

    def stream_above(self) -> int:
        """The largest ``max_tokens`` sent without streaming."""
        return STREAM_ABOVE

    def reasons(self) -> bool:
        """Whether the model thinks before it answers (so may be silent for minutes)."""
        return False

    def streams(self, config: GenerateConfig) -> bool:
        """Whether this run's requests ask for a streamed reply."""
        if self.stream is not None:
            return self.stream
        tokens = self.max_tokens(config)
        return self.auto_stream and tokens is not None and tokens > self.stream_above()

    def attempt_timeout(self, config: GenerateConfig, streamed: bool) -> float:
        """Seconds an attempt may wait for data: ``--timeout`` when given; else
        ``LONG_TIMEOUT`` for a reasoning model, ``DEFAULT_TIMEOUT`` between the events of
        a stream, and for a whole reply the time ``max_tokens`` take at
        ``TOKENS_PER_SECOND``, within those two."""
        if config.timeout is not None:
            return config.timeout
        if self.reasons():
            return LONG_TIMEOUT
        tokens = self.max_tokens(config)
        if streamed or tokens is None:
            return DEFAULT_TIMEOUT
        return min(LONG_TIMEOUT, max(DEFAULT_TIMEOUT, tokens / TOKENS_PER_SECOND))

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
        payload = self.payload(request, config)
        payload.update(self.extra_fields)
        streamed = self.streams(config)
        if streamed:
            payload.update(self.stream_fields())
        data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
        start = time.perf_counter()
        try:
            generation, attempts, endpoint = await post(
                session, self.endpoints, data, self._post_headers, config,
                self._streamed if streamed else self._whole,
                self.attempt_timeout(config, streamed))
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


def _stream_choice(value: Any, provider: str) -> bool | None:
    """``-M stream=true|false`` as a bool (None when not given)."""
    if value is None or isinstance(value, bool):
        return value
    raise ModelError(f"{provider}: -M stream takes true or false, not {value!r}")
