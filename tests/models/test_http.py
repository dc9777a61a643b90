"""What the HTTP providers share: how long an attempt may wait, a sample's deadline, and
the routing between replicas."""

from __future__ import annotations

import asyncio

import pytest

from execbench.models.anthropic import AnthropicModel
from execbench.models.base import GenerateConfig, Generation, Request, Unreachable
from execbench.models.http import STREAM_ABOVE, SYSTEM_CLOCK, Clock, HttpModel
from execbench.models.http.endpoints import BENCH_AFTER, BENCH_SECONDS, Endpoint, Endpoints
from execbench.models.http.model import DEFAULT_TIMEOUT, LONG_TIMEOUT
from execbench.models.openai import OpenAIModel
from tests.fakeserver import FakeServer, Reply, scripted
from tests.models.clock import ManualClock

URL = "http://127.0.0.1:9/v1"


def openai(model: str = "m", args: dict[str, str] | None = None,
           official: bool = False) -> OpenAIModel:
    return OpenAIModel("openai/x", model, URL, "k", args, official=official)


def anthropic(args: dict[str, str] | None = None) -> AnthropicModel:
    return AnthropicModel("anthropic/x", "claude-x", URL, "k", args)


def wait(model: HttpModel, **settings: float | None) -> float:
    config = GenerateConfig(**settings)  # type: ignore[arg-type]
    return model.attempt_timeout(config, model.streams(config))


def test_reasoning_models_may_think_for_ten_minutes() -> None:
    assert wait(openai("o3-mini", official=True)) == LONG_TIMEOUT
    assert wait(openai("gpt-5", official=True), max_tokens=64) == LONG_TIMEOUT
    assert wait(openai("m", {"reasoning_effort": "high"})) == LONG_TIMEOUT
    thinking = '{"type": "enabled", "budget_tokens": 2048}'
    assert wait(anthropic({"thinking": thinking})) == LONG_TIMEOUT
    assert wait(anthropic({"thinking": '{"type": "disabled"}'})) == DEFAULT_TIMEOUT


def test_a_whole_reply_gets_the_time_its_max_tokens_take() -> None:
    """128,000 tokens an hour, as Anthropic's SDK reckons, within 120 s and 600 s."""
    assert wait(openai()) == DEFAULT_TIMEOUT  # the server's own limit: unknown
    assert wait(openai(), max_tokens=1024) == DEFAULT_TIMEOUT
    assert wait(openai(), max_tokens=8192) == pytest.approx(8192 * 3600 / 128_000)
    assert wait(anthropic()) == DEFAULT_TIMEOUT  # 4096 tokens: 115 s
    assert wait(openai(official=True), max_tokens=100_000) == LONG_TIMEOUT  # not streamed


def test_a_stream_waits_between_events_and_timeout_overrides() -> None:
    assert wait(openai(), max_tokens=STREAM_ABOVE + 1) == DEFAULT_TIMEOUT
    assert wait(anthropic(), max_tokens=60_000) == DEFAULT_TIMEOUT
    assert wait(openai("o3", official=True), timeout=30.0) == 30.0
    assert wait(anthropic(), max_tokens=60_000, timeout=5.0) == 5.0


def generate(server: FakeServer, config: GenerateConfig,
             clock: Clock = SYSTEM_CLOCK) -> Generation:
    model = OpenAIModel("openai-api/fake/m", "m", server.base_url, None, clock=clock)

    async def go() -> Generation:
        try:
            return await model.generate(Request([{"role": "user", "content": "q"}], {}, 0),
                                        config)
        finally:
            await model.aclose()

    return asyncio.run(go())


def test_no_attempt_starts_after_the_sample_deadline() -> None:
    config = GenerateConfig(max_retries=50, retry_base_delay=0.1, timeout=2.0,
                            sample_deadline=0.5)
    clock = ManualClock()
    with FakeServer(scripted(Reply.error(503))) as server:
        gen = generate(server, config, clock)
    assert gen.text is None and gen.error is not None and gen.error.startswith("HTTP 503")
    assert 1 < gen.attempts < 10 and len(clock.sleeps) == gen.attempts - 1
    assert sum(clock.sleeps) < 0.5, "the last attempt started before the deadline"


def test_a_stream_is_cut_at_the_sample_deadline() -> None:
    """A stream that keeps coming is no longer bounded by the read timeout: the deadline
    ends it, and no attempt follows. (Whole, the stream takes 2 s; the error shows it was
    cut.)"""
    slow = Reply(text="x" * 40, piece=1, event_delay=0.05)
    config = GenerateConfig(max_retries=5, retry_base_delay=0.01, timeout=2.0,
                            sample_deadline=0.5, max_tokens=STREAM_ABOVE + 1)
    with FakeServer(scripted(slow)) as server:
        gen = generate(server, config)
    assert gen.text is None and gen.attempts == 1
    assert gen.error == ("deadline passed after 1 attempt: no answer within "
                         "--sample-deadline 0.5 s")


def test_a_failing_replica_is_benched_longer_each_time_it_fails_on_its_return() -> None:
    endpoints = Endpoints(["http://a/v1", "http://b/v1"], "/chat/completions")
    a, b = endpoints.all

    def attempt(now: float, works: bool) -> Endpoint:
        endpoint = endpoints.pick(now)
        endpoints.done(endpoint, now, healthy=works, connected=works,
                       failure="" if works else "connection error: refused")
        return endpoint

    assert [attempt(0.0, works=False) for _ in range(BENCH_AFTER)] == [a] * BENCH_AFTER
    assert attempt(BENCH_SECONDS / 2, works=True) is b, "a is benched"
    assert not endpoints.elsewhere(b, BENCH_SECONDS / 2)
    assert attempt(BENCH_SECONDS, works=False) is a, "back after its bench, with one request"
    assert attempt(BENCH_SECONDS * 2.5, works=True) is b, "benched twice as long"
    assert attempt(BENCH_SECONDS * 3, works=True) is a and a.bench == 0.0
    assert a.failures == 0 and a.last_failure == "connection error: refused"


def test_the_breaker_trips_only_when_no_replica_connects() -> None:
    endpoints = Endpoints(["http://a/v1", "http://b/v1"], "/chat/completions")

    def together(now: float, b_connects: bool) -> None:
        """Two requests in flight at once, one on each replica (no bench is on by ``now``);
        a's is refused."""
        sent = [endpoints.pick(now), endpoints.pick(now)]
        assert sent == endpoints.all
        for endpoint in sent:
            connected = b_connects and endpoint is sent[1]
            endpoints.done(endpoint, now, healthy=False, connected=connected,
                           failure="HTTP 503: busy" if connected else "refused")

    together(0.0, b_connects=False)
    together(100.0, b_connects=True)
    endpoints.check_breaker(2)  # a was refused twice, but b's server is there
    together(200.0, b_connects=False)
    endpoints.check_breaker(2)
    together(300.0, b_connects=False)
    with pytest.raises(Unreachable, match="2 requests in a row could not connect to "
                                          r"http://a/v1 \(refused\); http://b/v1 \(refused\)"):
        endpoints.check_breaker(2)
