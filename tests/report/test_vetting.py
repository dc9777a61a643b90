"""The ``ces-vetting`` layout: bug-task successes sorted by the same model's simulation of
the buggy program, by hand and end to end on HumanEvalPack with ``reference/oracle``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from execbench.report.vetting import vet
from execbench.runner import RunConfig, run
from execbench.suite import BuildOptions, build_suite
from tests.test_cli import execbench

PACK = Path(__file__).resolve().parents[3] / "shared" / "data" / "humanevalpack.jsonl.gz"


def _simulated(kind: str, line: int | None = None) -> dict[str, Any]:
    divergence = {"kind": "iterable", "line": line} if line is not None else {"kind": "output",
                                                                               "line": None}
    return {"extra": {"class": kind, "divergence": divergence}}


@pytest.mark.parametrize(("sample", "expected"), [
    (_simulated("coherent_correct"), "confident"),
    (_simulated("coherent_incorrect", 7), "likely"),       # at the bug's line
    (_simulated("coherent_incorrect", 9), "likely"),       # after it
    (_simulated("coherent_incorrect"), "likely"),          # only the output was wrong
    (_simulated("coherent_incorrect", 4), "suspicious"),   # before the bug
    (_simulated("incoherent_correct"), "incoherent"),
    (_simulated("incoherent_incorrect", 2), "incoherent"),
    ({"extra": None}, "not simulated"),                    # an unreadable simulation
    (None, "not simulated"),                               # no simulation of that program
])
def test_each_class_by_hand(sample: dict[str, Any] | None, expected: str) -> None:
    assert vet(sample, [7, 8]) == expected


def test_oracle_successes_are_all_confident(tmp_path: Path) -> None:
    if not PACK.is_file():
        pytest.skip(f"{PACK} not found (the shared benchmark data folder is absent)")
    bugs, buggy = tmp_path / "bugs", tmp_path / "buggy"
    build_suite([str(PACK)], bugs, BuildOptions(
        tasks=["bug-prediction", "bug-localization", "bug-repair"], limit=4, workers=1))
    build_suite([str(PACK)], buggy, BuildOptions(tasks=["simulation"], limit=4, buggy=True,
                                                 workers=1))
    for suite, out in ((bugs, tmp_path / "run-bugs"), (buggy, tmp_path / "run-sim")):
        run(RunConfig(suite=str(suite), model="reference/oracle"), out)

    done = execbench("report", tmp_path / "run-bugs", tmp_path / "run-sim", "--layout",
                     "ces-vetting", "--format", "json")
    assert done.returncode == 0, done.stderr
    rows = [row for table in json.loads(done.stdout)["tables"] for row in table["rows"]]
    assert {row["task"] for row in rows} == {"bug-prediction", "bug-localization",
                                             "bug-repair"}
    for row in rows:
        assert (row["model"], row["successes"], row["confident"]) == ("reference/oracle", 4,
                                                                       100.0)
        assert [row[name] for name in ("likely", "suspicious", "incoherent",
                                       "not simulated")] == [0.0] * 4
