"""The model registry: turns a ``provider/model`` name into a ready model object.

Providers are registered by where they are declared, and imported only when named (or
listed with ``execbench ls models``): the HTTP providers import aiohttp, which would
otherwise make every command slow to start.
"""

from __future__ import annotations

from execbench.models.base import Model, ModelError
from execbench.models.provider import Provider
from execbench.plugins import PluginError
from execbench.registry import Registry

__all__ = ["MODELS", "Model", "ModelError", "get_model", "sampling_defaults"]

MODELS: Registry[Provider] = Registry("model provider", plugins="execbench.models")
"""Every provider by name, in the order ``execbench ls models`` lists them (those of other
packages, declared as entry points, last); the HTTP ones read keys from the environment
or ./.env."""
MODELS.register_lazy("openai", "execbench.models.openai:OPENAI")
MODELS.register_lazy("openai-api", "execbench.models.openai:OPENAI_API")
MODELS.register_lazy("anthropic", "execbench.models.anthropic:PROVIDER")
MODELS.register_lazy("vllm", "execbench.models.managed:VLLM")
MODELS.register_lazy("sglang", "execbench.models.managed:SGLANG")
MODELS.register_lazy("hf", "execbench.models.hf:PROVIDER")
MODELS.register_lazy("reference", "execbench.models.reference:PROVIDER")
MODELS.register_lazy("replay", "execbench.models.replay:PROVIDER")


def get_model(
    name: str, *, base_url: str | None = None, model_args: dict[str, str] | None = None
) -> Model:
    """Create the model called ``name``, e.g. ``openai/gpt-4o`` or ``openai-api/vllm/qwen``.

    Configuration errors (unknown provider, missing key or URL) raise :class:`ModelError`
    here, before any request is sent, so a run fails in its first second rather than after
    queueing work. ``base_url`` overrides the provider's URL from the environment; it may
    list several, separated by commas, to spread requests over replicas.
    ``model_args`` (``-M``) are a reference, replay or hf model's options, and extra request fields
    for the HTTP providers: checked against the API's documented fields for ``openai/``
    and ``anthropic/``, passed as given to the servers behind ``openai-api/``, which take
    fields of their own.
    """
    provider, slash, rest = name.partition("/")
    if not slash:
        raise ModelError(f"model name {name!r} must be provider/model; providers: "
                         f"{', '.join(MODELS.names())}")
    if provider not in MODELS:
        raise ModelError(str(MODELS.unknown([provider])))
    if not rest:
        raise ModelError(f"model name {name!r} must look like {provider}/<model>")
    try:
        maker = MODELS.get(provider)
    except PluginError as exc:
        raise ModelError(str(exc)) from None
    return maker.create(name, rest, base_url, model_args or {})


def sampling_defaults(name: str) -> dict[str, str]:
    """What the provider of model ``name`` uses for each sampling setting a run leaves
    unset (empty for reference models, which do not sample): ``run.json`` records it, so
    that two runs of one model through different providers show whether they were asked
    for the same decoding."""
    provider = name.partition("/")[0]
    return dict(MODELS.get(provider).sampling) if provider in MODELS else {}
