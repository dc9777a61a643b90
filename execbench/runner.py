"""Evaluating a model on a suite: concurrent generation, scoring, logging and resuming.

Every sample is appended to ``RUN/samples.jsonl`` the moment it is scored, one flushed
line each, so a crash or Ctrl-C loses at most the requests in flight. Running the same
command again reads that file and asks only for the (instance, sample) pairs it lacks; a
half-written last line is cut off first. ``RUN/run.json`` pins what must not change
between resumptions (suite, model, sampling settings); ``n`` and ``--limit`` may grow.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import os
import platform
import shlex
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from execbench import SCHEMA_VERSION, __version__
from execbench.metrics import paired_summary, summarize, usage_summary, verdict_counts
from execbench.models import get_model, sampling_defaults
from execbench.models.base import GenerateConfig, Generation, Model, Request
from execbench.sandbox.pool import Limits, Sandbox
from execbench.settings import SettingError, at_least_one
from execbench.suite import dumps, load_suite
from execbench.tasks import Score, Task, get_task
from execbench.tasks.base import ERROR, SCORING_ERROR, Instance, pairings

SAMPLES = "samples.jsonl"
RUN_CONFIG = "run.json"
RESULTS = "results.json"

# Settings that change what a sample means: resuming with other values would mix runs.
_PINNED = ("suite_sha256", "model", "base_url", "model_args", "shots", "temperature", "top_p",
           "max_tokens", "seed")


YOUNG_GC_THRESHOLD = 10_000
"""Allocations between two collections of the youngest generation while requests are sent
(Python's default is 700). See :func:`_collect_less`."""


MAX_SHOTS = 3
"""The most worked examples a prompt may show (CodeSense's abstract prompts use three)."""


class RunError(Exception):
    """The run cannot start or resume (bad suite, conflicting earlier run)."""


@dataclass
class RunConfig:
    suite: str
    model: str
    n: int = 1
    shots: int = 0
    limit: int | None = None
    """At most this many instances per task (the first ones in suite order)."""
    tasks: list[str] | None = None
    base_url: str | None = None
    model_args: dict[str, str] = field(default_factory=dict)
    retry_errors: bool = False
    generate: GenerateConfig = field(default_factory=GenerateConfig)
    price_input: float | None = None
    """Price per million input tokens, for the cost estimate (not pinned: prices change)."""
    price_output: float | None = None
    """Price per million output tokens."""

    def record(self) -> dict[str, Any]:
        """The one serialisation of a run's settings: ``run.json`` holds it, with the
        pinned values apart, and ``results.json`` repeats it under ``run``. Settings left
        unset (None) are the provider's, which ``sampling_defaults`` states in words."""
        return {"model": self.model, "suite": str(Path(self.suite).resolve()), "n": self.n,
                "shots": self.shots, "limit": self.limit, "tasks": self.tasks,
                "base_url": self.base_url, "model_args": self.model_args,
                "generate": asdict(self.generate), "price_input": self.price_input,
                "price_output": self.price_output,
                "sampling_defaults": sampling_defaults(self.model)}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> RunConfig:
        """Read ``record()``'s form, or a ``run.json`` written before it (which kept the
        model, shots, base URL and model args only among the pinned values)."""
        pinned = record.get("pinned", {})

        def value(key: str) -> Any:
            return record[key] if key in record else pinned[key]

        return cls(suite=record["suite"], model=value("model"), n=record["n"],
                   shots=value("shots"), limit=record["limit"], tasks=record["tasks"],
                   base_url=value("base_url"), model_args=value("model_args"),
                   generate=GenerateConfig(**record["generate"]),
                   price_input=record.get("price_input"), price_output=record.get("price_output"))

    def validate(self) -> None:
        """Raise ``SettingError`` for settings no run can use, before anything is written."""
        at_least_one({"n": self.n, "limit": self.limit})
        if self.shots not in range(MAX_SHOTS + 1):
            raise SettingError(f"{{0}} must be 0 to {MAX_SHOTS}", "shots")
        self.generate.validate()
        if (self.price_input is None) != (self.price_output is None):
            raise SettingError("{0} and {1} go together (a cost needs both)", "price_input",
                               "price_output")
        if any(price is not None and price < 0 for price in (self.price_input,
                                                             self.price_output)):
            raise SettingError("{0} and {1} must be >= 0", "price_input", "price_output")

    def pinned(self, suite_sha256: str) -> dict[str, Any]:
        """What a resume or a re-score must find unchanged (``_PINNED``)."""
        values = {**self.record(), **self.record()["generate"], "suite_sha256": suite_sha256}
        return {k: values[k] for k in _PINNED}


def prompt_hash(messages: list[dict[str, str]]) -> str:
    return hashlib.sha256(dumps({"messages": messages}).encode()).hexdigest()[:16]


def read_samples(path: Path, repair: bool = False) -> dict[tuple[str, int], dict[str, Any]]:
    """The samples logged so far, the last record winning for each (instance, sample).

    With ``repair``, a final line without its newline (the process died mid-write) is cut.
    """
    if not path.exists():
        return {}
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if repair and end != len(data):
        with path.open("r+b") as handle:
            handle.truncate(end)
    samples: dict[tuple[str, int], dict[str, Any]] = {}
    # newlines only: a record keeps U+0085 and U+2028 raw, and splitlines would cut there
    for number, line in enumerate(data[:end].decode("utf-8", "replace").split("\n"), 1):
        if line.strip():
            try:
                record = json.loads(line)
                samples[(record["instance_id"], record["sample"])] = record
            except (ValueError, KeyError, TypeError):
                raise RunError(f"{path}:{number}: not a sample record; remove or fix that "
                               "line and run again") from None
    return samples


def select_instances(instances: list[Instance], tasks: list[str] | None,
                     limit: int | None) -> list[Instance]:
    chosen, per_task = [], {}
    for instance in instances:
        task = instance.task
        if tasks is not None and task not in tasks:
            continue
        if limit is not None and per_task.get(task, 0) >= limit:
            continue
        per_task[task] = per_task.get(task, 0) + 1
        chosen.append(instance)
    return chosen


def _check_pinned(out: Path, pinned: dict[str, Any], remedy: str) -> dict[str, Any] | None:
    """The ``run.json`` of the run in ``out`` (None if there is none yet), after refusing
    if any setting it pinned differs from ``pinned``: resuming would mix two runs in one
    log, and re-scoring would judge the logged answers against instances they were not
    given for. ``remedy`` ends the message with what the user can do instead."""
    path = out / RUN_CONFIG
    if not path.exists():
        return None
    earlier = json.loads(path.read_text(encoding="utf-8"))
    changed = [k for k in _PINNED if earlier.get("pinned", {}).get(k) != pinned[k]]
    if changed:
        raise RunError(f"{out} holds a run with different {', '.join(changed)}; {remedy}")
    return earlier


def _check_resume(out: Path, pinned: dict[str, Any], config: RunConfig) -> None:
    """Refuse to mix runs; record the run's scope, the widest asked for so far (a resume
    with fewer samples, a lower limit or fewer tasks does not hide what is logged)."""
    scope: dict[str, Any] = {"n": config.n, "limit": config.limit, "tasks": config.tasks}
    earlier = _check_pinned(out, pinned,
                            "use a new --out folder (or the same settings to resume)")
    sessions: list[dict[str, Any]] = []
    prices = {"price_input": config.price_input, "price_output": config.price_output}
    if earlier is not None:
        sessions = earlier.get("sessions", [])
        if config.price_input is None and config.price_output is None:
            prices = {key: earlier.get(key) for key in prices}
        scope["n"] = max(config.n, earlier["n"])
        if config.limit is not None and earlier["limit"] is not None:
            scope["limit"] = max(config.limit, earlier["limit"])
        else:
            scope["limit"] = None
        if config.tasks is not None and earlier["tasks"] is not None:
            scope["tasks"] = sorted(set(config.tasks) | set(earlier["tasks"]))
        else:
            scope["tasks"] = None
    record = {"schema_version": SCHEMA_VERSION, "execbench_version": __version__,
              "pinned": pinned, **config.record(), **scope, **prices, "sessions": sessions}
    _write_json(out / RUN_CONFIG, record)


def _write_json(path: Path, record: dict[str, Any]) -> None:
    """Replace ``path`` whole, so a crash never leaves half a run.json or results.json."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _begin_session(out: Path) -> float:
    """Add this invocation to run.json's ``sessions`` and return when it began (a resumed
    run has several: their durations add up to the run's wall time, and each says which
    execbench, Python, host and command line it was)."""
    started = time.time()
    record = json.loads((out / RUN_CONFIG).read_text(encoding="utf-8"))
    record.setdefault("sessions", []).append({
        "started": datetime.fromtimestamp(started, UTC).isoformat(timespec="seconds"),
        "ended": None, "seconds": None, "outcome": None, "execbench_version": __version__,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "host": socket.gethostname(), "command": shlex.join(sys.argv)})
    _write_json(out / RUN_CONFIG, record)
    return started


def _end_session(out: Path, started: float, outcome: str) -> None:
    """Close the session :func:`_begin_session` opened: when, after how long, and how."""
    record = json.loads((out / RUN_CONFIG).read_text(encoding="utf-8"))
    record["sessions"][-1].update(ended=datetime.now(UTC).isoformat(timespec="seconds"),
                                  seconds=round(time.time() - started, 3), outcome=outcome)
    _write_json(out / RUN_CONFIG, record)


def score_fields(score: Score) -> dict[str, Any]:
    """The part of a sample record that scoring writes (and re-scoring rewrites)."""
    return {"answer": score.answer, "verdict": score.verdict, "correct": score.correct,
            "score": score.score, "detail": score.detail, "extra": score.extra or None}


def sample_record(instance: Instance, sample: int, seed: int | None, phash: str,
                  generation: Generation, score: Score) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "instance_id": instance.id,
        "task": instance.task,
        "source": instance.source,
        "sample": sample,
        "seed": seed,
        "prompt_hash": phash,
        "response": generation.text,
        "reasoning": generation.extra.get("reasoning"),
        **score_fields(score),
        "stop_reason": generation.stop_reason,
        "truncated": generation.truncated,
        "refused": generation.refused,
        "refusal": generation.extra.get("refusal"),
        "input_tokens": generation.input_tokens,
        "output_tokens": generation.output_tokens,
        "latency": round(generation.latency, 4),
        "attempts": generation.attempts,
        "endpoint": generation.endpoint,
        "error": generation.error,
    }


class _Scorer:
    """Scores responses, with a sandbox when one of the tasks re-executes answers."""

    def __init__(self, limits: Limits, instances: list[Instance]) -> None:
        needed = any(get_task(name).needs_sandbox for name in {i.task for i in instances})
        self.sandbox = Sandbox(limits=limits) if needed else None

    def __call__(self, instance: Instance, text: str | None) -> Score:
        task = get_task(instance.task)
        try:
            return task.score(instance, text, self.sandbox if task.needs_sandbox else None)
        except Exception as exc:  # noqa: BLE001 - one odd answer must not stop the run
            return Score(SCORING_ERROR, detail=f"{type(exc).__name__}: {exc}"[:300])

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()


def _score(scorer: _Scorer, instance: Instance, generation: Generation) -> Score:
    if generation.error is not None:
        return Score(ERROR, detail=generation.error)
    return scorer(instance, generation.text)


async def _generate_all(model: Model, config: RunConfig, work: list[tuple[Instance, int]],
                        scorer: _Scorer, out: Path,
                        progress: Callable[[dict[str, Any]], None] | None) -> None:
    """Ask for every (instance, sample) of ``work``, ``max_connections`` at a time, and log
    each as soon as it is scored.

    At hundreds of connections against a fast server the client's CPU is the limit, so the
    work per sample is kept small and done in batches: the replies that arrive in one turn
    of the event loop are scored, encoded and appended together at the end of that turn
    (one ``os.write`` on an append-only descriptor), with the scoring code and data warm in
    the CPU's caches (scoring one sample between two network events took twice as long).
    A worker sends its next request as soon as its reply is in the batch, so a crash loses
    at most the requests in flight and the replies of the turn under way; a failure to
    write stops every worker before its next request and is raised. The workers share one
    iterator, and an instance's task, prompt and prompt hash are made once for all its
    samples.
    """
    loop = asyncio.get_running_loop()
    items = iter(work)
    prompts: dict[str, tuple[Task, list[dict[str, str]], str]] = {}
    batch: list[tuple[Instance, int, int | None, str, Generation, Score | None]] = []
    pending: asyncio.Handle | None = None
    """The call that writes the batch being gathered, at the end of this turn."""
    failed: list[Exception] = []
    fd = os.open(out / SAMPLES, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def prompt_of(instance: Instance) -> tuple[Task, list[dict[str, str]], str]:
        made = prompts.get(instance.id)
        if made is None:
            task = get_task(instance.task)
            messages = task.prompt(instance, config.shots)
            made = prompts[instance.id] = task, messages, prompt_hash(messages)
        return made

    def write_batch() -> None:
        """Score, log and report the batch (an exception in a loop callback would only be
        logged, so a failure is kept for the workers to stop on)."""
        nonlocal batch, pending
        todo, batch, pending = batch, [], None
        try:
            records = [sample_record(instance, sample, seed, phash, generation,
                                     _score(scorer, instance, generation)
                                     if score is None else score)
                       for instance, sample, seed, phash, generation, score in todo]
            os.write(fd, "".join([dumps(record) + "\n" for record in records]).encode())
            if progress is not None:
                for record in records:
                    progress(record)
        except Exception as exc:  # noqa: BLE001 - raised by _generate_all
            failed.append(exc)

    async def worker() -> None:
        nonlocal pending
        for instance, sample in items:
            if failed:
                return
            task, messages, phash = prompt_of(instance)
            seed = (None if config.generate.seed is None or not model.takes_seed
                    else config.generate.seed + sample)
            generation = await model.generate(
                Request(messages=messages, instance=instance, sample=sample, seed=seed),
                config.generate)
            score = None
            if task.needs_sandbox and generation.error is None:
                score = await asyncio.to_thread(_score, scorer, instance, generation)
            batch.append((instance, sample, seed, phash, generation, score))
            if pending is None:
                pending = loop.call_soon(write_batch)

    workers = [asyncio.create_task(worker())
               for _ in range(max(1, min(config.generate.max_connections, len(work))))]
    try:
        await asyncio.gather(*workers)
    finally:
        for w in workers:
            w.cancel()
        try:
            if pending is not None:  # answered before the run stopped: logged, not asked again
                pending.cancel()
                write_batch()
        finally:
            os.close(fd)
    if failed:
        raise failed[0]


@contextmanager
def _collect_less() -> Iterator[None]:
    """Keep Python's cycle collector from taxing every request while the run sends them.

    Each request allocates a few hundred objects (aiohttp's request and response, the
    reply's JSON, the sample record), so with the default thresholds the collector runs a
    young collection every few requests and, every ten of those, one that walks every
    object surviving so far: the suite, the work list, the prompts, every imported module.
    Measured at 256 connections, that was a sixth of the client's CPU time per request.
    Objects that exist when the requests start live until the run ends, so they are frozen
    (never walked again until then), and young collections are made rarer; garbage cycles
    are still collected, in larger and fewer passes. Both are undone afterwards. If the
    caller has frozen objects of its own, freezing is left to it.
    """
    threshold = gc.get_threshold()
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    gc.set_threshold(max(threshold[0], YOUNG_GC_THRESHOLD), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        if freeze:
            gc.unfreeze()


def _chosen(config: RunConfig) -> tuple[list[Instance], str]:
    """The instances the run asks about and the suite's sha256; refuses unknown tasks and
    an empty selection."""
    manifest, instances, sha = load_suite(Path(config.suite))
    unknown = sorted(set(config.tasks or []) - set(manifest["tasks"]))
    if unknown:
        raise RunError(f"the suite has no task {', '.join(unknown)}; its tasks: "
                       f"{', '.join(manifest['tasks'])}")
    chosen = select_instances(instances, config.tasks, config.limit)
    if not chosen:
        raise RunError("no instance selected (check --tasks and --limit)")
    return chosen, sha


def _missing(chosen: list[Instance], config: RunConfig,
             done: dict[tuple[str, int], dict[str, Any]]) -> list[tuple[Instance, int]]:
    return [(inst, s) for inst in chosen for s in range(config.n)
            if (inst.id, s) not in done
            or (config.retry_errors and done[(inst.id, s)]["verdict"] == ERROR)]


def plan(config: RunConfig, out: Path) -> tuple[list[tuple[Instance, int]], int]:
    """Check the suite and any earlier run; returns (pairs still to do, pairs in total)."""
    config.validate()
    chosen, sha = _chosen(config)
    # A bad model name or URL, or a model that cannot answer these tasks, must fail before
    # the run folder is pinned to it.
    model = get_model(config.model, base_url=config.base_url, model_args=config.model_args)
    model.check(sorted({inst.task for inst in chosen}))
    out.mkdir(parents=True, exist_ok=True)
    _check_resume(out, config.pinned(sha), config)
    done = read_samples(out / SAMPLES, repair=True)
    return _missing(chosen, config, done), len(chosen) * config.n


def preview(config: RunConfig, out: Path) -> tuple[list[tuple[Instance, int]], int]:
    """What ``plan`` would return, touching nothing: no folder made, no pin written, no
    model created (a dry run needs no key). An earlier run in ``out`` with other pinned
    settings is refused as ``plan`` would."""
    config.validate()
    chosen, sha = _chosen(config)
    _check_pinned(out, config.pinned(sha), "use a new --out folder (or the same settings "
                  "to resume)")
    return _missing(chosen, config, read_samples(out / SAMPLES)), len(chosen) * config.n


def run(config: RunConfig, out: Path,
        progress: Callable[[dict[str, Any]], None] | None = None,
        work: list[tuple[Instance, int]] | None = None) -> dict[str, Any]:
    """Generate and score what is missing, then write and return ``results.json``."""
    config.validate()
    if work is None:
        work, _ = plan(config, out)
    manifest, _, _ = load_suite(Path(config.suite))
    started = _begin_session(out)
    outcome = "interrupted"
    try:
        if work:
            model = get_model(config.model, base_url=config.base_url,
                              model_args=config.model_args)
            scorer = _Scorer(Limits(**manifest["limits"]), [inst for inst, _ in work])

            async def main() -> None:
                try:
                    await model.start(config.generate, out)
                    await _generate_all(model, config, work, scorer, out, progress)
                finally:
                    await model.aclose()

            try:
                with _collect_less():
                    asyncio.run(main())
            finally:
                scorer.close()
        outcome = "completed"
    except Exception as exc:
        outcome = f"stopped: {exc}"
        raise
    finally:
        _end_session(out, started, outcome)
    return write_results(load_run_config(out), out)


def declared_metrics(tasks: list[str]) -> list[dict[str, Any]]:
    """What each task says its numbers are (``Task.metrics``), written into results.json
    so reports can show any task family from the results alone."""
    declared = []
    for name in tasks:
        task = get_task(name)
        for metric in task.metrics():
            declared.append({"task": name, "family": task.family, **asdict(metric),
                             "path": list(metric.path)})
    return declared


def write_results(config: RunConfig, out: Path) -> dict[str, Any]:
    manifest, instances, sha = load_suite(Path(config.suite))
    chosen = {inst.id for inst in select_instances(instances, config.tasks, config.limit)}
    samples = [s for (iid, index), s in read_samples(out / SAMPLES).items()
               if iid in chosen and index < config.n]
    sessions = json.loads((out / RUN_CONFIG).read_text(encoding="utf-8")).get("sessions", [])
    wall = sum(session["seconds"] or 0.0 for session in sessions)
    results = {
        "schema_version": SCHEMA_VERSION,
        "execbench_version": __version__,
        "run": {**config.record(), "run_dir": str(out), "suite_sha256": sha},
        "counts": {"instances": len(chosen), "samples": len(samples),
                   "expected_samples": len(chosen) * config.n,
                   "verdicts": verdict_counts(samples),
                   "truncated": sum(1 for s in samples if s.get("truncated")),
                   "refused": sum(1 for s in samples if s.get("refused"))},
        "metrics": summarize(samples, config.n),
        "usage": usage_summary(samples, round(wall, 3), config.price_input,
                               config.price_output),
        "sessions": sessions,
    }
    tasks = {s["task"] for s in samples}
    by_id = {inst.id: inst for inst in instances if inst.id in chosen}
    for name in sorted(tasks):
        summary = get_task(name).summarize([s for s in samples if s["task"] == name], by_id)
        if summary is not None:
            results.setdefault("task_metrics", {})[name] = summary
    for name, pairing in pairings().items():
        if pairing.first in tasks and pairing.second in tasks:
            results.setdefault("paired_metrics", {})[name] = paired_summary(
                samples, config.n, pairing.first, pairing.second)
    results["declared_metrics"] = declared_metrics(sorted(tasks))
    _write_json(out / RESULTS, results)
    return results


def load_run_config(out: Path) -> RunConfig:
    """The configuration a run folder was made with (for ``execbench score``)."""
    path = out / RUN_CONFIG
    if not path.exists():
        raise RunError(f"{out} is not a run folder (no {RUN_CONFIG})")
    try:
        return RunConfig.from_record(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError) as exc:
        raise RunError(f"{path} is not a run configuration this execbench reads ({exc!r}); "
                       "run again into a new --out folder") from None


def rescore(out: Path) -> dict[str, Any]:
    """Re-extract and re-score every logged response with the current code, against the
    suite the run pinned: nothing is rewritten if that suite is gone or has changed."""
    config = load_run_config(out)
    suite = Path(config.suite)
    if not suite.exists():
        raise RunError(f"{out} was run on the suite {suite}, which is gone; put it back "
                       "there to re-score")
    manifest, instances, sha = load_suite(suite)
    _check_pinned(out, config.pinned(sha),
                  f"the suite {suite} has changed since the run; restore it to re-score, "
                  "or run again into a new --out folder")
    by_id = {inst.id: inst for inst in instances}
    scorer = _Scorer(Limits(**manifest["limits"]), instances)
    lines = []
    try:
        for record in read_samples(out / SAMPLES, repair=True).values():
            instance = by_id.get(record["instance_id"])
            if instance is not None and record["error"] is None:
                record.update(score_fields(scorer(instance, record["response"])))
            lines.append(dumps(record) + "\n")
    finally:
        scorer.close()
    tmp = out / (SAMPLES + ".tmp")
    tmp.write_text("".join(lines), encoding="utf-8")
    os.replace(tmp, out / SAMPLES)
    return write_results(config, out)
