"""The sample browser's data: every run's samples in the order the page lists them, wrong
or unreadable answers first, instance ids by number; and the cap keeps wrong answers."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import pytest

from execbench.reports import browser_data
from execbench.runner import RunConfig, run
from execbench.suite import BuildOptions, build_suite
from execbench.values import encode

PROGRAMS = (1, 2, 5, 10, 12)
"""Each program returns its number: ids p10 and p12 sort before p2 as text."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The oracle (all right), a model that always says 5 (right on p5 only) and one that
    never gives a readable answer, on recorded traces (nothing is run to build)."""
    folder = tmp_path_factory.mktemp("browser")
    source = folder / "progs.jsonl"
    source.write_text("".join(json.dumps({
        "id": f"p{i}", "entry_point": "f", "code": "def f(a):\n    return a\n",
        "calls": [{"args": str(i), "trace": {"status": "ok", "value": encode(i)}}]}) + "\n"
        for i in PROGRAMS))
    build_suite([str(source)], folder / "suite", BuildOptions(tasks=["output"], workers=1))
    folders = []
    for name, answer in (("oracle", None), ("five", "[ANSWER]5[/ANSWER]"),
                         ("mute", "I cannot tell.")):
        folders.append(folder / name)
        run(RunConfig(suite=str(folder / "suite"),
                      model="reference/oracle" if answer is None else "reference/constant",
                      model_args={} if answer is None else {"answer": answer}), folders[-1])
    return folders


def listed(packed: str) -> list[tuple[str, str, str]]:
    """(run, instance id, verdict) of each sample in the order the browser lists them."""
    data = json.loads(gzip.decompress(base64.b64decode(packed)))
    shown = []
    for run_at, row_at in data["order"]:
        run_data = data["runs"][run_at]
        row = run_data["rows"][row_at]
        shown.append((run_data["label"], data["instances"][row[0]][0], row[2]))
    return shown


def test_wrong_and_unreadable_answers_come_first_each_group_in_number_order(
        runs: list[Path]) -> None:
    packed, count, logged, warnings = browser_data.pack(runs, ["oracle", "five", "mute"])
    assert (count, logged, warnings) == (15, 15, [])
    assert listed(packed) == [
        ("five", "output/progs/p1/0", "incorrect"),
        ("mute", "output/progs/p1/0", "unparsable"),
        ("five", "output/progs/p2/0", "incorrect"),
        ("mute", "output/progs/p2/0", "unparsable"),
        ("mute", "output/progs/p5/0", "unparsable"),
        ("five", "output/progs/p10/0", "incorrect"),
        ("mute", "output/progs/p10/0", "unparsable"),
        ("five", "output/progs/p12/0", "incorrect"),
        ("mute", "output/progs/p12/0", "unparsable"),
        ("oracle", "output/progs/p1/0", "correct"),
        ("oracle", "output/progs/p2/0", "correct"),
        ("oracle", "output/progs/p5/0", "correct"),
        ("five", "output/progs/p5/0", "correct"),
        ("oracle", "output/progs/p10/0", "correct"),
        ("oracle", "output/progs/p12/0", "correct"),
    ]


def test_a_capped_page_keeps_the_wrong_answers(runs: list[Path],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Three samples per task and run: by id alone the 'five' run would keep p1, p2 and
    its right p5; the page keeps its wrong p10 instead."""
    monkeypatch.setattr(browser_data, "PER_TASK", 3)
    packed, count, logged, _ = browser_data.pack(runs[:2], ["oracle", "five"])
    assert (count, logged) == (6, 10)
    assert listed(packed) == [("five", "output/progs/p1/0", "incorrect"),
                              ("five", "output/progs/p2/0", "incorrect"),
                              ("five", "output/progs/p10/0", "incorrect"),
                              ("oracle", "output/progs/p1/0", "correct"),
                              ("oracle", "output/progs/p2/0", "correct"),
                              ("oracle", "output/progs/p5/0", "correct")]
