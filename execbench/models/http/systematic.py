"""Telling a run whose every request is wrong from one whose requests fail now and then.

A wrong key, a base URL without ``/v1``, an unknown model, an invalid ``-M`` field or a
token limit over the model's context make a server refuse every request, and each in the
same words. Retrying each sample, and logging every one as an error, would take hours
before the run said anything and end in a table of errors that reads like a model that
answered badly. So while no request of the run has been answered, failures that say
something about the request rather than the server's health are compared: once
``needed`` different samples failed the same way (same status, same message), the run
stops with the server's message and what to change. A failed sample is held (not logged)
while that is undecided, so a stopped run logs none of them and its resume asks again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re

from execbench.models.base import ModelError
from execbench.models.http.attempt import Failure
from execbench.models.http.endpoints import Listing, one_line

NEEDED = 3
"""Samples that must fail the same way before the run is stopped (fewer when the run has
fewer connections)."""

HOLD_SECONDS = 5.0
"""How long a failed sample waits for the decision before it is logged as failed anyway
(a run whose last samples are fewer than ``NEEDED``)."""

ADVICE = {
    401: "check the API key the provider reads (OPENAI_API_KEY, ANTHROPIC_API_KEY, "
         "<NAME>_API_KEY for openai-api/<name>/...)",
    403: "check the API key and that it may use this model",
    404: "check --model-base-url (OpenAI-compatible servers usually serve under /v1) and "
         "the model name; `execbench doctor --model ... --model-base-url ...` shows what "
         "the server serves",
    400: "the server refuses the request itself: check the -M fields and that the prompt "
         "plus --max-tokens fits the model's context",
    413: "the request is too large for the server: use a smaller --max-tokens or fewer shots",
    422: "the server refuses a request field: check the -M fields (servers differ in what "
         "they take) and the sampling settings",
    500: "the server fails every request: see its log; llama.cpp answers 500 to an invalid "
         "-M field and to a prompt plus --max-tokens over its context",
}
"""What to change, by the status every request got."""


class SystematicFailure(ModelError):
    """Every request of the run so far failed the same way: no sample can get past it."""


def _message(body: str) -> str:
    """The server's own words: the ``error.message`` of a JSON error body (``detail`` for
    FastAPI's), else the body."""
    try:
        reply = json.loads(body)
        error = reply["error"] if "error" in reply else reply["detail"]
        message = error.get("message") if isinstance(error, dict) else error
    except (ValueError, KeyError, TypeError, AttributeError):
        message = None
    return one_line(str(message) if message else body)


def check_listing(listing: Listing, model: str) -> tuple[str, ...]:
    """What the health probe's answer says before any request: raises
    :class:`SystematicFailure` for a key the server refuses, and for a model a server that
    serves only what it lists (vLLM, SGLang: their entries carry ``max_model_len``) does
    not list. Returns the ids listed (empty if the server keeps no list).

    Other servers' lists are not taken as the truth: ``transformers serve`` loads a model
    folder it does not list, Ollama answers ``llama3`` for ``llama3:latest``, Anthropic
    takes aliases it lists under dated ids. For them a refused model ends the run through
    the first requests' 404s, whose message then shows this list.
    """
    if listing.status in (401, 403):
        raise SystematicFailure(
            f"{listing.url} refuses the request's key (HTTP {listing.status}: "
            f"{_message(listing.body)}); {ADVICE[listing.status]}")
    try:
        entries = json.loads(listing.body)["data"]
        ids = tuple(str(entry["id"]) for entry in entries)
    except (ValueError, KeyError, TypeError):
        return ()
    strict = any(isinstance(entry, dict) and "max_model_len" in entry for entry in entries)
    if strict and model not in ids:
        raise SystematicFailure(f"the server at {listing.url} serves {', '.join(ids)}, not "
                                f"{model}: check the model name")
    return ids


def _status(failure: Failure) -> int | None:
    """The HTTP status of a failure that may be the request's fault, else None: a status
    that speaks of the request (4xx but 408 and 429) or a 500, which some servers answer an
    invalid request with. Timeouts, connection errors, 502-504, rate limits are transient."""
    if not failure.summary.startswith("HTTP "):
        return None
    status = int(failure.summary.split()[1])
    if status == 500 or (400 <= status < 500 and status not in (408, 429)):
        return status
    return None


class FirstFailures:
    """Watches one run's requests until the first is answered; see the module doc. Made
    per run (``HttpModel.start``), used from its event loop."""

    def __init__(self, connections: int, listed: tuple[str, ...] = ()) -> None:
        self.needed = max(1, min(NEEDED, connections))
        self.listed = listed
        """The models the server lists when the run's model is not among them, to show
        with a stop on 404."""
        self.answered = False
        self.stopped: SystematicFailure | None = None
        self.samples: dict[tuple[int, str], set[int]] = {}
        """For each way of failing (status, message with its numbers left out: a prompt
        over the context is told with its own token counts), the samples that failed so."""
        self.retried: set[tuple[int, str]] = set()
        """Ways of failing seen again on a sample's retry: a 500 counts only then."""
        self.counter = 0
        self.decided = asyncio.Event()

    def begin(self) -> int:
        """A number for a new sample's requests."""
        self.counter += 1
        return self.counter

    def success(self) -> None:
        if not self.answered:
            self.answered = True
            self.decided.set()

    def failure(self, sample: int, attempts: int, failure: Failure) -> None:
        """Count one failed attempt; raises :class:`SystematicFailure` once the run must
        stop (and so does every later call)."""
        if self.stopped is not None:
            raise self.stopped
        status = _status(failure)
        if self.answered or status is None:
            return
        message = _message(failure.detail)
        key = (status, re.sub(r"\d+", "#", message))  # counts differ from prompt to prompt
        self.samples.setdefault(key, set()).add(sample)
        if attempts > 1:
            self.retried.add(key)
        if len(self.samples[key]) >= self.needed and (status != 500 or key in self.retried):
            listed = (f" (the server lists {', '.join(self.listed[:20])})"
                      if status == 404 and self.listed else "")
            self.stopped = SystematicFailure(
                f"every request fails the same way, none answered ({len(self.samples[key])} "
                f"samples): HTTP {status}: {message}; {ADVICE.get(status, ADVICE[400])}"
                f"{listed}. Nothing was scored; once that is fixed, run the same command "
                "again")
            self.decided.set()
            raise self.stopped

    async def hold(self, failure: Failure) -> None:
        """Before a sample is given up as failed: wait (up to ``HOLD_SECONDS``) while it is
        undecided whether the whole run fails so, and raise :class:`SystematicFailure` if
        it does."""
        if not self.answered and self.stopped is None and _status(failure) is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.decided.wait(), HOLD_SECONDS)
        if self.stopped is not None:
            raise self.stopped
