"""``execbench generate-programs``: ask a model for programs of a class, keep those that
pass every check (``sources.written``), and write them as a generic source with their
provenance.

Requests go out in rounds: the first asks for ``count`` programs, each later one for as
many as are still missing, until ``count`` are kept or ``max_requests`` were sent.
Request ``i`` always carries seed ``seed + i`` and the theme that seed draws, so a model
that honours seeds answers a second run as the first, and the file lists the kept
programs in request order.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from execbench.jsonfiles import write_atomic
from execbench.models import get_model
from execbench.models.base import GenerateConfig, Generation, Model, Request
from execbench.program import Call, Program
from execbench.sandbox.pool import Sandbox
from execbench.sandbox.trace import Trace
from execbench.settings import SettingError
from execbench.sources.written import (
    STYLES,
    Dropped,
    Written,
    duplicate_key,
    prompt,
    read_reply,
)
from execbench.suite.budget import plain_job, refused


@dataclass(frozen=True)
class WritingConfig:
    """What ``generate-programs`` takes."""

    model: str
    out: Path
    count: int
    seed: int = 0
    style: str = "list"
    inputs: int = 3
    """Argument lists asked for each program (Yang et al.'s LLM-List: three)."""
    max_requests: int | None = None
    """Requests sent at most; None: four per program asked for."""
    base_url: str | None = None
    model_args: dict[str, str] = field(default_factory=dict)
    generate: GenerateConfig = field(default_factory=GenerateConfig)

    def check(self) -> None:
        """``SettingError`` for what no generation can do."""
        if self.style not in STYLES:
            raise SettingError(f"{{0}}: no style {self.style!r}; the styles are "
                               f"{', '.join(STYLES)}", "style")
        if self.count < 1 or self.inputs < 1:
            raise SettingError("{0} and {1} must be at least 1", "count", "inputs")
        if self.max_requests is not None and self.max_requests < self.count:
            raise SettingError("{0} must be at least {1}", "max_requests", "count")
        if self.model.split("/")[0] in {"reference", "replay"}:
            raise SettingError(f"{{0}}: {self.model} answers questions of a suite and "
                               "writes no programs; name a model that writes text",
                               "model")
        self.generate.validate()


@dataclass
class WritingSummary:
    """What a generation made: the programs kept, the requests sent, and how many
    replies each rule dropped, with the first reason of each rule."""

    kept: int = 0
    asked: int = 0
    asking_seconds: float = 0.0
    """Time spent waiting for the model's replies (the rest is reading and checking)."""
    dropped: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def drop(self, index: int, why: Dropped) -> None:
        self.dropped[why.rule] += 1
        self.examples.setdefault(why.rule, f"request {index}: {why}")


def write_programs(config: WritingConfig,
                   progress: Callable[[int, int], None] | None = None) -> WritingSummary:
    """Generate, check and write (see the module); ``ModelError`` when the model cannot
    be made or reached. The file is written once, whole, at the end."""
    config.check()
    model = get_model(config.model, base_url=config.base_url, model_args=config.model_args)
    summary = WritingSummary()
    limit = config.max_requests or 4 * config.count
    kept: list[Program] = []
    seen: set[str] = set()
    asked_at = datetime.now(UTC).isoformat(timespec="seconds")
    with Sandbox() as sandbox, Sandbox() as again:
        while len(kept) < config.count and summary.asked < limit:
            start = summary.asked
            indices = range(start, min(start + config.count - len(kept), limit))
            asked = time.perf_counter()
            replies = asyncio.run(_ask(model, config, indices))
            summary.asking_seconds += time.perf_counter() - asked
            summary.asked += len(indices)
            candidates = []
            for index, generation in zip(indices, replies, strict=True):
                try:
                    written = _read(generation)
                except Dropped as why:
                    summary.drop(index, why)
                    continue
                key = duplicate_key(written.code)
                if key in seen:
                    summary.drop(index, Dropped("duplicate", "the same syntax tree as a "
                                                             "program kept before"))
                    continue
                seen.add(key)
                candidates.append(_program(config, index, written, asked_at))
            held, reasons = run_checks(sandbox, again, candidates)
            for program in candidates:
                if program.id in reasons:
                    summary.drop(int(program.meta["request"]), reasons[program.id])
            kept += held
            if progress is not None:
                progress(min(len(kept), config.count), config.count)
    kept = kept[:config.count]
    summary.kept = len(kept)
    config.out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(config.out, "".join(json.dumps(_record(program)) + "\n"
                                     for program in kept))
    return summary


def _read(generation: Generation) -> Written:
    if generation.text is None:
        raise Dropped("request", f"no reply ({generation.error})")
    return read_reply(generation.text)


async def _ask(model: Model, config: WritingConfig, indices: range) -> list[Generation]:
    """The replies to requests ``indices``, in order, at most ``max_connections`` at
    once; the model is started and closed around them."""
    gate = asyncio.Semaphore(config.generate.max_connections)

    async def one(index: int) -> Generation:
        async with gate:
            return await model.generate(
                Request(messages=_messages(config, index), instance=None, sample=index,
                        seed=config.seed + index), config.generate)

    await model.start(config.generate, config.out.parent)
    try:
        return list(await asyncio.gather(*(one(index) for index in indices)))
    finally:
        await model.aclose()


def _messages(config: WritingConfig, index: int) -> list[dict[str, str]]:
    return prompt(STYLES[config.style], config.seed + index, config.inputs)


def _program(config: WritingConfig, index: int, written: Written, asked_at: str) -> Program:
    """The candidate with its provenance in ``meta``."""
    return Program(
        id=f"{config.style}-{index:05d}", source="written", code=written.code,
        entry_point=written.entry_point, calls=tuple(Call(args) for args in written.calls),
        meta={"written_by": config.model, "style": config.style, "request": index,
              "seed": config.seed + index, "temperature": config.generate.temperature,
              "prompt": _messages(config, index)[-1]["content"], "asked_at": asked_at})


def _record(program: Program) -> dict[str, object]:
    """The generic-source record of a kept program."""
    return {"id": program.id, "code": program.code, "entry_point": program.entry_point,
            "calls": [call.args for call in program.calls], "meta": program.meta}


def run_checks(sandbox: Sandbox, again: Sandbox, programs: list[Program]
               ) -> tuple[list[Program], dict[str, Dropped]]:
    """Rule 5: each program with the calls that returned the same within the budget on
    two runs, one in ``sandbox`` and one in ``again``, and why each program with no such
    call was dropped (by program id).

    The two runs are in two sandboxes, so in two worker processes started apart: a value
    made from an address (``id(len)``, a function's ``repr``) is the same in two runs of
    one process, and differs in the next build's; across processes, each laid out anew in
    memory, it differs as it will then."""
    calls = [(program, index) for program in programs for index in range(len(program.calls))]
    jobs = [plain_job(program, index) for program, index in calls]
    firsts = [sandbox.submit(job) for job in jobs]
    seconds = [again.submit(job) for job in jobs]
    ones = [future.result() for future in firsts]
    twos = [future.result() for future in seconds]
    kept: dict[str, list[Call]] = {program.id: [] for program in programs}
    reasons: dict[str, Dropped] = {}
    for (program, index), one, two in zip(calls, ones, twos, strict=True):
        reason = _call_reason(one, two, sandbox)
        if reason is None:
            kept[program.id].append(program.calls[index])
        else:
            reasons.setdefault(program.id, reason)
    held = [Program(program.id, program.source, program.code, program.entry_point,
                    tuple(kept[program.id]), program.meta)
            for program in programs if kept[program.id]]
    return held, {name: why for name, why in reasons.items() if not kept[name]}


def _call_reason(one: Trace, two: Trace, sandbox: Sandbox) -> Dropped | None:
    """Why a call's two runs do not make a ground truth, if they do not."""
    over = refused(one, sandbox)
    if over is not None:
        return Dropped("run", over)
    if one.status != "ok":
        return Dropped("run", f"a call ended with {one.status}"
                              + (f" ({one.detail})" if one.detail else ""))
    if (one.status, one.steps, one.value) != (two.status, two.steps, two.value):
        return Dropped("nondeterministic", "two runs of a call differ (status, steps or "
                                           "value)")
    return None
