"""Anthropic Messages API."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from execbench.models.base import GenerateConfig, Generation, Request
from execbench.models.http import HttpModel, parse_model_args

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
    "stream": "not available: replies are read whole",
}
"""Request fields the provider fills from the run's settings, and where each comes from."""

DOCUMENTED = frozenset({
    "model", "messages", "max_tokens", "container", "context_management", "mcp_servers",
    "metadata", "service_tier", "stop_sequences", "stream", "system", "temperature",
    "thinking", "tool_choice", "tools", "top_k", "top_p",
})
"""The request fields of the Messages API reference, which ``-M`` keys are checked against:
a misspelt one would otherwise fail every request with a 400."""


class AnthropicModel(HttpModel):
    """A model served at ``{base_url}/v1/messages``.

    ``model_args`` (``-M key=value``) are added to every request body, for options such as
    ``top_k`` or ``thinking``.
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
    ) -> None:
        headers = {"x-api-key": api_key, "anthropic-version": API_VERSION}
        extra = parse_model_args(model_args or {}, RESERVED, name, DOCUMENTED)
        super().__init__(name, base_urls, headers, extra)
        self.model = model

    def payload(self, request: Request, config: GenerateConfig) -> dict[str, Any]:
        """Move system messages to the top-level ``system`` field, the only place the API
        accepts them. The API has no sampling seed, so seeds are dropped. Recent models
        refuse ``temperature`` and ``top_p`` together, so when both are given only the
        temperature is sent."""
        system = [m["content"] for m in request.messages if m["role"] == "system"]
        messages = [m for m in request.messages if m["role"] != "system"]
        max_tokens = config.max_tokens if config.max_tokens is not None else DEFAULT_MAX_TOKENS
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
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
