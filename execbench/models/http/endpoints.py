"""The servers one model's requests go to: routing, benching, the circuit breaker, the health
probe, and the proxy each is reached through.

The methods that depend on the time take it as ``now`` (seconds on the model's monotonic
clock), so the routing can be checked without waiting.
"""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp

from execbench.models.base import Unreachable
from execbench.models.http.timing import MAX_DELAY, Clock

BENCH_AFTER = 3
"""Failed attempts in a row after which an endpoint is benched, when there is another."""

BENCH_SECONDS = 2.0
"""How long a failing endpoint is first left out; doubled each time it fails again on its
return, up to ``MAX_DELAY``."""

PROBE_TIMEOUT = 10.0
"""Seconds the health probe waits for a server to answer before calling it unreachable."""

DETAIL_CHARS = 200

LISTING_BYTES = 4 * 1024 * 1024
"""The most of a model list the probe reads (OpenAI's lists a few hundred models)."""


def one_line(text: str) -> str:
    """Collapse whitespace and shorten, so a failure fits one line of a results file."""
    return " ".join(text.split())[:DETAIL_CHARS]


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

    def pick(self, now: float) -> Endpoint:
        """The endpoint for the next attempt, counted as in flight until :meth:`done`."""
        if len(self.all) == 1:
            endpoint = self.all[0]
        else:
            ready = [e for e in self.all if e.benched_until <= now]
            endpoint = (min(ready, key=lambda e: e.in_flight) if ready
                        else min(self.all, key=lambda e: e.benched_until))
        endpoint.in_flight += 1
        return endpoint

    def done(self, endpoint: Endpoint, now: float, *, healthy: bool, connected: bool,
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
            self._bench(endpoint, now)

    def _bench(self, endpoint: Endpoint, now: float) -> None:
        """Leave ``endpoint`` out for a while, if another can take its requests. Failures of
        attempts sent before the bench began do not lengthen it."""
        if len(self.all) > 1 and now >= endpoint.benched_until:
            endpoint.bench = min(MAX_DELAY, 2 * endpoint.bench or BENCH_SECONDS)
            endpoint.benched_until = now + endpoint.bench

    def elsewhere(self, endpoint: Endpoint, now: float) -> bool:
        """Whether another endpoint than ``endpoint`` is ready to take a request now."""
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
                    headers: dict[str, str], limit: int, clock: Clock) -> Listing | None:
        """Check every endpoint answers HTTP at all before the first request is sent, and
        return the first answer (the model list the probe asks for), None if none came.

        Any reply counts as alive, even an error status (what it says is the caller's
        business); only a server that cannot be reached does not. A dead endpoint among
        live ones is benched as if it had failed ``limit`` times; with none alive,
        :class:`Unreachable` is raised, before anything is logged.
        """
        outcomes = await asyncio.gather(*(_reach(session, e, path, headers) for e in self.all))
        now = clock.monotonic()
        for endpoint, outcome in zip(self.all, outcomes, strict=True):
            if isinstance(outcome, str):
                endpoint.failures, endpoint.unreached = BENCH_AFTER, limit
                endpoint.last_failure = outcome
                self._bench(endpoint, now)
        if all(isinstance(outcome, str) for outcome in outcomes):
            raise Unreachable(f"cannot reach the model server: {self.describe()}; check "
                              "--model-base-url and that the server is running")
        return next(outcome for outcome in outcomes if not isinstance(outcome, str))


@dataclass(frozen=True)
class Listing:
    """What a server answered the probe (its model list, if it keeps one)."""

    url: str
    status: int
    body: str


async def _reach(session: aiohttp.ClientSession, endpoint: Endpoint, path: str,
                 headers: dict[str, str]) -> Listing | str:
    """What ``endpoint`` answers at ``path``, or why it cannot be reached, in one line."""
    timeout = aiohttp.ClientTimeout(total=PROBE_TIMEOUT)
    url = f"{endpoint.base_url.rstrip('/')}{path}"
    try:
        async with session.get(url, headers=headers, timeout=timeout,
                               allow_redirects=False, proxy=endpoint.proxy) as response:
            body = await response.content.read(LISTING_BYTES)
            return Listing(url, response.status, body.decode("utf-8", "replace"))
    except TimeoutError:
        return f"no reply in {PROBE_TIMEOUT:g} s"
    except aiohttp.ClientError as exc:
        return one_line(f"{type(exc).__name__} {exc}")


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
