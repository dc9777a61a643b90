"""``execbench build``: trace programs from sources and write a suite."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from execbench.cli.app import (
    ExecutorName,
    RayAddress,
    err,
    fail,
    fail_setting,
    flag,
    out,
    pairs,
    warn,
)
from execbench.cli.progress import Progress, ProgressEvery, check_every

if TYPE_CHECKING:
    from execbench.api import BuildConfig
    from execbench.manifest import Manifest
    from execbench.suite import BuildOptions

FLAGS = {"tasks": "--tasks", "limit": "--limit", "max_calls": "--max-calls",
         "count": "--count", "workers": "--workers", "max_steps": "--max-steps",
         "after": "--after", "before": "--before", "overwrite": "--overwrite", "out": "--out",
         "contest_filters": "--contest-filters", "min_chars": "--min-chars",
         "max_chars": "--max-chars", "dedupe": "--dedupe",
         "max_steps_per_call": "--max-steps-per-call",
         "max_per_question": "--max-per-question", "inputs": "--inputs"}
"""The flag of each setting ``BuildConfig.options`` checks, for its messages."""

SHOWN_SKIPS = 20
"""Skipped records named on stderr; the rest are counted (the manifest lists them all)."""


def build(
    sources: Annotated[list[str], typer.Argument(
        help="JSONL files (.jsonl/.jsonl.gz), folders (of .py files, or of programs that "
             "read stdin as CodeMind lays them out), 'humaneval' (the packaged HumanEval) "
             "or 'dsl' (sampled DSL-List programs).")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the suite to.")],
    tasks: Annotated[str | None, typer.Option(
        help="Comma-separated task names (default: the task a CodeSense file holds, else "
             "output,input).")] = None,
    seed: Annotated[int, typer.Option(help="Seed for every random choice.")] = 0,
    limit: Annotated[int | None, typer.Option(help="Use only the first N programs.")] = None,
    fmt: Annotated[str | None, typer.Option(
        "--format", help="Source format, detected if omitted (`execbench ls formats` lists "
                         "them).")] = None,
    max_calls: Annotated[int | None, typer.Option(
        help="At most K calls per program, chosen with the seed.")] = None,
    plus_inputs: Annotated[bool, flag(
        "--plus-inputs", "Also use EvalPlus's generated plus_input calls.")] = False,
    count: Annotated[int | None, typer.Option(
        help="With the source 'dsl': how many DSL-List programs to sample (default 100).")
    ] = None,
    mutate: Annotated[bool, flag(
        "--mutate", "Build every task on a single-site mutant of each program (unseen "
                    "variants).")] = False,
    after: Annotated[str | None, typer.Option(
        help="Keep only programs dated after this day (YYYY-MM-DD), e.g. a model's "
             "training cutoff: contest records' contest_date, a generic record's "
             "meta.date.")] = None,
    before: Annotated[str | None, typer.Option(
        help="Keep only programs dated before this day (YYYY-MM-DD).")] = None,
    buggy: Annotated[bool, flag(
        "--buggy", "Build every task on the known bug of each program (HumanEvalPack), "
                   "with the test call that reveals it; programs without one are skipped.")
    ] = False,
    contest_filters: Annotated[str | None, typer.Option(
        help="Contest solutions: a named set of the filters below; 'yang' is the "
             "generalization paper's (--min-chars 100 --max-chars 800 --dedupe ast "
             "--max-steps-per-call 1000 --max-per-question 3). A filter given alone "
             "replaces the set's value.")] = None,
    min_chars: Annotated[int | None, typer.Option(
        help="Contest solutions: keep those of at least N characters.")] = None,
    max_chars: Annotated[int | None, typer.Option(
        help="Contest solutions: keep those of at most N characters.")] = None,
    dedupe: Annotated[str | None, typer.Option(
        help="Contest solutions: 'ast' keeps the first of those with one syntax tree "
             "(layout and comments aside; names count).")] = None,
    max_steps_per_call: Annotated[int | None, typer.Option(
        help="Contest solutions: keep those whose every call runs at most N steps (line "
             "events) in its ground-truth run.")] = None,
    max_per_question: Annotated[int | None, typer.Option(
        help="Contest solutions: keep at most N per question_id, the first in source "
             "order that the other filters keep.")] = None,
    inputs: Annotated[int | None, typer.Option(
        help="Calls per program the mutation and choice tasks ask about, each its own "
             "problem (default 1; 3 with 'dsl' gives the paper's 3 inputs a program).")
    ] = None,
    task_option: Annotated[list[str], typer.Option(
        "--task-option", "-T", help="Task option key=value (repeatable); `execbench ls tasks` "
                                    "lists each task's keys and values.")] = [],  # noqa: B006
    workers: Annotated[int | None, typer.Option(help="Sandbox workers (default: CPUs).")] = None,
    max_steps: Annotated[int | None, typer.Option(
        help="Line events a call may run: the limit that decides what a build keeps and "
             "how an answer's run ends, the same on any machine (default: a million per "
             "second of --cpu-seconds).")] = None,
    cpu_seconds: Annotated[float, typer.Option(
        help="CPU-time limit per call: the safety net for work the steps do not count.")
        ] = 2.0,
    memory_mb: Annotated[int, typer.Option(help="Address-space limit per worker, MB.")] = 1024,
    overwrite: Annotated[bool, flag(
        "--overwrite", "Replace a different suite (or a run) already in the --out folder.")
    ] = False,
    executor: ExecutorName = "local",
    ray_address: RayAddress = None,
    progress_every: ProgressEvery = 30.0,
) -> None:
    """Trace programs from SOURCES and write a benchmark suite."""
    from execbench.api import BuildConfig
    from execbench.settings import SettingError

    check_every(progress_every)
    config = BuildConfig(sources=sources, out=out_dir, tasks=tasks, seed=seed, limit=limit,
                         fmt=fmt, max_calls=max_calls, plus_inputs=plus_inputs, count=count,
                         mutate=mutate, buggy=buggy, after=after, before=before,
                         task_options=pairs(task_option, "-T"), workers=workers,
                         max_steps=max_steps, cpu_seconds=cpu_seconds, memory_mb=memory_mb,
                         overwrite=overwrite, executor=executor, ray_address=ray_address,
                         contest_filters=contest_filters, min_chars=min_chars,
                         max_chars=max_chars, dedupe=dedupe,
                         max_steps_per_call=max_steps_per_call,
                         max_per_question=max_per_question, inputs=inputs)
    try:
        options = config.options()
    except SettingError as exc:
        fail_setting(exc, FLAGS)
    manifest = _traced(config, options, progress_every)
    out.print(_build_summary(manifest.to_record(), out_dir), highlight=False, markup=False)


def _traced(config: BuildConfig, options: BuildOptions, every: float) -> Manifest:
    """Build the suite with a progress bar, naming the first skipped records."""
    from execbench.api import write_suite
    from execbench.executors import ExecutorError
    from execbench.suite import SuiteError

    skipped: list[str] = []

    def skip(message: str) -> None:
        skipped.append(message)
        if len(skipped) <= SHOWN_SKIPS:
            warn(message, "skipped")

    with Progress("build", "calls", every) as shown:
        try:
            manifest = write_suite(
                list(config.sources), Path(config.out), options, warn=skip,
                progress=lambda stage, done, total: shown.update(
                    done, total, stage=stage,
                    unit="calls" if stage.startswith("tracing") else "programs"))
        except (SuiteError, ExecutorError) as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            err.print(f"interrupted; nothing was written to {config.out}")
            raise typer.Exit(130) from None
    if len(skipped) > SHOWN_SKIPS:
        err.print(f"... and {len(skipped) - SHOWN_SKIPS} more skipped records "
                  "(see manifest.json)")
    return manifest


SHOWN_REASONS = 3
"""Skip reasons named per task in the summary, most frequent first."""
SHOWN_MISMATCHES = 3
"""Calls named whose dataset output disagrees with the traced one."""


def _build_summary(manifest: dict[str, Any], out_dir: Path) -> str:
    """What was built, in one unit per line: per task, instances and the programs they
    come from, then what the task has no question about (not a skip: nothing was lost),
    then the calls it had to skip, with their commonest reasons; then what was traced and
    what was skipped before any task, by kind; then the dataset outputs the traces
    disagree with."""
    from execbench.sources.dates import DATES

    counts = manifest["counts"]
    skipped = counts["skipped"]
    reasons: dict[tuple[str, str], Counter[str]] = {}
    for entry in manifest["skipped"]:
        if entry.get("task") is not None and entry.get("kind") in ("instance",
                                                                   "not_applicable"):
            key = (entry["task"], entry["kind"])
            reasons.setdefault(key, Counter())[_reason_class(entry["reason"])] += 1
    lines = [f"{counts['instances']} instances -> {out_dir}"]
    for task, number in counts["by_task"].items():
        said = f"  {task}: {number} instances from {counts['programs_by_task'][task]} programs"
        for kind, what in (("not_applicable", "not applicable"), ("instance", "skipped")):
            found = reasons.get((task, kind))
            if found:
                top = "; ".join(f"{n} {reason}" for reason, n in
                                found.most_common(SHOWN_REASONS))
                more = " ..." if len(found) > SHOWN_REASONS else ""
                said += f"; {sum(found.values())} {what} ({top}{more})"
        lines.append(said)
    kinds = [f"{skipped[kind]} {kind}" for kind in ("records", "programs", "calls")
             if skipped[kind]]
    dated = Counter(entry["reason"] for entry in manifest["skipped"]
                    if entry.get("task") == DATES and entry.get("kind") == "not_applicable")
    if dated:
        lines.append(f"left out by date: {sum(dated.values())} programs ("
                     + "; ".join(f"{n} {reason}" for reason, n in dated.most_common()) + ")")
    filtered = manifest.get("contest_filtered")
    if filtered:
        lines.append(f"left out by the contest filters: {sum(filtered.values())} programs ("
                     + "; ".join(f"{n} {name}" for name, n in filtered.items()) + ")")
    lines.append(f"traced {counts['calls']} calls of {counts['programs']} programs; skipped "
                 f"before any task: {', '.join(kinds) or 'nothing'} (manifest.json lists "
                 "each skip with its reason)")
    mismatches = manifest.get("expected_output_mismatches", [])
    if mismatches:
        shown = ", ".join(mismatches[:SHOWN_MISMATCHES])
        more = ", ..." if len(mismatches) > SHOWN_MISMATCHES else ""
        lines.append(f"{len(mismatches)} calls return other than the dataset says (the trace "
                     f"is the truth): {shown}{more}")
    for name, stated in manifest.get("task_counts", {}).items():
        lines.append(f"{name}: " + ", ".join(f"{key} {value}" for key, value in stated.items()))
    return "\n".join(lines)


def _reason_class(reason: str) -> str:
    """A skip reason without the particulars that make each one unique (quoted values,
    numbers), so that like reasons are counted together."""
    reason = re.sub(r"'[^']*'|\"[^\"]*\"", "...", reason)
    return re.sub(r"\d+", "N", reason)
