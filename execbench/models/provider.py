"""What a model provider (the part of a model name before its first slash) declares: how
to make its models, and the lines ``execbench ls models`` prints about them.

Each provider module declares its own ``Provider`` beside the code the lines describe;
``execbench.models`` registers them lazily, so that naming one provider imports only
that provider's module (the HTTP client is the slow import).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from execbench.models.base import ModelError

if TYPE_CHECKING:
    from execbench.models.base import Model

Create = Callable[[str, str, "str | None", dict[str, str]], "Model"]
"""Makes a model from its whole name, the part after ``provider/``, the base URL the run
gives (``--model-base-url``) and its ``-M`` options; raises ``ModelError`` on a bad one."""


@dataclass(frozen=True)
class ModelKind:
    """One model name pattern: a line of ``execbench ls models`` with the environment
    variables it reads and the ``-M`` keys it takes."""

    name: str
    description: str
    env: str = ""
    model_args: str = ""


@dataclass(frozen=True)
class Provider:
    """A provider: how it makes a model, the name patterns it takes, its sampling."""

    create: Create
    kinds: tuple[ModelKind, ...]
    sampling: tuple[tuple[str, str], ...] = ()
    """What each sampling setting (temperature, top_p, max_tokens) is when the run leaves
    it unset, in words: the provider's own default, which differs between providers."""
    own_temperature: Callable[[str, Mapping[str, str]], bool] = lambda name, options: False
    """Whether the model (its whole name, its ``-M`` options) takes no temperature but its
    own, so that a run sends none and states none (``RunConfig.decoding_stated``)."""


SERVER_DEFAULTS = (
    ("temperature", "the server's: recent vLLM and SGLang take the model's generation_config.json "
                    "(often sampling, not greedy), else 1"),
    ("top_p", "the server's: the model's generation_config.json, else 1"),
    ("max_tokens", "not sent: the server's (vLLM: what the context window leaves)"),
)
"""The sampling of OpenAI-compatible servers, started by the run or not."""


def env(var: str) -> str | None:
    """An environment variable, treating an empty value as unset (as ``VAR=`` in .env).
    Keys may live in ./.env; real environment variables take precedence over it."""
    from dotenv import load_dotenv

    load_dotenv(Path.cwd() / ".env", override=False)
    return os.environ.get(var) or None


def require_key(var: str, name: str) -> str:
    """The API key in ``var``, which model ``name`` cannot work without."""
    value = env(var)
    if value is None:
        raise ModelError(f"{name} needs an API key: set {var} (in the environment or ./.env)")
    return value


def base_urls(urls: str) -> list[str]:
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
