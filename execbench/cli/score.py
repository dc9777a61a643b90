"""``execbench score``: re-extract and re-score a run's logged responses."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from execbench.cli.app import fail, print_results


def score(run_dir: Annotated[Path, typer.Argument(help="Run folder.")]) -> None:
    """Re-extract and re-score the logged responses of RUN_DIR."""
    from execbench import runner
    from execbench.suite import SuiteError

    try:
        results = runner.rescore(run_dir)
    except (runner.RunError, SuiteError) as exc:
        fail(str(exc))
    print_results([results])
