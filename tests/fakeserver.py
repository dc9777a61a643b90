"""A real HTTP server that plays an OpenAI or Anthropic endpoint, scripted by the test.

Tests talk to it over sockets with the production client, so retries, timeouts, headers and
JSON handling are exercised exactly as against a real API, without mocking the client.

    def responder(body: dict, attempt: int) -> Reply:
        if attempt == 1:
            return Reply.error(429, retry_after=0.1)
        return Reply(text="42", input_tokens=12, output_tokens=1)

    with FakeServer(responder) as server:
        model = OpenAIModel("openai/fake", "fake", server.base_url, "key")
        ...
        assert server.count("What is 6*7?") == 2

``base_url`` ends in ``/v1`` as OpenAI-style base URLs do; Anthropic base URLs do not, so
use ``anthropic_base_url`` for that provider. ``attempt`` counts requests with the same path
and identical body, starting at 1: a retry repeats its body exactly, so this is the attempt
number of one sample (samples of one prompt differ by seed when a seed is sent).
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"


@dataclass(frozen=True)
class Reply:
    """One scripted response. The default is a successful answer with ``text``.

    ``status`` other than 200 sends a protocol-style error body carrying ``text`` as its
    message (and ``code`` as OpenAI's error code); ``raw`` replaces the whole body verbatim
    (for malformed responses); ``delay`` seconds pass before anything is sent (slow
    servers, client timeouts). OpenAI replies only: ``refusal`` is sent as
    ``message.refusal`` with a null content, and ``parts`` as the content, a list of parts.

    A request with ``"stream": true`` gets a 200 as server-sent events in the protocol's
    streaming format, carrying the same answer in pieces (``piece`` characters each).
    ``cut`` closes the connection after that many events, mid-stream, and ``end`` ends
    the body properly after that many, before the last event; ``stream_error``
    sends the protocol's error event after the first content event instead of the rest;
    ``event_delay`` seconds pass between events. ``stream`` plays a real server's ending
    (OpenAI chat streams only): ``"openai"``, as OpenAI and vLLM end; ``"no-done"``, as
    ``transformers serve`` ends (the finish reason and the usage in one last chunk, then the
    body ends, with no ``[DONE]``); ``"interrupted"``, as llama.cpp's server stops a stream
    when another request arrives (a role chunk, then ``[DONE]``); ``"endless"``, content
    without end, as a server ignoring ``max_tokens`` might. ``usage=False`` leaves the usage
    out whatever the request asks (llama.cpp ignores ``stream_options``).
    """

    text: str = "ok"
    status: int = 200
    input_tokens: int = 10
    output_tokens: int = 5
    reasoning: str | None = None
    finish_reason: str | None = None
    delay: float = 0.0
    raw: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    code: str | int | None = None
    refusal: str | None = None
    parts: list[dict[str, Any]] | None = None
    cut: int | None = None
    end: int | None = None
    event_delay: float = 0.0
    stream_error: bool = False
    piece: int = 3
    stream: str = "openai"
    usage: bool = True

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "scripted error",
        *,
        retry_after: float | str | None = None,
        retry_after_ms: float | None = None,
        code: str | None = None,
    ) -> Reply:
        """An HTTP error, optionally with Retry-After (seconds, or an HTTP date given as a
        string), OpenAI's retry-after-ms, and an error code (the status if none)."""
        headers = {}
        if retry_after is not None:
            headers["Retry-After"] = (
                retry_after if isinstance(retry_after, str) else f"{retry_after:g}"
            )
        if retry_after_ms is not None:
            headers["retry-after-ms"] = f"{retry_after_ms:g}"
        return cls(text=message, status=status, headers=headers, code=code)

    @classmethod
    def malformed(cls, raw: str = '{"choices": [{"mess') -> Reply:
        """A 200 whose body is truncated JSON, or ``raw`` verbatim (e.g. ``"{}"``)."""
        return cls(raw=raw)


Responder = Callable[[dict[str, Any], int], Reply]


@dataclass(frozen=True)
class Received:
    """A request as the server saw it; header names are lower-cased."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    target: str = ""
    """The request line's target as sent: the path, or the whole URL when the client sent
    the request to this server as its proxy."""

    @property
    def prompt(self) -> str:
        """The content of the last user message, the usual way to tell requests apart."""
        return prompt_of(self.body)


def prompt_of(body: dict[str, Any]) -> str:
    """The content of the last user message in a chat request body."""
    users = [m["content"] for m in body.get("messages", []) if m.get("role") == "user"]
    return users[-1] if users else ""


def _openai_body(reply: Reply, request: dict[str, Any]) -> dict[str, Any]:
    if reply.status != 200:
        code = reply.status if reply.code is None else reply.code
        return {"error": {"message": reply.text, "type": "scripted", "code": code}}
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.refusal is not None:
        message.update(content=None, refusal=reply.refusal)
    if reply.parts is not None:
        message["content"] = reply.parts
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model"),
        "choices": [
            {"index": 0, "message": message, "finish_reason": reply.finish_reason or "stop"}
        ],
    } | ({"usage": {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }} if reply.usage else {})


def _anthropic_body(reply: Reply, request: dict[str, Any]) -> dict[str, Any]:
    if reply.status != 200:
        return {"type": "error", "error": {"type": "scripted", "message": reply.text}}
    content: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        content.append({"type": "thinking", "thinking": reply.reasoning, "signature": "fake"})
    content.append({"type": "text", "text": reply.text})
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": request.get("model"),
        "content": content,
        "stop_reason": reply.finish_reason or "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
    }


def _pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def _openai_events(reply: Reply, request: dict[str, Any]) -> list[tuple[str, Any]]:
    """A chat completion as OpenAI streams it: ``chat.completion.chunk`` deltas (role
    first), the finish reason in the last choice chunk, the usage in a chunk of no choices
    when ``stream_options.include_usage`` asks for it, then ``[DONE]``."""
    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[str, Any]:
        return "", {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                    "model": request.get("model"),
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events = [chunk({"role": "assistant", "content": ""})]
    if reply.stream == "interrupted":
        return [*events, ("", "[DONE]")]
    if reply.reasoning is not None:
        events += [chunk({"reasoning_content": p}) for p in _pieces(reply.reasoning, reply.piece)]
    if reply.refusal is not None:
        events += [chunk({"refusal": p}) for p in _pieces(reply.refusal, reply.piece)]
    else:
        events += [chunk({"content": p}) for p in _pieces(reply.text, reply.piece)]
    if reply.stream_error:
        return [*events[:2], ("", {"error": {"message": "scripted stream error",
                                             "type": "server_error"}})]
    usage = {"prompt_tokens": reply.input_tokens, "completion_tokens": reply.output_tokens,
             "total_tokens": reply.input_tokens + reply.output_tokens}
    asked = (request.get("stream_options") or {}).get("include_usage") and reply.usage
    last = chunk({}, reply.finish_reason or "stop")
    if reply.stream == "no-done":
        return [*events, ("", {**last[1], "usage": usage} if reply.usage else last[1])]
    events.append(last)
    if asked:
        events.append(("", {"id": "chatcmpl-fake", "object": "chat.completion.chunk",
                            "choices": [], "usage": usage}))
    return [*events, ("", "[DONE]")]


def _anthropic_events(reply: Reply, request: dict[str, Any]) -> list[tuple[str, Any]]:
    """A message as Anthropic streams it: ``message_start`` (input tokens), a ``ping``,
    each content block's start, deltas and stop, ``message_delta`` (stop reason, output
    tokens), ``message_stop``."""
    message = {"id": "msg_fake", "type": "message", "role": "assistant",
               "model": request.get("model"), "content": [], "stop_reason": None,
               "stop_sequence": None,
               "usage": {"input_tokens": reply.input_tokens, "output_tokens": 1}}
    events: list[tuple[str, Any]] = [("message_start", {"type": "message_start",
                                                        "message": message}),
                                     ("ping", {"type": "ping"})]
    blocks = []
    if reply.reasoning is not None:
        blocks.append(("thinking", "thinking", reply.reasoning))
    blocks.append(("text", "text", reply.text))
    for index, (kind, key, text) in enumerate(blocks):
        start = {"type": kind, key: ""} | ({"signature": ""} if kind == "thinking" else {})
        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": start}))
        events += [("content_block_delta", {"type": "content_block_delta", "index": index,
                                            "delta": {"type": f"{kind}_delta", key: p}})
                   for p in _pieces(text, reply.piece)]
        if kind == "thinking":
            events.append(("content_block_delta", {
                "type": "content_block_delta", "index": index,
                "delta": {"type": "signature_delta", "signature": "fake"}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    if reply.stream_error:
        return [*events[:4], ("error", {"type": "error", "error": {
            "type": "overloaded_error", "message": "Overloaded"}})]
    events.append(("message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": reply.finish_reason or "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": reply.output_tokens}}))
    return [*events, ("message_stop", {"type": "message_stop"})]


PROTOCOLS = {OPENAI_PATH: _openai_body, ANTHROPIC_PATH: _anthropic_body}
STREAMS = {OPENAI_PATH: _openai_events, ANTHROPIC_PATH: _anthropic_events}


MODELS_PATH = "/v1/models"
VLLM, LLAMA = "vllm", "llama.cpp"


@dataclass(frozen=True)
class Context:
    """What the server tells of its context, as real servers do.

    ``max_model_len`` goes in the model's entry of ``/v1/models`` (vLLM, SGLang), ``n_ctx``
    in ``GET /props`` under ``default_generation_settings`` (llama.cpp). ``tokenizer``
    serves prompt counts: ``"vllm"``, ``POST /tokenize`` with chat messages answering
    ``{"count", "max_model_len", "tokens"}``; ``"llama.cpp"``, ``POST /apply-template``
    (``{"prompt"}``) and ``POST /tokenize`` of ``content`` (``{"tokens"}``, empty without
    ``content``, as llama.cpp answers). A prompt's tokens are the words of
    :func:`template` applied to its messages (:func:`prompt_tokens`).
    """

    model: str = "fake"
    max_model_len: int | None = None
    n_ctx: int | None = None
    tokenizer: str | None = None
    untokenizable: str | None = None
    """Messages holding this text get HTTP 500 from ``/tokenize`` (vLLM style)."""

    def listing(self) -> tuple[int, dict[str, Any]]:
        """The model list that names ``model``, with its ``max_model_len`` if any."""
        entry: dict[str, Any] = {"id": self.model, "object": "model"}
        if self.max_model_len is not None:
            entry["max_model_len"] = self.max_model_len
        return 200, {"object": "list", "data": [entry]}


def template(messages: list[dict[str, Any]]) -> str:
    """The scripted server's chat template, generation prompt included."""
    return "".join(f"<|{m['role']}|> {m['content']}\n" for m in messages) + "<|assistant|>"


def prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """The tokens the scripted server counts for ``messages``: one per word of the
    template's text."""
    return len(template(messages).split())


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like real APIs and pooling clients expect
    server: _Server

    def do_GET(self) -> None:
        """The model list both APIs serve, which the health probe asks for; counted apart
        from the chat requests in ``FakeServer.probes``."""
        path = urlsplit(self.path).path
        with self.server._lock:
            self.server.probes += 1
        if path == MODELS_PATH:
            status, listing = self.server.listing
            self._send(status, json.dumps(listing), {})
        elif path == "/props" and self.server.context.n_ctx is not None:
            self._send(200, json.dumps({"default_generation_settings": {
                "n_ctx": self.server.context.n_ctx, "params": {}}, "total_slots": 1}), {})
        else:
            self._send(404, json.dumps({"error": f"no such endpoint {path}"}), {})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        raw = self.rfile.read(length)
        path = urlsplit(self.path).path  # a proxied request names the whole URL
        if path in ("/tokenize", "/apply-template"):
            self._tokenizer(path, raw)
            return
        render = PROTOCOLS.get(path)
        if render is None:
            self._send(404, json.dumps({"error": f"no such endpoint {path}"}), {})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._send(400, json.dumps({"error": "request body is not JSON"}), {})
            return
        headers = {name.lower(): value for name, value in self.headers.items()}
        attempt = self.server.record(Received(path, headers, body, self.path))
        try:
            reply = self.server.responder(body, attempt)
        except Exception as exc:
            self.server.failures.append(exc)
            self._send(500, json.dumps({"error": f"responder raised {exc!r}"}), {})
            return
        # Waiting on the closing event lets shutdown cut a long delay short.
        if reply.delay and self.server.closing.wait(reply.delay):
            self.close_connection = True
            return
        if body.get("stream") and reply.stream == "endless":
            self._endless(reply.text)
            return
        if body.get("stream") and reply.status == 200 and reply.raw is None:
            self._stream(STREAMS[path](reply, body)[:reply.end], reply.cut, reply.event_delay)
            return
        payload = reply.raw if reply.raw is not None else json.dumps(render(reply, body))
        self._send(reply.status, payload, reply.headers)

    def _tokenizer(self, path: str, raw: bytes) -> None:
        """``/tokenize`` and ``/apply-template`` as ``Context.tokenizer`` says."""
        style = self.server.context.tokenizer
        body = json.loads(raw)
        with self.server._lock:
            self.server.tokenize_requests.append((path, body))
        broken = self.server.context.untokenizable
        if style == VLLM and broken is not None and broken in json.dumps(body):
            self._send(500, json.dumps({"detail": "tokenizer failed"}), {})
            return
        if style == VLLM and path == "/tokenize":
            count = prompt_tokens(body["messages"])
            reply = {"count": count, "max_model_len": self.server.context.max_model_len,
                     "tokens": list(range(count))}
        elif style == LLAMA and path == "/apply-template":
            reply = {"prompt": template(body["messages"])}
        elif style == LLAMA:
            reply = {"tokens": list(range(len(str(body.get("content", "")).split())))}
        else:
            self._send(404, json.dumps({"detail": "Not Found"}), {})
            return
        self._send(200, json.dumps(reply), {})

    def _stream(self, events: list[tuple[str, Any]], cut: int | None, delay: float) -> None:
        """Send ``events`` as server-sent events in HTTP chunks; with ``cut``, close the
        connection after that many, as a server or proxy that fails mid-stream does."""
        try:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for number, (name, data) in enumerate(events):
                if cut is not None and number == cut:
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                text = data if isinstance(data, str) else json.dumps(data)
                event = (f"event: {name}\n" if name else "") + f"data: {text}\n\n"
                encoded = event.encode()
                self.wfile.write(f"{len(encoded):x}\r\n".encode() + encoded + b"\r\n")
                self.wfile.flush()
                if delay and self.server.closing.wait(delay):
                    self.close_connection = True
                    return
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True

    def _endless(self, text: str) -> None:
        """Content chunks until the client goes away (or the server closes)."""
        chunk = {"object": "chat.completion.chunk",
                 "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
        encoded = f"data: {json.dumps(chunk)}\n\n".encode()
        framed = f"{len(encoded):x}\r\n".encode() + encoded + b"\r\n"
        try:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            while not self.server.closing.is_set():
                self.wfile.write(framed * 64)
                self.server.endless_events += 64
        except OSError:
            pass
        self.close_connection = True

    def _send(self, status: int, payload: str, headers: dict[str, str]) -> None:
        data = payload.encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            # The client gave up (typically a timeout) and closed the socket first.
            self.close_connection = True

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection)

    def finish(self) -> None:
        self.server.untrack(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request access log that would clutter test output."""


class _Server(ThreadingHTTPServer):
    # Non-daemon handler threads are joined by server_close, so no thread outlives the
    # context; drop_connections and track make sure each of them is about to return.
    daemon_threads = False
    request_queue_size = 128  # the runner opens up to 16 connections at once

    def __init__(self, responder: Responder, port: int,
                 listing: tuple[int, dict[str, Any]], context: Context) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.responder = responder
        self.listing = listing
        self.context = context
        self.tokenize_requests: list[tuple[str, dict[str, Any]]] = []
        self.closing = threading.Event()
        self.failures: list[Exception] = []
        self._lock = threading.Lock()
        self._received: list[Received] = []
        self._attempts: Counter[str] = Counter()
        self._connections: set[socket.socket] = set()
        self.opened = 0
        self.probes = 0
        self.endless_events = 0

    def record(self, received: Received) -> int:
        """Store a request and return its attempt number."""
        key = received.path + json.dumps(received.body, sort_keys=True)
        with self._lock:
            self._received.append(received)
            self._attempts[key] += 1
            return self._attempts[key]

    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    def track(self, connection: socket.socket) -> None:
        """Remember an open connection; one accepted just before shutdown is cut at once."""
        with self._lock:
            self._connections.add(connection)
            self.opened += 1
            if self.closing.is_set():
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)

    def untrack(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.discard(connection)

    def open_connections(self) -> int:
        with self._lock:
            return len(self._connections)

    def drop_connections(self) -> None:
        """Wake handler threads blocked reading idle keep-alive connections, so that
        ``server_close`` can join them even if a test never closed its client."""
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Connections reset by a client that timed out are expected; anything else is a
        bug in the fake server or a responder, and is shown."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class FakeServer:
    """The scripted server, running in a background thread while the context is open.

    ``port`` 0 picks a free port; a test that stops a server and starts another where the
    first was (a restarted model server, for a resumed run) names the first one's port.
    ``listing`` is the status and body of ``GET /v1/models`` (by default, the list of
    ``context.model``); ``context`` what the server tells of its context (:class:`Context`:
    by default nothing).
    """

    def __init__(self, responder: Responder, port: int = 0,
                 listing: tuple[int, dict[str, Any]] | None = None,
                 context: Context | None = None) -> None:
        context = context or Context()
        self._server = _Server(responder, port, listing or context.listing(), context)
        # A short poll interval makes shutdown, and so every test, quick.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        host, self.port = self._server.server_address[:2]
        self.anthropic_base_url = f"http://{host}:{self.port}"
        self.base_url = f"{self.anthropic_base_url}/v1"

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc_info: object) -> None:
        """Stop serving; then re-raise the first responder exception, if any.

        A responder bug would otherwise only show up as a retried HTTP 500 in the client,
        far from its cause.
        """
        self._server.shutdown()
        self._server.closing.set()
        self._server.drop_connections()
        self._server.server_close()
        self._thread.join()
        if self._server.failures and exc_type is None:
            raise self._server.failures[0]

    @property
    def requests(self) -> list[Received]:
        """Every request received so far, in arrival order."""
        return self._server.received()

    @property
    def probes(self) -> int:
        """How many GET requests (health probes) came, which ``requests`` does not list."""
        return self._server.probes

    @property
    def tokenize_requests(self) -> list[tuple[str, dict[str, Any]]]:
        """Each ``/tokenize`` and ``/apply-template`` request: (path, body)."""
        with self._server._lock:
            return list(self._server.tokenize_requests)

    @property
    def endless_events(self) -> int:
        """Content events sent by ``stream="endless"`` replies, until their clients left."""
        return self._server.endless_events

    @property
    def connections_opened(self) -> int:
        """How many connections clients have opened so far (a pooling client reuses them)."""
        return self._server.opened

    @property
    def open_connections(self) -> int:
        """How many connections are open now (a closed client leaves none)."""
        return self._server.open_connections()

    def count(self, prompt: str) -> int:
        """How many requests had ``prompt`` as their last user message, retries included."""
        return sum(1 for received in self.requests if received.prompt == prompt)


def scripted(*replies: Reply) -> Responder:
    """A responder playing ``replies`` in order per prompt, repeating the last one."""

    def responder(body: dict, attempt: int) -> Reply:
        return replies[min(attempt, len(replies)) - 1]

    return responder
