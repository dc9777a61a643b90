"""``execbench score``: re-extract and re-score a run's logged responses."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from execbench.cli.app import err, fail, print_results
from execbench.cli.progress import Progress, ProgressEvery, check_every


def score(run_dir: Annotated[Path, typer.Argument(help="Run folder.")],
          progress_every: ProgressEvery = 30.0) -> None:
    """Re-extract and re-score the logged responses of RUN_DIR, then say how many verdicts
    changed and how."""
    from execbench import runner
    from execbench.suite import SuiteError

    check_every(progress_every)
    try:
        with Progress("score", "samples", progress_every) as shown:
            rescored = runner.rescore(run_dir, progress=lambda done, total: shown.update(
                done, total))
    except (runner.RunError, SuiteError) as exc:
        fail(str(exc))
    print_results(rescored.results)
    err.print(changes(rescored.changed, rescored.results["counts"]["samples"]),
              highlight=False)


def changes(changed: Counter[tuple[str, str]], samples: int) -> str:
    """The verdicts re-scoring changed, by direction, most first; a wrong verdict turned
    right is what a fixed extractor does, and the reverse what a stricter scorer does."""
    total = sum(changed.values())
    if not total:
        return f"verdicts changed: none of {samples:,}"
    gained = sum(n for (before, after), n in changed.items() if after == "correct")
    lost = sum(n for (before, after), n in changed.items() if before == "correct")
    moves = ", ".join(f"{before} -> {after} {n:,}" for (before, after), n in
                      sorted(changed.items(), key=lambda item: (-item[1], item[0])))
    return (f"verdicts changed: {total:,} of {samples:,} ({gained:,} now correct, {lost:,} "
            f"no longer correct): {moves}")
