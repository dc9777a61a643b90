"""Evaluating a model on a suite: concurrent generation, scoring, logging and resuming.

Every sample is appended to ``RUN/samples.jsonl`` the moment it is scored, one flushed
line each, so a crash or Ctrl-C loses at most the requests in flight. Running the same
command again reads that file and asks only for the (instance, sample) pairs it lacks; a
half-written last line is cut off first. ``RUN/run.json`` pins what must not change
between resumptions (suite, model, sampling settings); ``n`` and ``--limit`` may grow.
The files themselves are :mod:`execbench.rundir`'s. A run reads its suite once and makes
its model once (:func:`plan`), and hands both on to the generation and the results.
"""

from __future__ import annotations

import asyncio
import gc
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from execbench import context_check
from execbench.manifest import Manifest
from execbench.metrics import paired_summary, summarize, usage_summary, verdict_counts
from execbench.models import get_model
from execbench.models.base import Generation, Model, Request
from execbench.rundir import (
    RESULTS,
    RESUME_REMEDY,
    RUN_CONFIG,
    SAMPLES,
    Results,
    RunConfig,
    RunError,
    Sample,
    SampleCounts,
    SampleLog,
    begin_session,
    check_out,
    check_pinned,
    end_session,
    load_run_config,
    pin,
    prompt_hash,
    read_samples,
    rewrite_samples,
    sessions,
)
from execbench.sandbox.pool import Limits, Sandbox
from execbench.suite import load_suite
from execbench.tasks import Score, Task, get_task
from execbench.tasks.base import ERROR, Instance, judge, pairings

__all__ = ["RESULTS", "RUN_CONFIG", "SAMPLES", "Plan", "RunConfig", "RunError", "Sample",
           "load_run_config", "plan", "preview", "read_samples", "rescore", "run",
           "write_results"]
"""The engine's entry points, with the run-folder names its callers use beside them."""

YOUNG_GC_THRESHOLD = 10_000
"""Allocations between two collections of the youngest generation while requests are sent
(Python's default is 700). See :func:`_collect_less`."""


@dataclass
class Suite:
    """A suite as one run reads it, once: its manifest, instances and sha256."""

    manifest: Manifest
    instances: list[Instance]
    sha256: str

    @classmethod
    def load(cls, path: str) -> Suite:
        return cls(*load_suite(Path(path)))

    @property
    def limits(self) -> Limits:
        return self.manifest.recipe.limits


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


class _Scorer:
    """Scores responses, with a sandbox when one of the tasks re-executes answers."""

    def __init__(self, limits: Limits, instances: list[Instance]) -> None:
        needed = any(get_task(name).needs_sandbox for name in {i.task for i in instances})
        self.sandbox = Sandbox(limits=limits) if needed else None

    def __call__(self, instance: Instance, text: str | None) -> Score:
        return judge(instance, text, self.sandbox)

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()


def _score(scorer: _Scorer, instance: Instance, generation: Generation) -> Score:
    if generation.error is not None:
        return Score(ERROR, detail=generation.error)
    return scorer(instance, generation.text)


_Answered = tuple[Instance, int, int | None, str, Generation, Score | None]
"""A reply waiting to be logged: instance, sample, seed, prompt hash, the generation and its
score when the worker scored it already (in a thread, for sandboxed tasks)."""


class _Generator:
    """Asks for every (instance, sample) of a run's work, ``max_connections`` at a time,
    and logs each as soon as it is scored.

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

    def __init__(self, model: Model, config: RunConfig, scorer: _Scorer, log: SampleLog,
                 progress: Callable[[Sample], None] | None) -> None:
        self.model, self.config, self.scorer, self.log = model, config, scorer, log
        self.progress = progress
        self.prompts: dict[str, tuple[Task, list[dict[str, str]], str]] = {}
        self.batch: list[_Answered] = []
        self.pending: asyncio.Handle | None = None
        """The call that writes the batch being gathered, at the end of this turn."""
        self.failed: list[Exception] = []

    async def run(self, work: list[tuple[Instance, int]]) -> None:
        items = iter(work)
        workers = [asyncio.create_task(self.worker(items))
                   for _ in range(max(1, min(self.config.generate.max_connections, len(work))))]
        try:
            await asyncio.gather(*workers)
        finally:
            for w in workers:
                w.cancel()
            if self.pending is not None:  # answered before the run stopped: logged, not asked again
                self.pending.cancel()
                self.write_batch()
        if self.failed:
            raise self.failed[0]

    def seed_of(self, sample: int) -> int | None:
        """The seed sent with the ``sample``-th sample (None when the model takes none)."""
        seed = self.config.generate.seed
        return None if seed is None or not self.model.takes_seed else seed + sample

    async def fit(self, work: list[tuple[Instance, int]], unsent: dict[tuple[str, int], str],
                  notice: Callable[[str], None] | None) -> list[tuple[Instance, int]]:
        """The work whose prompts fit the model's context (:mod:`execbench.context_check`);
        the rest is logged as errors, not sent. ``unsent`` holds the errors of samples an
        earlier session refused: one refused again for the same reason is not logged twice.
        """
        generate = self.config.generate
        found = await context_check.check(
            self.model, work, lambda inst: self.prompt_of(inst)[1:], generate.max_tokens,
            generate.max_connections)
        samples = []
        for refused in found.refused:
            instance, sample = refused.instance, refused.sample
            _, _, phash = self.prompt_of(instance)
            generation = Generation(text=None, input_tokens=refused.prompt_tokens,
                                    attempts=0, error=refused.error)
            samples.append(Sample.of(instance, sample, self.seed_of(sample), phash, generation,
                                     Score(ERROR, detail=refused.error)))
        self.log.append([s for s in samples
                         if unsent.get((s.instance_id, s.sample)) != s.error])
        if self.progress is not None:
            for done in samples:
                self.progress(done)
        if notice is not None:
            for line in found.notices(generate.max_tokens):
                notice(line)
        return found.send

    def prompt_of(self, instance: Instance) -> tuple[Task, list[dict[str, str]], str]:
        made = self.prompts.get(instance.id)
        if made is None:
            task = get_task(instance.task)
            messages = task.prompt(instance, self.config.shots)
            made = self.prompts[instance.id] = task, messages, prompt_hash(messages)
        return made

    def write_batch(self) -> None:
        """Score, log and report the batch (an exception in a loop callback would only be
        logged, so a failure is kept for the workers to stop on)."""
        todo, self.batch, self.pending = self.batch, [], None
        try:
            samples = [Sample.of(instance, sample, seed, phash, generation,
                                 _score(self.scorer, instance, generation)
                                 if score is None else score)
                       for instance, sample, seed, phash, generation, score in todo]
            self.log.append(samples)
            if self.progress is not None:
                for done in samples:
                    self.progress(done)
        except Exception as exc:  # noqa: BLE001 - raised by run
            self.failed.append(exc)

    async def worker(self, items: Iterator[tuple[Instance, int]]) -> None:
        config, model = self.config, self.model
        loop = asyncio.get_running_loop()
        for instance, sample in items:
            if self.failed:
                return
            task, messages, phash = self.prompt_of(instance)
            seed = self.seed_of(sample)
            generation = await model.generate(
                Request(messages=messages, instance=instance, sample=sample, seed=seed),
                config.generate)
            score = None
            if task.needs_sandbox and generation.error is None:
                score = await asyncio.to_thread(_score, self.scorer, instance, generation)
            self.batch.append((instance, sample, seed, phash, generation, score))
            if self.pending is None:
                self.pending = loop.call_soon(self.write_batch)


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


def _chosen(config: RunConfig, suite: Suite) -> list[Instance]:
    """The instances the run asks about; refuses unknown tasks and an empty selection."""
    tasks = suite.manifest.recipe.tasks
    unknown = sorted(set(config.tasks or []) - set(tasks))
    if unknown:
        raise RunError(f"the suite has no task {', '.join(unknown)}; its tasks: "
                       f"{', '.join(tasks)}")
    chosen = select_instances(suite.instances, config.tasks, config.limit)
    if not chosen:
        raise RunError("no instance selected (check --tasks and --limit)")
    return chosen


def _missing(chosen: list[Instance], config: RunConfig,
             done: dict[tuple[str, int], Sample]) -> list[tuple[Instance, int]]:
    """The samples to ask for: those not logged, those refused before sending (the
    server's context may have grown since: the same URL, a server restarted with a larger
    one), and with ``--retry-errors`` those whose request failed."""
    return [(inst, s) for inst in chosen for s in range(config.n)
            if (inst.id, s) not in done or done[(inst.id, s)].unsent
            or (config.retry_errors and done[(inst.id, s)].verdict == ERROR)]


def _unsent(done: dict[tuple[str, int], Sample]) -> dict[tuple[str, int], str]:
    return {key: sample.error for key, sample in done.items()
            if sample.unsent and sample.error is not None}


@dataclass
class Plan:
    """What a run is to do, found once: its suite, the model (made and checked; None in a
    preview) and the (instance, sample) pairs still to ask, of ``total``."""

    suite: Suite
    model: Model | None
    work: list[tuple[Instance, int]]
    total: int
    unsent: dict[tuple[str, int], str] = field(default_factory=dict)
    """The errors of samples an earlier session refused before sending (in ``work`` again,
    to be checked again)."""


def plan(config: RunConfig, out: Path) -> Plan:
    """Check the suite and any earlier run, make the model and pin the run folder."""
    config.validate()
    suite = Suite.load(config.suite)
    chosen = _chosen(config, suite)
    # A bad model name or URL, or a model that cannot answer these tasks, must fail before
    # the run folder is pinned to it.
    model = get_model(config.model, base_url=config.base_url, model_args=config.model_args)
    model.check(chosen)
    check_out(out)
    out.mkdir(parents=True, exist_ok=True)
    pin(out, config.pinned(suite.sha256), config)
    done = read_samples(out / SAMPLES, repair=True)
    return Plan(suite, model, _missing(chosen, config, done), len(chosen) * config.n,
                _unsent(done))


def preview(config: RunConfig, out: Path) -> Plan:
    """What ``plan`` would find, touching nothing: no folder made, no pin written, no
    model created (a dry run needs no key). An earlier run in ``out`` with other pinned
    settings is refused as ``plan`` would."""
    config.validate()
    suite = Suite.load(config.suite)
    chosen = _chosen(config, suite)
    check_out(out)
    check_pinned(out, config.pinned(suite.sha256), RESUME_REMEDY)
    return Plan(suite, None, _missing(chosen, config, read_samples(out / SAMPLES)),
                len(chosen) * config.n)


def run(config: RunConfig, out: Path, progress: Callable[[Sample], None] | None = None,
        planned: Plan | None = None,
        notice: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Generate and score what is missing, then write and return ``results.json``'s
    record. ``planned`` is what ``plan`` returned for this run (made here if None);
    ``notice`` is given a line for each thing the user should know before the answers
    come (prompts not sent because they are over the model's context)."""
    config.validate()
    if planned is None:
        planned = plan(config, out)
    started = begin_session(out)
    outcome = "interrupted"
    try:
        if planned.work:
            _generate(config, out, planned, progress, notice)
        outcome = "completed"
    except Exception as exc:
        outcome = f"stopped: {exc}"
        raise
    finally:
        end_session(out, started, outcome)
    return write_results(load_run_config(out), out, planned.suite)


def _generate(config: RunConfig, out: Path, planned: Plan,
              progress: Callable[[Sample], None] | None,
              notice: Callable[[str], None] | None) -> None:
    model = planned.model
    if model is None:
        raise RunError("a preview cannot be run: plan the run first")
    scorer = _Scorer(planned.suite.limits, [inst for inst, _ in planned.work])
    logs: list[SampleLog] = []

    async def main() -> None:
        try:
            await model.start(config.generate, out)
            logs.append(SampleLog(out))  # only once a server answers: no empty log before
            generator = _Generator(model, config, scorer, logs[0], progress)
            await generator.run(await generator.fit(planned.work, planned.unsent, notice))
        finally:
            await model.aclose()

    try:
        with _collect_less():
            asyncio.run(main())
    finally:
        for log in logs:
            log.close()
        scorer.close()


def declared_metrics(tasks: list[str]) -> list[dict[str, Any]]:
    """What each task says its numbers are (``Task.metrics``), written into results.json
    so reports can show any task family from the results alone."""
    declared = []
    for name in tasks:
        task = get_task(name)
        for metric in task.metrics():
            declared.append({"task": name, "family": task.family, **asdict(metric),
                             "path": list(metric.path),
                             "interval": None if metric.interval is None
                             else list(metric.interval)})
    return declared


def breakdown_categories(tasks: list[str], instances: dict[str, Instance]
                         ) -> dict[str, dict[str, dict[str, str]]]:
    """Each task's breakdowns (``Task.breakdowns``): the category of each of its
    instances, as ``metrics.summarize`` takes them."""
    categories: dict[str, dict[str, dict[str, str]]] = {}
    for name in tasks:
        breakdowns = get_task(name).breakdowns
        if breakdowns:
            own = [instance for instance in instances.values() if instance.task == name]
            categories[name] = {breakdown.name: {instance.id: breakdown.category(instance)
                                                 for instance in own}
                                for breakdown in breakdowns}
    return categories


def write_results(config: RunConfig, out: Path, suite: Suite | None = None) -> dict[str, Any]:
    """Summarise the run's log into ``results.json`` and return its record; ``suite`` is
    the run's suite when the caller has read it already."""
    suite = suite or Suite.load(config.suite)
    chosen = {inst.id for inst in select_instances(suite.instances, config.tasks, config.limit)}
    samples = [s for (iid, index), s in read_samples(out / SAMPLES).items()
               if iid in chosen and index < config.n]
    records = [s.to_record() for s in samples]
    logged = sessions(out)
    wall = sum(session["seconds"] or 0.0 for session in logged)
    tasks = sorted({s.task for s in samples})
    by_id = {inst.id: inst for inst in suite.instances if inst.id in chosen}
    task_metrics = {}
    for name in tasks:
        summary = get_task(name).summarize([r for r in records if r["task"] == name], by_id)
        if summary is not None:
            task_metrics[name] = summary
    return Results(
        config=config, run_dir=str(out), suite_sha256=suite.sha256,
        counts=SampleCounts(instances=len(chosen), samples=len(samples),
                            expected_samples=len(chosen) * config.n,
                            verdicts=verdict_counts(records),
                            truncated=sum(1 for s in samples if s.truncated),
                            refused=sum(1 for s in samples if s.refused)),
        metrics=summarize(records, config.n, breakdown_categories(tasks, by_id)),
        usage=usage_summary(records, round(wall, 3), config.price_input, config.price_output),
        sessions=logged, task_metrics=task_metrics,
        paired_metrics={name: paired_summary(records, config.n, pairing.first, pairing.second)
                        for name, pairing in pairings().items()
                        if pairing.first in tasks and pairing.second in tasks},
        declared_metrics=declared_metrics(tasks)).write(out)


@dataclass(frozen=True)
class Rescored:
    """What re-scoring found: the new ``results.json`` record, and how many verdicts
    changed, by (before, after)."""

    results: dict[str, Any]
    changed: Counter[tuple[str, str]]


def rescore(out: Path, progress: Callable[[int, int], None] | None = None) -> Rescored:
    """Re-extract and re-score every logged response with the current code, against the
    suite the run pinned: nothing is rewritten if that suite is gone or has changed.
    ``progress`` is told (samples scored, samples) as it goes."""
    config = load_run_config(out)
    if not Path(config.suite).exists():
        raise RunError(f"{out} was run on the suite {config.suite}, which is gone; put it "
                       "back there to re-score")
    suite = Suite.load(config.suite)
    check_pinned(out, config.pinned(suite.sha256),
                 f"the suite {config.suite} has changed since the run; restore it to "
                 "re-score, or run again into a new --out folder")
    by_id = {inst.id: inst for inst in suite.instances}
    scorer = _Scorer(suite.limits, suite.instances)
    logged = list(read_samples(out / SAMPLES, repair=True).values())
    samples = []
    changed: Counter[tuple[str, str]] = Counter()
    try:
        for done, sample in enumerate(logged, 1):
            instance = by_id.get(sample.instance_id)
            if instance is not None and sample.error is None:
                before = sample.verdict
                sample = sample.rescored(scorer(instance, sample.response))
                if sample.verdict != before:
                    changed[before, sample.verdict] += 1
            samples.append(sample)
            if progress is not None:
                progress(done, len(logged))
    finally:
        scorer.close()
    rewrite_samples(out, samples)
    return Rescored(write_results(config, out, suite), changed)
