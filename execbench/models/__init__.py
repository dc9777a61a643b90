"""The model registry: turns a ``provider/model`` name into a ready model object."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from dotenv import load_dotenv

from execbench.models.anthropic import DEFAULT_MAX_TOKENS as ANTHROPIC_MAX_TOKENS
from execbench.models.anthropic import AnthropicModel
from execbench.models.base import Model, ModelError
from execbench.models.hf import DEFAULT_MAX_NEW_TOKENS as HF_MAX_TOKENS
from execbench.models.openai import DOCUMENTED as OPENAI_FIELDS
from execbench.models.openai import OpenAIModel

__all__ = ["MODEL_KINDS", "Model", "ModelError", "get_model", "sampling_defaults"]

PROVIDERS = ("openai", "openai-api", "anthropic", "hf", "vllm", "sglang", "reference")


@dataclass(frozen=True)
class ModelKind:
    """One line of ``execbench ls models``: a model name pattern, what serves it, the
    environment variables it reads and the ``-M`` keys it takes."""

    name: str
    description: str
    env: str = ""
    model_args: str = ""
    sampling: tuple[tuple[str, str], ...] = ()
    """What each sampling setting (temperature, top_p, max_tokens) is when the run leaves
    it unset, in words: the provider's own default, which differs between providers."""


SERVER_DEFAULTS = (
    ("temperature", "the server's: recent vLLM and SGLang take the model's generation_config.json "
                    "(often sampling, not greedy), else 1"),
    ("top_p", "the server's: the model's generation_config.json, else 1"),
    ("max_tokens", "not sent: the server's (vLLM: what the context window leaves)"),
)
"""OpenAI-compatible servers, started by the run or not."""


MODEL_KINDS = (
    ModelKind("openai/<model>", "OpenAI's API", "OPENAI_API_KEY (required), OPENAI_BASE_URL",
              "extra request fields the API documents (reasoning_effort=high, ...); "
              "stream=true to stream replies",
              (("temperature", "1 (the API's; reasoning models take no other)"),
               ("top_p", "1 (the API's; reasoning models take no other)"),
               ("max_tokens", "not sent: up to the model's output limit"))),
    ModelKind("openai-api/<name>/<model>", "any OpenAI-compatible server (vLLM, SGLang, "
              "Ollama, llama.cpp): --model-base-url or <NAME>_BASE_URL",
              "<NAME>_BASE_URL, <NAME>_API_KEY (optional)",
              "extra request fields, passed as given (top_k=20, ...); stream=true|false "
              "(default: replies over 21,333 tokens stream)", SERVER_DEFAULTS),
    ModelKind("anthropic/<model>", "Anthropic's API",
              "ANTHROPIC_API_KEY (required), ANTHROPIC_BASE_URL",
              "extra request fields the API documents; stream=true|false (default: replies "
              "over 21,333 tokens, or the model's lower limit, stream)",
              (("temperature", "1 (the API's)"),
               ("top_p", "not sent (recent models refuse it beside a temperature)"),
               ("max_tokens", f"{ANTHROPIC_MAX_TOKENS} (the API requires one)"))),
    ModelKind("vllm/<hub id or folder>", "a vLLM server the run starts and stops",
              "EXECBENCH_VLLM_COMMAND (replaces the server command)",
              "engine flags (tensor_parallel_size=2, ...)", SERVER_DEFAULTS),
    ModelKind("sglang/<hub id or folder>", "an SGLang server the run starts and stops",
              "EXECBENCH_SGLANG_COMMAND (replaces the server command)", "engine flags",
              SERVER_DEFAULTS),
    ModelKind("hf/<hub id or folder>", "transformers in this process (the hf extra)", "",
              "device=cuda|cpu, dtype=auto|float32|float16|bfloat16, batch_size=N",
              (("temperature", "0: greedy, whatever the model's generation_config.json says"),
               ("top_p", "not used when greedy"),
               ("max_tokens", f"{HF_MAX_TOKENS} (capped to what the context leaves)"))),
    ModelKind("reference/oracle", "states the ground truth: must score 100%"),
    ModelKind("reference/constant", "the same answer to every prompt: a floor", "",
              "answer=TEXT"),
    ModelKind("reference/random-category", "a uniformly random category of the value's "
              "type, for abstract-value instances: CodeSense's random baseline"),
    ModelKind("reference/original", "the unmutated program's output (mutation and choice "
              "tasks): the reversion ceiling"),
)
"""Every kind of model name ``get_model`` accepts; the HTTP ones read keys from the
environment or ./.env."""



def sampling_defaults(name: str) -> dict[str, str]:
    """What the provider of model ``name`` uses for each sampling setting a run leaves
    unset (empty for reference models, which do not sample): ``run.json`` records it, so
    that two runs of one model through different providers show whether they were asked
    for the same decoding."""
    provider = name.partition("/")[0]
    for kind in MODEL_KINDS:
        if kind.name.partition("/")[0] == provider:
            return dict(kind.sampling)
    return {}


OPENAI_URL = "https://api.openai.com/v1"
ANTHROPIC_URL = "https://api.anthropic.com"


def get_model(
    name: str, *, base_url: str | None = None, model_args: dict[str, str] | None = None
) -> Model:
    """Create the model called ``name``, e.g. ``openai/gpt-4o`` or ``openai-api/vllm/qwen``.

    Configuration errors (unknown provider, missing key or URL) raise :class:`ModelError`
    here, before any request is sent, so a run fails in its first second rather than after
    queueing work. ``base_url`` overrides the provider's URL from the environment; it may
    list several, separated by commas, to spread requests over replicas.
    ``model_args`` (``-M``) are a reference or hf model's options, and extra request fields
    for the HTTP providers: checked against the API's documented fields for ``openai/``
    and ``anthropic/``, passed as given to the servers behind ``openai-api/``, which take
    fields of their own.
    """
    provider, slash, rest = name.partition("/")
    providers = ", ".join(PROVIDERS)
    if not slash:
        raise ModelError(f"model name {name!r} must be provider/model; providers: {providers}")
    if provider not in PROVIDERS:
        raise ModelError(f"unknown model provider {provider!r} in {name!r}; providers: {providers}")
    if not rest:
        raise ModelError(f"model name {name!r} must look like {provider}/<model>")
    if provider == "reference":
        from execbench.models.reference import get_reference_model

        return get_reference_model(rest, model_args or {})
    if provider in ("vllm", "sglang"):
        if base_url:
            raise ModelError(f"{provider} models start their own server and take no "
                             "--model-base-url (use openai-api/<name>/<model> for a running one)")
        from execbench.models.managed import ENGINES, ManagedModel

        return ManagedModel(name, ENGINES[provider], rest, model_args or {})
    if provider == "hf":
        if base_url:
            raise ModelError("hf models run in this process and take no --model-base-url")
        from execbench.models.hf import HFModel

        return HFModel(name, rest, model_args or {})
    # Keys may live in ./.env; real environment variables take precedence over it.
    load_dotenv(Path.cwd() / ".env", override=False)
    if provider == "openai":
        url = base_url or _env("OPENAI_BASE_URL") or OPENAI_URL
        return OpenAIModel(name, rest, _check_urls(url), _require("OPENAI_API_KEY", name),
                           model_args, OPENAI_FIELDS, official=True)
    if provider == "anthropic":
        url = base_url or _env("ANTHROPIC_BASE_URL") or ANTHROPIC_URL
        return AnthropicModel(name, rest, _check_urls(url), _require("ANTHROPIC_API_KEY", name),
                              model_args)
    return _openai_compatible(name, rest, base_url, model_args or {})


def _openai_compatible(name: str, rest: str, base_url: str | None,
                       model_args: dict[str, str]) -> Model:
    """``openai-api/<server>/<model>``: the server name selects ``<SERVER>_BASE_URL`` and
    ``<SERVER>_API_KEY``, so several local servers can be configured side by side."""
    server, _, model = rest.partition("/")
    if not server or not model:
        raise ModelError(f"model name {name!r} must look like openai-api/<name>/<model>")
    prefix = re.sub(r"[^A-Za-z0-9]", "_", server).upper()
    url = base_url or _env(f"{prefix}_BASE_URL")
    if not url:
        raise ModelError(f"openai-api/{server}/... needs --model-base-url or {prefix}_BASE_URL")
    return OpenAIModel(name, model, _check_urls(url), _env(f"{prefix}_API_KEY"), model_args)


def _env(var: str) -> str | None:
    """An environment variable, treating an empty value as unset (as ``VAR=`` in .env)."""
    return os.environ.get(var) or None


def _require(var: str, name: str) -> str:
    value = _env(var)
    if value is None:
        raise ModelError(f"{name} needs an API key: set {var} (in the environment or ./.env)")
    return value


def _check_urls(urls: str) -> list[str]:
    """The base URLs in ``urls``, separated by commas (replicas of one model), after
    rejecting any the client cannot send to, which would otherwise fail every request."""
    listed = [url.strip() for url in urls.split(",") if url.strip()]
    if not listed:
        raise ModelError(f"no base URL in {urls!r}")
    for url in listed:
        if not url.startswith(("http://", "https://")):
            raise ModelError(f"base URL {url!r} must start with http:// or https://")
    if len(set(listed)) < len(listed):
        raise ModelError(f"a base URL is listed twice in {urls!r}")
    return listed
