"""What an OpenAI-compatible server says of its context, and how it counts a prompt.

A prompt that cannot fit the server's context with ``--max-tokens`` is refused by each
server in its own way (vLLM: HTTP 400; llama.cpp: HTTP 500; ``transformers serve``: not at
all), after a request and its retries were spent on it. Servers that tell their context
let the runner refuse such a prompt before sending it, with the counts, provided the
server also counts the prompt's tokens with its own tokenizer and chat template: a count
made here (characters / 4, another tokenizer) would be a guess, and a guess refuses
prompts the model could take or sends ones it cannot.

What is asked, once per run (:func:`discover`):

- the context: ``max_model_len`` of the model's entry in ``GET /v1/models`` (vLLM, SGLang),
  else ``n_ctx`` of llama.cpp's ``GET /props`` (under ``default_generation_settings``, or
  at its top in older builds);
- a counter, tried on a short prompt: vLLM's ``POST /tokenize`` with the chat messages
  (its reply has ``count``), else llama.cpp's ``POST /apply-template`` (the chat template
  applied: ``prompt``) followed by ``POST /tokenize`` of that text (``tokens``). A reply
  without those fields is no counter: llama.cpp answers ``/tokenize`` without ``content``
  with no tokens, which would count every prompt as empty.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

from execbench.models.base import ContextWindow, CountError
from execbench.models.http.endpoints import one_line

Ask = Callable[..., Awaitable[tuple[int, Any]]]
"""``HttpModel.ask``: (method, path, body, root=...) -> (status, JSON body or None)."""

ASK_TIMEOUT = 30.0
"""Seconds one of these requests may take: they are cheap, and a server that takes longer
is left unchecked rather than holding up the run."""

PROBE_MESSAGES = [{"role": "user", "content": "Count these tokens."}]
"""The prompt a counter is tried on when the run starts."""

VLLM = "vllm"
LLAMA = "llama.cpp"


@dataclass
class ServerContext:
    """What :func:`discover` found: the context (or None) and how prompts are counted."""

    window: ContextWindow | None
    style: str | None
    """``VLLM`` or ``LLAMA``: which tokenize protocol counts prompts; None: none does."""


async def _json(ask: Ask, method: str, path: str, body: dict[str, Any] | None = None,
                root: bool = False) -> Any:
    """The JSON body of a 200 reply; None for any other reply or none at all."""
    try:
        status, data = await ask(method, path, body, root=root, timeout=ASK_TIMEOUT)
    except (aiohttp.ClientError, TimeoutError):
        return None
    return data if status == 200 else None


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None


async def context_length(ask: Ask, model: str) -> tuple[int, str] | None:
    """The server's context in tokens and where it said so; None when it does not say."""
    listed = await _json(ask, "GET", "/models")
    entries = listed.get("data") if isinstance(listed, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model:
            length = _positive(entry.get("max_model_len"))
            if length is not None:
                return length, "the server's max_model_len"
    props = await _json(ask, "GET", "/props", root=True)
    if isinstance(props, dict):
        settings = props.get("default_generation_settings")
        nested = settings.get("n_ctx") if isinstance(settings, dict) else None
        length = _positive(nested) or _positive(props.get("n_ctx"))
        if length is not None:
            return length, "the server's n_ctx (/props)"
    return None


async def count(ask: Ask, style: str, model: str, messages: list[dict[str, str]],
                template_kwargs: dict[str, Any] | None = None) -> int:
    """The tokens of ``messages`` as the server would prompt with them (chat template and
    generation prompt included); raises :class:`CountError` when it does not answer so."""
    if style == VLLM:
        body: dict[str, Any] = {"model": model, "messages": messages,
                                "add_generation_prompt": True}
        if template_kwargs:
            body["chat_template_kwargs"] = template_kwargs
        reply = await _checked(ask, "/tokenize", body)
        tokens = reply.get("count") if isinstance(reply, dict) else None
        if not isinstance(tokens, int) or isinstance(tokens, bool):
            raise CountError(f"/tokenize answered without a count: {one_line(str(reply))}")
        return tokens
    applied = await _checked(ask, "/apply-template", {"messages": messages})
    prompt = applied.get("prompt") if isinstance(applied, dict) else None
    if not isinstance(prompt, str):
        raise CountError(f"/apply-template answered without a prompt: "
                         f"{one_line(str(applied))}")
    reply = await _checked(ask, "/tokenize", {"content": prompt, "add_special": True})
    tokens = reply.get("tokens") if isinstance(reply, dict) else None
    if not isinstance(tokens, list) or (prompt and not tokens):
        raise CountError(f"/tokenize answered without tokens: {one_line(str(reply))}")
    return len(tokens)


async def _checked(ask: Ask, path: str, body: dict[str, Any]) -> Any:
    """The JSON of a 200 reply to ``POST path``; :class:`CountError` for anything else."""
    try:
        status, data = await ask("POST", path, body, root=True, timeout=ASK_TIMEOUT)
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise CountError(f"{path}: {one_line(f'{type(exc).__name__} {exc}')}") from None
    if status != 200:
        raise CountError(f"{path}: HTTP {status} {one_line(str(data))}")
    return data


async def discover(ask: Ask, model: str,
                   template_kwargs: dict[str, Any] | None = None) -> ServerContext:
    """The server's context and the tokenize protocol that counts its prompts, each tried
    once; a server that has neither costs two GET requests."""
    found = await context_length(ask, model)
    if found is None:
        return ServerContext(None, None)
    length, source = found
    for style, counter in ((VLLM, "the server's /tokenize"),
                           (LLAMA, "the server's /apply-template and /tokenize")):
        try:
            await count(ask, style, model, PROBE_MESSAGES, template_kwargs)
        except CountError:
            continue
        return ServerContext(ContextWindow(length, source, counter), style)
    return ServerContext(ContextWindow(length, source, None), None)
