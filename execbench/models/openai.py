"""OpenAI chat completions, which also covers the many servers that copy that API."""

from __future__ import annotations

from typing import Any

from execbench.models.base import GenerateConfig, Generation, Request
from execbench.models.http import HttpModel


class OpenAIModel(HttpModel):
    """A model served at ``{base_url}/chat/completions``.

    ``api_key`` is optional because local OpenAI-compatible servers (vLLM, Ollama,
    llama.cpp) usually accept anonymous requests.
    """

    def __init__(self, name: str, model: str, base_url: str, api_key: str | None) -> None:
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        super().__init__(name, f"{base_url.rstrip('/')}/chat/completions", headers)
        self.model = model

    def payload(self, request: Request, config: GenerateConfig) -> dict[str, Any]:
        """Only settings the user chose are sent, so each server applies its own defaults."""
        payload: dict[str, Any] = {"model": self.model, "messages": request.messages}
        seed = request.seed if request.seed is not None else config.seed
        optional = {
            "temperature": config.temperature,
            "top_p": config.top_p,
            "max_tokens": config.max_tokens,
            "seed": seed,
        }
        payload.update({key: value for key, value in optional.items() if value is not None})
        return payload

    def parse(self, body: Any) -> Generation:
        """Read the first choice; a missing choice or message is a malformed response.

        A null ``content`` is a real, empty answer (for example a reasoning model that spent
        its whole token budget thinking), so it becomes ``""`` rather than a retry.
        """
        choice = body["choices"][0]
        message = choice["message"]
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise TypeError(f"content is {type(content).__name__}, expected a string")
        usage = body.get("usage") or {}
        extra: dict[str, Any] = {}
        if choice.get("finish_reason") is not None:
            extra["finish_reason"] = choice["finish_reason"]
        # vLLM and DeepSeek call the thinking trace reasoning_content; others say reasoning.
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if reasoning:
            extra["reasoning"] = reasoning
        return Generation(
            text=content or "",
            input_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
            extra=extra,
        )
