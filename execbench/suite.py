"""Building a suite (sources -> traced calls -> task instances) and reading one back.

A suite is a folder with ``instances.jsonl`` (one JSON record per instance) and
``manifest.json`` (what went in, what came out, what was skipped and why). The files are
a pure function of the source bytes, the options, the seed and the interpreter: records
are written with sorted keys, in source order, and carry no timestamps, so the same
command gives byte-identical files.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from execbench import SCHEMA_VERSION
from execbench.executors import LOCAL, ExecutorChoice, run_units
from execbench.jsonfiles import dumps, file_sha256, write_atomic
from execbench.manifest import Manifest, Recipe, Skip, SkipCounts, SuiteCounts, SuiteSource
from execbench.program import LANGUAGES, PYTHON, Program
from execbench.sandbox.pool import Job, Limits, Sandbox
from execbench.sandbox.trace import RESULT_ONLY, Trace, TraceOptions, combined
from execbench.sandbox.tracer import CPU_LIMIT
from execbench.sandbox.values import LiteralError, decode, encode, parse_literal
from execbench.sources import FORMATS, Loaded, SourceError, load_source
from execbench.sources.dates import DATES, DateError, DateWindow, program_date
from execbench.spool import InstanceSpool
from execbench.tasks.base import (
    STEP_SHARE,
    BuildContext,
    Instance,
    InstanceError,
    NotApplicable,
    OptionError,
    SkipInstance,
    Task,
    build_step_budget,
    check_options,
    get_task,
)

CPU_NET_SHARE = 0.5
"""A ground truth that spent more than this share of the CPU limit, though within its
steps, is dropped: its check would have only twice the CPU it needed."""

Progress = Callable[[str, int, "int | None"], None]
"""How a build says how far it is: (stage, done, total), total None while unknown. The
tracing stage counts calls, the others programs."""

INSTANCES = "instances.jsonl"
MANIFEST = "manifest.json"


class SuiteError(Exception):
    """The suite cannot be built or read (no usable source, missing files, bad schema)."""


DEFAULT_TASKS = ("output", "input")
"""What a build without ``--tasks`` makes of a source whose format holds no task of its
own (``Format.tasks``)."""


@dataclass
class BuildOptions:
    tasks: list[str] | None
    """None: the tasks the sources hold (``held_tasks``)."""
    seed: int = 0
    limit: int | None = None
    """Use only the first N programs (over all sources, in order)."""
    max_calls: int | None = None
    """Per program, keep at most this many calls, chosen with the seed."""
    fmt: str | None = None
    plus_inputs: bool = False
    count: int = 100
    """How many programs the ``dsl`` generator samples."""
    mutate: bool = False
    """Build every task on a single-site mutant of each program instead of the original."""
    buggy: bool = False
    """Build every task on the buggy program of each program whose source states a bug
    (HumanEvalPack), with its error-revealing call only (``sources.bugs``)."""
    task_options: dict[str, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    after: str | None = None
    """Keep only programs dated strictly after this day (``sources.dates``)."""
    before: str | None = None
    """Keep only programs dated strictly before this day."""
    workers: int | None = None
    overwrite: bool = False
    """Replace a different suite already in the output folder (else the build refuses)."""
    executor: ExecutorChoice = LOCAL
    """Where the ground-truth runs happen: here, or a chunk of programs per Ray task (each
    with a sandbox of its own); the suite is the same bytes either way."""

    def recipe(self) -> Recipe:
        """The options that decide the suite's contents (the others say how to build it)."""
        return Recipe(**{f.name: getattr(self, f.name) for f in fields(Recipe)})


def _choose_calls(program: Program, options: BuildOptions) -> list[int]:
    indices = list(range(len(program.calls)))
    if options.max_calls is None or len(indices) <= options.max_calls:
        return indices
    rng = random.Random(f"{options.seed}/{program.id}")
    return sorted(rng.sample(indices, options.max_calls))


def _expected_mismatch(program: Program, index: int, trace: Trace) -> bool:
    """True when the source states an output that the traced run did not produce."""
    expected = program.calls[index].expected
    if expected is None or trace.status != "ok" or trace.value is None:
        return False
    try:
        claimed = decode(encode(parse_literal(expected)))
        actual = decode(trace.value)
        return not (claimed == actual or claimed != claimed and actual != actual)
    except (LiteralError, TypeError, ValueError, OverflowError):
        return False


CHUNK_CALLS = 250
"""About how many calls a build traces and turns into instances at a time (whole programs,
in source order): their traces are dropped and their instances written to disk before the
next chunk starts, so a build's memory does not grow with its sources."""


@dataclass
class _Build:
    """What a build has gathered so far, handed from one step to the next; each chunk of
    programs adds to it, in the order the suite lists things."""

    sources: list[SuiteSource] = field(default_factory=list)
    programs: list[Program] = field(default_factory=list)
    """The programs read, in source order."""
    skipped: list[Skip] = field(default_factory=list)
    """Skips made while reading the sources."""
    calls: list[tuple[Program, int]] = field(default_factory=list)
    """The calls chosen to trace, in source order."""
    held_tasks: list[str] = field(default_factory=list)
    """The tasks the sources hold, in source order (``DEFAULT_TASKS`` for most formats)."""
    call_skips: list[Skip] = field(default_factory=list)
    """Calls whose ground truth was not kept."""
    variant_skips: list[Skip] = field(default_factory=list)
    """Programs ``--mutate`` or ``--buggy`` found no variant of."""
    variant_call_skips: list[Skip] = field(default_factory=list)
    """Variants whose ground truth was not kept."""
    task_skips: dict[str, list[Skip]] = field(default_factory=dict)
    programs_built: int = 0
    """Programs instances were built from (the variants, under ``--mutate``/``--buggy``)."""
    calls_built: int = 0
    per_task: dict[str, int] = field(default_factory=dict)
    programs_by_task: dict[str, set[str]] = field(default_factory=dict)
    recorded: dict[str, list[str]] = field(default_factory=dict)
    """Per task, the instances whose truth is a recorded trace."""
    mismatches: list[str] = field(default_factory=list)
    task_counts: dict[str, dict[str, int]] = field(default_factory=dict)

    def all_skips(self) -> list[Skip]:
        return [*self.skipped, *self.call_skips, *self.variant_skips,
                *self.variant_call_skips, *(s for skips in self.task_skips.values()
                                            for s in skips)]


def build_suite(specs: Iterable[str], out: Path, options: BuildOptions,
                warn: Callable[[str], None] = lambda _msg: None,
                progress: Progress | None = None) -> Manifest:
    """Build a suite into ``out``; returns its manifest. Bad records are warned and skipped;
    options that would be ignored, a source that cannot be read, and a different suite
    already in ``out`` (without ``overwrite``) stop the build before any program runs.

    Programs are built a chunk at a time (``CHUNK_CALLS``), every task on each chunk, and
    each task's instances spooled to a file of its own, so that memory holds one chunk's
    traces and instances; the suite file is the tasks' files one after another, the same
    bytes as if everything had been held at once."""
    if options.mutate and options.buggy:
        raise SuiteError("--mutate and --buggy each replace the programs: choose one")
    if options.tasks is not None:
        _checked_tasks(options)
    say = progress or (lambda stage, done, total: None)
    say("reading sources", 0, None)
    build = _read_sources(specs, options, warn)
    if options.tasks is None:
        options = replace(options, tasks=build.held_tasks)
    tasks = _checked_tasks(options)
    _check_out(out, options, build.sources)
    try:
        recording = combined(task.trace_options for task in tasks)
    except ValueError as exc:
        raise SuiteError(f"these tasks cannot be built together: {exc}") from None
    build.calls = [(program, index) for program in build.programs
                   for index in _choose_calls(program, options)]
    build.per_task = {task.name: 0 for task in tasks}
    for task in tasks:
        build.task_skips[task.name] = []
        build.programs_by_task[task.name] = set()
        build.recorded[task.name] = []
    to_trace = sum(program.calls[index].recorded is None for program, index in build.calls)
    overall = _Overall(say, {"tracing calls": to_trace, "tracing variants": None},
                       len(build.programs))
    with Sandbox(workers=options.workers, limits=options.limits) as sandbox, \
            InstanceSpool(out, [task.name for task in tasks]) as spool:
        chunks = list(_chunks(build.calls))
        for chunk, traced in zip(chunks, _sharded(chunks, recording, options), strict=True):
            _build_chunk(chunk, build, tasks, options, recording, sandbox, spool, overall,
                         traced)
            overall.next_chunk()
        sha256 = spool.finish(out / INSTANCES)
    return _write_manifest(out, options, tasks, build, sha256)


def _chunks(calls: list[tuple[Program, int]]) -> Iterator[list[tuple[Program, int]]]:
    """``calls`` cut into runs of whole programs of about ``CHUNK_CALLS`` calls."""
    chunk: list[tuple[Program, int]] = []
    for position, (program, index) in enumerate(calls):
        chunk.append((program, index))
        following = calls[position + 1][0] if position + 1 < len(calls) else None
        if len(chunk) >= CHUNK_CALLS and following is not program:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class _Overall:
    """The build's progress over all chunks: each stage's count goes on from where the
    chunk before left it, against the whole build's total: ``totals`` for the stages that
    count calls (None where unknown), the programs for the others."""

    def __init__(self, say: Progress, totals: dict[str, int | None], programs: int) -> None:
        self.say = say
        self.totals = totals
        self.programs = programs
        self.base: dict[str, int] = {}
        self.seen: dict[str, int] = {}

    def __call__(self, stage: str, done: int, total: int | None) -> None:
        self.seen[stage] = max(self.seen.get(stage, 0), total or done)
        self.say(stage, self.base.get(stage, 0) + done, self.totals.get(stage, self.programs))

    def next_chunk(self) -> None:
        for stage, count in self.seen.items():
            self.base[stage] = self.base.get(stage, 0) + count
        self.seen = {}


def _build_chunk(chunk: list[tuple[Program, int]], build: _Build, tasks: list[Task],
                 options: BuildOptions, recording: TraceOptions, sandbox: Sandbox,
                 spool: InstanceSpool, say: Progress, traced: list[Trace] | None) -> None:
    """Trace one chunk's calls (unless ``traced`` elsewhere; and make its variants), build
    every task's instances from them, and add what it made and skipped to ``build``."""
    calls, traces = _ground_truth(sandbox, chunk, recording, say, build.call_skips,
                                  traced=traced)
    programs = list({program.id: program for program, _ in chunk}.values())
    if options.mutate or options.buggy:
        vary = _mutate_all if options.mutate else _buggy_all
        programs, calls, traces = vary(sandbox, calls, traces, options.seed, recording,
                                       build.variant_skips, build.variant_call_skips, say)
    build.programs_built += len(programs)
    build.calls_built += len(calls)
    build.mismatches += [f"{p.id}#{i}" for (p, i), t in zip(calls, traces, strict=True)
                         if _expected_mismatch(p, i, t)]
    ctx = BuildContext(seed=options.seed, options=options.task_options, sandbox=sandbox)

    def emit(task: Task, instances: list[Instance]) -> None:
        """Write one program's instances of ``task`` and count them; they are not kept."""
        spool.add(task.name, (dumps(instance.to_record()) + "\n" for instance in instances))
        build.per_task[task.name] += len(instances)
        build.programs_by_task[task.name].update(i.program_id for i in instances)
        build.recorded[task.name] += [i.id for i in instances if i.recorded]
        counts = task.suite_counts(instances) if instances else None
        if counts is not None:
            merged = build.task_counts.setdefault(task.name, {})
            for key, value in counts.items():
                merged[key] = merged.get(key, 0) + value

    try:
        _build_instances(tasks, programs, calls, traces, ctx, build.task_skips, say, emit)
    except OptionError as exc:
        raise SuiteError(str(exc)) from None


def _checked_tasks(options: BuildOptions) -> list[Task]:
    """The build's tasks, once their ``-T`` options are known to apply."""
    tasks = [get_task(name) for name in options.tasks or ()]
    try:
        check_options(tasks, options.task_options)
    except OptionError as exc:
        raise SuiteError(str(exc)) from None
    return tasks


def _read_sources(specs: Iterable[str], options: BuildOptions,
                  warn: Callable[[str], None]) -> _Build:
    """The programs of every source, in order, each id once, within the ``--after`` and
    ``--before`` window, and at most ``--limit`` of them, with the skips within that limit
    warned and listed."""
    build = _Build()
    seen: set[str] = set()
    try:
        window = DateWindow.of(options.after, options.before)
    except DateError as exc:
        raise SuiteError(f"--after/--before: {exc}") from None
    dated = 0
    room = options.limit if options.limit is not None else float("inf")
    for spec in specs:
        try:
            loaded: Loaded = load_source(spec, options.fmt, plus_inputs=options.plus_inputs,
                                         count=options.count, seed=options.seed)
        except SourceError as exc:
            raise SuiteError(str(exc)) from None
        # Under --limit, what lies beyond the first N programs is not part of the build.
        offset = len(build.programs)
        listed = [item for item in loaded.skipped if offset + item.position < room]
        for item in listed:
            warn(str(item))
            build.skipped.append(Skip(where=item.where, kind=item.kind, reason=item.reason,
                                      id=item.id, from_source=True))
        kept = 0
        for program in loaded.programs:
            if program.id in seen:
                if len(build.programs) < room:
                    build.skipped.append(Skip(
                        where=loaded.origin, kind="program", id=program.id, from_source=True,
                        reason="a program with this id came from an earlier source"))
                continue
            seen.add(program.id)
            dated += program_date(program) is not None
            reason = window.excludes(program)
            if reason is not None:
                if len(build.programs) < room:
                    build.skipped.append(Skip(where=program.id, kind="not_applicable",
                                              reason=reason, task=DATES))
                continue
            build.programs.append(program)
            kept += 1
        held = FORMATS.get(loaded.format).tasks if loaded.format in FORMATS else None
        for task in held(loaded.programs) if held else DEFAULT_TASKS:
            if task not in build.held_tasks:
                build.held_tasks.append(task)
        build.sources.append(SuiteSource(name=loaded.name, format=loaded.format,
                                         origin=loaded.origin, sha256=loaded.sha256,
                                         programs=kept, skipped=len(listed)))
    if options.plus_inputs and not any(source.format == "evalplus" for source in build.sources):
        formats = ", ".join(sorted({source.format for source in build.sources}))
        raise SuiteError(f"--plus-inputs adds the plus_input calls of evalplus sources "
                         f"(HumanEval+, MBPP+), and no source is one (formats: {formats})")
    if not window.open and not dated:
        raise SuiteError("--after and --before keep programs by date, and no program in the "
                         "given sources has one (the contest format's contest_date, or "
                         "meta.date in a generic record)")
    if not build.programs:
        raise SuiteError("no usable program in the given sources")
    if options.limit is not None:
        build.programs = build.programs[: options.limit]
    return build


def _write_manifest(out: Path, options: BuildOptions, tasks: list[Task], build: _Build,
                    sha256: str) -> Manifest:
    """Write ``manifest.json`` once ``instances.jsonl`` is in place, replaced whole."""
    skipped = build.all_skips()
    manifest = Manifest(
        recipe=options.recipe(), sources=build.sources,
        counts=SuiteCounts(
            programs=build.programs_built, calls=build.calls_built,
            instances=sum(build.per_task.values()), by_task=build.per_task,
            skipped=SkipCounts.of(skipped),
            programs_by_task={task.name: len(build.programs_by_task[task.name])
                              for task in tasks}),
        expected_output_mismatches=build.mismatches,
        skipped=skipped, instances_sha256=sha256,
        recorded_instances=[i for task in tasks for i in build.recorded[task.name]],
        task_counts={task.name: build.task_counts[task.name] for task in tasks
                     if task.name in build.task_counts})
    write_atomic(out / MANIFEST, manifest.text())
    return manifest


def _check_out(out: Path, options: BuildOptions, sources: list[SuiteSource]) -> None:
    """Refuse to replace a different suite in ``out`` unless ``options.overwrite``: a suite
    that runs were made on must not change under them unnoticed. Rebuilding the same suite
    (same sources, recipe and seed) is allowed, since it gives the same bytes."""
    path = out / MANIFEST
    if options.overwrite or not path.is_file():
        return
    try:
        earlier = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        earlier = {}
    if not isinstance(earlier, dict):
        earlier = {}
    differ = options.recipe().differences(earlier)
    if [(s.get("origin"), s.get("sha256")) for s in earlier.get("sources", [])] != \
            [(s.origin, s.sha256) for s in sources]:
        differ.insert(0, "sources")
    if differ:
        raise SuiteError(f"{out} holds a different suite ({', '.join(differ)} differ); add "
                         "--overwrite to replace it, or choose another --out")


def _build_instances(tasks: list[Task], programs: list[Program],
                     calls: list[tuple[Program, int]], traces: list[Trace], ctx: BuildContext,
                     skipped: dict[str, list[Skip]], progress: Progress,
                     emit: Callable[[Task, list[Instance]], None]) -> None:
    """Each task's instances from ``programs`` (in order), handed to ``emit`` a program at a
    time; its skips added to its list."""
    by_program: dict[str, list[tuple[int, Trace]]] = {}
    for (program, index), trace in zip(calls, traces, strict=True):
        by_program.setdefault(program.id, []).append((index, trace))
    for task in tasks:
        task_skips = skipped[task.name]
        for done, program in enumerate(programs):
            progress(f"building {task.name}", done, len(programs))
            traced = by_program.get(program.id, [])
            by_index = dict(traced)
            local = replace(ctx, traced=traced)
            usable = _usable(task, program, traced, task_skips)
            try:
                chosen = task.choose_calls(program, usable, local) if usable else []
            except NotApplicable as exc:
                task_skips.append(Skip(where=program.id, kind="not_applicable",
                                       reason=str(exc), task=task.name))
                continue
            instances: list[Instance] = []
            for index in chosen:
                _add_instance(task, program, index, by_index[index], local, instances,
                              task_skips)
            emit(task, instances)
        progress(f"building {task.name}", len(programs), len(programs))


def _usable(task: Task, program: Program, traced: list[tuple[int, Trace]],
            skipped: list[Skip]) -> list[tuple[int, Trace]]:
    """The traced calls the task can use; each other one is listed as skipped with the
    task's reason (``Task.unusable``)."""
    usable = []
    for index, trace in traced:
        reason = task.unusable(trace)
        if reason is None:
            usable.append((index, trace))
        else:
            skipped.append(Skip(where=f"{program.id}#{index}", kind="instance", reason=reason,
                                task=task.name))
    return usable


def _add_instance(task: Task, program: Program, index: int, trace: Trace, ctx: BuildContext,
                  instances: list[Instance], skipped: list[Skip]) -> None:
    try:
        built = task.build(program, index, trace, ctx)
    except SkipInstance as exc:
        kind = "not_applicable" if isinstance(exc, NotApplicable) else "instance"
        skipped.append(Skip(where=f"{program.id}#{index}", kind=kind, reason=str(exc),
                            task=task.name))
        return
    for task_fields in built:
        instances.append(Instance.build(task.name, program, index, task_fields))


def _by_program(calls: list[tuple[Program, int]], traces: list[Trace]
                ) -> list[tuple[Program, list[tuple[int, Trace]]]]:
    """Each program with its traced calls, as (call index, trace) pairs, in source order."""
    grouped: dict[str, tuple[Program, list[tuple[int, Trace]]]] = {}
    for (program, index), trace in zip(calls, traces, strict=True):
        grouped.setdefault(program.id, (program, []))[1].append((index, trace))
    return list(grouped.values())


def _mutate_all(sandbox: Sandbox, calls: list[tuple[Program, int]], traces: list[Trace],
                seed: int, recording: TraceOptions, skipped: list[Skip],
                traced_skips: list[Skip], progress: Progress
                ) -> tuple[list[Program], list[tuple[Program, int]], list[Trace]]:
    """Replace each program by its mutant for one seeded call (Algorithm 1); programs with
    no valid mutant are dropped and listed in ``skipped``, mutants whose ground truth is
    not kept in ``traced_skips``."""
    from execbench.mutation import mutant_for, mutation_call

    mutated: list[Program] = []
    grouped = _by_program(calls, traces)
    for done, (program, traced) in enumerate(grouped):
        progress("finding mutants", done, len(grouped))
        if program.language != PYTHON:
            skipped.append(Skip(where=program.id, kind="program", task="mutate",
                                reason=f"a {LANGUAGES[program.language]} program is never "
                                "run, so no mutant of it can be checked"))
            continue
        index = mutation_call(program, traced, seed)
        found = None if index is None else mutant_for(program, index, dict(traced)[index],
                                                      sandbox, seed, {})
        if found is None:
            skipped.append(Skip(where=program.id, kind="program", task="mutate",
                                reason="no mutant runs without error and changes the output"))
            continue
        mutant, _ = found
        # The source's stated output belongs to the original, not to the mutant.
        call = replace(program.calls[index], expected=None)
        mutated.append(Program(
            id=f"{program.id}@mutant", source=program.source, code=mutant.code,
            entry_point=program.entry_point, calls=(call,),
            meta={**program.meta, "mutation": {**mutant.describe(), "original_id": program.id,
                                               "original_call_index": index}}))
    new_calls, traces = _ground_truth(sandbox, [(program, 0) for program in mutated],
                                      recording, progress, traced_skips, "tracing variants")
    return [program for program, _ in new_calls], new_calls, traces


def _buggy_all(sandbox: Sandbox, calls: list[tuple[Program, int]], traces: list[Trace],
               seed: int, recording: TraceOptions, skipped: list[Skip],
               traced_skips: list[Skip], progress: Progress
               ) -> tuple[list[Program], list[tuple[Program, int]], list[Trace]]:
    """Replace each program by its known bug's module, with the one call that reveals the
    bug (the call the bug tasks show); programs with no bug, or none that a call reveals,
    are dropped and listed as skipped. The buggy program's ``mutation`` says where it came
    from, and it states no bug of its own (the bug tasks skip it)."""
    from execbench.sources.bugs import Bug, error_revealing_call

    buggy: list[Program] = []
    grouped = _by_program(calls, traces)
    for done, (program, traced) in enumerate(grouped):
        progress("finding bug-revealing calls", done, len(grouped))
        bug = Bug.of(program)
        found = None if bug is None else error_revealing_call(
            program, bug, traced, sandbox, build_step_budget(sandbox), seed, {})
        if bug is None or found is None:
            reason = "the source states no bug for this program" if bug is None \
                else "no call of the problem's tests reveals the bug"
            skipped.append(Skip(where=program.id, kind="program", reason=reason, task="buggy"))
            continue
        # The source's stated output belongs to the canonical program, not to the buggy one.
        call = replace(program.calls[found.index], expected=None)
        meta = {key: value for key, value in program.meta.items() if key != "bug"}
        buggy.append(Program(
            id=f"{program.id}@buggy", source=program.source, code=bug.code,
            entry_point=program.entry_point, calls=(call,),
            meta={**meta, "mutation": {"bug_type": bug.type, "failure_symptoms": bug.symptoms,
                                       "reveals": found.how, "original_id": program.id,
                                       "original_call_index": found.index}}))
    new_calls, traces = _ground_truth(sandbox, [(program, 0) for program in buggy],
                                      recording, progress, traced_skips, "tracing variants")
    return [program for program, _ in new_calls], new_calls, traces


def _ground_truth_job(program: Program, index: int, recording: TraceOptions) -> Job:
    return Job(program.code, program.entry_point, program.calls[index].args, recording)


def _ground_truth(sandbox: Sandbox, calls: list[tuple[Program, int]], recording: TraceOptions,
                  progress: Progress, skipped: list[Skip], stage: str = "tracing calls",
                  traced: list[Trace] | None = None
                  ) -> tuple[list[tuple[Program, int]], list[Trace]]:
    """The calls kept, with the trace each rests on, in the order given: a recorded trace
    as the source brought it, any other call traced in the sandbox with ``recording`` (or
    taken from ``traced``, those calls' traces made elsewhere, in order) and kept only if
    its run stayed within the step budget and the time limits (``_within_budget``)."""
    to_run = [(p, i) for p, i in calls if p.calls[i].recorded is None]
    if traced is None:
        traces = []
        futures = [sandbox.submit(_ground_truth_job(p, i, recording)) for p, i in to_run]
        progress(stage, 0, len(futures))
        for done, future in enumerate(futures, 1):
            traces.append(future.result())
            progress(stage, done, len(futures))
    else:
        traces = traced
        progress(stage, len(traces), len(traces))
    ran = {(p.id, i): trace for (p, i), trace
           in zip(*_within_budget(sandbox, to_run, traces, skipped, recording),
                  strict=True)}
    kept = [((p, i), p.calls[i].recorded or ran.get((p.id, i))) for p, i in calls]
    return [call for call, trace in kept if trace], [trace for _, trace in kept if trace]


@dataclass(frozen=True)
class _Shard:
    """One chunk's ground-truth runs, as a unit of work for an executor."""

    jobs: list[Job]
    limits: Limits
    workers: int | None


def trace_shard(shard: _Shard) -> list[Trace]:
    """A chunk's calls traced in a sandbox of the worker's own, in order."""
    with Sandbox(workers=shard.workers, limits=shard.limits) as sandbox:
        return _run_all(sandbox, shard.jobs)


def _sharded(chunks: list[list[tuple[Program, int]]], recording: TraceOptions,
             options: BuildOptions) -> Iterator[list[Trace] | None]:
    """Per chunk, in order, its calls' traces made by the executor, or ``None`` (the
    chunk's own sandbox traces them) when the build runs here or has nothing to trace.
    The executor hands them back in order, holding at most its units in flight."""
    if options.executor.name == "local" or all(
            program.calls[index].recorded is not None for chunk in chunks
            for program, index in chunk):
        yield from (None for _ in chunks)
        return
    workers = options.workers or 1  # a task's sandbox workers, and the CPUs Ray gives it
    shards = (_Shard([_ground_truth_job(p, i, recording) for p, i in chunk
                      if p.calls[i].recorded is None], options.limits, workers)
              for chunk in chunks)
    for _, traces in run_units(options.executor, trace_shard, shards, cpus=workers,
                               ordered=True):
        yield traces


def _within_budget(sandbox: Sandbox, calls: list[tuple[Program, int]], traces: list[Trace],
                   skipped: list[Skip], recording: TraceOptions
                   ) -> tuple[list[tuple[Program, int]], list[Trace]]:
    """The calls whose ground-truth run stayed comfortably inside the step limit, with their
    traces; the others are listed in ``skipped``.

    Answers are checked under the limit itself, so a ground truth that took most of it
    would make a verdict hinge on a few steps. A call is kept only if its run took at most
    ``STEP_SHARE`` of the limit. Steps are counted, so every build keeps the same calls,
    whatever the machine and its load. Work the count does not see (a builtin sorting a
    long list: one line, much CPU) is left to the safety nets: a run stopped by one is
    dropped, and so is a run that took more than ``CPU_NET_SHARE`` of the CPU limit, whose
    check would be at the net's mercy; only such C-heavy calls can still land differently
    on two machines, and the reason says which limit it was.

    The nets are read from a run made as a check makes it. Recording values costs far more
    CPU than the program does (``RECORDING_HEADROOM`` says how much), so a recording over
    the CPU share, or cut by a net, is run again plainly, and the plain run decides. A
    recording the CPU limit cut is made again (``_recorded_again``); one the wall clock cut
    is not (the program waited rather than worked). Where the two runs exist, the call is
    kept only if they agree (status, steps and result): a program that behaves otherwise
    when recorded has no one ground truth. Before, the recording's own cost put pure-Python
    calls at the nets' mercy, and a build on a busy machine kept other calls than one on an
    idle machine.
    """
    costly = [position for position, trace in enumerate(traces)
              if not _over_steps(trace, sandbox) and _net_reason(trace, sandbox)]
    plain = dict(zip(costly, _run_all(sandbox, [_plain_job(*calls[position])
                                                for position in costly]), strict=True))
    again = _recorded_again(sandbox, recording, [
        (position, calls[position]) for position in costly
        if traces[position].detail == CPU_LIMIT and _refused(plain[position], sandbox) is None],
        plain)
    kept_calls, kept_traces = [], []
    for position, ((program, index), trace) in enumerate(zip(calls, traces, strict=True)):
        trace = again.get(position, trace)
        reason = _refused(plain.get(position, trace), sandbox)
        if reason is None and position in plain:
            reason = _disagreement(trace, plain[position])
        if reason is None:
            kept_calls.append((program, index))
            kept_traces.append(trace)
        else:
            skipped.append(Skip(where=f"{program.id}#{index}", kind="call", reason=reason))
    return kept_calls, kept_traces


def _over_steps(trace: Trace, sandbox: Sandbox) -> bool:
    stepped_out = trace.status == "timeout" and not _cut(trace)
    return stepped_out or trace.steps > build_step_budget(sandbox)


def _cut(trace: Trace) -> bool:
    """Whether a safety net (CPU or wall-clock time) ended the run, not its steps."""
    return trace.status == "timeout" and not (trace.detail or "").startswith("step limit")


def _net_reason(trace: Trace, sandbox: Sandbox) -> str | None:
    """Why the safety nets drop a call whose run gave ``trace``, if they do."""
    limits = sandbox.limits
    if _cut(trace):
        return f"the ground-truth run hit the {trace.detail}"
    if trace.cpu_time > CPU_NET_SHARE * limits.cpu_seconds:
        return (f"the ground-truth run took more than {CPU_NET_SHARE:.0%} of the CPU limit "
                f"({limits.cpu_seconds:g} s) in work the steps do not count (C code), so "
                "checking an answer would hinge on timing")
    return None


def _refused(trace: Trace, sandbox: Sandbox) -> str | None:
    """Why a call whose run gave ``trace`` is dropped, if it is; None if it is kept."""
    if _over_steps(trace, sandbox):
        return (f"the ground-truth run took more than {STEP_SHARE:.0%} of the step limit "
                f"({sandbox.limits.steps:,} lines), so checking an answer would hinge on it")
    return _net_reason(trace, sandbox)


def _disagreement(recorded: Trace, plain: Trace) -> str | None:
    """Why a recorded run cannot stand for the call that its plain run shows, if so."""
    if _cut(recorded):
        return (f"recording the ground-truth run hit the {recorded.detail}, though a plain "
                "run of it stays within the limits")
    if (recorded.status, recorded.steps, recorded.value) != \
            (plain.status, plain.steps, plain.value):
        return (f"the recorded run and a plain run of the call differ ({recorded.status} "
                f"against {plain.status}, {recorded.steps:,} lines against {plain.steps:,}, "
                "or what it returned): it has no one ground truth")
    return None


def _plain_job(program: Program, index: int) -> Job:
    """The call run as an answer's check runs it: lines only, nothing recorded."""
    return Job(program.code, program.entry_point, program.calls[index].args, RESULT_ONLY)


def _run_all(sandbox: Sandbox, jobs: list[Job]) -> list[Trace]:
    return [future.result() for future in [sandbox.submit(job) for job in jobs]]


RECORDING_HEADROOM = 20
"""How many times the check's CPU and wall-clock limits a call's second recording gets.
Recording costs up to hundreds of times the plain run on small calls and 68 times on one of
HumanEval's longest kept calls (1.2 s recorded, 0.018 s plain, measured on a busy machine);
the recorders' records are bounded in number and the steps bound the rest, so an honest
recording of a call within the step budget ends well inside 20 times the limit (40 s by
default), whatever the machine's load. A program that works only while it is recorded costs
the build that much CPU once per call."""


def _recorded_again(sandbox: Sandbox, recording: TraceOptions,
                    calls: list[tuple[int, tuple[Program, int]]],
                    plain: dict[int, Trace]) -> dict[int, Trace]:
    """The calls (by position) recorded again in a sandbox of their own with
    ``RECORDING_HEADROOM`` times the time; made only when some call needs it. A build that
    records nothing beyond the result has them already: their plain runs."""
    if recording == RESULT_ONLY:
        return {position: plain[position] for position, _ in calls}
    if not calls:
        return {}
    limits = sandbox.limits
    loose = replace(limits, cpu_seconds=limits.cpu_seconds * RECORDING_HEADROOM,
                    wall_seconds=limits.wall_seconds * RECORDING_HEADROOM)
    with Sandbox(workers=sandbox.size, limits=loose) as box:
        traces = _run_all(box, [_ground_truth_job(*call, recording) for _, call in calls])
    return {position: trace for (position, _), trace in zip(calls, traces, strict=True)}


def _read_manifest(folder: Path) -> Manifest:
    manifest_path, instances_path = folder / MANIFEST, folder / INSTANCES
    if not manifest_path.is_file() or not instances_path.is_file():
        raise SuiteError(f"{folder} is not a suite (needs {MANIFEST} and {INSTANCES}); "
                         "make one with `execbench build`")
    record = json.loads(manifest_path.read_text(encoding="utf-8"))
    if record.get("schema_version") != SCHEMA_VERSION:
        raise SuiteError(f"{folder}: schema version {record.get('schema_version')} is not "
                         f"{SCHEMA_VERSION}; rebuild the suite with this execbench")
    try:
        return Manifest.from_record(record)
    except (KeyError, TypeError) as exc:
        raise SuiteError(f"{manifest_path}: not a manifest this execbench reads ({exc!r}); "
                         "rebuild the suite") from None


@dataclass(frozen=True)
class SuiteFile:
    """A suite read as a stream: its manifest and the sha256 of ``instances.jsonl`` at
    once, its instances one at a time, so that what reads a suite (a run, a re-score, a
    report) holds one instance, not the suite, whatever the suite's size."""

    folder: Path
    manifest: Manifest
    sha256: str

    @classmethod
    def open(cls, folder: Path) -> SuiteFile:
        manifest = _read_manifest(folder)
        return cls(folder, manifest, file_sha256(folder / INSTANCES))

    @property
    def limits(self) -> Limits:
        return self.manifest.recipe.limits

    def offsets(self) -> dict[str, int]:
        """Where each instance's line starts in ``instances.jsonl``, by id, for reading
        instances out of file order (:meth:`instance_at`)."""
        found: dict[str, int] = {}
        offset = 0
        for number, line in enumerate(self._lines(), 1):
            if line.strip():
                found[_parse(self.folder / INSTANCES, number, line).id] = offset
            offset += len(line)
        return found

    def instance_at(self, offset: int, expected: str) -> Instance:
        """The instance ``expected`` whose line starts at ``offset`` (from :meth:`offsets`):
        a line that holds another instance means the file changed since it was indexed."""
        path = self.folder / INSTANCES
        with path.open("rb") as file:
            file.seek(offset)
            line = file.readline()
        instance = _parse(path, None, line) if line.strip() else None
        if instance is None or instance.id != expected:
            raise _changed(path)
        return instance

    def check_unchanged(self) -> None:
        """Refuse a file that no longer hashes to what :meth:`open` read, for readers that
        seek (:meth:`instance_at`) and so never see every line."""
        if file_sha256(self.folder / INSTANCES) != self.sha256:
            raise _changed(self.folder / INSTANCES)

    def instances(self) -> Iterator[Instance]:
        """The instances in file order (checked against the sha256 as they are read)."""
        path = self.folder / INSTANCES
        for number, line in enumerate(self._lines(), 1):
            if line.strip():
                yield _parse(path, number, line)

    def _lines(self) -> Iterator[bytes]:
        """The lines of ``instances.jsonl``, hashed as they are read: a file changed since
        :meth:`open` (no longer the suite a run pinned) stops the reading with an error
        rather than mixing two suites' instances."""
        path = self.folder / INSTANCES
        digest = hashlib.sha256()
        with path.open("rb") as file:
            # binary lines end at newlines only: records keep U+0085 and U+2028 raw
            for line in file:
                digest.update(line)
                yield line
        if digest.hexdigest() != self.sha256:
            raise _changed(path)


def _changed(path: Path) -> SuiteError:
    return SuiteError(f"{path} changed while it was read; read it again")


def _parse(path: Path, number: int | None, line: bytes) -> Instance:
    try:
        return Instance.from_record(json.loads(line))
    except (ValueError, InstanceError) as exc:
        where = f"{path}:{number}" if number is not None else str(path)
        raise SuiteError(f"{where}: {exc}") from None


def load_suite(folder: Path) -> tuple[Manifest, list[Instance], str]:
    """Read a whole suite: (manifest, instances, sha256 of instances.jsonl)."""
    suite = SuiteFile.open(folder)
    return suite.manifest, list(suite.instances()), suite.sha256
