"""Evaluating a model on a suite: concurrent generation, scoring, logging and resuming.

Every sample is appended to ``RUN/samples.jsonl`` the moment it is scored, one flushed
line each, so a crash or Ctrl-C loses at most the requests in flight. Running the same
command again reads that file and asks only for the (instance, sample) pairs it lacks; a
half-written last line is cut off first. ``RUN/run.json`` pins what must not change
between resumptions (suite, model, sampling settings); ``n`` and ``--limit`` may grow.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from execbench import SCHEMA_VERSION, __version__
from execbench.metrics import paired_summary, summarize, verdict_counts
from execbench.models import get_model
from execbench.models.base import GenerateConfig, Generation, Model, Request
from execbench.sandbox.pool import Limits, Sandbox
from execbench.suite import dumps, load_suite
from execbench.tasks import Score, get_task
from execbench.tasks.base import ERROR, SCORING_ERROR, Instance, pairings

SAMPLES = "samples.jsonl"
RUN_CONFIG = "run.json"
RESULTS = "results.json"

# Settings that change what a sample means: resuming with other values would mix runs.
_PINNED = ("suite_sha256", "model", "base_url", "model_args", "shots", "temperature", "top_p",
           "max_tokens", "seed")


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

    def record(self) -> dict[str, Any]:
        """The one serialisation of a run's settings: ``run.json`` holds it, with the
        pinned values apart, and ``results.json`` repeats it under ``run``."""
        return {"model": self.model, "suite": str(Path(self.suite).resolve()), "n": self.n,
                "shots": self.shots, "limit": self.limit, "tasks": self.tasks,
                "base_url": self.base_url, "model_args": self.model_args,
                "generate": asdict(self.generate)}

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
                   generate=GenerateConfig(**record["generate"]))

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
    for number, line in enumerate(data[:end].decode("utf-8", "replace").splitlines(), 1):
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
    if earlier is not None:
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
              "pinned": pinned, **config.record(), **scope}
    (out / RUN_CONFIG).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n",
                                  encoding="utf-8")


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
        "input_tokens": generation.input_tokens,
        "output_tokens": generation.output_tokens,
        "latency": round(generation.latency, 4),
        "attempts": generation.attempts,
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
    queue: asyncio.Queue[tuple[Instance, int]] = asyncio.Queue()
    for item in work:
        queue.put_nowait(item)
    with (out / SAMPLES).open("a", encoding="utf-8") as log:

        async def worker() -> None:
            while not queue.empty():
                instance, sample = queue.get_nowait()
                task = get_task(instance.task)
                messages = task.prompt(instance, config.shots)
                seed = None if config.generate.seed is None else config.generate.seed + sample
                generation = await model.generate(
                    Request(messages=messages, instance=instance, sample=sample, seed=seed),
                    config.generate)
                if task.needs_sandbox and generation.error is None:
                    score = await asyncio.to_thread(_score, scorer, instance, generation)
                else:
                    score = _score(scorer, instance, generation)
                record = sample_record(instance, sample, seed, prompt_hash(messages),
                                       generation, score)
                log.write(dumps(record) + "\n")
                log.flush()
                if progress is not None:
                    progress(record)

        workers = [asyncio.create_task(worker())
                   for _ in range(max(1, min(config.generate.max_connections, len(work))))]
        try:
            await asyncio.gather(*workers)
        finally:
            for w in workers:
                w.cancel()


def plan(config: RunConfig, out: Path) -> tuple[list[tuple[Instance, int]], int]:
    """Check the suite and any earlier run; returns (pairs still to do, pairs in total)."""
    manifest, instances, sha = load_suite(Path(config.suite))
    unknown = sorted(set(config.tasks or []) - set(manifest["tasks"]))
    if unknown:
        raise RunError(f"the suite has no task {', '.join(unknown)}; its tasks: "
                       f"{', '.join(manifest['tasks'])}")
    chosen = select_instances(instances, config.tasks, config.limit)
    if not chosen:
        raise RunError("no instance selected (check --tasks and --limit)")
    # A bad model name or URL must fail before the run folder is pinned to it.
    get_model(config.model, base_url=config.base_url, model_args=config.model_args)
    out.mkdir(parents=True, exist_ok=True)
    _check_resume(out, config.pinned(sha), config)
    done = read_samples(out / SAMPLES, repair=True)
    work = [(inst, s) for inst in chosen for s in range(config.n)
            if (inst.id, s) not in done
            or (config.retry_errors and done[(inst.id, s)]["verdict"] == ERROR)]
    return work, len(chosen) * config.n


def run(config: RunConfig, out: Path,
        progress: Callable[[dict[str, Any]], None] | None = None,
        work: list[tuple[Instance, int]] | None = None) -> dict[str, Any]:
    """Generate and score what is missing, then write and return ``results.json``."""
    if work is None:
        work, _ = plan(config, out)
    manifest, _, _ = load_suite(Path(config.suite))
    if work:
        model = get_model(config.model, base_url=config.base_url, model_args=config.model_args)
        scorer = _Scorer(Limits(**manifest["limits"]), [inst for inst, _ in work])

        async def main() -> None:
            try:
                await _generate_all(model, config, work, scorer, out, progress)
            finally:
                await model.aclose()

        try:
            asyncio.run(main())
        finally:
            scorer.close()
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
    results = {
        "schema_version": SCHEMA_VERSION,
        "execbench_version": __version__,
        "run": {**config.record(), "run_dir": str(out), "suite_sha256": sha},
        "counts": {"instances": len(chosen), "samples": len(samples),
                   "expected_samples": len(chosen) * config.n,
                   "verdicts": verdict_counts(samples)},
        "metrics": summarize(samples, config.n),
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
    tmp = out / (RESULTS + ".tmp")
    tmp.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, out / RESULTS)
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
