"""The tracer's executed lines agree with coverage.py's on real benchmark programs.

Ground truth for one call: the program file runs as a module, then the call runs; the
executed lines of both, as coverage.py measures them, must equal ``Trace.lines``. All
programs are measured in one helper process with coverage's API (a process per program
would make this test slow), while the sandbox traces the same calls.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from execbench.program import Program
from execbench.sandbox.pool import Job, Sandbox
from execbench.sources import load_source

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"

# Reads one JSON job per line: {"code", "entry_point", "args"}; prints one JSON line each.
# The namespace, seed and hash seed match what a sandbox runner gives a program.
COVERAGE_HELPER = """\
import json, os, random, sys
import coverage

cov = coverage.Coverage(data_file=None, branch=False, config_file=False)
for index, line in enumerate(sys.stdin):
    job = json.loads(line)
    path = os.path.abspath(f"prog_{index}.py")
    with open(path, "w") as fh:
        fh.write(job["code"])
    program = compile(job["code"], path, "exec")
    call = compile(f"(lambda *a, **k: (a, k))({job['args']}\\n)", "<call>", "eval")
    namespace = {"__name__": "__program__"}
    random.seed(0)
    error = None
    cov.start()
    try:
        exec(program, namespace)
        args, kwargs = eval(call, namespace)
        namespace[job["entry_point"]](*args, **kwargs)
    except BaseException as exc:
        error = type(exc).__name__
    finally:
        cov.stop()
    lines = sorted(cov.get_data().lines(path) or [])
    print(json.dumps({"lines": lines, "error": error}), flush=True)
"""


def _programs() -> dict[str, list[Program]]:
    if not DATA.is_dir():
        pytest.skip(f"benchmark data folder {DATA} not found (see its README.md)")
    humaneval = DATA / "HumanEval.jsonl.gz"
    return {
        "cruxeval": load_source(str(DATA / "cruxeval.jsonl")).programs,
        "humaneval": load_source(str(humaneval) if humaneval.exists() else "humaneval").programs,
    }


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """Per source, one record per call: its id, the tracer's verdict and coverage's."""
    calls = [(name, program, call) for name, programs in _programs().items()
             for program in programs for call in program.calls]
    jobs = [Job(program.code, program.entry_point, call.args) for _, program, call in calls]
    helper = subprocess.Popen(
        [sys.executable, "-c", COVERAGE_HELPER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True, cwd=tmp_path_factory.mktemp("coverage"),
        env={**os.environ, "PYTHONHASHSEED": "0"})
    feed = "".join(json.dumps({"code": j.code, "entry_point": j.entry_point, "args": j.args})
                   + "\n" for j in jobs)
    with Sandbox() as sandbox:
        futures = [sandbox.submit(job) for job in jobs]
        stdout, _ = helper.communicate(feed, timeout=300)
        traces = [future.result() for future in futures]
    assert helper.returncode == 0
    truths = [json.loads(line) for line in stdout.splitlines()]
    assert len(truths) == len(jobs)
    records: dict[str, list[dict[str, Any]]] = {}
    for (name, program, call), trace, truth in zip(calls, traces, truths, strict=True):
        records.setdefault(name, []).append({
            "id": f"{program.id} {program.entry_point}({call.args[:60]})",
            "status": trace.status, "raised": trace.exception and trace.exception["type"],
            "lines": trace.lines, "coverage": truth["lines"], "coverage_raised": truth["error"],
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


@pytest.mark.parametrize(("source", "least_calls"), [("cruxeval", 800), ("humaneval", 1000)])
def test_executed_lines_match_coverage(measured: dict[str, list[dict[str, Any]]], source: str,
                                       least_calls: int) -> None:
    records = measured[source]
    assert len(records) >= least_calls
    assert all(r["status"] in ("ok", "exception") for r in records), \
        [(r["id"], r["status"]) for r in records if r["status"] not in ("ok", "exception")]
    assert all(r["coverage"] for r in records)
    problems = _disagreements(records)
    assert not problems, f"{len(problems)} of {len(records)} calls disagree:\n" + \
        "\n".join(problems[:20])
