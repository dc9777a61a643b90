"""Oracle runs that must be right on every instance: under another prompt protocol (every
prompt of the suite renders in it), and on the output task of a source just made."""

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


def oracle_right_on_output(source: Path, folder: Path, *build_args: object) -> None:
    """The output task built from ``source`` (with ``build_args``) into ``folder/suite``,
    and ``reference/oracle`` right on every instance of it (run in ``folder/run``)."""
    built = execbench("build", source, "--tasks", "output", *build_args,
                      "--out", folder / "suite")
    assert built.exit_code == 0, built.stderr
    scored = execbench("run", "--suite", folder / "suite", "--model", "reference/oracle",
                       "--out", folder / "run")
    assert scored.exit_code == 0, scored.stderr
    results = json.loads((folder / "run" / "results.json").read_text())
    assert results["metrics"]["output"]["all"]["pass@1"] == 1.0
