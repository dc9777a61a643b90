"""OpenAI chat completions, which also covers the many servers that copy that API."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from execbench.models.base import (
    ContextWindow,
    CountError,
    GenerateConfig,
    Generation,
    ModelError,
    Request,
)
from execbench.models.http import (
    SYSTEM_CLOCK,
    Assembly,
    Clock,
    HttpModel,
    MalformedReply,
    parse_model_args,
)
from execbench.models.http.context import ServerContext, count, discover
from execbench.models.provider import (
    SERVER_DEFAULTS,
    ModelKind,
    Provider,
    base_urls,
    env,
    require_key,
)

REASONING_MODEL = re.compile(r"(?:^|/)(?:o\d+(?:-|$)|gpt-5)", re.IGNORECASE)
"""OpenAI's reasoning models (o1, o3-mini, o4-mini, gpt-5, gpt-5-mini, ...), also behind a
proxy that prefixes the name (``openai/o3``). The API refuses ``max_tokens`` for them (it
wants ``max_completion_tokens``) and any temperature or top_p but the default."""

def _reasoning_model(name: str) -> bool:
    return REASONING_MODEL.search(name) is not None


RESERVED = {
    "model": "the model name",
    "messages": "the task's prompt",
    "temperature": "--temperature",
    "top_p": "--top-p",
    "max_tokens": "--max-tokens",
    "max_completion_tokens": "--max-tokens",
    "seed": "--seed",
    "n": "-n (one request per sample)",
    "stream_options": "-M stream (a stream always asks for its usage)",
}
"""Request fields the provider fills from the run's settings, and where each comes from."""

DOCUMENTED = frozenset({
    "model", "messages", "audio", "frequency_penalty", "logit_bias", "logprobs",
    "max_completion_tokens", "max_tokens", "metadata", "modalities", "n",
    "parallel_tool_calls", "prediction", "presence_penalty", "prompt_cache_key",
    "reasoning_effort", "response_format", "safety_identifier", "seed", "service_tier",
    "stop", "store", "stream", "stream_options", "temperature", "tool_choice", "tools",
    "top_logprobs", "top_p", "user", "verbosity", "web_search_options",
})
"""The request fields of OpenAI's chat completions API reference (deprecated ones left
out), which ``openai/`` models check ``-M`` against. OpenAI-compatible servers
(``openai-api/``) take fields of their own, so their ``-M`` keys are passed unchecked."""


class OpenAIModel(HttpModel):
    """A model served at ``{base_url}/chat/completions``, on one or several base URLs.

    ``api_key`` is optional because local OpenAI-compatible servers (vLLM, Ollama,
    llama.cpp) usually accept anonymous requests. ``model_args`` (``-M key=value``) are
    added to every request body, for server options such as ``reasoning_effort`` or
    vLLM's ``chat_template_kwargs``; with ``documented``, only those fields are taken.

    ``official`` is OpenAI's own API, whose replies are streamed only with ``-M
    stream=true``: OpenAI refuses to stream some models (o3, gpt-5) to an organization it
    has not verified, while a compatible server streams any reply, so there long replies
    are streamed without being asked.
    """

    path = "/chat/completions"
    probe_path = "/models"

    def __init__(
        self,
        name: str,
        model: str,
        base_urls: str | Sequence[str],
        api_key: str | None,
        model_args: Mapping[str, str] | None = None,
        documented: frozenset[str] | None = None,
        official: bool = False,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        extra = parse_model_args(model_args or {}, RESERVED, name, documented)
        super().__init__(name, base_urls, headers, extra, clock)
        self.model = model
        self.reasoning = _reasoning_model(model)
        self.auto_stream = not official
        self.official = official
        self._context: ServerContext | None = None

    async def context(self) -> ContextWindow | None:
        """The server's context, when it tells it (:mod:`.http.context`); asked once.
        OpenAI's own API tells none, so it is not asked."""
        if self.official:
            return None
        if self._context is None:
            self._context = await discover(self.ask, self.model, self._template_kwargs())
        return self._context.window

    async def prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        """The prompt's tokens, counted by the server's own tokenizer."""
        if self._context is None or self._context.style is None:
            raise CountError(f"{self.name}: the server counts no prompt tokens")
        return await count(self.ask, self._context.style, self.model, messages,
                           self._template_kwargs())

    def _template_kwargs(self) -> dict[str, Any] | None:
        """``-M chat_template_kwargs``, which changes the prompt the template makes."""
        kwargs = self.extra_fields.get("chat_template_kwargs")
        return kwargs if isinstance(kwargs, dict) else None

    def reasons(self) -> bool:
        """An o-series or gpt-5 model, or any model asked for a reasoning effort."""
        return self.reasoning or "reasoning_effort" in self.extra_fields

    def served_name(self) -> str:
        return self.model

    def stream_fields(self) -> dict[str, Any]:
        return {"stream": True, "stream_options": {"include_usage": True}}

    def assembly(self) -> Assembly:
        return ChatStream()

    def payload(self, request: Request, config: GenerateConfig) -> dict[str, Any]:
        """Only settings the user chose are sent, so each server applies its own defaults.

        Reasoning models take the token limit as ``max_completion_tokens`` and only the
        default sampling, so temperature and top_p are not sent to them.
        """
        payload: dict[str, Any] = {"model": self.model, "messages": request.messages}
        seed = request.seed if request.seed is not None else config.seed
        optional: dict[str, Any] = {"seed": seed}
        if self.reasoning:
            optional["max_completion_tokens"] = config.max_tokens
        else:
            optional.update(
                temperature=config.temperature, top_p=config.top_p, max_tokens=config.max_tokens
            )
        payload.update({key: value for key, value in optional.items() if value is not None})
        return payload

    def parse(self, body: Any) -> Generation:
        """Read the first choice; a missing choice or message is a malformed response.

        A null ``content`` is a real, empty answer (for example a reasoning model that spent
        its whole token budget thinking), so it becomes ``""`` rather than a retry. Content
        given as a list of parts (some servers do) is its text parts joined. A refusal's
        text (``message.refusal``, or a refusal part) is kept in ``extra["refusal"]``.
        """
        choice = body["choices"][0]
        message = choice["message"]
        content, refusals = _content(message.get("content"))
        if message.get("refusal"):
            refusals.insert(0, message["refusal"])
        usage = body.get("usage") or {}
        extra: dict[str, Any] = {}
        if choice.get("finish_reason") is not None:
            extra["finish_reason"] = choice["finish_reason"]
        # vLLM and DeepSeek call the thinking trace reasoning_content; others say reasoning.
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if reasoning:
            extra["reasoning"] = reasoning
        if refusals:
            extra["refusal"] = "\n".join(refusals)
        return Generation(
            text=content,
            input_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
            extra=extra,
        )


def _content(content: Any) -> tuple[str, list[str]]:
    """The answer text of a message's ``content`` and any refusal parts in it.

    ``content`` is a string, null, or a list of typed parts; text parts are joined, refusal
    parts set apart, and other parts (images, audio) skipped. Any other shape raises
    TypeError, which makes the reply malformed.
    """
    if content is None:
        return "", []
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        raise TypeError(f"content is {type(content).__name__}, expected a string or a list")
    texts: list[str] = []
    refusals: list[str] = []
    for part in content:
        kind = part["type"]
        if kind == "text":
            texts.append(_string(part["text"]))
        elif kind == "refusal":
            refusals.append(_string(part["refusal"]))
    return "".join(texts), refusals


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"content part is {type(value).__name__}, expected a string")
    return value


class ChatStream(Assembly):
    """A streamed chat completion (``chat.completion.chunk`` events, then ``[DONE]``, which
    some servers leave out) assembled into a ``chat.completion``: the first choice's
    content, refusal and reasoning deltas joined, its last finish reason, and the usage a
    chunk carries (``stream_options.include_usage``: OpenAI and vLLM send it in a last
    chunk of no choices, ``transformers serve`` with the finish reason). An event carrying
    ``error`` (OpenAI's SDK raises on one) makes the reply malformed."""

    def __init__(self) -> None:
        self.parts: dict[str, list[str]] = {"content": [], "refusal": [], "reasoning": []}
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None

    def feed(self, event: str, data: str) -> bool:
        if data.strip() == "[DONE]":
            return True
        chunk = json.loads(data)
        if chunk.get("error"):
            raise MalformedReply("error event in the stream", data)
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            for key, field in (("content", "content"), ("refusal", "refusal"),
                               ("reasoning", "reasoning_content"), ("reasoning", "reasoning")):
                piece = delta.get(field)
                if piece:
                    self.parts[key].append(_string(piece))
            if choice.get("finish_reason") is not None:
                self.finish_reason = choice["finish_reason"]
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        return False

    def finished(self) -> bool:
        return self.finish_reason is not None

    def stop(self, reason: str) -> None:
        self.finish_reason = reason

    def body(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant",
                                   "content": "".join(self.parts["content"]) or None}
        if self.parts["refusal"]:
            message["refusal"] = "".join(self.parts["refusal"])
        if self.parts["reasoning"]:
            message["reasoning_content"] = "".join(self.parts["reasoning"])
        return {"choices": [{"index": 0, "message": message,
                             "finish_reason": self.finish_reason}],
                "usage": self.usage}


OPENAI_URL = "https://api.openai.com/v1"


def _official(name: str, model: str, base_url: str | None,
              model_args: dict[str, str]) -> OpenAIModel:
    url = base_url or env("OPENAI_BASE_URL") or OPENAI_URL
    return OpenAIModel(name, model, base_urls(url), require_key("OPENAI_API_KEY", name),
                       model_args, DOCUMENTED, official=True)


def _compatible(name: str, rest: str, base_url: str | None,
                model_args: dict[str, str]) -> OpenAIModel:
    """``openai-api/<server>/<model>``: the server name selects ``<SERVER>_BASE_URL`` and
    ``<SERVER>_API_KEY``, so several local servers can be configured side by side."""
    server, _, model = rest.partition("/")
    if not server or not model:
        raise ModelError(f"model name {name!r} must look like openai-api/<name>/<model>")
    prefix = re.sub(r"[^A-Za-z0-9]", "_", server).upper()
    url = base_url or env(f"{prefix}_BASE_URL")
    if not url:
        raise ModelError(f"openai-api/{server}/... needs --model-base-url or {prefix}_BASE_URL")
    return OpenAIModel(name, model, base_urls(url), env(f"{prefix}_API_KEY"), model_args)


OPENAI = Provider(_official, (ModelKind(
    "openai/<model>", "OpenAI's API", "OPENAI_API_KEY (required), OPENAI_BASE_URL",
    "extra request fields the API documents (reasoning_effort=high, ...); "
    "stream=true to stream replies"),),
    (("temperature", "1 (the API's; reasoning models take no other)"),
     ("top_p", "1 (the API's; reasoning models take no other)"),
     ("max_tokens", "not sent: up to the model's output limit")),
    own_temperature=lambda name, options: _reasoning_model(name))

OPENAI_API = Provider(_compatible, (ModelKind(
    "openai-api/<name>/<model>", "any OpenAI-compatible server (vLLM, SGLang, Ollama, "
    "llama.cpp): --model-base-url or <NAME>_BASE_URL",
    "<NAME>_BASE_URL, <NAME>_API_KEY (optional)",
    "extra request fields, passed as given (top_k=20, ...); stream=true|false "
    "(default: replies over 21,333 tokens stream)"),), SERVER_DEFAULTS,
    own_temperature=lambda name, options: _reasoning_model(name))
