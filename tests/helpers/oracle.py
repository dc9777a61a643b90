"""The oracle run again under another prompt protocol: the answers must still all be right,
so every prompt of the suite renders in that protocol."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cli import execbench


def direct_oracle(suite: Path, run: Path, limit: int = 30) -> None:
    """``reference/oracle`` in direct style, with two same-kind examples drawn from the
    suite, on the first ``limit`` instances of each task: every answer right."""
    done = execbench("run", "--suite", suite, "--model", "reference/oracle", "--out", run,
                     "--prompt", "direct", "--shots", "2", "--shot-pick", "same-kind",
                     "--limit", limit)
    assert done.exit_code == 0, done.stderr
    results = json.loads((run / "results.json").read_text())
    assert results["metrics"] and all(block["all"]["pass@1"] == 1.0
                                      for block in results["metrics"].values())
