"""``execbench serve-rewards``: the rewards of ``execbench.rewards`` over HTTP.

``POST /get_reward`` (or ``/``) takes a batch in either of two forms and answers with one
reward per item, in order:

* OpenRLHF's remote reward model: ``{"query": [...], "prompts": [...], "labels": [...]}``,
  each query being its prompt followed by the response, each label an exported row's
  ``ground_truth``;
* execbench's own: ``{"responses": [...], "ground_truths": [...]}``.

The reply is ``{"rewards": [...], "scores": [...], "extra_logs": {"correct": [...],
"parsed": [...]}, "verdicts": [...]}`` (``rewards`` and ``scores`` are the same numbers:
OpenRLHF reads one or the other). Every refusal is JSON, ``{"error": "..."}`` saying why
in one line, and the server goes on: 400 for a batch that cannot be scored as a whole (not
JSON, lists of different lengths, a label that is no exported ground truth or names limits
the server was not started with, more items or a longer answer than the caps, more lists
and objects than a batch needs), 401 without the token, 408 for a body that does not keep
flowing, 413 for a body past the cap, 415 for a compressed one, 429 or 503 while too many
batches wait.
``GET /health`` answers ``{"status": "ok"}`` to anyone, and nothing more.

Every client is a caller a model's rows pass through, so nothing of a request decides what
the host spends: the sandbox limits come from the closed set the rewarder was made with
(``Rewarder(limits=...)``), bodies, batches and answers have caps (``ServeOptions``), and
scoring runs in a few threads of the server's own (``Turns``), lent a chunk of a batch at
a time and in turn among clients (by network, ``client_of``: every loopback address is
one client), so one client's batches, however many or large, hold at most half of them
while another's wait. A body must keep flowing to hold its place, and a connection without
a whole request is closed after ``header_seconds``. The event loop only reads, checks and
answers, so ``/health`` and refusals are served while batches score.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import ipaddress
import json
import re
import resource
import threading
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from aiohttp import web

from execbench.rewards import Reward, Rewarder, RewardError, Truth, completion_text

T = TypeVar("T")
TOKEN_VARIABLE = "EXECBENCH_REWARD_TOKEN"
"""The environment variable ``serve-rewards`` reads its token from (safer than
``--token``, which other users of the host can read in the process list)."""
MIN_TOKEN_CHARS = 16
"""A shorter token is refused: it could be guessed by trying."""


@dataclass(frozen=True)
class ServeOptions:
    """What the service lets a request spend, and the token it asks for."""

    token: str | None = None
    """Required as ``Authorization: Bearer TOKEN`` on every route but ``/health``; without
    one the service listens on loopback addresses only."""
    max_body_bytes: int = 32 * 1024 * 1024
    """The largest request body read: a batch of a few thousand long truths fits."""
    body_seconds: float = 60.0
    """Seconds a client has to send its body once admitted: a client that sends slowly
    holds an admitted place no longer than this (408)."""
    body_grace_seconds: float = 1.0
    """Seconds a body may take to start flowing; after them it must keep up ``min_body_rate``."""
    min_body_rate: int = 64 * 1024
    """Bytes per second a body must average after its grace (408 otherwise): a client holds
    an admitted place by sending, not by waiting. Any trainer sends far faster."""
    header_seconds: float = 10.0
    """Seconds a connection may stay open without a whole request (its headers unfinished,
    or idle between requests) before it is closed: open sockets are not a place to hold."""
    max_items: int = 4096
    """Responses in one batch."""
    max_answer_chars: int = 1_000_000
    """Characters in one response (far past any generation length a trainer sets)."""
    chunk_items: int = 128
    """Rows scored per turn of a thread: a large batch takes many turns, and another
    client's batch gets the next free thread. (Chunks of 64 scored input rows 7-13%
    slower over HTTP, each chunk ending on its slowest row; 128 and up as fast as whole
    batches.)"""
    threads: int = 4
    """Threads that read and score batches."""
    threads_per_client: int = 2
    """Threads one client holds at once; the rest stay free for the others."""
    max_pending: int = 32
    """Batches being read, waiting or scoring, all clients together (each holds up to
    ``max_body_bytes``); past it a request gets 503 and Retry-After."""
    pending_per_client: int = 16
    """The same for one client; past it, 429."""

    def check(self) -> None:
        """``ValueError`` for options the service cannot run with."""
        if self.token is not None and len(self.token) < MIN_TOKEN_CHARS:
            raise ValueError(f"the token must be at least {MIN_TOKEN_CHARS} characters "
                             "(e.g. `openssl rand -hex 16`)")
        counts = {"max_body_bytes": self.max_body_bytes, "max_items": self.max_items,
                  "max_answer_chars": self.max_answer_chars, "chunk_items": self.chunk_items,
                  "threads": self.threads, "threads_per_client": self.threads_per_client,
                  "max_pending": self.max_pending,
                  "pending_per_client": self.pending_per_client}
        for name, value in counts.items():
            if value < 1:
                raise ValueError(f"{name} must be at least 1, not {value}")
        for name, seconds in (("body_seconds", self.body_seconds),
                              ("body_grace_seconds", self.body_grace_seconds),
                              ("header_seconds", self.header_seconds),
                              ("min_body_rate", self.min_body_rate)):
            if not seconds > 0:
                raise ValueError(f"{name} must be positive, not {seconds}")


def check_exposure(host: str, token: str | None) -> None:
    """``ValueError`` for a server without a token on an address other hosts reach: the
    service runs the code of whoever can reach it (in the sandbox), and decides rewards."""
    if token is None and not _loopback(host):
        raise ValueError(f"refusing to serve on {host or 'every address'!r} without a "
                         f"token: set {TOKEN_VARIABLE} (or --token), or serve on 127.0.0.1")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name may resolve anywhere; "" is every address
        return False


def client_of(address: str | None) -> str:
    """The client a peer address counts as: its network, not its address, since one host
    holds many (all of 127.0.0.0/8 and ::1 are the one local host; an IPv6 host is given a
    /64). Places and turns are shared per client, so more addresses buy no more of them."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return address or "unknown"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return "loopback"
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


# --------------------------------------------------------------------------- reading

_JSON_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"')
"""A JSON string in a body (possessive: one linear pass)."""


def check_structure(data: bytes, options: ServeOptions) -> None:
    """``RewardError`` for a body with more lists, objects and members outside its strings
    than a batch of ``max_items`` needs (each is a Python object of 50-60 bytes once parsed,
    from as little as 2 bytes of body: ``[],[],...`` parses to 20 times its size). Counted
    in one linear pass before ``json.loads`` builds anything."""
    bare = _JSON_STRING.sub(b"", data)
    count = bare.count(b"[") + bare.count(b"{") + bare.count(b",")
    bound = 64 + 16 * options.max_items
    if count > bound:
        raise RewardError(f"the body holds {count:,} lists, objects and members outside its "
                          f"strings; a batch needs at most {bound:,}")



def responses_of(body: Any) -> tuple[list[Any], list[Any]]:
    """The (ground truths, responses) of a request body, in either form;
    ``RewardError`` says what is wrong with one that is neither."""
    if not isinstance(body, dict):
        raise RewardError("the request body is not a JSON object")
    if "ground_truths" in body or "responses" in body:
        truths, responses = _lists(body, "ground_truths", "responses")
        return truths, responses
    if "query" not in body:
        raise RewardError("expected {\"query\", \"prompts\", \"labels\"} (OpenRLHF) or "
                          "{\"responses\", \"ground_truths\"}")
    queries, prompts, labels = _lists(body, "query", "prompts", "labels")
    answers = []
    for index, (query, prompt) in enumerate(zip(queries, prompts, strict=True)):
        if not isinstance(query, str) or not isinstance(prompt, str) \
                or not query.startswith(prompt):
            raise RewardError(f"query {index} does not start with its prompt, so its response "
                              "cannot be told apart")
        answers.append(query[len(prompt):])
    return labels, answers


def _lists(body: dict[str, Any], *names: str) -> list[list[Any]]:
    """The body's lists ``names``, all of one length."""
    found = [body.get(name) for name in names]
    for name, value in zip(names, found, strict=True):
        if not isinstance(value, list):
            raise RewardError(f"{name!r} must be a list")
    if len({len(value) for value in found if isinstance(value, list)}) > 1:
        raise RewardError("the lists " + ", ".join(map(repr, names)) + " differ in length")
    return [value for value in found if isinstance(value, list)]


def read_batch(rewarder: Rewarder, data: bytes, options: ServeOptions
               ) -> tuple[list[Truth], list[str | None]]:
    """A request's ground truths, read and checked against the rewarder's limits, and its
    responses as text, within the caps; ``RewardError`` fails the whole batch before any
    of it runs."""
    check_structure(data, options)
    try:
        body = json.loads(data)
    except (ValueError, RecursionError):
        raise RewardError("the request body is not JSON") from None
    if isinstance(body, dict):  # counted before anything of the lists is looked at
        longest = max((len(value) for value in body.values() if isinstance(value, list)),
                      default=0)
        if longest > options.max_items:
            raise RewardError(f"{longest:,} items in one batch; at most {options.max_items:,} "
                              "(send smaller batches)")
    truths, responses = responses_of(body)
    answers = [completion_text(response) for response in responses]
    for index, answer in enumerate(answers):
        if answer is not None and len(answer) > options.max_answer_chars:
            raise RewardError(f"response {index} is {len(answer):,} characters; at most "
                              f"{options.max_answer_chars:,}")
    return [rewarder.read(truth) for truth in truths], answers


def reply(rewards: list[Reward]) -> dict[str, Any]:
    values = [done.value for done in rewards]
    return {"rewards": values, "scores": values,
            "extra_logs": {"correct": [float(done.score.correct) for done in rewards],
                           "parsed": [float(done.parsed) for done in rewards]},
            "verdicts": [done.score.verdict for done in rewards]}


# --------------------------------------------------------------------------- turns


class Busy(Exception):
    """No place for another batch now: too many wait (``everyone``: of all clients)."""

    def __init__(self, everyone: bool) -> None:
        super().__init__(everyone)
        self.everyone = everyone


class Turns:
    """``places`` things lent in turn among clients: a client holds at most ``per_client``
    at once, and a freed one goes to the client that has waited longest since its last
    turn (round robin), so no client's queue, however long, delays another's more than a
    turn. Each client's own requests are served in order. Used from the event loop only."""

    def __init__(self, places: int, per_client: int) -> None:
        self._free = places
        self._per_client = per_client
        self._held: Counter[str] = Counter()
        self._waiting: dict[str, deque[asyncio.Future[None]]] = {}

    async def acquire(self, client: str) -> None:
        """Wait for a turn; the caller gives it back with ``release``."""
        turn = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(client, deque()).append(turn)
        self._hand_out()
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():  # given a turn while being cancelled
                self.release(client)
            else:
                self._forget(client, turn)
            raise

    def release(self, client: str) -> None:
        self._held[client] -= 1
        if not self._held[client]:
            del self._held[client]
        self._free += 1
        self._hand_out()

    def _hand_out(self) -> None:
        given = True
        while self._free and given:
            given = False
            for client in list(self._waiting):
                if self._free and self._held[client] < self._per_client:
                    given = self._give(client) or given

    def _give(self, client: str) -> bool:
        queue = self._waiting.pop(client)
        while queue and queue[0].done():  # a waiter cancelled since
            queue.popleft()
        if not queue:
            return False
        turn = queue.popleft()
        if queue:
            self._waiting[client] = queue  # to the back of the line
        self._held[client] += 1
        self._free -= 1
        turn.set_result(None)
        return True

    def _forget(self, client: str, turn: asyncio.Future[None]) -> None:
        queue = self._waiting.get(client)
        if queue is not None and turn in queue:
            queue.remove(turn)
            if not queue:
                del self._waiting[client]


class Pending:
    """Counts the batches admitted (read, waiting or scoring), per client and in all, and
    refuses one past either cap at once (``Busy``) rather than queueing it unread."""

    def __init__(self, places: int, per_client: int) -> None:
        self._places = places
        self._per_client = per_client
        self._held: Counter[str] = Counter()

    @contextlib.contextmanager
    def admitted(self, client: str) -> Iterator[None]:
        if self._held.total() >= self._places:
            raise Busy(everyone=True)
        if self._held[client] >= self._per_client:
            raise Busy(everyone=False)
        self._held[client] += 1
        try:
            yield
        finally:
            self._held[client] -= 1
            if not self._held[client]:
                del self._held[client]


class Scorers:
    """The threads that read and score batches, lent by ``Turns``. A thread is given back
    when its work ends, not when the request waiting on it goes away, so no more than
    ``threads`` ever run, and none queue behind them."""

    def __init__(self, options: ServeOptions) -> None:
        self._pool = ThreadPoolExecutor(max_workers=options.threads,
                                        thread_name_prefix="execbench-reward")
        self._turns = Turns(options.threads, options.threads_per_client)

    async def run(self, client: str, work: Callable[[], T]) -> T:
        await self._turns.acquire(client)
        loop = asyncio.get_running_loop()
        try:
            done = self._pool.submit(work)
        except BaseException:
            self._turns.release(client)
            raise
        done.add_done_callback(partial(self._ended, loop, client))
        return await asyncio.wrap_future(done, loop=loop)

    def _ended(self, loop: asyncio.AbstractEventLoop, client: str, _: Future[Any]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: the service stopped
            loop.call_soon_threadsafe(self._turns.release, client)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


# --------------------------------------------------------------------------- the app


def make_app(rewarder: Rewarder, log: Callable[[str], None] = lambda _: None,
             options: ServeOptions | None = None) -> web.Application:
    """The service's application, scoring with ``rewarder``, whose limits must be a closed
    set (``Rewarder(limits=...)``): a client's rows never choose what a sandbox may use."""
    options = options or ServeOptions()
    options.check()
    if rewarder.served is None:
        raise ValueError("a served rewarder needs a closed set of limits "
                         "(Rewarder(limits=...)): rows are a client's to forge")
    scorers = Scorers(options)
    pending = Pending(options.max_pending, options.pending_per_client)

    async def score(request: web.Request) -> web.Response:
        client = client_of(request.remote)
        with pending.admitted(client):
            data = await _body(request, options)
            truths, answers = await scorers.run(
                client, partial(read_batch, rewarder, data, options))
            step = options.chunk_items
            parts = await asyncio.gather(*(
                scorers.run(client, partial(rewarder.rewards, truths[start:start + step],
                                            answers[start:start + step]))
                for start in range(0, len(truths), step)))
        return web.json_response(reply([done for part in parts for done in part]))

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def stop(app: web.Application) -> None:
        scorers.close()

    # bodies are read as sent: a compressed one would be unpacked on the event loop, unbounded
    app = web.Application(client_max_size=options.max_body_bytes,
                          middlewares=[_guard(options, log)],
                          handler_args={"auto_decompress": False,
                                        "keepalive_timeout": options.header_seconds})
    app.router.add_post("/", score)
    app.router.add_post("/get_reward", score)
    app.router.add_get("/health", health)
    app.on_cleanup.append(stop)
    return app


class SlowBody(Exception):
    """The body fell behind ``min_body_rate`` after its grace."""


async def _body(request: web.Request, options: ServeOptions) -> bytes:
    """The request body: refused unread when it says it is longer than the cap, given up
    when it has not arrived in ``body_seconds`` or falls behind ``min_body_rate``."""
    cap = options.max_body_bytes
    if request.content_length is not None and request.content_length > cap:
        raise web.HTTPRequestEntityTooLarge(max_size=cap, actual_size=request.content_length)
    try:
        async with asyncio.timeout(options.body_seconds):
            return await _read_steadily(request, options)
    except TimeoutError:
        raise web.HTTPRequestTimeout from None


async def _read_steadily(request: web.Request, options: ServeOptions) -> bytes:
    """The body's chunks as they come, each awaited only until the body, at the time the
    next chunk is due, would be behind ``min_body_rate`` (``SlowBody``)."""
    loop = asyncio.get_running_loop()
    parts: list[bytes] = []
    start, size = loop.time(), 0
    while True:
        due = start + options.body_grace_seconds + size / options.min_body_rate
        try:
            async with asyncio.timeout_at(due):
                chunk = await request.content.readany()
        except TimeoutError:
            raise SlowBody from None
        if not chunk:
            return b"".join(parts)
        size += len(chunk)
        if size > options.max_body_bytes:
            raise web.HTTPRequestEntityTooLarge(max_size=options.max_body_bytes,
                                                actual_size=size)
        parts.append(chunk)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _guard(options: ServeOptions, log: Callable[[str], None]) -> Any:
    """The middleware every request passes: the token first (before a byte of the body is
    read), then each refusal answered as one line of JSON."""
    token = options.token
    expected = None if token is None else hashlib.sha256(token.encode()).digest()

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if expected is not None and request.path != "/health" \
                and not _authorized(request, expected):
            return _refused(401, "this service needs Authorization: Bearer TOKEN", log,
                            request, {"WWW-Authenticate": "Bearer"})
        encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            return _refused(415, f"Content-Encoding {encoding[:40]!r} is not read here; send "
                            "the body uncompressed", log, request)
        try:
            return await handler(request)
        except SlowBody:
            return _refused(408, "the body came slower than "
                            f"{options.min_body_rate // 1024:,} KiB/s", log, request)
        except RewardError as exc:
            return _refused(400, str(exc), log, request)
        except Busy as exc:
            why = ("too many batches are waiting" if exc.everyone else
                   "too many of this client's batches are waiting") + "; retry shortly"
            return _refused(503 if exc.everyone else 429, why, log, request,
                            {"Retry-After": "1"})
        except web.HTTPRequestEntityTooLarge:
            return _refused(413, f"the body is longer than {options.max_body_bytes:,} bytes, "
                            "the most this service reads; send smaller batches", log, request)
        except web.HTTPRequestTimeout:
            return _refused(408, f"the body did not arrive within {options.body_seconds:g} s",
                            log, request)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            return _refused(exc.status, f"{exc.reason}: {request.method} {request.path}", log,
                            request)
        except Exception as exc:  # noqa: BLE001 - a fault of ours, still answered in JSON
            log(f"scoring failed: {exc!r}")
            return _refused(500, f"scoring failed ({type(exc).__name__}); the server's log "
                            "says more", log, request)

    return guard


def _authorized(request: web.Request, expected: bytes) -> bool:
    """Whether the request carries the token; compared as digests in constant time, so
    neither its text nor its length shows in how long a refusal takes."""
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    digest = hashlib.sha256(given.strip().encode("utf-8", "surrogateescape")).digest()
    return hmac.compare_digest(digest, expected) and scheme.lower() == "bearer"


def _refused(status: int, why: str, log: Callable[[str], None], request: web.Request,
             headers: dict[str, str] | None = None) -> web.Response:
    log(f"refused a request from {request.remote}: {status} {why}")
    return web.json_response({"error": why}, status=status, headers=headers)


def serve(rewarder: Rewarder, host: str, port: int, log: Callable[[str], None] = print,
          options: ServeOptions | None = None) -> None:
    """Serve until interrupted (Ctrl-C or SIGTERM)."""
    options = options or ServeOptions()
    check_exposure(host, options.token)
    _raise_open_files()
    web.run_app(make_app(rewarder, log, options), host=host, port=port, print=None,
                handle_signals=True)


def _raise_open_files() -> None:
    """Lift the soft limit on open files to the hard one: each connection holds one, and
    a server at a default 1,024 stops accepting long before memory runs short."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


@contextlib.contextmanager
def serving(rewarder: Rewarder, host: str = "127.0.0.1", port: int = 0,
            log: Callable[[str], None] = lambda _: None,
            options: ServeOptions | None = None) -> Iterator[str]:
    """The service in a thread of this process while the block runs (a trainer's own
    process, a test, a benchmark); yields its ``/get_reward`` URL (``port=0``: a free one)."""
    options = options or ServeOptions()
    check_exposure(host, options.token)
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(make_app(rewarder, log, options))
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, host, port)
    loop.run_until_complete(site.start())
    bound = runner.addresses[0][1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{bound}/get_reward"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()
