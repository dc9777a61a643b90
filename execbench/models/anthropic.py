"""Anthropic Messages API."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from execbench.models.base import GenerateConfig, Generation, Request
from execbench.models.http import (
    STREAM_ABOVE,
    SYSTEM_CLOCK,
    Assembly,
    Clock,
    HttpModel,
    MalformedReply,
    parse_model_args,
)
from execbench.models.provider import ModelKind, Provider, base_urls, env, require_key

API_VERSION = "2023-06-01"

DEFAULT_MAX_TOKENS = 4096
"""The API refuses requests without ``max_tokens``; this is enough for a worked answer."""

RESERVED = {
    "model": "the model name",
    "messages": "the task's prompt",
    "system": "the task's system message",
    "max_tokens": "--max-tokens",
    "temperature": "--temperature",
    "top_p": "--top-p",
}
"""Request fields the provider fills from the run's settings, and where each comes from."""

DOCUMENTED = frozenset({
    "model", "messages", "max_tokens", "container", "context_management", "mcp_servers",
    "metadata", "service_tier", "stop_sequences", "stream", "system", "temperature",
    "thinking", "tool_choice", "tools", "top_k", "top_p",
})
"""The request fields of the Messages API reference, which ``-M`` keys are checked against:
a misspelt one would otherwise fail every request with a 400."""


NONSTREAMING_TOKENS = {
    "claude-opus-4-20250514": 8_192,
    "claude-opus-4-0": 8_192,
    "claude-4-opus-20250514": 8_192,
    "anthropic.claude-opus-4-20250514-v1:0": 8_192,
    "claude-opus-4@20250514": 8_192,
    "anthropic.claude-opus-4-1-20250805-v1:0": 8_192,
    "claude-opus-4-1@20250805": 8_192,
}
"""Models whose non-streaming requests Anthropic's SDK limits to fewer tokens than
``STREAM_ABOVE`` (its ``MODEL_NONSTREAMING_TOKENS``)."""

def _thinks(thinking: object) -> bool:
    """Extended thinking is on (``-M thinking={"type": "enabled", ...}``): the API then
    takes no temperature but 1."""
    return isinstance(thinking, dict) and thinking.get("type") != "disabled"


class AnthropicModel(HttpModel):
    """A model served at ``{base_url}/v1/messages``.

    ``model_args`` (``-M key=value``) are added to every request body, for options such as
    ``top_k`` or ``thinking``. Replies are streamed when ``max_tokens`` is more than
    Anthropic's SDK sends without streaming (``STREAM_ABOVE``, or the model's lower limit
    in ``NONSTREAMING_TOKENS``), or with ``-M stream=true``.
    """

    path = "/v1/messages"
    probe_path = "/v1/models"
    takes_seed = False
    """The Messages API has no sampling seed: samples record none, rather than one that was
    never sent."""

    def __init__(
        self,
        name: str,
        model: str,
        base_urls: str | Sequence[str],
        api_key: str,
        model_args: Mapping[str, str] | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        headers = {"x-api-key": api_key, "anthropic-version": API_VERSION}
        extra = parse_model_args(model_args or {}, RESERVED, name, DOCUMENTED)
        super().__init__(name, base_urls, headers, extra, clock)
        self.model = model

    def max_tokens(self, config: GenerateConfig) -> int:
        return config.max_tokens if config.max_tokens is not None else DEFAULT_MAX_TOKENS

    def stream_above(self) -> int:
        return NONSTREAMING_TOKENS.get(self.model, STREAM_ABOVE)

    def reasons(self) -> bool:
        """Extended thinking asked for with ``-M thinking=...``."""
        return _thinks(self.extra_fields.get("thinking"))

    def served_name(self) -> str:
        return self.model

    def stream_fields(self) -> dict[str, Any]:
        return {"stream": True}

    def assembly(self) -> Assembly:
        return MessageStream()

    def payload(self, request: Request, config: GenerateConfig) -> dict[str, Any]:
        """Move system messages to the top-level ``system`` field, the only place the API
        accepts them. The API has no sampling seed, so seeds are dropped. Recent models
        refuse ``temperature`` and ``top_p`` together, so when both are given only the
        temperature is sent."""
        system = [m["content"] for m in request.messages if m["role"] == "system"]
        messages = [m for m in request.messages if m["role"] != "system"]
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": self.max_tokens(config),
        }
        if system:
            payload["system"] = "\n\n".join(system)
        if config.temperature is not None:
            payload["temperature"] = config.temperature
        elif config.top_p is not None:
            payload["top_p"] = config.top_p
        return payload

    def parse(self, body: Any) -> Generation:
        """Join the text blocks; thinking blocks are kept apart so they are never scored."""
        blocks = body["content"]
        text = "".join(block["text"] for block in blocks if block["type"] == "text")
        thinking = "".join(block["thinking"] for block in blocks if block["type"] == "thinking")
        usage = body.get("usage") or {}
        extra: dict[str, Any] = {}
        if body.get("stop_reason") is not None:
            extra["finish_reason"] = body["stop_reason"]
        if thinking:
            extra["reasoning"] = thinking
        return Generation(
            text=text,
            input_tokens=usage.get("input_tokens"),
            output_tokens=usage.get("output_tokens"),
            extra=extra,
        )


class MessageStream(Assembly):
    """A streamed message (``message_start``, content block starts, deltas and stops,
    ``message_delta``, ``message_stop``) assembled into the message the API would have
    sent whole, as Anthropic's SDK accumulates it: text and thinking deltas appended to
    their blocks, the stop reason and output tokens from ``message_delta`` (and its input
    tokens when it has them). ``ping`` is skipped; an ``error`` event (say, overloaded
    mid-way) makes the reply malformed."""

    def __init__(self) -> None:
        self.message: dict[str, Any] | None = None

    def feed(self, event: str, data: str) -> bool:
        if event == "ping":
            return False
        payload = json.loads(data)
        kind = event or payload["type"]
        if kind == "error":
            raise MalformedReply("error event in the stream", data)
        if kind == "message_start":
            self.message = {**payload["message"], "content": []}
            self.message["usage"] = dict(self.message.get("usage") or {})
            return False
        message = self.message
        if message is None:
            raise ValueError(f"{kind} before message_start")
        if kind == "content_block_start":
            message["content"].append(dict(payload["content_block"]))
        elif kind == "content_block_delta":
            block, delta = message["content"][payload["index"]], payload["delta"]
            if delta["type"] == "text_delta":
                block["text"] = block.get("text", "") + delta["text"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta["thinking"]
        elif kind == "message_delta":
            message["stop_reason"] = payload["delta"].get("stop_reason")
            for key, value in (payload.get("usage") or {}).items():
                if value is not None:
                    message["usage"][key] = value
        return kind == "message_stop"

    def finished(self) -> bool:
        return self.message is not None and self.message.get("stop_reason") is not None

    def stop(self, reason: str) -> None:
        if self.message is not None:
            self.message["stop_reason"] = reason

    def body(self) -> dict[str, Any]:
        if self.message is None:
            raise ValueError("the stream has no message_start")
        return self.message


ANTHROPIC_URL = "https://api.anthropic.com"


def _create(name: str, model: str, base_url: str | None,
            model_args: dict[str, str]) -> AnthropicModel:
    url = base_url or env("ANTHROPIC_BASE_URL") or ANTHROPIC_URL
    return AnthropicModel(name, model, base_urls(url), require_key("ANTHROPIC_API_KEY", name),
                          model_args)


PROVIDER = Provider(_create, (ModelKind(
    "anthropic/<model>", "Anthropic's API", "ANTHROPIC_API_KEY (required), ANTHROPIC_BASE_URL",
    "extra request fields the API documents; stream=true|false (default: replies over "
    "21,333 tokens, or the model's lower limit, stream)"),),
    (("temperature", "1 (the API's)"),
     ("top_p", "not sent (recent models refuse it beside a temperature)"),
     ("max_tokens", f"{DEFAULT_MAX_TOKENS} (the API requires one)")),
    own_temperature=lambda name, options: _thinks(
        parse_model_args({"thinking": options.get("thinking", "null")}, {}, name)["thinking"]))
