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
import os
import platform
import random
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from execbench import SCHEMA_VERSION, __version__
from execbench.program import Program
from execbench.sandbox.pool import Job, Limits, Sandbox
from execbench.sandbox.trace import Trace, TraceOptions, combined
from execbench.sandbox.values import LiteralError, decode, encode, parse_literal
from execbench.sources import Loaded, SourceError, load_source
from execbench.tasks.base import (
    CPU_SHARE,
    BuildContext,
    Instance,
    InstanceError,
    OptionError,
    SkipInstance,
    Task,
    build_cpu_budget,
    check_options,
    get_task,
)

INSTANCES = "instances.jsonl"
MANIFEST = "manifest.json"
REMEASURE_RUNS = 2
"""How many more times a call is run when its ground truth lands just over the CPU budget
(see ``_within_budget``)."""


class SuiteError(Exception):
    """The suite cannot be built or read (no usable source, missing files, bad schema)."""


@dataclass
class BuildOptions:
    tasks: list[str]
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
    workers: int | None = None
    overwrite: bool = False
    """Replace a different suite already in the output folder (else the build refuses)."""


RECIPE = ("seed", "tasks", "task_options", "limit", "max_calls", "plus_inputs", "mutate",
          "count", "limits")
"""The manifest fields that, with the sources' bytes, decide a suite's contents."""


def dumps(record: dict[str, Any]) -> str:
    """The one JSON encoding execbench writes records with (stable bytes)."""
    return json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


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


def build_suite(specs: Iterable[str], out: Path, options: BuildOptions,
                warn: Callable[[str], None] = lambda _msg: None,
                progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Build a suite into ``out``; returns the manifest. Bad records are warned and skipped;
    options that would be ignored, a source that cannot be read, and a different suite
    already in ``out`` (without ``overwrite``) stop the build before any program runs."""
    if options.mutate and options.buggy:
        raise SuiteError("--mutate and --buggy each replace the programs: choose one")
    tasks = [get_task(name) for name in options.tasks]
    try:
        check_options(tasks, options.task_options)
    except OptionError as exc:
        raise SuiteError(str(exc)) from None
    skipped: list[dict[str, Any]] = []
    sources: list[dict[str, Any]] = []
    programs: list[Program] = []
    seen: set[str] = set()
    room = options.limit if options.limit is not None else float("inf")
    for spec in specs:
        try:
            loaded: Loaded = load_source(spec, options.fmt, plus_inputs=options.plus_inputs,
                                         count=options.count, seed=options.seed)
        except SourceError as exc:
            raise SuiteError(str(exc)) from None
        # Under --limit, what lies beyond the first N programs is not part of the build.
        offset = len(programs)
        listed = [item for item in loaded.skipped if offset + item.position < room]
        for item in listed:
            warn(str(item))
            skipped.append({"where": item.where, "id": item.id, "kind": item.kind,
                            "reason": item.reason})
        kept = 0
        for program in loaded.programs:
            if program.id in seen:
                if len(programs) < room:
                    reason = "a program with this id came from an earlier source"
                    skipped.append({"where": loaded.origin, "id": program.id, "kind": "program",
                                    "reason": reason})
                continue
            seen.add(program.id)
            programs.append(program)
            kept += 1
        sources.append({"name": loaded.name, "format": loaded.format, "origin": loaded.origin,
                        "sha256": loaded.sha256, "programs": kept, "skipped": len(listed)})
    if options.plus_inputs and not any(source["format"] == "evalplus" for source in sources):
        formats = ", ".join(sorted({source["format"] for source in sources}))
        raise SuiteError(f"--plus-inputs adds the plus_input calls of evalplus sources "
                         f"(HumanEval+, MBPP+), and no source is one (formats: {formats})")
    if not programs:
        raise SuiteError("no usable program in the given sources")
    if options.limit is not None:
        programs = programs[: options.limit]
    _check_out(out, options, sources)

    calls = [(program, index) for program in programs for index in _choose_calls(program, options)]
    try:
        recording = combined(task.trace_options for task in tasks)
    except ValueError as exc:
        raise SuiteError(f"these tasks cannot be built together: {exc}") from None
    with Sandbox(workers=options.workers, limits=options.limits) as sandbox:
        calls, traces = _ground_truth(sandbox, calls, recording, progress, skipped)
        if options.mutate:
            programs, calls, traces = _mutate_all(sandbox, calls, traces, options.seed,
                                                  recording, skipped)
        if options.buggy:
            programs, calls, traces = _buggy_all(sandbox, calls, traces, options.seed,
                                                  recording, skipped)
        ctx = BuildContext(seed=options.seed, options=options.task_options, sandbox=sandbox)
        try:
            instances, per_task = _build_instances(tasks, programs, calls, traces, ctx, skipped)
        except OptionError as exc:
            raise SuiteError(str(exc)) from None
    mismatches = [f"{p.id}#{i}" for (p, i), t in zip(calls, traces, strict=True)
                  if _expected_mismatch(p, i, t)]

    out.mkdir(parents=True, exist_ok=True)
    text = "".join(dumps(instance.to_record()) + "\n" for instance in instances)
    _write_atomic(out / INSTANCES, text)
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "execbench_version": __version__,
        "python": platform.python_version(),
        "seed": options.seed,
        "tasks": options.tasks,
        "task_options": options.task_options,
        "limit": options.limit,
        "max_calls": options.max_calls,
        "plus_inputs": options.plus_inputs,
        "mutate": options.mutate,
        "count": options.count,
        "limits": asdict(options.limits),
        "sources": sources,
        "counts": {"programs": len(programs), "calls": len(calls),
                   "instances": len(instances), "by_task": per_task,
                   "programs_by_task": {task: len({i.program_id for i in instances
                                                   if i.task == task})
                                        for task in options.tasks},
                   "skipped": _skip_counts(skipped)},
        "expected_output_mismatches": mismatches,
        "skipped": skipped,
        "instances_sha256": hashlib.sha256(text.encode()).hexdigest(),
    }
    if options.buggy:  # absent otherwise, so that other suites keep their bytes
        manifest["buggy"] = True
    recorded = [instance.id for instance in instances if instance.recorded]
    if recorded:
        # Absent when every instance's truth was traced here, so such suites keep their bytes.
        manifest["recorded_instances"] = recorded
    task_counts = {task.name: counts for task in tasks if (counts := task.suite_counts(
        [instance for instance in instances if instance.task == task.name])) is not None}
    if task_counts:  # only tasks that state counts add the key: other suites stay as they were
        manifest["task_counts"] = task_counts
    _write_atomic(out / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True,
                                             ensure_ascii=False) + "\n")
    return manifest


def _skip_counts(skipped: list[dict[str, Any]]) -> dict[str, Any]:
    """Skips counted by what was lost: source records, whole programs (duplicates, no
    mutant), calls (call-level problems, over the CPU budget), and instances per task (a
    task found nothing to ask about a call)."""
    instances: dict[str, int] = {}
    for entry in skipped:
        if entry["kind"] == "instance":
            instances[entry["task"]] = instances.get(entry["task"], 0) + 1
    return {"records": sum(e["kind"] == "record" for e in skipped),
            "programs": sum(e["kind"] == "program" for e in skipped),
            "calls": sum(e["kind"] == "call" for e in skipped), "instances": instances}


def _check_out(out: Path, options: BuildOptions, sources: list[dict[str, Any]]) -> None:
    """Refuse to replace a different suite in ``out`` unless ``options.overwrite``: a suite
    that runs were made on must not change under them unnoticed. Rebuilding the same suite
    (same sources, options and seed) is allowed, since it gives the same bytes."""
    path = out / MANIFEST
    if options.overwrite or not path.is_file():
        return
    try:
        earlier = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        earlier = {}
    now = {"seed": options.seed, "tasks": options.tasks, "task_options": options.task_options,
           "limit": options.limit, "max_calls": options.max_calls,
           "plus_inputs": options.plus_inputs, "mutate": options.mutate,
           "count": options.count, "limits": asdict(options.limits)}
    differ = [key for key in RECIPE if earlier.get(key) != now[key]]
    if [(s.get("origin"), s.get("sha256")) for s in earlier.get("sources", [])] != \
            [(s["origin"], s["sha256"]) for s in sources]:
        differ.insert(0, "sources")
    if differ:
        raise SuiteError(f"{out} holds a different suite ({', '.join(differ)} differ); add "
                         "--overwrite to replace it, or choose another --out")


def _build_instances(tasks: list[Task], programs: list[Program],
                     calls: list[tuple[Program, int]], traces: list[Trace], ctx: BuildContext,
                     skipped: list[dict[str, Any]]) -> tuple[list[Instance], dict[str, int]]:
    by_program: dict[str, list[tuple[int, Trace]]] = {}
    for (program, index), trace in zip(calls, traces, strict=True):
        by_program.setdefault(program.id, []).append((index, trace))
    instances: list[Instance] = []
    per_task = {task.name: 0 for task in tasks}
    for task in tasks:
        for program in programs:
            traced = by_program.get(program.id, [])
            by_index = dict(traced)
            local = replace(ctx, traced=traced)
            for index in task.choose_calls(program, traced, local):
                _add_instance(task, program, index, by_index[index], local, instances, skipped,
                              per_task)
    return instances, per_task


def _add_instance(task: Task, program: Program, index: int, trace: Trace, ctx: BuildContext,
                  instances: list[Instance], skipped: list[dict[str, Any]],
                  per_task: dict[str, int]) -> None:
    try:
        built = task.build(program, index, trace, ctx)
    except SkipInstance as exc:
        skipped.append({"where": f"{program.id}#{index}", "task": task.name, "kind": "instance",
                        "reason": str(exc)})
        return
    for fields in built:
        instances.append(Instance.build(task.name, program, index, fields))
        per_task[task.name] += 1


def _by_program(calls: list[tuple[Program, int]], traces: list[Trace]
                ) -> list[tuple[Program, list[tuple[int, Trace]]]]:
    """Each program with its traced calls, as (call index, trace) pairs, in source order."""
    grouped: dict[str, tuple[Program, list[tuple[int, Trace]]]] = {}
    for (program, index), trace in zip(calls, traces, strict=True):
        grouped.setdefault(program.id, (program, []))[1].append((index, trace))
    return list(grouped.values())


def _mutate_all(sandbox: Sandbox, calls: list[tuple[Program, int]], traces: list[Trace],
                seed: int, recording: TraceOptions, skipped: list[dict[str, Any]]
                ) -> tuple[list[Program], list[tuple[Program, int]], list[Trace]]:
    """Replace each program by its mutant for one seeded call (Algorithm 1); programs with
    no valid mutant are dropped and listed as skipped."""
    from execbench.mutation import mutant_for, mutation_call

    mutated: list[Program] = []
    for program, traced in _by_program(calls, traces):
        index = mutation_call(program, traced, seed)
        found = None if index is None else mutant_for(program, index, dict(traced)[index],
                                                      sandbox, seed, {})
        if found is None:
            skipped.append({"where": program.id, "task": "mutate", "kind": "program",
                            "reason": "no mutant runs without error and changes the output"})
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
                                      recording, None, skipped)
    return [program for program, _ in new_calls], new_calls, traces


def _buggy_all(sandbox: Sandbox, calls: list[tuple[Program, int]], traces: list[Trace],
               seed: int, recording: TraceOptions, skipped: list[dict[str, Any]]
               ) -> tuple[list[Program], list[tuple[Program, int]], list[Trace]]:
    """Replace each program by its known bug's module, with the one call that reveals the
    bug (the call the bug tasks show); programs with no bug, or none that a call reveals,
    are dropped and listed as skipped. The buggy program's ``mutation`` says where it came
    from, and it states no bug of its own (the bug tasks skip it)."""
    from execbench.sources.bugs import Bug, error_revealing_call

    buggy: list[Program] = []
    for program, traced in _by_program(calls, traces):
        bug = Bug.of(program)
        found = None if bug is None else error_revealing_call(
            program, bug, traced, sandbox, build_cpu_budget(sandbox), seed, {})
        if bug is None or found is None:
            reason = "the source states no bug for this program" if bug is None \
                else "no call of the problem's tests reveals the bug"
            skipped.append({"where": program.id, "task": "buggy", "kind": "program",
                            "reason": reason})
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
                                      recording, None, skipped)
    return [program for program, _ in new_calls], new_calls, traces


def _ground_truth_job(program: Program, index: int, recording: TraceOptions) -> Job:
    return Job(program.code, program.entry_point, program.calls[index].args, recording)


def _ground_truth(sandbox: Sandbox, calls: list[tuple[Program, int]], recording: TraceOptions,
                  progress: Callable[[int, int], None] | None, skipped: list[dict[str, Any]]
                  ) -> tuple[list[tuple[Program, int]], list[Trace]]:
    """The calls kept, with the trace each rests on, in the order given: a recorded trace
    as the source brought it, any other call traced in the sandbox with ``recording`` and
    kept only if its run stayed within the CPU budget (``_within_budget``)."""
    to_run = [(p, i) for p, i in calls if p.calls[i].recorded is None]
    futures = [sandbox.submit(_ground_truth_job(p, i, recording)) for p, i in to_run]
    traces = []
    for done, future in enumerate(futures, 1):
        traces.append(future.result())
        if progress is not None:
            progress(done, len(futures))
    ran = {(p.id, i): trace for (p, i), trace
           in zip(*_within_budget(sandbox, to_run, traces, recording, skipped),
                  strict=True)}
    kept = [((p, i), p.calls[i].recorded or ran.get((p.id, i))) for p, i in calls]
    return [call for call, trace in kept if trace], [trace for _, trace in kept if trace]


def _within_budget(sandbox: Sandbox, calls: list[tuple[Program, int]], traces: list[Trace],
                   recording: TraceOptions, skipped: list[dict[str, Any]]
                   ) -> tuple[list[tuple[Program, int]], list[Trace]]:
    """The calls whose ground-truth run stayed comfortably inside the CPU limit, with their
    traces; the others are listed in ``skipped``.

    Answers are checked under the CPU limit itself, so a ground truth that took most of it
    would make a verdict depend on machine load (HumanEval+'s HumanEval/59 has inputs that
    take 1.9 to 2.1 s against a 2 s limit). A call is kept only if its run took at most
    ``CPU_SHARE`` of the limit; a run that hit the limit is dropped, whatever its status.

    The choice must also be the same in every build. CPU time varies between runs mostly by
    *adding* time (other processes sharing caches and cores, frequency scaling), so the
    smallest of several measurements is the stable one: a run measured at most the budget
    is kept at once (its smallest time can only be lower), a run measured just over it (up
    to twice the budget) is run ``REMEASURE_RUNS`` more times and the smallest time decides,
    and a run measured above that is dropped. Only a call whose own CPU time lies within
    that noise of the budget can fall on different sides in two builds; ordinary calls take
    milliseconds against a budget of 0.5 s. The times are written nowhere (not in instances,
    not in the manifest), so that varying times cannot change the files' bytes.
    """
    budget = build_cpu_budget(sandbox)
    unsure = [k for k, trace in enumerate(traces)
              if trace.status != "timeout" and budget < trace.cpu_time <= 2 * budget]
    again = sandbox.map(_ground_truth_job(*calls[k], recording) for k in unsure
                        for _ in range(REMEASURE_RUNS))
    cpu = [trace.cpu_time for trace in traces]
    for n, k in enumerate(unsure):
        runs = again[n * REMEASURE_RUNS:(n + 1) * REMEASURE_RUNS]
        # A run that ended differently (killed, say) measured something else: not counted.
        cpu[k] = min([cpu[k], *(run.cpu_time for run in runs if run.status == traces[k].status)])
    reason = (f"the ground-truth run took more than {CPU_SHARE:.0%} of the CPU limit "
              f"({sandbox.limits.cpu_seconds:g} s), so checking an answer would hinge on timing")
    kept_calls, kept_traces = [], []
    for (program, index), trace, seconds in zip(calls, traces, cpu, strict=True):
        if trace.status == "timeout" or seconds > budget:
            skipped.append({"where": f"{program.id}#{index}", "kind": "call", "reason": reason})
        else:
            kept_calls.append((program, index))
            kept_traces.append(trace)
    return kept_calls, kept_traces


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def load_suite(folder: Path) -> tuple[dict[str, Any], list[Instance], str]:
    """Read a suite: (manifest, instances, sha256 of instances.jsonl)."""
    manifest_path, instances_path = folder / MANIFEST, folder / INSTANCES
    if not manifest_path.is_file() or not instances_path.is_file():
        raise SuiteError(f"{folder} is not a suite (needs {MANIFEST} and {INSTANCES}); "
                         "make one with `execbench build`")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    if manifest.get("schema_version") != SCHEMA_VERSION:
        raise SuiteError(f"{folder}: schema version {manifest.get('schema_version')} is not "
                         f"{SCHEMA_VERSION}; rebuild the suite with this execbench")
    data = instances_path.read_bytes()
    try:
        # Split on newlines only: records keep U+0085 and U+2028 raw, which splitlines cuts at
        instances = [Instance.from_record(json.loads(line))
                     for line in data.decode("utf-8").split("\n") if line]
    except (ValueError, InstanceError) as exc:
        raise SuiteError(f"{instances_path}: {exc}") from None
    return manifest, instances, hashlib.sha256(data).hexdigest()
