"""The tracer's executed lines agree with coverage.py's on real benchmark programs.

Ground truth for one call: the program file runs as a module, then the call runs; the
executed lines of both, as coverage.py measures them, must equal ``Trace.lines``. All
programs are measured in one helper process (``tests.coverage_runner``) while the sandbox
traces the same calls: every program of CRUXEval and HumanEval under ``--run-slow``, a
seeded sample of each (``SAMPLE``, ``tests/helpers/corpus.py``) by default.
"""

from __future__ import annotations

from typing import Any

import pytest

from execbench.program import Program
from execbench.sandbox.pool import Job, Limits, Sandbox
from execbench.sources import load_source
from tests.coverage_runner import measure
from tests.helpers.corpus import Corpus
from tests.helpers.data import shared_data

SAMPLE = {"cruxeval": 150, "humaneval": 30}
"""Programs of each benchmark a default run measures."""

COUNTED = Limits(max_steps=2_000_000, cpu_seconds=20.0, wall_seconds=60.0)
"""The default step limit, with CPU and wall time far past it: every call must run to its
end, and whether it does is for the steps to say. HumanEval/75's calls take 1.7 million
steps, 1.8 s of CPU on this 2-core machine idle (past the default 2 s on a busy one)."""


def _programs(corpus: Corpus) -> dict[str, list[Program]]:
    return {name: corpus.sample(load_source(str(shared_data(file))).programs, SAMPLE[name])
            for name, file in (("cruxeval", "cruxeval.jsonl"),
                               ("humaneval", "HumanEval.jsonl.gz"))}


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory,
             corpus: Corpus) -> dict[str, list[dict[str, Any]]]:
    """Per source, one record per call: its id, the tracer's verdict and coverage's."""
    calls = [(name, program, call) for name, programs in _programs(corpus).items()
             for program in programs for call in program.calls]
    jobs = [Job(program.code, program.entry_point, call.args) for _, program, call in calls]
    with Sandbox(limits=COUNTED) as sandbox:
        futures = [sandbox.submit(job) for job in jobs]  # traced while coverage measures
        truths = measure([(j.code, j.entry_point, j.args) for j in jobs],
                         tmp_path_factory.mktemp("coverage"))
        traces = [future.result() for future in futures]
    records: dict[str, list[dict[str, Any]]] = {}
    for (name, program, call), trace, truth in zip(calls, traces, truths, strict=True):
        records.setdefault(name, []).append({
            "id": f"{program.id} {program.entry_point}({call.args[:60]})",
            "status": trace.status, "raised": trace.exception and trace.exception["type"],
            "lines": trace.lines, "coverage": truth["lines"], "coverage_raised": truth["raised"],
        })
    return records


def _disagreements(records: list[dict[str, Any]]) -> list[str]:
    found = []
    for r in records:
        ours, theirs = set(r["lines"]), set(r["coverage"])
        if ours != theirs or r["raised"] != r["coverage_raised"]:
            found.append(f"{r['id']}: raised {r['raised']} vs {r['coverage_raised']}; only"
                         f" tracer {sorted(ours - theirs)}, only coverage {sorted(theirs - ours)}")
    return found


@pytest.mark.parametrize(("source", "least_calls"), [("cruxeval", (800, 150)),
                                                   ("humaneval", (1000, 150))],
                         ids=["cruxeval", "humaneval"])
def test_executed_lines_match_coverage(measured: dict[str, list[dict[str, Any]]], source: str,
                                       least_calls: tuple[int, int], corpus: Corpus) -> None:
    """Every call of every measured program: at least the first count under ``--run-slow``
    (whole benchmarks), the second on the default sample."""
    records = measured[source]
    assert len(records) >= (least_calls[0] if corpus.full else least_calls[1])
    assert all(r["status"] in ("ok", "exception") for r in records), \
        [(r["id"], r["status"]) for r in records if r["status"] not in ("ok", "exception")]
    assert all(r["coverage"] for r in records)
    problems = _disagreements(records)
    assert not problems, f"{len(problems)} of {len(records)} calls disagree:\n" + \
        "\n".join(problems[:20])
