"""``execbench show``: logged samples with their prompts, answers and verdicts."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from execbench.cli.app import counts_at_least_one, fail, warn


def show(
    run_dir: Annotated[Path, typer.Argument(help="Run folder.")],
    task: Annotated[str | None, typer.Option(help="Only this task's samples.")] = None,
    verdict: Annotated[str | None, typer.Option(
        help="Only samples with this verdict (correct, incorrect, unparsable, error, ...).")
    ] = None,
    source: Annotated[str | None, typer.Option(help="Only this source's samples.")] = None,
    instance: Annotated[str | None, typer.Option(
        help="Only this instance, or the instances whose id starts so.")] = None,
    limit: Annotated[int, typer.Option(help="At most N samples.")] = 10,
    fmt: Annotated[str, typer.Option("--format", help="text or json (one document).")
                   ] = "text",
) -> None:
    """Show logged samples: the prompt (rendered again from the suite), the raw response,
    the extracted answer, the truth and the verdict."""
    from execbench.reports.samples import Filter, load_samples
    from execbench.runner import RunError
    from execbench.tasks.common.taxonomy_payload import error_label
    from execbench.text_safety import json_text, visible

    counts_at_least_one({"--limit": limit})
    if fmt not in ("text", "json"):
        fail(f"unknown format {fmt!r}; choose text or json")
    _check_filters(task, verdict)
    try:
        shown = load_samples(run_dir, Filter(task, verdict, source, instance), limit)
    except RunError as exc:
        fail(str(exc))
    for warning in shown.warnings:
        warn(warning)
    if not shown.samples:
        fail(_nothing_matches(run_dir, source))
    if fmt == "json":
        # every reply as it was (lone surrogates too), as escapes where a terminal would act
        records = [one.to_record() for one in shown.samples]
        dated = {f"model_{key}": value for key, value in (shown.dates.pinned() or {}).items()}
        sys.stdout.write(json_text(json.dumps({"model": shown.model, **dated,
                                               "samples": records},
                                              indent=2, ensure_ascii=False)) + "\n")
        return
    model = "; ".join(part for part in (shown.model, shown.dates.label()) if part)
    for one in shown.samples:
        sample = one.sample
        say = [f"=== {sample.instance_id} sample {sample.sample}: {sample.verdict} "
               f"({model}) ===",
               f"answer: {sample.answer}", _truth(sample.task, one.truth)]
        if sample.detail:
            say.append(f"detail: {sample.detail}")
        if (label := error_label(sample.extra)) is not None:
            say.append(f"error: {label}")
        if one.prompt is None:
            say.append("--- prompt: not in the suite ---")
        else:
            note = " (differs from the one sent)" if one.prompt_changed else ""
            say.append(f"--- prompt{note} ---")
            say += [f"[{message['role']}]\n{message['content']}" for message in one.prompt]
        say.append("--- response ---")
        say.append(sample.response if sample.response is not None
                   else f"(none: {sample.error})")
        # as written (not through rich: no markup, :emoji: codes or tabs made spaces), its
        # control characters shown as escapes, never sent to the terminal
        sys.stdout.write(visible("\n".join(say)) + "\n\n")


def _check_filters(task: str | None, verdict: str | None) -> None:
    """Refuse a task or verdict no sample can have, naming the valid ones, before the run
    is read: a typo must not read as "no sample matches"."""
    from execbench.registry import unknown_name
    from execbench.tasks.base import VERDICTS
    from execbench.tasks.registry import TASKS

    if task is not None and task not in TASKS:
        fail(str(TASKS.unknown([task])))
    if verdict is not None and verdict not in VERDICTS:
        fail(str(unknown_name("verdict", [verdict], list(VERDICTS))))


def _nothing_matches(run_dir: Path, source: str | None) -> str:
    """Why nothing is shown: a source the run has no samples of (with the ones it has), or
    filters that match no sample together."""
    from collections import Counter

    from execbench.registry import unknown_name
    from execbench.rundir import SAMPLES, iter_samples

    sources: set[str] = set()
    verdicts: Counter[str] = Counter()
    for sample in iter_samples(run_dir / SAMPLES):
        sources.add(sample.source)
        verdicts[sample.verdict] += 1
    if source is not None and source not in sources:
        return f"{unknown_name('source', [source], sorted(sources))} (in {run_dir})"
    held = ", ".join(f"{verdict} {count:,}" for verdict, count in sorted(verdicts.items()))
    return f"no sample in {run_dir} matches these filters together (its samples: {held})"


def _truth(task: str, stored: str | None) -> str:
    """The truth line(s), as the task shows its truths (values as Python prints them, not
    typed JSON)."""
    from execbench.tasks.registry import truth_shown

    if stored is None:
        return "truth: (instance not in the suite)"
    text = truth_shown(task, json.loads(stored))
    return f"truth: {text}" if "\n" not in text else "truth:\n  " + text.replace("\n", "\n  ")
