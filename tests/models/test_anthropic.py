"""The Anthropic provider against a real local HTTP server."""

from __future__ import annotations

import asyncio
import json

import pytest

from execbench.models.anthropic import AnthropicModel
from execbench.models.base import GenerateConfig, Generation, ModelError, Request
from tests.fakeserver import FakeServer, Reply, scripted

FAST = GenerateConfig(max_retries=2, retry_base_delay=0.01, timeout=2.0)
QUESTION = [{"role": "user", "content": "What is 6*7?"}]


def generate(
    base_url: str,
    config: GenerateConfig = FAST,
    messages: list[dict[str, str]] = QUESTION,
    seed: int | None = None,
) -> Generation:
    model = AnthropicModel("anthropic/fake", "claude-fake", base_url, "ak-test")
    req = Request(messages=messages, instance={}, sample=0, seed=seed)

    async def go() -> Generation:
        try:
            return await model.generate(req, config)
        finally:
            await model.aclose()

    return asyncio.run(go())


def test_answer_usage_and_thinking_are_parsed() -> None:
    reply = Reply(text="42", input_tokens=21, output_tokens=4, reasoning="6*7 is 42")
    with FakeServer(scripted(reply)) as server:
        gen = generate(server.anthropic_base_url)
        [received] = server.requests
    assert gen.text == "42" and gen.error is None and gen.attempts == 1
    assert (gen.input_tokens, gen.output_tokens) == (21, 4)
    assert gen.extra == {"finish_reason": "end_turn", "reasoning": "6*7 is 42"}
    assert received.path == "/v1/messages"
    assert received.headers["x-api-key"] == "ak-test"
    assert received.headers["anthropic-version"] == "2023-06-01"
    assert received.body == {"model": "claude-fake", "messages": QUESTION, "max_tokens": 4096}


def test_text_blocks_are_concatenated_and_others_skipped() -> None:
    body = {
        "content": [
            {"type": "text", "text": "The answer "},
            {"type": "tool_use", "id": "t", "name": "calc", "input": {}},
            {"type": "text", "text": "is 42"},
        ],
        "usage": {"input_tokens": 1, "output_tokens": 2},
    }
    with FakeServer(scripted(Reply.malformed(json.dumps(body)))) as server:
        gen = generate(server.anthropic_base_url)
    assert gen.text == "The answer is 42" and "reasoning" not in gen.extra


def test_system_messages_move_to_the_system_field() -> None:
    messages = [
        {"role": "system", "content": "Be terse."},
        {"role": "system", "content": "Answer with a number."},
        *QUESTION,
    ]
    with FakeServer(scripted(Reply())) as server:
        generate(server.anthropic_base_url, messages=messages)
        [received] = server.requests
    assert received.body["system"] == "Be terse.\n\nAnswer with a number."
    assert received.body["messages"] == QUESTION


def test_sampling_settings_are_forwarded_and_seed_dropped() -> None:
    """Given both, only the temperature is sent: recent models refuse the pair."""
    both = GenerateConfig(temperature=0.2, top_p=0.5, max_tokens=300, seed=3)
    with FakeServer(scripted(Reply())) as server:
        generate(server.anthropic_base_url, both, seed=9)
        generate(server.anthropic_base_url, GenerateConfig(top_p=0.5))
        first, second = (r.body for r in server.requests)
    assert first["temperature"] == 0.2 and "top_p" not in first
    assert first["max_tokens"] == 300
    assert "seed" not in first
    assert second["top_p"] == 0.5 and "temperature" not in second


def test_overloaded_is_retried() -> None:
    with FakeServer(scripted(Reply.error(529, "overloaded"), Reply(text="42"))) as server:
        gen = generate(server.anthropic_base_url)
        assert server.count("What is 6*7?") == 2
    assert gen.text == "42" and gen.attempts == 2


def test_server_error_forever_gives_up() -> None:
    with FakeServer(scripted(Reply.error(500, "overloaded"))) as server:
        gen = generate(server.anthropic_base_url)
        assert len(server.requests) == FAST.max_retries + 1
    assert gen.text is None and gen.attempts == 3
    assert gen.error is not None and gen.error.startswith("HTTP 500 after 3 attempts: ")
    assert "overloaded" in gen.error


def test_bad_request_is_not_retried() -> None:
    with FakeServer(scripted(Reply.error(400, "max_tokens: too large"))) as server:
        gen = generate(server.anthropic_base_url)
        assert len(server.requests) == 1
    assert gen.error is not None and "max_tokens: too large" in gen.error


def test_malformed_body_is_retried() -> None:
    with FakeServer(scripted(Reply.malformed('{"type": "message"}'), Reply(text="ok"))) as server:
        gen = generate(server.anthropic_base_url)
    assert gen.text == "ok" and gen.attempts == 2


def test_slow_reply_times_out() -> None:
    config = GenerateConfig(max_retries=1, retry_base_delay=0.01, timeout=0.2)
    with FakeServer(scripted(Reply(delay=5))) as server:
        gen = generate(server.anthropic_base_url, config)
        assert len(server.requests) == 2
    assert gen.error is not None and gen.error.startswith("timed out after 2 attempts")


@pytest.mark.parametrize(
    ("stop_reason", "truncated", "refused"),
    [
        ("end_turn", False, False),
        ("max_tokens", True, False),
        ("model_context_window_exceeded", True, False),
        ("refusal", False, True),
    ],
)
def test_stop_reason_is_recorded(stop_reason: str, truncated: bool, refused: bool) -> None:
    with FakeServer(scripted(Reply(text="I won't", finish_reason=stop_reason))) as server:
        gen = generate(server.anthropic_base_url)
    assert gen.text == "I won't" and gen.error is None and gen.attempts == 1
    assert gen.stop_reason == stop_reason
    assert (gen.truncated, gen.refused) == (truncated, refused)


def test_model_args_reach_the_request_body() -> None:
    args = {"top_k": "5", "thinking": '{"type": "enabled", "budget_tokens": 1024}'}
    with FakeServer(scripted(Reply())) as server:
        model = AnthropicModel("anthropic/fake", "claude-fake", server.anthropic_base_url,
                               "ak", args)

        async def go() -> Generation:
            try:
                return await model.generate(Request(QUESTION, {}, 0), FAST)
            finally:
                await model.aclose()

        assert asyncio.run(go()).error is None
        [received] = server.requests
    assert received.body["top_k"] == 5
    assert received.body["thinking"] == {"type": "enabled", "budget_tokens": 1024}


def test_model_args_cannot_set_what_the_run_sets() -> None:
    with pytest.raises(ModelError, match="system: the task's system message"):
        AnthropicModel("anthropic/fake", "claude-fake", "http://h", "ak", {"system": "x"})


def both_ways(reply: Reply, model: str = "claude-fake", max_tokens: int = 30_000,
              model_args: dict[str, str] | None = None) -> tuple[Generation, Generation, list]:
    """The same reply asked for with the default max_tokens and with ``max_tokens``, and
    the request bodies the server saw."""
    with FakeServer(scripted(reply)) as server:
        client = AnthropicModel("anthropic/fake", model, server.anthropic_base_url, "ak",
                                model_args)

        async def go() -> tuple[Generation, Generation]:
            try:
                whole = await client.generate(Request([{"role": "user", "content": "a"}],
                                                      {}, 0), FAST)
                config = GenerateConfig(max_retries=2, retry_base_delay=0.01, timeout=2.0,
                                        max_tokens=max_tokens)
                return whole, await client.generate(
                    Request([{"role": "user", "content": "b"}], {}, 0), config)
            finally:
                await client.aclose()

        whole, other = asyncio.run(go())
        return whole, other, server.requests


@pytest.mark.parametrize("reply", [
    Reply(text="42", input_tokens=21, output_tokens=4, reasoning="6*7 is 42"),
    Reply(text="[1, 2, 3", finish_reason="max_tokens", piece=1),
    Reply(text="", finish_reason="refusal"),
])
def test_past_the_sdk_limit_replies_stream_and_are_recorded_alike(reply: Reply) -> None:
    """Anthropic's SDK refuses non-streaming requests whose max_tokens may take over ten
    minutes (more than 21,333); such requests are streamed, and assembled into the same
    record as a whole reply."""
    whole, streamed, [short, long] = both_ways(reply)
    assert "stream" not in short.body and short.body["max_tokens"] == 4096
    assert long.body["stream"] is True and long.body["max_tokens"] == 30_000
    assert streamed.error is None and streamed.attempts == 1
    for field in ("text", "input_tokens", "output_tokens", "extra", "stop_reason",
                  "truncated", "refused"):
        assert getattr(streamed, field) == getattr(whole, field), field


def test_the_stream_threshold_follows_the_sdk() -> None:
    _, _, [_, at_limit] = both_ways(Reply(), max_tokens=21_333)
    assert "stream" not in at_limit.body
    # Claude Opus 4 is limited to 8,192 tokens without streaming.
    _, _, [_, opus] = both_ways(Reply(), model="claude-opus-4-0", max_tokens=8_193)
    assert opus.body["stream"] is True
    _, kept, [_, unstreamed] = both_ways(Reply(text="42"), model_args={"stream": "false"})
    assert "stream" not in unstreamed.body and kept.text == "42"
    _, _, [short, _] = both_ways(Reply(), model_args={"stream": "true"})
    assert short.body["stream"] is True


def test_a_cut_or_overloaded_stream_is_retried() -> None:
    config = GenerateConfig(max_retries=2, retry_base_delay=0.01, timeout=2.0,
                            max_tokens=30_000)
    for first in (Reply(text="forty-two", cut=5), Reply(stream_error=True)):
        with FakeServer(scripted(first, Reply(text="forty-two"))) as server:
            gen = generate(server.anthropic_base_url, config)
        assert gen.error is None and gen.text == "forty-two" and gen.attempts == 2
    with FakeServer(scripted(Reply(stream_error=True))) as server:
        gen = generate(server.anthropic_base_url, config)
    assert gen.text is None and gen.attempts == 3
    assert gen.error is not None and "error event in the stream" in gen.error
    assert "overloaded_error" in gen.error
