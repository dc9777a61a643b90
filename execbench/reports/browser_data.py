"""The HTML page's sample browser data: every run's samples, packed small.

Stored as one object per sample, five runs of 10,000 samples made a 25 MB page: each
sample repeated its keys, its instance's truth and source, and the run's name. Here what
belongs to an instance (id, task, source, truth) is stored once for all runs, each
distinct prompt once, and each run's samples as rows of the few fields that are the
sample's own. The whole is gzip-compressed and base64-encoded into the page; the browser
unpacks it with its built-in ``DecompressionStream`` (no library, no network) and builds
a sample's view only when the reader opens it.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from execbench.jsonfiles import utf8
from execbench.reports.ordering import natural, verdict_rank
from execbench.reports.samples import Filter, load_samples
from execbench.rundir import RunError, Sample
from execbench.tasks.registry import truth_shown
from execbench.text_safety import each_text, visible

PER_TASK = 2_000
"""Samples of each task of each run the page holds: the first in :func:`shown_first`
order, so wrong answers are never left out for correct ones. A run of a
quarter of a million samples would make a page of hundreds of megabytes that no browser
opens, and the report would hold every response to write it; ``execbench show`` reaches
any sample, and the tables count them all."""

COLUMNS = ("instance", "sample", "verdict", "answer", "detail", "response", "prompt")
"""The fields of a run's sample rows; ``instance`` and ``prompt`` index the shared lists."""


def shown_first(sample: Sample) -> tuple[int, tuple[tuple[int, int, str], ...], int]:
    """The browser's order within a run: wrong or unreadable answers, then samples with no
    answer, then correct ones (``verdict_rank``), each by instance id in natural order
    (``sample_2`` before ``sample_12``), then by sample number."""
    return (verdict_rank(sample.verdict), natural(sample.instance_id), sample.sample)


def pack(run_dirs: list[Path], labels: list[str],
         progress: Callable[[int, int], None] | None = None,
         tasks: list[frozenset[str]] | None = None) -> tuple[str, int, int, list[str]]:
    """The browser's data as base64 of gzip-compressed JSON ``{"instances": [[id, task,
    source, truth]], "prompts": [text], "columns": COLUMNS, "runs": [{"label", "dir", "rows"}],
    "order": [[run, row]]}`` (``order``: every row, in the order the browser lists them,
    :func:`shown_first` across runs, a run's before the next's where they tie),
    the number of samples it holds (at most :data:`PER_TASK` per task and run), the number
    the runs logged, and warnings about prompts and truths that cannot be shown as they
    were. ``tasks``: each run's tasks to hold (None: all). ``progress`` is told (runs
    read, runs) as each run is read (its prompts are
    rendered again, which takes a while for large runs)."""
    instances: dict[tuple[str, str | None], int] = {}
    instance_rows: list[list[Any]] = []
    prompts: dict[str, int] = {}
    runs: list[dict[str, Any]] = []
    warnings: list[str] = []
    count = logged = 0
    keys: list[tuple[Any, ...]] = []
    for position, (run_dir, label) in enumerate(zip(run_dirs, labels, strict=True)):
        rows: list[list[Any]] = []
        keep = Filter(tasks=None if tasks is None else tasks[position])
        try:
            shown = load_samples(run_dir, keep, per_task=PER_TASK, order=shown_first)
        except RunError as exc:  # its log or settings unreadable: the other runs still show
            warnings.append(f"{run_dir}: its samples are not in the page's browser: {exc}")
            shown = None
        warnings += [] if shown is None else shown.warnings
        logged += 0 if shown is None else shown.matched
        for one in [] if shown is None else shown.samples:
            sample = one.sample
            key = (sample.instance_id, one.truth)
            if key not in instances:
                instances[key] = len(instance_rows)
                truth = None if one.truth is None \
                    else truth_shown(sample.task, json.loads(one.truth))
                instance_rows.append([sample.instance_id, sample.task, sample.source, truth])
            prompt = "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in one.prompt) \
                if one.prompt is not None else "(not in the suite)"
            response = sample.response if sample.response is not None \
                else f"(no response: {sample.error})"
            rank, name, number = shown_first(sample)
            keys.append((rank, name, len(runs), number, len(rows)))
            rows.append([instances[key], sample.sample, sample.verdict, sample.answer,
                         sample.detail, response, prompts.setdefault(prompt, len(prompts))])
        runs.append({"label": label, "dir": str(run_dir), "rows": rows})
        count += len(rows)
        if progress is not None:
            progress(len(runs), len(run_dirs))
    # replies and dataset text shown as the terminal shows them: the browser puts text in
    # the page as text, never as markup, but it would hide control characters
    order = [[run, row] for _, _, run, _, row in sorted(keys)]
    data = each_text({"instances": instance_rows, "prompts": list(prompts),
                      "columns": list(COLUMNS), "runs": runs, "order": order}, visible)
    text = utf8(json.dumps(data, ensure_ascii=False, separators=(",", ":")))
    packed = base64.b64encode(gzip.compress(text, compresslevel=9, mtime=0)).decode("ascii")
    return packed, count, logged, warnings

