"""Evaluating a model on a suite: concurrent generation, scoring, logging and resuming.

Every sample is appended to ``RUN/samples.jsonl`` the moment it is scored, one flushed
line each, so a crash or Ctrl-C loses at most the requests in flight. Running the same
command again reads that file and asks only for the (instance, sample) pairs it lacks; a
half-written last line is cut off first. ``RUN/run.json`` pins what must not change
between resumptions (suite, model, sampling settings); ``n`` and ``--limit`` may grow.
The files themselves are :mod:`execbench.rundir`'s. A run opens its suite once and makes
its model once (:func:`plan`), and hands both on to the generation and the results.

Suites and logs are read as streams (:class:`execbench.suite.SuiteFile`,
:func:`execbench.rundir.iter_samples`): what a run holds for each instance or sample is a
few small values (its key, its state in the log, its category, the slim record a summary
reads), never its code, truth, prompt or response, so memory does not follow the size of
what the suite and the answers hold.
"""

from __future__ import annotations

import asyncio
import gc
import sys
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from execbench import context_check
from execbench.kept import Kept
from execbench.metrics import paired_summary, summarize, usage_summary, verdict_counts
from execbench.models import get_model
from execbench.models.base import Generation, Model, Request
from execbench.registry import close_names
from execbench.results import DeclaredMetric, Session
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
    iter_samples,
    load_run_config,
    pin,
    prompt_hash,
    read_samples,
    repair_log,
    rewrite_samples,
    sessions,
)
from execbench.sandbox.pool import Limits, Sandbox
from execbench.suite import SuiteFile
from execbench.tasks import Score, Task, get_task
from execbench.tasks.asking import DrawnExamples, PromptTemplateError, ask, drawn_from
from execbench.tasks.base import ERROR, Instance
from execbench.tasks.registry import judge, pairings

__all__ = ["RESULTS", "RUN_CONFIG", "SAMPLES", "Plan", "RunConfig", "RunError", "Sample",
           "load_run_config", "plan", "preview", "read_samples", "rescore", "run",
           "write_results"]
"""The engine's entry points, with the run-folder names its callers use beside them."""

YOUNG_GC_THRESHOLD = 10_000
"""Allocations between two collections of the youngest generation while requests are sent
(Python's default is 700). See :func:`_collect_less`."""

PROMPTS_KEPT = 16
"""Prompts a run keeps made: an instance's ``n`` samples are taken from the work one after
another, so each prompt is made once while memory holds a few, not the suite's."""


LogState = str | None
"""A logged sample's state, as a resume needs it: None answered, ``FAILED`` its request
failed, else the error of a sample refused before sending."""
FAILED = ""


def open_suite(path: str) -> SuiteFile:
    return SuiteFile.open(Path(path))


def select_instances(instances: Iterable[Instance], tasks: list[str] | None,
                     limit: int | None) -> Iterator[Instance]:
    per_task: dict[str, int] = {}
    for instance in instances:
        task = instance.task
        if tasks is not None and task not in tasks:
            continue
        if limit is not None and per_task.get(task, 0) >= limit:
            continue
        per_task[task] = per_task.get(task, 0) + 1
        yield instance


def _selected(config: RunConfig, suite: SuiteFile) -> Iterator[Instance]:
    """The run's instances, read from the suite as they are needed."""
    return select_instances(suite.instances(), config.tasks, config.limit)


class _Scorer:
    """Scores responses, with a sandbox when one of the tasks re-executes answers."""

    def __init__(self, limits: Limits, tasks: Iterable[str]) -> None:
        needed = any(get_task(name).judging.needs_sandbox for name in set(tasks))
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
    iterator over the work (a stream of the suite), and an instance's task, prompt and
    prompt hash are made once for all its samples and kept for the next few instances.
    """

    def __init__(self, model: Model, config: RunConfig, scorer: _Scorer, log: SampleLog,
                 progress: Callable[[Sample], None] | None,
                 drawn: DrawnExamples | None) -> None:
        self.model, self.config, self.scorer, self.log = model, config, scorer, log
        self.progress = progress
        self.protocol = config.protocol()
        self.drawn = drawn
        self.prompts: OrderedDict[str, tuple[Task, list[dict[str, str]], str]] = \
            OrderedDict()
        self.batch: list[_Answered] = []
        self.pending: asyncio.Handle | None = None
        """The call that writes the batch being gathered, at the end of this turn."""
        self.failed: list[Exception] = []

    async def run(self, work: Iterator[tuple[Instance, int]]) -> None:
        workers = [asyncio.create_task(self.worker(work))
                   for _ in range(max(1, self.config.generate.max_connections))]
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

    async def fit(self, planned: Plan, notice: Callable[[str], None] | None
                  ) -> set[tuple[str, int]]:
        """The samples of the work whose prompts do not fit the model's context
        (:mod:`execbench.context_check`), each logged as an error as it is found, not
        sent. One an earlier session refused for the same reason is not logged twice."""
        generate = self.config.generate

        def refuse(refused: context_check.Refused) -> None:
            instance, sample = refused.instance, refused.sample
            _, _, phash = self.prompt_of(instance)
            generation = Generation(text=None, input_tokens=refused.prompt_tokens,
                                    attempts=0, error=refused.error)
            logged = Sample.of(instance, sample, self.seed_of(sample), phash, generation,
                               Score(ERROR, detail=refused.error))
            if planned.logged.get((instance.id, sample)) != refused.error:
                self.log.append([logged])
            if self.progress is not None:
                self.progress(logged)

        found = await context_check.check(
            self.model, planned.work(), lambda inst: self.prompt_of(inst)[1:],
            generate.max_tokens, generate.max_connections, refuse)
        if notice is not None:
            for line in found.notices(generate.max_tokens):
                notice(line)
        return found.refused

    def prompt_of(self, instance: Instance) -> tuple[Task, list[dict[str, str]], str]:
        made = self.prompts.get(instance.id)
        if made is None:
            task = get_task(instance.task)
            try:
                messages = ask(task, instance, self.protocol, self.drawn)
            except PromptTemplateError as exc:
                raise RunError(f"{instance.id}: {exc}") from None
            made = self.prompts[instance.id] = task, messages, prompt_hash(messages)
            if len(self.prompts) > PROMPTS_KEPT:
                self.prompts.popitem(last=False)
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
            if task.judging.needs_sandbox and generation.error is None:
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


def _log_states(out: Path) -> dict[tuple[str, int], LogState]:
    """Each logged sample's :data:`LogState` (the log read as a stream; the texts are not
    kept)."""
    states: dict[tuple[str, int], LogState] = {}
    for sample in iter_samples(out / SAMPLES):
        states[(sample.instance_id, sample.sample)] = (
            sample.error if sample.unsent else FAILED if sample.verdict == ERROR else None)
    return states


@dataclass
class Plan:
    """What a run is to do, found once: its suite, the model (made and checked; None in a
    preview) and how many (instance, sample) pairs are still to ask (``todo``), of
    ``total``. The pairs themselves are read again from the suite when asked for
    (:meth:`work`), so a plan holds no instance."""

    suite: SuiteFile
    model: Model | None
    config: RunConfig
    logged: dict[tuple[str, int], LogState]
    """What the log holds already, by (instance id, sample)."""
    tasks: list[str]
    """The tasks of the run's instances."""
    todo: int = 0
    total: int = 0

    def missing(self, instance_id: str, sample: int) -> bool:
        """Whether to ask for this sample: not logged, refused before sending (the
        server's context may have grown since: the same URL, a server restarted with a
        larger one), or with ``--retry-errors`` its request failed."""
        key = (instance_id, sample)
        if key not in self.logged:
            return True
        state = self.logged[key]
        return bool(state) or (state == FAILED and self.config.retry_errors)

    def work(self) -> Iterator[tuple[Instance, int]]:
        """The (instance, sample) pairs to ask for, in suite order."""
        for instance in _selected(self.config, self.suite):
            for sample in range(self.config.n):
                if self.missing(instance.id, sample):
                    yield instance, sample


def _plan(config: RunConfig, suite: SuiteFile, out: Path) -> Plan:
    """Count the run's instances and the samples still to ask, refusing unknown tasks and
    an empty selection."""
    unknown = sorted(set(config.tasks or []) - set(suite.manifest.recipe.tasks))
    if unknown:
        raise RunError(f"the suite has no task {', '.join(unknown)}; "
                       f"{close_names(unknown, suite.manifest.recipe.tasks)}its tasks: "
                       f"{', '.join(suite.manifest.recipe.tasks)}")
    planned = Plan(suite, None, config, _log_states(out), [])
    tasks: set[str] = set()
    for instance in _selected(config, suite):
        tasks.add(instance.task)
        planned.total += config.n
        planned.todo += sum(planned.missing(instance.id, sample) for sample in range(config.n))
    if not planned.total:
        raise RunError("no instance selected (check --tasks and --limit)")
    planned.tasks = sorted(tasks)
    return planned


def plan(config: RunConfig, out: Path) -> Plan:
    """Check the suite and any earlier run, make the model and pin the run folder."""
    config.validate()
    suite = open_suite(config.suite)
    check_out(out)
    planned = _plan(config, suite, out)
    # A bad model name or URL, or a model that cannot answer these tasks, must fail before
    # the run folder is pinned to it.
    model = get_model(config.model, base_url=config.base_url, model_args=config.model_args)
    model.check(_selected(config, suite))
    out.mkdir(parents=True, exist_ok=True)
    pin(out, config.pinned(suite.sha256), config)
    if planned.logged and not (out / SAMPLES).exists():
        # the folder's run answered nothing and these settings took it over: its failed
        # samples went with its log, and are all to ask
        planned = _plan(config, suite, out)
    repair_log(out / SAMPLES)  # a line a crash cut (not read above) goes before appending
    planned.model = model
    return planned


def preview(config: RunConfig, out: Path) -> Plan:
    """What ``plan`` would find, touching nothing: no folder made, no pin written, no
    model created (a dry run needs no key). An earlier run in ``out`` with other pinned
    settings is refused as ``plan`` would."""
    config.validate()
    suite = open_suite(config.suite)
    check_out(out)
    planned = _plan(config, suite, out)
    check_pinned(out, config.pinned(suite.sha256), RESUME_REMEDY)
    return planned


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
        if planned.todo:
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
    scorer = _Scorer(planned.suite.limits, planned.tasks)
    logs: list[SampleLog] = []

    async def main() -> None:
        try:
            await model.start(config.generate, out)
            logs.append(SampleLog(out))  # only once a server answers: no empty log before
            generator = _Generator(model, config, scorer, logs[0], progress, drawn)
            refused = await generator.fit(planned, notice)
            if notice is not None:  # what the model found, e.g. a replay's unmatched ids
                for line in model.notices():
                    notice(line)
            await generator.run(pair for pair in planned.work()
                                if (pair[0].id, pair[1]) not in refused)
        finally:
            await model.aclose()

    try:
        with _collect_less(), drawn_from(planned.suite, config.protocol()) as drawn:
            if drawn is not None and notice is not None:
                asked = {instance.id: instance for instance, _ in planned.work()}
                short = drawn.shortfall(asked.values(), config.protocol())
                if short is not None:
                    notice(short)
            asyncio.run(main())
    finally:
        for log in logs:
            log.close()
        scorer.close()


def declared_metrics(tasks: list[str]) -> tuple[DeclaredMetric, ...]:
    """What each task says its numbers are (``Reporting.metrics``), written into results.json
    so reports can show any task family from the results alone."""
    return tuple(DeclaredMetric(name, get_task(name).family, metric)
                 for name in tasks for metric in get_task(name).reporting.metrics())


def _slim(instance: Instance, keep: tuple[str, ...]) -> Instance:
    """What a task's summary reads of an instance (``Task.summary_data``)."""
    return replace(instance, task=sys.intern(instance.task), source=sys.intern(instance.source),
                   code="", entry_point="", args="", mutation=None,
                   data={key: instance.data[key] for key in keep if key in instance.data})


@dataclass
class _Chosen:
    """What the results need of the run's instances, from one pass over the suite: their
    ids, each breakdown's category of each (``metrics.summarize`` takes them so), and the
    slim instances the tasks' summaries read."""

    ids: set[str] = field(default_factory=set)
    categories: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    slim: dict[str, Instance] = field(default_factory=dict)

    @classmethod
    def read(cls, config: RunConfig, suite: SuiteFile) -> _Chosen:
        chosen = cls()
        for instance in _selected(config, suite):
            chosen.ids.add(instance.id)
            reporting = get_task(instance.task).reporting
            for breakdown in reporting.breakdowns:
                chosen.categories.setdefault(instance.task, {}).setdefault(
                    breakdown.name, {})[instance.id] = breakdown.category(instance)
            if reporting.summary_data:
                chosen.slim[instance.id] = _slim(instance, reporting.summary_data)
        return chosen


def write_results(config: RunConfig, out: Path, suite: SuiteFile | None = None
                  ) -> dict[str, Any]:
    """Summarise the run's log into ``results.json`` and return its record; ``suite`` is
    the run's suite when the caller has opened it already. The suite and the log are read
    as streams, and only what results read is kept of each sample (:class:`Kept`)."""
    suite = suite or open_suite(config.suite)
    chosen = _Chosen.read(config, suite)
    records: list[Kept] = []
    truncated = refused = 0
    for sample in iter_samples(out / SAMPLES):
        if sample.instance_id in chosen.ids and sample.sample < config.n:
            records.append(sample.kept())
            truncated += sample.truncated
            refused += sample.refused
    logged = sessions(out)
    wall = sum(session["seconds"] or 0.0 for session in logged)
    tasks = sorted({r.task for r in records})
    task_metrics = {}
    for name in tasks:
        summary = get_task(name).reporting.summarize([r for r in records if r.task == name],
                                           chosen.slim)
        if summary is not None:
            task_metrics[name] = summary.to_record()
    return Results(
        config=config, run_dir=str(out), suite_sha256=suite.sha256,
        counts=SampleCounts(instances=len(chosen.ids), samples=len(records),
                            expected_samples=len(chosen.ids) * config.n,
                            verdicts=verdict_counts(records), truncated=truncated,
                            refused=refused),
        metrics=summarize(records, config.n,
                          {name: chosen.categories[name] for name in tasks
                           if name in chosen.categories}),
        usage=usage_summary(records, round(wall, 3), config.price_input, config.price_output),
        sessions=tuple(map(Session.from_record, logged)), task_metrics=task_metrics,
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
    ``progress`` is told (samples scored, samples) as it goes. The log is read and
    rewritten as a stream; each sample's instance is read from the suite where it lies."""
    config = load_run_config(out)
    if not Path(config.suite).exists():
        raise RunError(f"{out} was run on the suite {config.suite}, which is gone; put it "
                       "back there to re-score")
    suite = open_suite(config.suite)
    check_pinned(out, config.pinned(suite.sha256),
                 f"the suite {config.suite} has changed since the run; restore it to "
                 "re-score, or run again into a new --out folder")
    where = suite.offsets()
    total = sum(1 for _ in iter_samples(out / SAMPLES, repair=True))
    scorer = _Scorer(suite.limits, suite.manifest.recipe.tasks)
    changed: Counter[tuple[str, str]] = Counter()

    def instance(offset: int, instance_id: str) -> Instance:
        if read and read[0][0] == offset:  # an instance's samples are mostly logged together
            return read[0][1]
        read[:] = [(offset, suite.instance_at(offset, instance_id))]
        return read[0][1]

    read: list[tuple[int, Instance]] = []

    def rescored() -> Iterator[Sample]:
        for done, sample in enumerate(iter_samples(out / SAMPLES), 1):
            offset = where.get(sample.instance_id)
            if offset is not None and sample.error is None:
                before = sample.verdict
                sample = sample.rescored(scorer(instance(offset, sample.instance_id),
                                                sample.response))
                if sample.verdict != before:
                    changed[before, sample.verdict] += 1
            yield sample
            if progress is not None:
                progress(done, total)
        # the log is replaced only after this: verdicts read from a suite that changed
        # between two seeks are never written
        suite.check_unchanged()

    try:
        rewrite_samples(out, rescored())
    finally:
        scorer.close()
    return Rescored(write_results(config, out, suite), changed)
