"""The HTTP model: what every HTTP provider shares, the protocol left to subclasses.

Benchmark runs send thousands of requests, so transient failures (rate limits, overloaded
servers, dropped connections, truncated bodies) are expected and must not cost a sample.
Everything that is worth retrying is retried in one place (:mod:`.retry`), so that every
provider behaves the same way and the number of attempts can be reported with each
generation.

The client is aiohttp: against a local server answering in 50 ms, httpx topped out near
100 requests/s whatever the number of connections, ten times below what the server could
serve, while aiohttp keeps up (``bench/generation_engine.py`` measures both ends).
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp

from execbench.jsonfiles import utf8
from execbench.models.base import GenerateConfig, Generation, ModelBase, ModelError, Request
from execbench.models.http.endpoints import Endpoints
from execbench.models.http.replies import Reader, json_reader
from execbench.models.http.retry import RequestFailed, post
from execbench.models.http.sse import Assembly, stream_reader
from execbench.models.http.systematic import FirstFailures, check_listing
from execbench.models.http.timing import SYSTEM_CLOCK, Clock


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
    if unknown and documented is not None:
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
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.name = name
        self.clock = clock
        """Where back-off waits and deadlines are read; tests pass one that records them."""
        self.endpoints = Endpoints([base_urls] if isinstance(base_urls, str) else base_urls,
                                   self.path)
        self.headers = headers
        self._post_headers = {**headers, "content-type": "application/json"}
        self.stream = _stream_choice(extra_fields.pop("stream", None), name)
        """``-M stream``: True or False as the user chose, None to follow the provider."""
        self.extra_fields = extra_fields
        """Fields from ``-M`` added to every request body."""
        self._session: aiohttp.ClientSession | None = None
        self.watch: FirstFailures | None = None
        """The run's first failures (made by :meth:`start`): a run whose every request
        fails the same way is stopped early."""
        self._whole = json_reader(self.parse)
        self._streamed: dict[int | None, Reader[Generation]] = {}
        """A stream reader per ``max_tokens`` (one per run), which bounds the reply."""

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

    @abstractmethod
    def served_name(self) -> str:
        """The model as requests name it, looked for in the server's model list."""

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

    def _stream_reader(self, config: GenerateConfig) -> Reader[Generation]:
        tokens = self.max_tokens(config)
        reader = self._streamed.get(tokens)
        if reader is None:
            reader = self._streamed[tokens] = stream_reader(self.assembly, self.parse, tokens)
        return reader

    def _session_for(self, config: GenerateConfig) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=config.max_connections)
            self._session = aiohttp.ClientSession(connector=connector)
        return self._session

    async def start(self, config: GenerateConfig, run_dir: Path) -> None:
        """Probe the endpoints, so that a dead server, a refused key or a model the server
        does not serve ends the run before it begins (``check_listing``)."""
        listing = await self.endpoints.probe(self._session_for(config), self.probe_path,
                                             self.headers, config.max_connection_failures,
                                             self.clock)
        listed = () if listing is None else check_listing(listing, self.served_name())
        self.watch = FirstFailures(config.max_connections,
                                   () if self.served_name() in listed else listed)

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
        data = utf8(json.dumps(payload, ensure_ascii=False, separators=(",", ":")))
        start = time.perf_counter()
        try:
            generation, attempts, endpoint = await post(
                session, self.endpoints, data, self._post_headers, config,
                self._stream_reader(config) if streamed else self._whole,
                self.attempt_timeout(config, streamed), self.clock, self.watch)
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

    async def ask(self, method: str, path: str, body: dict[str, Any] | None = None, *,
                  root: bool = False, timeout: float = DEFAULT_TIMEOUT) -> tuple[int, Any]:
        """One request beside the generations (the model list, the server's properties, its
        tokenizer) to the first endpoint the probe did not bench: its status and its JSON
        body (None when it is not JSON). ``root``: ``path`` is under the server's root, the
        base URL without its ``/v1`` (where vLLM and llama.cpp serve ``/tokenize``).

        Not retried and not watched by the circuit breaker: what it asks for is optional,
        and a server that does not answer it is taken not to have it. Raises
        ``aiohttp.ClientError`` or ``TimeoutError`` when the server cannot be reached.
        """
        endpoint = next((e for e in self.endpoints.all if not e.benched_until),
                        self.endpoints.all[0])
        base = endpoint.base_url.rstrip("/")
        if root and base.endswith("/v1"):
            base = base[:-len("/v1")]
        session = self._session_for(GenerateConfig())
        headers = self._post_headers if body is not None else self.headers
        async with session.request(method, base + path, json=body, headers=headers,
                                   proxy=endpoint.proxy, allow_redirects=False,
                                   timeout=aiohttp.ClientTimeout(total=timeout)) as reply:
            text = await reply.text(errors="replace")
            try:
                return reply.status, json.loads(text)
            except ValueError:
                return reply.status, None


def _stream_choice(value: Any, provider: str) -> bool | None:
    """``-M stream=true|false`` as a bool (None when not given)."""
    if value is None or isinstance(value, bool):
        return value
    raise ModelError(f"{provider}: -M stream takes true or false, not {value!r}")
