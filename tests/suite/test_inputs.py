"""``build --inputs``: the mutation and choice tasks ask about one call per program by
default, and about each of up to N of its calls with ``--inputs N`` (DSL-List's three inputs a
program, each a problem of the paper's)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from execbench.suite import BuildOptions, SuiteError, build_suite, load_suite
from tests.helpers.cli import execbench


def _problems(suite: Path) -> Counter[str]:
    """Mutation problems (an original and its mutant, asked about one call) per program."""
    instances = load_suite(suite)[1]
    calls = {(i.program_id, i.call_index) for i in instances if i.task == "mutation"}
    return Counter(program for program, _ in calls)


def test_one_call_a_program_by_default_and_each_of_three_with_inputs_3(
        tmp_path: Path) -> None:
    """Four DSL programs of three calls each: at most 4 problems by default, at most 12
    with ``--inputs 3``; every call traced is asked unless no mutant changes its output
    (a skip says so)."""
    one = build_suite(["dsl"], tmp_path / "one", BuildOptions(
        tasks=["mutation"], count=4, workers=1))
    three = build_suite(["dsl"], tmp_path / "three", BuildOptions(
        tasks=["mutation"], count=4, workers=1, inputs=3))
    assert (one.counts.calls, three.counts.calls) == (12, 12)
    by_default, with_three = _problems(tmp_path / "one"), _problems(tmp_path / "three")
    assert set(by_default.values()) == {1}
    assert max(with_three.values()) == 3
    no_mutant = three.counts.skipped.instances.get("mutation", 0)
    assert sum(with_three.values()) + no_mutant == 12
    assert "inputs" not in one.to_record() and three.to_record()["inputs"] == 3
    # the default build's problems are among the three-input build's, asked alike
    first = {json.dumps(i.to_record(), sort_keys=True) for i in load_suite(tmp_path / "one")[1]}
    every = {json.dumps(i.to_record(), sort_keys=True)
             for i in load_suite(tmp_path / "three")[1]}
    assert first <= every


def test_inputs_needs_a_task_that_asks_one_call(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="no task is one"):
        build_suite(["dsl"], tmp_path, BuildOptions(tasks=["output"], count=2, inputs=3))
    done = execbench("build", "dsl", "--count", "2", "--inputs", "0", "--out", tmp_path / "s")
    assert done.exit_code == 2 and "--inputs must be at least 1, not 0" in done.stderr


@pytest.mark.slow
def test_dsl_list_has_the_papers_300_problems(tmp_path: Path) -> None:
    """100 programs x 3 inputs: 300 calls, each asked by the mutation task; 8 of them have
    no single-site mutant that returns another output, so 292 pair an original with a
    mutant (seed 0)."""
    manifest = build_suite(["dsl"], tmp_path, BuildOptions(
        tasks=["mutation"], count=100, inputs=3))
    assert (manifest.counts.programs, manifest.counts.calls) == (100, 300)
    assert sum(_problems(tmp_path).values()) == 292
    assert manifest.counts.skipped.instances == {"mutation": 8}
