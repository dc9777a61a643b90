"""Building a suite: sources -> traced calls -> task instances, a chunk of programs at a
time, into ``instances.jsonl`` and ``manifest.json``.

The files are a pure function of the source bytes, the options, the seed and the
interpreter: records are written with sorted keys, in source order, and carry no
timestamps, so the same command gives byte-identical files.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from execbench.jsonfiles import dumps, write_atomic
from execbench.manifest import Manifest, Skip, SkipCounts, SuiteCounts, SuiteSource
from execbench.program import STDIN, Program, literal_text, printed_alike
from execbench.sandbox.pool import Sandbox
from execbench.sandbox.trace import Trace, TraceOptions, combined
from execbench.spool import InstanceSpool
from execbench.suite.files import INSTANCES, MANIFEST, SuiteError
from execbench.suite.ground_truth import ground_truth, sharded
from execbench.suite.instances import build_instances
from execbench.suite.options import BuildOptions, Progress
from execbench.suite.sources import Gathered, read_sources
from execbench.suite.variants import BUGGY, MUTANT, vary
from execbench.tasks.base import BuildContext, Instance, OptionError
from execbench.tasks.registry import check_options, get_task
from execbench.tasks.roles import Task
from execbench.values import LiteralError, encode, equal, is_exact, parse_literal

CHUNK_CALLS = 250
"""About how many calls a build traces and turns into instances at a time (whole programs,
in source order): their traces are dropped and their instances written to disk before the
next chunk starts, so a build's memory does not grow with its sources."""


@dataclass
class _Build:
    """What a build has gathered so far, handed from one step to the next; each chunk of
    programs adds to it, in the order the suite lists things."""

    read: Gathered
    """What the sources gave."""
    calls: list[tuple[Program, int]] = field(default_factory=list)
    """The calls chosen to trace, in source order."""
    call_skips: list[Skip] = field(default_factory=list)
    """Calls whose ground truth was not kept."""
    variant_skips: list[Skip] = field(default_factory=list)
    """Programs ``--mutate`` or ``--buggy`` found no variant of."""
    variant_call_skips: list[Skip] = field(default_factory=list)
    """Variants whose ground truth was not kept."""
    filter_skips: list[Skip] = field(default_factory=list)
    """Programs the contest filters that read the calls' runs dropped."""
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
        return [*self.read.skipped, *self.call_skips, *self.filter_skips, *self.variant_skips,
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
    build = _Build(read_sources(specs, options, warn))
    if options.tasks is None:
        options = replace(options, tasks=build.read.held_tasks)
    tasks = _checked_tasks(options)
    if options.inputs != 1 and not any(task.building.asks_inputs for task in tasks):
        raise SuiteError(f"--inputs sets how many calls a program's mutation and choice "
                         f"questions ask about, and no task is one (tasks: "
                         f"{', '.join(task.name for task in tasks)})")
    _check_out(out, options, build.read.sources)
    try:
        recording = combined(task.building.trace_options for task in tasks)
    except ValueError as exc:
        raise SuiteError(f"these tasks cannot be built together: {exc}") from None
    build.calls = [(program, index) for program in build.read.programs
                   for index in _choose_calls(program, options)]
    build.per_task = {task.name: 0 for task in tasks}
    for task in tasks:
        build.task_skips[task.name] = []
        build.programs_by_task[task.name] = set()
        build.recorded[task.name] = []
    to_trace = sum(program.calls[index].recorded is None for program, index in build.calls)
    overall = _Overall(say, {"tracing calls": to_trace, "tracing variants": None},
                       len(build.read.programs))
    with Sandbox(workers=options.workers, limits=options.limits) as sandbox, \
            InstanceSpool(out, [task.name for task in tasks]) as spool:
        chunks = list(_chunks(build.calls))
        for chunk, traced in zip(chunks, sharded(chunks, recording, options), strict=True):
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
    calls, traces = ground_truth(sandbox, chunk, recording, say, build.call_skips,
                                 traced=traced)
    programs = list({program.id: program for program, _ in chunk}.values())
    if build.read.filtering is not None:
        calls, traces, filtered = build.read.filtering.after_tracing(calls, traces, sandbox)
        build.filter_skips += filtered
        gone = {skip.where for skip in filtered}
        programs = [program for program in programs if program.id not in gone]
    if options.mutate or options.buggy:
        programs, calls, traces = vary(MUTANT if options.mutate else BUGGY, sandbox, calls,
                                       traces, options.seed, recording, build.variant_skips,
                                       build.variant_call_skips, say)
    build.programs_built += len(programs)
    build.calls_built += len(calls)
    build.mismatches += [f"{p.id}#{i}" for (p, i), t in zip(calls, traces, strict=True)
                         if _expected_mismatch(p, i, t)]
    ctx = BuildContext(seed=options.seed, options=options.task_options, sandbox=sandbox,
                       inputs=options.inputs)

    def emit(task: Task, instances: list[Instance]) -> None:
        """Write one program's instances of ``task`` and count them; they are not kept."""
        spool.add(task.name, (dumps(instance.to_record()) + "\n" for instance in instances))
        build.per_task[task.name] += len(instances)
        build.programs_by_task[task.name].update(i.program_id for i in instances)
        build.recorded[task.name] += [i.id for i in instances if i.recorded]
        counts = task.building.suite_counts(instances) if instances else None
        if counts is not None:
            merged = build.task_counts.setdefault(task.name, {})
            for key, value in counts.items():
                merged[key] = merged.get(key, 0) + value

    try:
        build_instances(tasks, programs, calls, traces, ctx, build.task_skips, say, emit)
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


def _write_manifest(out: Path, options: BuildOptions, tasks: list[Task], build: _Build,
                    sha256: str) -> Manifest:
    """Write ``manifest.json`` once ``instances.jsonl`` is in place, replaced whole."""
    skipped = build.all_skips()
    manifest = Manifest(
        recipe=options.recipe(), sources=build.read.sources,
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
                     if task.name in build.task_counts},
        contest_filtered=build.read.filtering.dropped if build.read.filtering else {})
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


def _choose_calls(program: Program, options: BuildOptions) -> list[int]:
    indices = list(range(len(program.calls)))
    if options.max_calls is None or len(indices) <= options.max_calls:
        return indices
    rng = random.Random(f"{options.seed}/{program.id}")
    return sorted(rng.sample(indices, options.max_calls))


def _expected_mismatch(program: Program, index: int, trace: Trace) -> bool:
    """True when the source states an output that the traced run did not produce, compared
    as the scorer compares an answer with the truth (typed: ``240`` is not ``240.0``, NaN is
    NaN; a stdin program's printed text as judges compare it), so that the list names every
    call whose stated output would be scored wrong."""
    expected = program.calls[index].expected
    if expected is None or trace.status != "ok" or trace.value is None \
            or not is_exact(trace.value):  # no literal form: no answer is scored against it
        return False
    if program.entry_point == STDIN:  # printed text, compared as its answers are
        return not printed_alike(literal_text(expected), str(trace.value[1]))
    try:
        return not equal(encode(parse_literal(expected)), trace.value)
    except (LiteralError, TypeError, ValueError, OverflowError):
        return False
