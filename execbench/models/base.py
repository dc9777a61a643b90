"""The Model protocol and the request/response records every provider shares."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from execbench.settings import SettingError, at_least_one

if TYPE_CHECKING:
    from execbench.tasks.base import Instance


@dataclass(frozen=True)
class GenerateConfig:
    """Generation settings shared by the CLI, the runner and every provider."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    max_connections: int = 16
    max_retries: int = 5
    timeout: float | None = None
    """Seconds an attempt may wait for data (each read, not the whole reply); None: the
    provider chooses by model and reply length (``HttpModel.attempt_timeout``)."""
    sample_deadline: float | None = 3600.0
    """Seconds one sample may take over all its attempts and back-off: no attempt or
    back-off starts after it, and a stream under way is cut at it. The default is the hour
    Anthropic's SDK reckons its longest reply (128,000 tokens) takes; None: no deadline."""
    retry_base_delay: float = 1.0
    """First back-off delay in seconds; doubles on each retry (with jitter), capped at 60 s."""
    server_start_timeout: float = 900.0
    """Seconds a server the run starts (``vllm/``, ``sglang/``) has to become healthy:
    loading a large model's weights takes minutes."""
    max_connection_failures: int = 5
    """Consecutive requests that reach no server, with no reply from any in between, after
    which the run stops (the circuit breaker): the server is down, and retrying each sample
    with back-off would only turn minutes of waiting into a table of errors."""

    def validate(self) -> None:
        """Raise ``SettingError`` for a setting no run can use (a pool of no connections
        hangs; a negative delay or a zero timeout fails every request)."""
        at_least_one({"max_connections": self.max_connections,
                      "max_connection_failures": self.max_connection_failures})
        if self.max_retries < 0 or self.retry_base_delay < 0 or (
                self.timeout is not None and self.timeout <= 0):
            raise SettingError("{0} and {1} must be >= 0 and {2} > 0", "max_retries",
                               "retry_base_delay", "timeout")
        if self.sample_deadline is not None and self.sample_deadline <= 0:
            raise SettingError("{0} must be > 0 (None: no deadline)", "sample_deadline")
        if self.server_start_timeout <= 0:
            raise SettingError("{0} must be > 0", "server_start_timeout")


@dataclass(frozen=True)
class Request:
    """One sample to generate."""

    messages: list[dict[str, str]]
    """Chat messages: ``{"role": "system" | "user" | "assistant", "content": str}``."""
    instance: Instance | None
    """The suite instance; reference models read the ground truth from it. None for a
    request about no instance (``generate-programs`` asks for programs to write): only
    models that write text answer it (:func:`instance_of` refuses the others)."""
    sample: int
    seed: int | None = None


def instance_of(request: Request, model: str) -> Instance:
    """The instance a model that answers from the suite needs (``ModelError`` without)."""
    if request.instance is None:
        raise ModelError(f"{model} answers questions of a suite, and this request is about "
                         "none")
    return request.instance


CUT_BY_CLIENT = "cut_by_client"
"""The stop reason of a streamed reply the client cut because it ran far past what
``max_tokens`` allows (a server that ignores the limit)."""

TRUNCATED = frozenset({"length", "max_tokens", "model_context_window_exceeded",
                       CUT_BY_CLIENT})
"""Stop reasons meaning the answer was cut off at a token limit (OpenAI and vLLM say
``length``; Anthropic ``max_tokens`` or ``model_context_window_exceeded``; the client says
``cut_by_client`` of a stream it cut, far past ``max_tokens``, from a server ignoring it)."""

REFUSED = frozenset({"content_filter", "refusal"})
"""Stop reasons meaning the provider withheld or filtered the answer (OpenAI
``content_filter``; Anthropic ``refusal``)."""


@dataclass
class Generation:
    """What came back for one request. ``error`` is set when no answer was obtained.

    HTTP providers put the API's stop reason in ``extra["finish_reason"]`` and a refusal's
    text in ``extra["refusal"]``; the properties below read them, so that a cut-off or
    refused answer can be counted apart from an ordinary wrong one.
    """

    text: str | None
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency: float = 0.0
    attempts: int = 1
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    endpoint: str | None = None
    """The base URL of the server that answered (or was last tried), for HTTP models."""

    @property
    def stop_reason(self) -> str | None:
        """Why generation stopped, in the API's own words (None when it did not say)."""
        return self.extra.get("finish_reason")

    @property
    def truncated(self) -> bool:
        """The answer hit the token limit, so it may be missing its end."""
        return self.stop_reason in TRUNCATED

    @property
    def refused(self) -> bool:
        """The model refused, or the provider filtered the answer."""
        return self.stop_reason in REFUSED or "refusal" in self.extra


@dataclass(frozen=True)
class ContextWindow:
    """How many tokens a model attends to, where that was learnt, and whether its prompts
    can be counted, so that a prompt that cannot fit is refused before it is sent."""

    tokens: int
    source: str
    """Where the length comes from, for messages: "the server's max_model_len", ..."""
    counter: str | None
    """How prompts are counted ("the server's /tokenize"); None when they cannot be, and
    then nothing is checked: a guess would refuse prompts the model could take."""


class CountError(Exception):
    """A prompt's tokens could not be counted (the tokenize request failed)."""


class ModelError(Exception):
    """A model cannot be created (unknown provider, missing API key, missing extra) or can
    no longer be used at all (the account is out of quota)."""


class Unreachable(ModelError):
    """No server answers: the health probe found none, the circuit breaker tripped, or a
    managed server died. The run stops with its own exit code, keeping what was logged."""


class Model(Protocol):
    """What the runner needs of a model: checked before the run folder is used, started
    before the first request, asked for generations, closed at the end."""

    name: str
    takes_seed: bool
    """Whether a request's seed reaches the model; a sample records its seed only then."""

    def check(self, instances: Sequence[Instance]) -> None:
        """Raise :class:`ModelError` if this model cannot answer these instances (the
        run's, before anything is sent or written)."""
        ...

    def notices(self) -> list[str]:
        """Lines the user should read before the answers come: what :meth:`check` found
        that is no reason to refuse the run (a replay's answers that name no instance)."""
        ...

    async def start(self, config: GenerateConfig, run_dir: Path) -> None:
        """Get ready for the first request (probe the server, start one); raise
        :class:`ModelError` if that cannot be done."""
        ...

    async def generate(self, request: Request, config: GenerateConfig) -> Generation: ...

    async def context(self) -> ContextWindow | None:
        """The model's context, asked once after :meth:`start`; None when unknown."""
        ...

    async def prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        """The tokens ``messages`` take as a prompt, chat template and generation prompt
        included; raises :class:`CountError` when they cannot be counted."""
        ...

    async def aclose(self) -> None: ...


class ModelBase:
    """The lifecycle of a model that takes seeds, answers every task, has nothing to
    start or stop and does not know its context."""

    takes_seed = True

    def check(self, instances: Sequence[Instance]) -> None:
        return None

    def notices(self) -> list[str]:
        return []

    async def start(self, config: GenerateConfig, run_dir: Path) -> None:
        return None

    async def context(self) -> ContextWindow | None:
        return None

    async def prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        raise CountError(f"{getattr(self, 'name', 'this model')} cannot count prompt tokens")

    async def aclose(self) -> None:
        return None
