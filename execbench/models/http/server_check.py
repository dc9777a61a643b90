"""One look at an OpenAI-compatible server before a run: what it does that a run depends on,
and the settings that make a run work with it (``execbench doctor --model ...``).

Servers that copy OpenAI's API differ where a run notices only after minutes or not at
all: a stream that ends without ``[DONE]`` (``transformers serve``) or without a finish
reason (llama.cpp's Python server, when another request arrives), a stream without usage
(llama.cpp ignores ``stream_options``), a field it refuses (``transformers serve``: HTTP 422
for ``top_k``; llama.cpp: HTTP 500 for an invalid one) or ignores without a word (vLLM), a
context it tells or not. Each is asked here once, with replies of a few tokens, and what
was seen is turned into ``-M`` settings and flags.

The requests are made here, not through the run's client, because the client hides what is
being checked (it retries, and it reads a stream without ``[DONE]`` as whole).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from execbench.models.http.endpoints import one_line
from execbench.models.openai import OpenAIModel

PROMPT = "Reply with one word."
TINY = 8
"""Tokens each probe asks for: an answer, not an essay."""
OVERLAP = 48
"""Tokens each of the two concurrent streams asks for, so that they overlap."""
EXTRA_FIELD = ("top_k", 20)
"""A field many servers take (vLLM, SGLang, llama.cpp) and OpenAI's API does not define."""


@dataclass
class Check:
    """One thing looked at: its name, whether it is fine (None: neither), what was seen."""

    name: str
    ok: bool | None
    seen: str


@dataclass
class ServerReport:
    """What :func:`check_server` found and what to do about it."""

    url: str
    step: str = "reachable"
    """The check under way (what a connection error is put down to)."""
    checks: list[Check] = field(default_factory=list)
    settings: dict[str, list[str]] = field(default_factory=dict)
    """``-M`` settings and flags to use, each with why."""
    unusable: str | None = None
    """Why no run can work with the server as it is; None when one can."""

    def add(self, name: str, ok: bool | None, seen: str) -> None:
        self.checks.append(Check(name, ok, seen))

    def advise(self, setting: str, why: str) -> None:
        self.settings.setdefault(setting, []).append(why)


@dataclass
class Streamed:
    """How one streamed reply ended."""

    status: int
    finish_reason: str | None = None
    done: bool = False
    usage: dict[str, Any] | None = None
    text: str = ""
    error: str | None = None
    cut: bool = False
    """The connection ended before the body did (llama.cpp's Python server ends an
    interrupted stream so, after its ``[DONE]``)."""

    def ending(self) -> str:
        if self.error is not None:
            return self.error
        said = (f"finish_reason {self.finish_reason}" if self.finish_reason
                else "no finish reason (interrupted)")
        said += ", [DONE]" if self.done else ", no [DONE]"
        said += ", usage reported" if self.usage else ", no usage"
        return said + (", then the connection was cut" if self.cut else "")


class Probe:
    """The requests of one check, to the model's first base URL with its headers."""

    def __init__(self, model: OpenAIModel, session: aiohttp.ClientSession,
                 timeout: float) -> None:
        self.model = model
        self.session = session
        self.endpoint = model.endpoints.all[0]
        self.timeout = aiohttp.ClientTimeout(total=timeout)

    def body(self, max_tokens: int, prompt: str = PROMPT, **more: Any) -> dict[str, Any]:
        return {"model": self.model.model, "messages": [{"role": "user", "content": prompt}],
                "max_tokens": max_tokens, **self.model.extra_fields, **more}

    async def whole(self, body: dict[str, Any]) -> tuple[int, Any, str]:
        """Status, JSON body (None if not JSON) and the text of a non-streamed request."""
        async with self.session.post(self.endpoint.url, json=body, headers=self.model.headers,
                                     proxy=self.endpoint.proxy, timeout=self.timeout) as reply:
            text = await reply.text(errors="replace")
        try:
            return reply.status, json.loads(text), text
        except ValueError:
            return reply.status, None, text

    async def stream(self, body: dict[str, Any]) -> Streamed:
        """A streamed request, read event by event as the server sent it."""
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        async with self.session.post(self.endpoint.url, json=body, headers=self.model.headers,
                                     proxy=self.endpoint.proxy, timeout=self.timeout) as reply:
            seen = Streamed(reply.status)
            if reply.status != 200:
                seen.error = f"HTTP {reply.status} {_message(await reply.text())}"
                return seen
            try:
                async for raw in reply.content:
                    line = raw.decode("utf-8", "replace").strip()
                    if not line.startswith("data:"):
                        continue
                    data = line[len("data:"):].strip()
                    if data == "[DONE]":
                        seen.done = True
                        continue
                    _feed(seen, data)
            except aiohttp.ClientPayloadError:
                seen.cut = True
        return seen


def _feed(seen: Streamed, data: str) -> None:
    try:
        chunk = json.loads(data)
    except ValueError:
        seen.error = f"an event that is not JSON: {one_line(data)}"
        return
    if chunk.get("error"):
        seen.error = f"an error event: {one_line(json.dumps(chunk['error']))}"
    for choice in chunk.get("choices") or []:
        seen.text += (choice.get("delta") or {}).get("content") or ""
        if choice.get("finish_reason") is not None:
            seen.finish_reason = choice["finish_reason"]
    if chunk.get("usage"):
        seen.usage = chunk["usage"]


def _message(text: str) -> str:
    """The server's words: ``error.message``, ``detail`` or the body, on one line."""
    try:
        body = json.loads(text)
    except ValueError:
        return one_line(text)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return one_line(str(error["message"]))
        for key in ("error", "detail", "message"):
            if body.get(key):
                return one_line(str(body[key]))
    return one_line(text)


async def check_server(model: OpenAIModel, timeout: float = 60.0) -> ServerReport:
    """Probe the model's server once; see the module doc."""
    report = ServerReport(model.urls[0].rsplit("/chat/completions", 1)[0])
    async with aiohttp.ClientSession() as session:
        probe = Probe(model, session, timeout)
        try:
            await _check(model, probe, report)
        except (aiohttp.ClientError, TimeoutError) as exc:
            why = (f"no reply in {timeout:g} s" if isinstance(exc, TimeoutError) else
                   one_line(f"{type(exc).__name__} {exc}"))
            report.add(report.step, False, why)
            if report.step == "reachable":
                report.unusable = f"cannot reach {report.url}: {why}"
            elif report.step == "whole reply":
                report.unusable = f"a plain request failed: {why}"
            else:
                report.advise("--max-connections 1 -M stream=false",
                              f"the {report.step} check failed ({why})")
    await model.aclose()
    return report


async def _check(model: OpenAIModel, probe: Probe, report: ServerReport) -> None:
    if not await _listed(model, probe, report):
        return
    report.step = "whole reply"
    if not await _whole(probe, report):
        return
    report.step = "streamed reply"
    single = await _streamed(probe, report)
    if single is not None:
        report.step = "two at once"
        await _concurrent(probe, report)
    report.step = "context"
    await _context(model, report)
    report.step = "extra field"
    await _extra_field(model, probe, report)


async def _listed(model: OpenAIModel, probe: Probe, report: ServerReport) -> bool:
    status, body = await model.ask("GET", "/models")
    if status in (401, 403):
        report.add("reachable", False, f"GET /models: HTTP {status}")
        report.unusable = (f"the server refuses the key (HTTP {status}); set <NAME>_API_KEY "
                           "for openai-api/<name>/...")
        return False
    report.add("reachable", True, f"GET /models answered HTTP {status}")
    entries = body.get("data") if isinstance(body, dict) else None
    ids = [str(e.get("id")) for e in entries or [] if isinstance(e, dict)]
    if not ids:
        report.add("model", None, "the server lists no models; the first request tells")
    elif model.model in ids:
        report.add("model", True, f"{model.model} is listed (of {len(ids)})")
    else:
        report.add("model", False, f"{model.model} is not listed; the server lists "
                                   f"{', '.join(ids[:10])}")
    return True


async def _whole(probe: Probe, report: ServerReport) -> bool:
    status, body, text = await probe.whole(probe.body(TINY))
    if status != 200:
        seen = f"HTTP {status} {_message(text)}"
        report.add("whole reply", False, seen)
        report.unusable = (f"a plain request is refused: {seen}"
                           + ("; the -M fields given are sent with it"
                              if probe.model.extra_fields else ""))
        return False
    try:
        choice = body["choices"][0]
        choice["message"]
    except (KeyError, IndexError, TypeError):
        report.add("whole reply", False, f"no answer in the reply: {one_line(text)}")
        report.unusable = "a plain request gets no answer in OpenAI's shape"
        return False
    usage = body.get("usage") or {}
    said = f"answered, finish_reason {choice.get('finish_reason')}"
    if usage.get("prompt_tokens") is not None:
        said += (f"; usage {usage.get('prompt_tokens')} prompt + "
                 f"{usage.get('completion_tokens')} completion tokens")
    else:
        said += "; no usage reported (token counts will be missing)"
    report.add("whole reply", True, said)
    return True


async def _streamed(probe: Probe, report: ServerReport) -> Streamed | None:
    seen = await probe.stream(probe.body(TINY))
    whole = seen.error is None and seen.finish_reason is not None
    report.add("streamed reply", whole if seen.usage or not whole else None, seen.ending())
    if not whole:
        report.advise("-M stream=false", "streamed replies do not end with a finish reason "
                                         "here")
        return None
    if not seen.usage:
        report.advise("-M stream=false", "streamed replies carry no token usage here "
                                         "(replies over 21,333 tokens stream unless told not "
                                         "to)")
    return seen


async def _concurrent(probe: Probe, report: ServerReport) -> None:
    """Two streams at once: llama.cpp's Python server ends the first with ``[DONE]`` and
    no finish reason when the second arrives; whole replies wait their turn there."""
    pair = await asyncio.gather(*(probe.stream(probe.body(OVERLAP, f"{PROMPT} ({n} of 2)"))
                                  for n in (1, 2)))
    cut = [seen for seen in pair if seen.error is None and seen.finish_reason is None]
    if not cut and all(seen.error is None for seen in pair):
        report.add("two at once", True, "two concurrent streams both end with a finish "
                                        "reason")
        return
    if not cut:
        report.add("two at once", False, "; ".join(seen.ending() for seen in pair))
        report.advise("--max-connections 1", "concurrent requests fail here")
        return
    wholes = await asyncio.gather(*(probe.whole(probe.body(OVERLAP, f"{PROMPT} ({n} of 2)"))
                                    for n in (1, 2)))
    queued = all(status == 200 for status, _, _ in wholes)
    report.add("two at once", False, f"{len(cut)} of two concurrent streams interrupted "
                                     "(no finish reason); two whole replies at once: "
                                     + ("both answered" if queued else "failed"))
    if queued:
        report.advise("-M stream=false", "a stream is interrupted when another request "
                                         "arrives; whole replies wait their turn")
    else:
        report.advise("--max-connections 1", "a request is interrupted when another arrives")


async def _context(model: OpenAIModel, report: ServerReport) -> None:
    window = await model.context()
    if window is None:
        report.add("context", None, "not told: prompts are sent unchecked (an over-long "
                                    "one fails as the server decides)")
    elif window.counter is None:
        report.add("context", None, f"{window.tokens:,} tokens ({window.source}); prompts "
                                    "cannot be counted, so they are sent unchecked")
    else:
        report.add("context", True, f"{window.tokens:,} tokens ({window.source}); prompts "
                                    f"counted by {window.counter}: one that cannot fit "
                                    "with --max-tokens is refused before sending")


async def _extra_field(model: OpenAIModel, probe: Probe, report: ServerReport) -> None:
    name, value = EXTRA_FIELD
    if name in model.extra_fields:
        return  # given with -M: the plain request above was sent with it
    status, _, text = await probe.whole({**probe.body(TINY), name: value})
    if status == 200:
        report.add("extra field", None, f"{name}={value} accepted (whether it is used, the "
                                        "server does not say)")
        return
    report.add("extra field", False, f"{name}={value} refused: HTTP {status} {_message(text)}")
    report.advise(f"do not pass -M {name}", f"the server refuses it (HTTP {status}); check "
                                            "any other -M field with doctor -M")
