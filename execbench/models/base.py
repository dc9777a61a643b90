"""The Model protocol and the request/response records every provider shares."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class GenerateConfig:
    """Generation settings shared by the CLI, the runner and every provider."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    max_connections: int = 16
    max_retries: int = 5
    timeout: float = 120.0
    retry_base_delay: float = 1.0
    """First back-off delay in seconds; doubles on each retry (with jitter), capped at 60 s."""


@dataclass(frozen=True)
class Request:
    """One sample to generate."""

    messages: list[dict[str, str]]
    """Chat messages: ``{"role": "system" | "user" | "assistant", "content": str}``."""
    instance: dict[str, Any]
    """The suite instance; reference models read the ground truth from it."""
    sample: int
    seed: int | None = None


@dataclass
class Generation:
    """What came back for one request. ``error`` is set when no answer was obtained."""

    text: str | None
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency: float = 0.0
    attempts: int = 1
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class ModelError(Exception):
    """A model cannot be created (unknown provider, missing API key, missing extra)."""


class Model(Protocol):
    name: str

    async def generate(self, request: Request, config: GenerateConfig) -> Generation: ...

    async def aclose(self) -> None: ...
