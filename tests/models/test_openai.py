"""The OpenAI provider and the shared retry policy, against a real local HTTP server."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from http.client import HTTPConnection

import httpx
import pytest

from execbench.models import http
from execbench.models.base import GenerateConfig, Generation, Request
from execbench.models.openai import OpenAIModel
from tests.fakeserver import FakeServer, Reply, prompt_of, scripted

FAST = GenerateConfig(max_retries=3, retry_base_delay=0.01, timeout=2.0)


def request(prompt: str = "What is 6*7?", seed: int | None = None) -> Request:
    return Request(messages=[{"role": "user", "content": prompt}], instance={}, sample=0, seed=seed)


def generate(
    base_url: str, config: GenerateConfig = FAST, req: Request | None = None
) -> Generation:
    model = OpenAIModel("openai/fake", "fake-model", base_url, "sk-test")

    async def go() -> Generation:
        try:
            return await model.generate(req or request(), config)
        finally:
            await model.aclose()

    return asyncio.run(go())


def test_answer_and_usage_are_parsed() -> None:
    reply = Reply(text="42", input_tokens=17, output_tokens=3, reasoning="6 times 7")
    with FakeServer(scripted(reply)) as server:
        gen = generate(server.base_url)
        [received] = server.requests
    assert gen.text == "42"
    assert (gen.input_tokens, gen.output_tokens) == (17, 3)
    assert gen.extra == {"finish_reason": "stop", "reasoning": "6 times 7"}
    assert gen.error is None and gen.attempts == 1 and gen.latency > 0
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == "Bearer sk-test"
    assert received.body == {
        "model": "fake-model",
        "messages": [{"role": "user", "content": "What is 6*7?"}],
    }


def test_null_content_is_an_empty_answer() -> None:
    with FakeServer(
        scripted(Reply.malformed('{"choices": [{"message": {"content": null}}]}'))
    ) as s:
        gen = generate(s.base_url)
    assert gen.text == "" and gen.error is None and gen.input_tokens is None


def test_sampling_settings_are_forwarded() -> None:
    config = GenerateConfig(temperature=0.7, top_p=0.9, max_tokens=64, seed=1, retry_base_delay=0)
    with FakeServer(scripted(Reply())) as server:
        generate(server.base_url, config, request(seed=5))
        generate(server.base_url, config, request())
        first, second = (r.body for r in server.requests)
    assert (first["temperature"], first["top_p"], first["max_tokens"]) == (0.7, 0.9, 64)
    assert first["seed"] == 5, "the per-request seed wins"
    assert second["seed"] == 1, "the config seed is the fallback"


def test_rate_limit_then_success() -> None:
    with FakeServer(scripted(Reply.error(429), Reply(text="42"))) as server:
        gen = generate(server.base_url)
        assert server.count("What is 6*7?") == 2
    assert gen.text == "42" and gen.attempts == 2 and gen.error is None


def test_server_error_forever_gives_up_after_max_retries() -> None:
    with FakeServer(scripted(Reply(status=500, raw="Internal\n  Server Error"))) as server:
        gen = generate(server.base_url)
        assert server.count("What is 6*7?") == FAST.max_retries + 1
    assert gen.text is None and gen.attempts == 4
    assert gen.error is not None
    assert gen.error.startswith("HTTP 500 after 4 attempts: ")
    assert gen.error.endswith(": Internal Server Error") and "\n" not in gen.error


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_are_not_retried(status: int) -> None:
    with FakeServer(scripted(Reply.error(status, "bad request"))) as server:
        gen = generate(server.base_url)
        assert len(server.requests) == 1
    assert gen.attempts == 1
    assert gen.error is not None and gen.error.startswith(f"HTTP {status} after 1 attempt: ")


def test_slow_reply_times_out_and_is_retried() -> None:
    config = GenerateConfig(max_retries=1, retry_base_delay=0.01, timeout=0.2)
    with FakeServer(scripted(Reply(delay=5))) as server:
        start = time.perf_counter()
        gen = generate(server.base_url, config)
        assert len(server.requests) == 2
    assert time.perf_counter() - start < 2
    assert (
        gen.error is not None
        and gen.error == "timed out after 2 attempts: ReadTimeout (limit 0.2 s)"
    )
    assert gen.latency >= 0.4


def test_slow_first_reply_then_success() -> None:
    config = GenerateConfig(max_retries=2, retry_base_delay=0.01, timeout=0.2)
    with FakeServer(scripted(Reply(delay=5), Reply(text="fast"))) as server:
        gen = generate(server.base_url, config)
    assert gen.text == "fast" and gen.attempts == 2


@pytest.mark.parametrize("raw", ['{"choices": [{"mess', "{}", '{"choices": []}', "[1]"])
def test_malformed_success_body_is_retried(raw: str) -> None:
    with FakeServer(scripted(Reply.malformed(raw), Reply(text="42"))) as server:
        gen = generate(server.base_url)
    assert gen.text == "42" and gen.attempts == 2


def test_malformed_forever_reports_the_body() -> None:
    with FakeServer(scripted(Reply.malformed())) as server:
        gen = generate(server.base_url)
    assert gen.error is not None
    assert gen.error.startswith("malformed response (JSONDecodeError")
    assert 'after 4 attempts: {"choices": [{"mess' in gen.error


def test_retry_after_is_honoured() -> None:
    with FakeServer(scripted(Reply.error(429, retry_after=0.3), Reply())) as server:
        gen = generate(server.base_url)
    assert gen.attempts == 2 and gen.latency >= 0.3


def test_retry_after_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http, "MAX_DELAY", 0.05)
    with FakeServer(scripted(Reply.error(503, retry_after=30), Reply())) as server:
        gen = generate(server.base_url)
    assert gen.attempts == 2 and gen.latency < 2


def test_backoff_doubles_with_jitter_up_to_the_cap() -> None:
    config = GenerateConfig(retry_base_delay=1.0)
    for retry, nominal in [(1, 1.0), (2, 2.0), (3, 4.0), (6, 32.0), (7, 60.0), (20, 60.0)]:
        for _ in range(20):
            assert nominal / 2 <= http.retry_delay(retry, config) <= nominal
    assert http.retry_delay(1, config, retry_after=7) == 7
    assert http.retry_delay(1, config, retry_after=600) == 60


def test_connection_refused_is_retried_then_reported() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    gen = generate(f"http://127.0.0.1:{port}/v1")
    assert gen.attempts == 4
    assert gen.error is not None and gen.error.startswith("connection error after 4 attempts")


def test_queued_requests_wait_for_a_connection_without_timing_out() -> None:
    """More concurrent requests than connections must queue, not fail on the pool wait."""
    config = GenerateConfig(max_connections=2, timeout=0.3, max_retries=0)

    async def go(model: OpenAIModel) -> list[Generation]:
        try:
            prompts = [f"question {i}" for i in range(12)]
            return await asyncio.gather(*(model.generate(request(p), config) for p in prompts))
        finally:
            await model.aclose()

    with FakeServer(scripted(Reply(delay=0.1))) as server:
        gens = asyncio.run(go(OpenAIModel("openai/fake", "fake-model", server.base_url, None)))
        assert "authorization" not in server.requests[0].headers
    assert all(g.error is None for g in gens)


def test_fake_server_stops_promptly_with_open_and_pending_connections() -> None:
    """Shutdown must not wait out a scripted delay or a kept-alive client that never hung up."""
    before = threading.active_count()

    def request_bytes(prompt: str) -> bytes:
        return json.dumps(
            {"model": "m", "messages": [{"role": "user", "content": prompt}]}
        ).encode()

    def responder(body: dict, attempt: int) -> Reply:
        return Reply(delay=0 if prompt_of(body) == "fast" else 30)

    server = FakeServer(responder).__enter__()
    url = httpx.URL(server.base_url)
    idle = HTTPConnection(url.host, url.port)
    idle.request("POST", "/v1/chat/completions", request_bytes("fast"))
    assert idle.getresponse().read()
    with socket.create_connection((url.host, url.port)) as pending:
        slow = request_bytes("slow")
        head = f"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: {len(slow)}\r\n\r\n"
        pending.sendall(head.encode() + slow)
        while len(server.requests) < 2:
            time.sleep(0.01)
        start = time.perf_counter()
        server.__exit__(None, None, None)
        assert time.perf_counter() - start < 1
        assert pending.recv(1) == b"" and idle.sock.recv(1) == b""
    idle.close()
    assert threading.active_count() == before, threading.enumerate()


def test_fake_server_reraises_responder_errors() -> None:
    def responder(body: dict, attempt: int) -> Reply:
        raise LookupError("no script for this prompt")

    with pytest.raises(LookupError, match="no script"), FakeServer(responder) as server:
        assert generate(server.base_url).error is not None
