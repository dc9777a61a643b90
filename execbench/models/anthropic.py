"""Anthropic Messages API."""

from __future__ import annotations

from typing import Any

from execbench.models.base import GenerateConfig, Generation, Request
from execbench.models.http import HttpModel

API_VERSION = "2023-06-01"

DEFAULT_MAX_TOKENS = 4096
"""The API refuses requests without ``max_tokens``; this is enough for a worked answer."""


class AnthropicModel(HttpModel):
    """A model served at ``{base_url}/v1/messages``."""

    def __init__(self, name: str, model: str, base_url: str, api_key: str) -> None:
        headers = {"x-api-key": api_key, "anthropic-version": API_VERSION}
        super().__init__(name, f"{base_url.rstrip('/')}/v1/messages", headers)
        self.model = model

    def payload(self, request: Request, config: GenerateConfig) -> dict[str, Any]:
        """Move system messages to the top-level ``system`` field, the only place the API
        accepts them. The API has no sampling seed, so seeds are dropped."""
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
        if config.top_p is not None:
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
