"""A model that answers from a script, over HTTP: ``tests/fakeserver.py``'s server playing
an OpenAI-compatible endpoint, and the ``openai-api`` provider pointed at it, so a run
goes through the production client exactly as against a real server.

    with fake_model(lambda prompt: replies[prompt]) as model:
        run(RunConfig(suite=str(suite), **model), out)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from tests.fakeserver import FakeServer, Reply, Responder, prompt_of

FAKE_MODEL = "openai-api/fake/scripted"
"""The name runs and reports give the scripted model."""


def answering(answer: Callable[[str], str], delay: float = 0.0) -> Responder:
    """A responder that replies to each request with ``answer`` of its prompt (the last
    user message), after ``delay`` seconds."""

    def responder(body: dict, attempt: int) -> Reply:
        return Reply(text=answer(prompt_of(body)), delay=delay)

    return responder


@contextlib.contextmanager
def fake_model(answer: Callable[[str], str]) -> Iterator[dict[str, str]]:
    """The ``model`` and ``base_url`` of a ``RunConfig`` whose model answers each prompt
    with ``answer(prompt)``, while the server runs."""
    with FakeServer(answering(answer)) as server:
        yield {"model": FAKE_MODEL, "base_url": server.base_url}
