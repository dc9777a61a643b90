"""The same suite and the same verdicts on an idle machine and on one whose cores are all
busy: every choice about a call's cost is counted (steps), never timed.

Each shipped source is built twice, once alone and once beside a busy process per core,
and the files must be byte-identical; then input prediction and bug repair are scored both
ways and every verdict must agree. Sources are cut (``--limit``) to keep this to a few
minutes; it is slow all the same, so it runs with ``--run-slow`` (CI does).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import execbench
from tests.helpers.data import SHARED_DATA
from tests.helpers.load import busy_cores

ALL = "output,input,coverage,counterfactual,mutation,choice,simulation,statement,block,loop,branch"
SOURCES = {
    "humaneval": ["humaneval", "--tasks", ALL, "--limit", "60"],
    "cruxeval": [SHARED_DATA / "cruxeval.jsonl", "--tasks", ALL, "--limit", "150"],
    "cruxeval-mutated": [SHARED_DATA / "cruxeval.jsonl", "--tasks", "output,input",
                         "--mutate", "--limit", "60"],
    "dsl": ["dsl", "--count", "40", "--tasks", ALL],
    "humanevalplus": [SHARED_DATA / "HumanEvalPlus.jsonl.gz", "--plus-inputs", "--max-calls",
                      "4", "--limit", "40", "--tasks", "output,input,counterfactual"],
    "mbppplus": [SHARED_DATA / "MbppPlus.jsonl.gz", "--plus-inputs", "--max-calls", "3",
                 "--limit", "40", "--tasks", "output,input,coverage"],
    "humanevalpack": [SHARED_DATA / "humanevalpack.jsonl.gz", "--limit", "40", "--tasks",
                      "output,input,bug-prediction,bug-localization,bug-repair"],
}


def build(name: str, out: Path) -> Path:
    args = SOURCES[name]
    if isinstance(args[0], Path) and not args[0].exists():
        pytest.skip(f"{args[0]} not found: the benchmark files live in ../shared/data")
    done = execbench("build", *args, "--out", out / name)
    assert done.exit_code == 0, done.stderr
    return out / name


def verdicts(run: Path) -> dict[str, str]:
    return {f"{r['instance_id']}#{r['sample']}": r["verdict"]
            for r in map(json.loads, (run / "samples.jsonl").read_text().splitlines())}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SOURCES))
def test_a_busy_machine_builds_the_same_bytes(name: str, tmp_path: Path) -> None:
    idle = build(name, tmp_path / "idle")
    with busy_cores():
        busy = build(name, tmp_path / "busy")
    for file in ("instances.jsonl", "manifest.json"):
        assert (idle / file).read_bytes() == (busy / file).read_bytes(), file


@pytest.mark.slow
def test_a_busy_machine_gives_the_same_verdicts(tmp_path: Path) -> None:
    """Input prediction and bug repair run the answers in the sandbox: the oracle's (every
    one right, so each is run to its end) and a constant answer's, scored idle and busy."""
    suite = build("humanevalpack", tmp_path)
    for model in ("reference/oracle", "reference/constant"):
        run = tmp_path / model.replace("/", "-")
        done = execbench("run", "--suite", suite, "--model", model, "--out", run,
                         "--tasks", "input,bug-repair")
        assert done.exit_code == 0, done.stderr
        idle = verdicts(run)
        with busy_cores():
            done = execbench("score", run)
        assert done.exit_code == 0, done.stderr
        assert verdicts(run) == idle
