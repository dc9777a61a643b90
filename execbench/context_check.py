"""Refusing, before any request, the prompts that cannot fit the model's context.

A prompt whose tokens and ``--max-tokens`` exceed the context is refused by each server in
its own way (vLLM: HTTP 400, llama.cpp: HTTP 500, ``transformers serve``: not at all) after
the request and its retries were spent, and reads in the log like any failed request. Where
the model tells its context and counts prompts with its own tokenizer
(:meth:`Model.context`), such a prompt is not sent: its samples are logged as errors that
give the counts, and the run says how many instances that is. Without ``--max-tokens`` the
server chooses the answer's length (vLLM and llama.cpp cap it to the room left), so only a
prompt that leaves no room at all is refused.

Each distinct prompt is counted once, ``max_connections`` at a time, however many samples
it has. A model that tells its context but cannot count prompts is not checked, and the run
says so: a guess (characters / 4) would refuse prompts the model could take.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING

from execbench.models.base import ContextWindow, CountError, Model

if TYPE_CHECKING:
    from execbench.tasks.base import Instance

GIVE_UP_AFTER = 3
"""Failed counts, with none counted, after which the rest are not asked for: the server's
tokenizer is broken, and a thousand failing requests would only delay the run."""

Prompt = Callable[["Instance"], tuple[list[dict[str, str]], str]]
"""An instance's chat messages and their hash (one hash per distinct prompt)."""


@dataclass
class Refused:
    """One sample not sent, and why, in words that give the counts."""

    instance: Instance
    sample: int
    prompt_tokens: int
    error: str


@dataclass
class Fit:
    """What the check found: the samples refused (each also handed to the caller as it is
    found), and what it could not check."""

    window: ContextWindow | None
    refused: set[tuple[str, int]] = field(default_factory=set)
    """(instance id, sample) of every sample not to send."""
    uncounted: int = 0
    """Distinct prompts whose count failed: they are sent unchecked."""
    count_error: str | None = None
    """Why the first count failed."""
    seconds: float = 0.0
    """How long counting took."""

    def notices(self, max_tokens: int | None) -> list[str]:
        """One line for each thing the run should say (nothing when all fit)."""
        said = []
        window = self.window
        if window is not None and window.counter is None:
            said.append(f"the context is {window.tokens:,} tokens ({window.source}), but "
                        "prompt tokens cannot be counted here: prompts are sent unchecked")
        if self.refused and window is not None:
            instances = len({instance for instance, _ in self.refused})
            budget = (f"with --max-tokens {max_tokens}" if max_tokens is not None
                      else "alone")
            said.append(f"{_many(instances, 'instance')} ({_many(len(self.refused), 'sample')})"
                        " not sent: "
                        f"their prompt {budget} is over the context of {window.tokens:,} "
                        f"tokens ({window.source}); each is logged as an error with its "
                        "counts and is checked again when the run resumes")
        if self.uncounted:
            said.append(f"{self.uncounted} prompts could not be counted ({self.count_error})"
                        ": sent unchecked")
        return said


def _many(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def over(tokens: int, max_tokens: int | None, window: ContextWindow) -> str | None:
    """Why a prompt of ``tokens`` cannot be sent with ``max_tokens``; None when it fits."""
    if max_tokens is None:
        if tokens < window.tokens:
            return None
        return (f"prompt {tokens} tokens leaves no room for an answer in the context of "
                f"{window.tokens} tokens ({window.source}); not sent")
    if tokens + max_tokens <= window.tokens:
        return None
    return (f"prompt {tokens} tokens + --max-tokens {max_tokens} > context {window.tokens} "
            f"tokens ({window.source}); not sent")


CHECK_BATCH = 4096
"""Samples whose prompts are counted together (``max_connections`` at a time): the check
reads the run's work as a stream, holding one batch's prompts."""


async def check(model: Model, work: Iterable[tuple[Instance, int]], prompt: Prompt,
                max_tokens: int | None, connections: int,
                refuse: Callable[[Refused], None]) -> Fit:
    """Find what in ``work`` does not fit the model's context, handing each such sample to
    ``refuse`` as it is found. Asked after ``model.start``; a model that does not know its
    context costs nothing (``work`` is not read)."""
    window = await model.context()
    fit = Fit(window)
    if window is None or window.counter is None:
        return fit
    started = time.perf_counter()
    items = iter(work)
    failures: list[str] = []
    counted = 0
    counts: dict[str, int] = {}
    failed: set[str] = set()
    while batch := list(islice(items, CHECK_BATCH)):
        hashes: list[str] = []
        distinct: dict[str, list[dict[str, str]]] = {}
        for instance, _ in batch:
            messages, phash = prompt(instance)
            hashes.append(phash)
            if phash not in counts and phash not in failed:
                distinct.setdefault(phash, messages)
        # The last batch's counts and failures are kept for this one: an instance's
        # samples come one after another, so one prompt split by the batch's end is still
        # asked for once, and counted (or reported uncounted) once.
        seen = set(hashes)
        counts = {phash: counts[phash] for phash in seen if phash in counts}
        failed &= seen
        new = await _count_all(model, distinct, connections, failures, give_up=not counted)
        counts.update(new)
        counted += len(new)
        failed |= distinct.keys() - new.keys()
        fit.uncounted += len(distinct) - len(new)
        for (instance, sample), phash in zip(batch, hashes, strict=True):
            tokens = counts.get(phash)
            why = None if tokens is None else over(tokens, max_tokens, window)
            if why is not None:
                assert tokens is not None
                fit.refused.add((instance.id, sample))
                refuse(Refused(instance, sample, tokens, why))
    if fit.uncounted:
        fit.count_error = failures[0] if failures else "not asked after earlier failures"
    fit.seconds = time.perf_counter() - started
    return fit


async def _count_all(model: Model, prompts: dict[str, list[dict[str, str]]],
                     connections: int, failures: list[str], give_up: bool
                     ) -> dict[str, int]:
    """Each prompt's tokens by hash, ``connections`` counts at a time; failures are added
    to ``failures``. With ``give_up`` (nothing counted yet), the rest are not asked once
    ``GIVE_UP_AFTER`` have failed."""
    gate = asyncio.Semaphore(max(1, connections))
    counts: dict[str, int] = {}

    async def one(phash: str, messages: list[dict[str, str]]) -> None:
        async with gate:
            if give_up and len(failures) >= GIVE_UP_AFTER and not counts:
                return
            try:
                counts[phash] = await model.prompt_tokens(messages)
            except CountError as exc:
                if len(failures) < GIVE_UP_AFTER:  # the first says why; a few say enough
                    failures.append(str(exc))

    await asyncio.gather(*(one(phash, messages) for phash, messages in prompts.items()))
    return counts
