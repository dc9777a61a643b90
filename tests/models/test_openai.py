"""The OpenAI provider and the shared retry policy, against a real local HTTP server."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.client import HTTPConnection
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from execbench.models.base import (
    CUT_BY_CLIENT,
    GenerateConfig,
    Generation,
    ModelError,
    Request,
    Unreachable,
)
from execbench.models.http import STREAM_ABOVE, SYSTEM_CLOCK, Clock, OutOfQuota
from execbench.models.http.endpoints import BENCH_SECONDS, proxy_for
from execbench.models.http.sse import EVENTS_PER_TOKEN, EVENTS_SLACK
from execbench.models.http.timing import MAX_DELAY, retry_after, retry_delay
from execbench.models.openai import OpenAIModel
from tests.fakeserver import FakeServer, Reply, prompt_of, scripted
from tests.models.clock import ManualClock

FAST = GenerateConfig(max_retries=3, retry_base_delay=0.01, timeout=2.0)


def request(prompt: str = "What is 6*7?", seed: int | None = None) -> Request:
    return Request(messages=[{"role": "user", "content": prompt}], instance={}, sample=0, seed=seed)


def generate(
    base_url: str, config: GenerateConfig = FAST, req: Request | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> Generation:
    model = OpenAIModel("openai/fake", "fake-model", base_url, "sk-test", clock=clock)

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
        gen = generate(server.base_url, config)
        assert len(server.requests) == 2
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
    clock = ManualClock()
    with FakeServer(scripted(Reply.error(429, retry_after=0.3), Reply())) as server:
        gen = generate(server.base_url, clock=clock)
    assert gen.attempts == 2 and clock.sleeps == [0.3]


def test_retry_after_is_capped() -> None:
    clock = ManualClock()
    with FakeServer(scripted(Reply.error(503, retry_after=600), Reply())) as server:
        gen = generate(server.base_url, clock=clock)
    assert gen.attempts == 2 and clock.sleeps == [MAX_DELAY]


def test_backoff_doubles_with_jitter_up_to_the_cap() -> None:
    config = GenerateConfig(retry_base_delay=1.0)
    for retry, nominal in [(1, 1.0), (2, 2.0), (3, 4.0), (6, 32.0), (7, 60.0), (20, 60.0)]:
        for _ in range(20):
            assert nominal / 2 <= retry_delay(retry, config) <= nominal
    assert retry_delay(1, config, retry_after=7) == 7
    assert retry_delay(1, config, retry_after=600) == 60


def test_connection_refused_is_retried_then_reported() -> None:
    gen = generate(dead_url())
    assert gen.attempts == 4
    assert gen.error is not None and gen.error.startswith("connection error after 4 attempts")


async def _twelve_at_once(model: OpenAIModel, config: GenerateConfig) -> list[Generation]:
    """Twelve requests in flight together on one model, which is closed afterwards."""
    try:
        prompts = [f"question {i}" for i in range(12)]
        return await asyncio.gather(*(model.generate(request(p), config) for p in prompts))
    finally:
        await model.aclose()


def test_queued_requests_wait_for_a_connection_without_timing_out() -> None:
    """More concurrent requests than connections must queue, not fail on the pool wait."""
    config = GenerateConfig(max_connections=2, timeout=0.3, max_retries=0)

    with FakeServer(scripted(Reply(delay=0.1))) as server:
        gens = asyncio.run(_twelve_at_once(
            OpenAIModel("openai/fake", "fake-model", server.base_url, None), config))
        assert "authorization" not in server.requests[0].headers
    assert all(g.error is None for g in gens)


def test_fake_server_stops_promptly_with_open_and_pending_connections() -> None:
    """Shutdown must not wait out a scripted delay or a kept-alive client that never hung up.

    Only the time shows the delay was cut short rather than waited out (the connection is
    dropped either way), so shutdown is checked to end well before the delay would."""
    before = threading.active_count()
    delay = 120.0

    def request_bytes(prompt: str) -> bytes:
        return json.dumps(
            {"model": "m", "messages": [{"role": "user", "content": prompt}]}
        ).encode()

    def responder(body: dict, attempt: int) -> Reply:
        return Reply(delay=0 if prompt_of(body) == "fast" else delay)

    server = FakeServer(responder).__enter__()
    url = urlsplit(server.base_url)
    idle = HTTPConnection(url.hostname, url.port)
    idle.request("POST", "/v1/chat/completions", request_bytes("fast"))
    assert idle.getresponse().read()
    with socket.create_connection((url.hostname, url.port)) as pending:
        slow = request_bytes("slow")
        head = f"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: {len(slow)}\r\n\r\n"
        pending.sendall(head.encode() + slow)
        while len(server.requests) < 2:
            time.sleep(0.01)
        start = time.perf_counter()
        server.__exit__(None, None, None)
        assert time.perf_counter() - start < delay / 2, "shutdown waited out the delay"
        assert pending.recv(1) == b"" and idle.sock.recv(1) == b""
    idle.close()
    assert threading.active_count() == before, threading.enumerate()


def test_fake_server_reraises_responder_errors() -> None:
    def responder(body: dict, attempt: int) -> Reply:
        raise LookupError("no script for this prompt")

    with pytest.raises(LookupError, match="no script"), FakeServer(responder) as server:
        assert generate(server.base_url).error is not None


def test_connections_are_pooled_per_model_and_closed() -> None:
    """One session per model: at most max_connections sockets, reused, all closed by aclose."""
    config = GenerateConfig(max_connections=2, timeout=2.0, max_retries=0)

    with FakeServer(scripted(Reply(delay=0.05))) as server:
        gens = asyncio.run(_twelve_at_once(
            OpenAIModel("openai/fake", "fake-model", server.base_url, None), config))
        assert len(server.requests) == 12
        assert server.connections_opened == 2
        deadline = time.monotonic() + 30  # a wait for the closes, not a bound on their time
        while server.open_connections and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.open_connections == 0
    assert all(g.error is None for g in gens)


@pytest.mark.parametrize(
    ("finish_reason", "truncated", "refused"),
    [("stop", False, False), ("length", True, False), ("content_filter", False, True)],
)
def test_stop_reason_is_recorded(finish_reason: str, truncated: bool, refused: bool) -> None:
    with FakeServer(scripted(Reply(text="partial", finish_reason=finish_reason))) as server:
        gen = generate(server.base_url)
    assert gen.text == "partial" and gen.error is None
    assert gen.stop_reason == finish_reason
    assert (gen.truncated, gen.refused) == (truncated, refused)


def test_refusal_text_is_kept() -> None:
    with FakeServer(scripted(Reply(refusal="I can't help with that."))) as server:
        gen = generate(server.base_url)
        assert len(server.requests) == 1
    assert gen.text == "" and gen.error is None
    assert gen.extra["refusal"] == "I can't help with that." and gen.refused


def test_list_content_is_read_not_retried() -> None:
    parts = [
        {"type": "text", "text": "The answer "},
        {"type": "image_url", "image_url": {"url": "data:,"}},
        {"type": "text", "text": "is 42"},
        {"type": "refusal", "refusal": "(but not the rest)"},
    ]
    with FakeServer(scripted(Reply(parts=parts))) as server:
        gen = generate(server.base_url)
        assert len(server.requests) == 1
    assert gen.text == "The answer is 42" and gen.attempts == 1
    assert gen.extra["refusal"] == "(but not the rest)"


@pytest.mark.parametrize("parts", [[{"type": "text", "text": 7}], ["text"], [{"text": "x"}], 42])
def test_content_of_another_shape_is_malformed(parts: object) -> None:
    body = json.dumps({"choices": [{"message": {"content": parts}}]})
    with FakeServer(scripted(Reply.malformed(body), Reply(text="42"))) as server:
        gen = generate(server.base_url)
    assert gen.text == "42" and gen.attempts == 2


def test_out_of_quota_fails_at_once() -> None:
    quota = Reply.error(429, "You exceeded your current quota.", code="insufficient_quota")
    with FakeServer(scripted(quota)) as server:
        with pytest.raises(OutOfQuota, match="out of quota .*You exceeded your current"):
            generate(server.base_url)
        assert len(server.requests) == 1
    assert issubclass(OutOfQuota, ModelError), "the CLI reports it as one clear error"


def test_rate_limit_with_an_error_code_is_still_retried() -> None:
    limited = Reply.error(429, "Rate limit reached", code="rate_limit_exceeded")
    with FakeServer(scripted(limited, Reply(text="42"))) as server:
        gen = generate(server.base_url)
    assert gen.text == "42" and gen.attempts == 2


def test_retry_after_ms_is_honoured_and_wins() -> None:
    clock = ManualClock()
    wait = Reply.error(429, retry_after=5, retry_after_ms=300)
    with FakeServer(scripted(wait, Reply())) as server:
        gen = generate(server.base_url, clock=clock)
    assert gen.attempts == 2 and clock.sleeps == [0.3]


def test_retry_after_http_date_is_honoured() -> None:
    """An HTTP date has whole seconds, and the reply takes a moment to come: a date 30 s
    from now asks for a wait of a little under 30 s."""
    clock = ManualClock()
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    with FakeServer(scripted(Reply.error(503, retry_after=when), Reply())) as server:
        gen = generate(server.base_url, clock=clock)
    [wait] = clock.sleeps
    assert gen.attempts == 2 and 20 < wait <= 30


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:30 GMT"}, 30.0),
        ({"retry-after": "Wed, 21 Oct 2015 07:27:00 GMT"}, 0.0),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:10 -0000"}, 10.0),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after": "inf"}, None),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_forms(headers: dict[str, str], seconds: float | None) -> None:
    now = datetime(2015, 10, 21, 7, 28, tzinfo=UTC)
    assert retry_after(headers, now) == seconds


@pytest.mark.parametrize(
    ("model", "reasoning"),
    [
        ("o1", True), ("o1-mini", True), ("o3-mini", True), ("o4-mini-2025-04-16", True),
        ("gpt-5", True), ("gpt-5-mini", True), ("gpt-5.1", True), ("openai/o3", True),
        ("gpt-4o", False), ("gpt-4.1-mini", False), ("gpt-oss-20b", False),
        ("Qwen/Qwen3-8B", False), ("olmo-2", False), ("o", False),
    ],
)
def test_reasoning_models_are_recognised(model: str, reasoning: bool) -> None:
    assert OpenAIModel("openai/x", model, "http://h/v1", None).reasoning is reasoning


def test_reasoning_model_body_has_max_completion_tokens_and_no_sampling() -> None:
    config = GenerateConfig(temperature=0.7, top_p=0.9, max_tokens=64, seed=1)
    with FakeServer(scripted(Reply())) as server:
        model = OpenAIModel("openai/o3-mini", "o3-mini", server.base_url, None)

        async def go() -> Generation:
            try:
                return await model.generate(request(), config)
            finally:
                await model.aclose()

        assert asyncio.run(go()).error is None
        [received] = server.requests
    assert received.body == {
        "model": "o3-mini",
        "messages": [{"role": "user", "content": "What is 6*7?"}],
        "max_completion_tokens": 64,
        "seed": 1,
    }


def test_model_args_reach_the_request_body() -> None:
    args = {
        "reasoning_effort": "high",
        "chat_template_kwargs": '{"enable_thinking": false}',
        "top_k": "20",
    }
    with FakeServer(scripted(Reply())) as server:
        model = OpenAIModel("openai-api/vllm/m", "m", server.base_url, None, model_args=args)

        async def go() -> Generation:
            try:
                return await model.generate(request(), GenerateConfig(temperature=0.5))
            finally:
                await model.aclose()

        assert asyncio.run(go()).error is None
        [received] = server.requests
    assert received.body["reasoning_effort"] == "high"
    assert received.body["chat_template_kwargs"] == {"enable_thinking": False}
    assert received.body["top_k"] == 20 and received.body["temperature"] == 0.5


def test_model_args_cannot_set_what_the_run_sets() -> None:
    with pytest.raises(ModelError, match="temperature: --temperature; top_p: --top-p"):
        OpenAIModel("openai/m", "m", "http://h/v1", None, {"top_p": "1", "temperature": "0"})


def clear_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for scheme in ("http", "https", "all", "no"):
        for var in (f"{scheme}_proxy", f"{scheme.upper()}_PROXY"):
            monkeypatch.delenv(var, raising=False)


def test_proxy_from_the_environment_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP_PROXY and friends are honoured, as they were with httpx."""
    clear_proxies(monkeypatch)
    with FakeServer(scripted(Reply(text="via proxy"))) as server:
        monkeypatch.setenv("HTTP_PROXY", server.anthropic_base_url)
        gen = generate("http://api.example.invalid/v1")
        [received] = server.requests
    assert gen.text == "via proxy"
    assert received.target == "http://api.example.invalid/v1/chat/completions"
    assert received.path == "/v1/chat/completions"


def test_no_proxy_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_proxies(monkeypatch)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.local:3128")
    monkeypatch.setenv("NO_PROXY", "internal.example,localhost")
    assert proxy_for("https://api.openai.com/v1/x") == "http://proxy.local:3128"
    assert proxy_for("https://internal.example:8443/v1/x") is None
    assert proxy_for("http://api.openai.com/v1/x") is None, "no HTTP_PROXY set"


def dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def test_the_probe_passes_a_live_server_and_refuses_a_dead_one(tmp_path: Path) -> None:
    async def start(base_url: str) -> None:
        model = OpenAIModel("openai/fake", "fake-model", base_url, "sk-test")
        try:
            await model.start(FAST, tmp_path)
        finally:
            await model.aclose()

    with FakeServer(scripted(Reply())) as server:
        asyncio.run(start(server.base_url))
        assert server.probes == 1 and server.requests == []
    with pytest.raises(Unreachable, match=r"cannot reach the model server: http://127\.0\.0\.1:"):
        asyncio.run(start(dead_url()))


def test_the_breaker_trips_when_no_request_connects() -> None:
    """Eight requests against a dead port, each allowed many retries: the fifth refused
    connection in a row ends them all, instead of each backing off on its own."""
    config = GenerateConfig(max_retries=20, retry_base_delay=0.01, max_connection_failures=5)
    clock = ManualClock()
    model = OpenAIModel("openai/fake", "fake-model", dead_url(), None, clock=clock)

    async def go() -> list[Generation]:
        try:
            return await asyncio.gather(*(model.generate(request(f"q{i}"), config)
                                          for i in range(8)))
        finally:
            await model.aclose()

    with pytest.raises(Unreachable, match="5 requests in a row could not connect to http"):
        asyncio.run(go())
    assert len(clock.sleeps) == 4, "only the four refusals before the fifth backed off"


def test_server_errors_do_not_trip_the_breaker() -> None:
    """A server that answers, even with errors, is up: its failures are the samples'."""
    config = GenerateConfig(max_retries=3, retry_base_delay=0.01, max_connection_failures=1)
    with FakeServer(scripted(Reply.error(503, "overloaded"))) as server:
        gen = generate(server.base_url, config)
    assert gen.error is not None and gen.error.startswith("HTTP 503 after 4 attempts")
    assert gen.endpoint == server.base_url


async def _spread(model: OpenAIModel, prompts: list[str],
                  config: GenerateConfig = FAST) -> list[Generation]:
    """The prompts in flight together on ``model``, which stays open."""
    return await asyncio.gather(*(model.generate(request(p), config) for p in prompts))


def test_requests_go_to_the_endpoint_with_the_fewest_in_flight() -> None:
    """A replica that answers at once takes most of the work from one that takes 1 s."""
    with FakeServer(scripted(Reply(delay=1.0))) as slow, \
            FakeServer(scripted(Reply())) as fast:
        model = OpenAIModel("openai-api/x/m", "m", [slow.base_url, fast.base_url], None)

        config = GenerateConfig(max_connections=4, max_retries=0)
        queue = [f"q{i}" for i in range(60)]
        gens: list[Generation] = []

        async def worker() -> None:  # as the runner calls it: one worker per connection
            while queue:
                gens.append(await model.generate(request(queue.pop()), config))

        async def go() -> None:
            try:
                await asyncio.gather(*(worker() for _ in range(config.max_connections)))
            finally:
                await model.aclose()

        asyncio.run(go())
        counts = len(slow.requests), len(fast.requests)
    assert all(g.error is None for g in gens) and sum(counts) == 60
    assert counts[1] > 5 * counts[0], counts
    assert {g.endpoint for g in gens} == {slow.base_url, fast.base_url}


def test_a_dead_endpoint_is_benched_then_tried_again(tmp_path: Path) -> None:
    """The probe benches a replica that is down; the requests go to the other; once the
    bench is over and the replica is back, it takes requests again."""
    down = dead_url()
    port = urlsplit(down).port
    clock = ManualClock()
    with FakeServer(scripted(Reply(text="live"))) as live:
        model = OpenAIModel("openai-api/x/m", "m", [live.base_url, down], None, clock=clock)

        async def before() -> list[Generation]:
            await model.start(FAST, tmp_path)
            return await _spread(model, [f"early {i}" for i in range(10)])

        async def after() -> list[Generation]:
            try:
                clock.advance(BENCH_SECONDS)
                return await _spread(model, [f"late {i}" for i in range(10)])
            finally:
                await model.aclose()

        loop = asyncio.new_event_loop()
        try:
            early = loop.run_until_complete(before())
            with FakeServer(scripted(Reply(text="back")), port=port) as back:
                late = loop.run_until_complete(after())
                assert back.probes == 0 and len(back.requests) > 0
        finally:
            loop.close()
    assert {(g.text, g.endpoint) for g in early} == {("live", live.base_url)}
    assert all(g.error is None for g in late)
    assert {g.endpoint for g in late} == {live.base_url, down}


def test_a_replica_that_dies_hands_its_requests_to_the_other() -> None:
    """Refused connections on one replica are retried on the other at once, so no sample
    fails and the breaker does not trip while one server answers."""
    config = GenerateConfig(max_retries=2, retry_base_delay=5.0, max_connection_failures=2)
    clock = ManualClock()
    with FakeServer(scripted(Reply(text="up"))) as up:
        model = OpenAIModel("openai-api/x/m", "m", [dead_url(), up.base_url], None,
                            clock=clock)

        async def go() -> list[Generation]:
            try:
                return await _spread(model, [f"q{i}" for i in range(12)], config)
            finally:
                await model.aclose()

        gens = asyncio.run(go())
    assert clock.sleeps == [], "a retry elsewhere does not wait out the back-off"
    assert {(g.text, g.endpoint, g.error) for g in gens} == {("up", up.base_url, None)}


def streamed_and_whole(reply: Reply, official: bool = False,
                       model_args: dict[str, str] | None = None,
                       ) -> tuple[Generation, Generation, list]:
    """The same reply asked for with a short and with a long max_tokens (streamed unless
    the model is OpenAI's own), and the request bodies the server saw."""
    with FakeServer(scripted(reply)) as server:
        model = OpenAIModel("openai-api/fake/m", "m", server.base_url, None, model_args,
                            official=official)

        async def go() -> tuple[Generation, Generation]:
            try:
                whole = await model.generate(request("short"), FAST)
                long = GenerateConfig(max_retries=3, retry_base_delay=0.01, timeout=2.0,
                                      max_tokens=STREAM_ABOVE + 1)
                return whole, await model.generate(request("long"), long)
            finally:
                await model.aclose()

        whole, streamed = asyncio.run(go())
        return whole, streamed, server.requests


@pytest.mark.parametrize("reply", [
    Reply(text="assert f(1) == 2", input_tokens=31, output_tokens=9, reasoning="one plus one"),
    Reply(text="[1, 2, 3, 4, 5, 6, 7", finish_reason="length", piece=1),
    Reply(refusal="I cannot help with that", finish_reason="stop"),
    Reply(text=""),
])
def test_a_long_reply_is_streamed_and_recorded_as_a_whole_one(reply: Reply) -> None:
    whole, streamed, [short, long] = streamed_and_whole(reply)
    assert "stream" not in short.body
    assert long.body["stream"] is True
    assert long.body["stream_options"] == {"include_usage": True}
    assert long.body["max_tokens"] == STREAM_ABOVE + 1
    assert streamed.error is None and streamed.attempts == 1
    for field in ("text", "input_tokens", "output_tokens", "extra", "stop_reason",
                  "truncated", "refused"):
        assert getattr(streamed, field) == getattr(whole, field), field


def test_openai_streams_only_when_asked() -> None:
    """OpenAI refuses streams of some models to unverified organizations: its own API is
    streamed with -M stream=true only."""
    _, unasked, [_, long] = streamed_and_whole(Reply(text="42"), official=True)
    assert "stream" not in long.body and unasked.text == "42"
    _, asked, [short, long] = streamed_and_whole(Reply(text="42"), official=True,
                                                 model_args={"stream": "true"})
    assert short.body["stream"] is True and long.body["stream"] is True
    assert asked.text == "42" and asked.output_tokens == 5


def test_stream_false_keeps_long_replies_whole() -> None:
    _, whole, [_, long] = streamed_and_whole(Reply(text="42"), model_args={"stream": "false"})
    assert "stream" not in long.body and whole.text == "42"
    with pytest.raises(ModelError, match="-M stream takes true or false"):
        OpenAIModel("openai-api/fake/m", "m", "http://h/v1", None, {"stream": "maybe"})
    with pytest.raises(ModelError, match="stream_options: -M stream"):
        OpenAIModel("openai-api/fake/m", "m", "http://h/v1", None, {"stream_options": "{}"})


STREAMED = GenerateConfig(max_retries=2, retry_base_delay=0.01, timeout=2.0)


def generate_streamed(server: FakeServer) -> Generation:
    model = OpenAIModel("openai-api/fake/m", "m", server.base_url, None, {"stream": "true"})

    async def go() -> Generation:
        try:
            return await model.generate(request(), STREAMED)
        finally:
            await model.aclose()

    return asyncio.run(go())


def test_a_stream_cut_mid_way_is_retried() -> None:
    with FakeServer(scripted(Reply(text="forty-two", cut=3), Reply(text="forty-two"))) as server:
        gen = generate_streamed(server)
    assert gen.error is None and gen.text == "forty-two" and gen.attempts == 2


def test_a_stream_cut_every_time_is_an_error_record() -> None:
    with FakeServer(scripted(Reply(text="forty-two", cut=2))) as server:
        gen = generate_streamed(server)
        assert server.count("What is 6*7?") == 3
    assert gen.text is None and gen.attempts == 3
    assert gen.error is not None and gen.error.startswith("connection error after 3 attempts")


def test_an_error_event_in_the_stream_is_retried() -> None:
    with FakeServer(scripted(Reply(stream_error=True), Reply(text="42"))) as server:
        gen = generate_streamed(server)
    assert gen.error is None and gen.text == "42" and gen.attempts == 2


def test_a_stream_that_ends_before_a_finish_reason_is_interrupted() -> None:
    """A proxy that ends the body properly, but before the finish reason, has not sent a
    whole answer."""
    with FakeServer(scripted(Reply(text="forty-two", end=4))) as server:
        gen = generate_streamed(server)
    assert gen.text is None and gen.attempts == 3
    assert gen.error is not None
    assert gen.error.startswith("interrupted stream (the stream ended before a finish reason)")


def test_a_stream_is_whole_at_its_finish_reason_without_done() -> None:
    """transformers serve sends the finish reason and the usage in one last chunk and
    closes the stream, with no [DONE]."""
    with FakeServer(scripted(Reply(text="forty-two", stream="no-done"))) as server:
        gen = generate_streamed(server)
    assert gen.error is None and gen.attempts == 1
    assert (gen.text, gen.stop_reason, gen.output_tokens) == ("forty-two", "stop", 5)


def test_a_stream_stopped_early_by_the_server_is_retried_never_scored() -> None:
    """llama.cpp's server stops a stream when another request comes: a role chunk, then
    [DONE]. That is no answer: retried, and if it stays so, an error of its own."""
    with FakeServer(scripted(Reply(stream="interrupted"), Reply(text="42"))) as server:
        gen = generate_streamed(server)
    assert gen.error is None and gen.text == "42" and gen.attempts == 2
    with FakeServer(scripted(Reply(stream="interrupted"))) as server:
        gen = generate_streamed(server)
    assert gen.text is None and gen.attempts == 3 and gen.stop_reason is None
    assert gen.error is not None and gen.error.startswith(
        "interrupted stream (the server ended the stream without a finish reason) after 3")


def test_a_stream_far_past_max_tokens_is_cut_and_recorded_as_cut() -> None:
    """A server ignoring max_tokens would hold a sample until its deadline, its text
    growing: the client cuts it, and the answer is recorded as cut at a limit."""
    config = GenerateConfig(max_retries=0, timeout=5.0, max_tokens=16)
    with FakeServer(scripted(Reply(text="x", stream="endless"))) as server:
        model = OpenAIModel("openai-api/fake/m", "m", server.base_url, None, {"stream": "true"})

        async def go() -> Generation:
            try:
                return await model.generate(request(), config)
            finally:
                await model.aclose()

        gen = asyncio.run(go())
    assert gen.error is None and gen.attempts == 1
    assert gen.text == "x" * (EVENTS_PER_TOKEN * 16 + EVENTS_SLACK + 1)
    assert gen.stop_reason == CUT_BY_CLIENT and gen.truncated


def test_a_reply_body_over_its_bound_is_malformed_and_not_read_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A server (or whatever answers at its address) that sends an endless or huge body:
    the client reads one byte past the bound and no more, and the sample's error says so;
    an error reply's body is kept only up to its own bound."""
    from execbench.models.http import replies

    monkeypatch.setattr(replies, "REPLY_BYTES", 4096)
    answer = Reply(text="x" * 20_000)
    with FakeServer(scripted(answer)) as server:
        gen = generate(server.base_url, GenerateConfig(max_retries=0, timeout=10.0))
    assert gen.text is None and gen.error is not None
    assert "reply body over 4096 bytes" in gen.error

    with FakeServer(scripted(Reply(status=500, raw="E" * 10**6))) as server:
        gen = generate(server.base_url, GenerateConfig(max_retries=0, timeout=10.0))
    assert gen.error is not None and gen.error.startswith("HTTP 500 after 1 attempt: ")
    assert gen.error.count("E") <= replies.ERROR_BYTES


def test_a_reply_that_comes_in_many_pieces_is_read_whole() -> None:
    """A body larger than one network read (a long answer) arrives in pieces: every piece
    is read, up to the bound."""
    answer = "y" * 3_000_000
    with FakeServer(scripted(Reply(text=answer))) as server:
        gen = generate(server.base_url, GenerateConfig(max_retries=0, timeout=30.0))
    assert gen.error is None and gen.text == answer
