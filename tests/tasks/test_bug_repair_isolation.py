"""A bug-repair run in which some candidates attack the sandbox: every honest candidate
keeps its verdict.

The model is a real HTTP server on 127.0.0.1 with scripted answers, the run is
``execbench run`` at one connection (so the hostile candidates' runners would, under
runner reuse, be the ones to score the candidates after them), and each sample's verdict
is checked against the answer the server sent: the canonical function must be judged
correct and the buggy one incorrect, whatever the hostile answers did.
"""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

import pytest

from execbench.models.base import GenerateConfig
from execbench.rundir import Sample
from execbench.runner import RunConfig, read_samples, run
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks.base import Instance
from execbench.tasks.bugs import function_source
from execbench.tasks.bugs_payload import RepairQuestion
from tests.fakeserver import FakeServer, Reply, prompt_of
from tests.sources.test_bugs import write_toys

PACK = Path(__file__).resolve().parents[3] / "shared" / "data" / "humanevalpack.jsonl.gz"

ATTACK = '''

import sys as _sys

_frame = _sys._getframe()
while type(_frame.f_locals.get("self")).__name__ != "Runner":
    _frame = _frame.f_back
_forged = b'{"status": "ok", "value": ["int", 4242], "value_repr": "4242", "stdout": ""}'
type(_frame.f_locals["self"]).call = lambda self, job: (_forged, None)
'''
"""Appended to a correct function: the runner then answers every later call with 4242."""


def _answer(function: str) -> str:
    return f"[ANSWER]\n```python\n{function}```\n[/ANSWER]"


def _run_with_attacks(tmp_path: Path, source: str, hostile: int, n: int,
                      limit: int | None = None) -> tuple[list[Sample], dict[str, str]]:
    """Build bug-repair on ``source``, then run it with the first ``hostile`` requests
    answered by a correct function plus the attack, and the rest alternately by the
    canonical function and the buggy one. Returns the samples and what each answer was."""
    build_suite([source], tmp_path / "suite",
                BuildOptions(tasks=["bug-repair"], workers=1, limit=limit))
    _, instances, _ = load_suite(tmp_path / "suite")
    kinds: dict[str, str] = {}
    order = itertools.count()
    lock = threading.Lock()

    def instance_for(prompt: str) -> Instance:
        return next(i for i in instances if i.code.strip() in prompt)

    def responder(body: dict, attempt: int) -> Reply:
        instance = instance_for(prompt_of(body))
        canonical = RepairQuestion.from_record(instance.data).function
        with lock:
            position = next(order)
        if position < hostile:
            kind, text = "hostile", _answer(canonical + ATTACK)
        elif position % 2:
            kind, text = "buggy", _answer(function_source(instance.code,
                                                          instance.entry_point))
        else:
            kind, text = "canonical", _answer(canonical)
        kinds[text] = kind
        return Reply(text=text)

    with FakeServer(responder) as server:
        run(RunConfig(suite=str(tmp_path / "suite"), model="openai-api/fake/repairer", n=n,
                      base_url=server.base_url,
                      generate=GenerateConfig(max_connections=1, seed=0)),
            tmp_path / "run")
    samples = list(read_samples(tmp_path / "run" / "samples.jsonl").values())
    return samples, kinds


def _check(samples: list[Sample], kinds: dict[str, str], hostile: int) -> None:
    seen = {"hostile": 0, "canonical": 0, "buggy": 0}
    for sample in samples:
        kind = kinds[sample.response]
        seen[kind] += 1
        if kind == "canonical":
            assert sample.verdict == "correct", sample
        elif kind == "buggy":
            assert sample.verdict == "incorrect", sample
    assert seen["hostile"] == hostile and seen["canonical"] and seen["buggy"]


def test_hostile_repairs_do_not_change_later_verdicts(tmp_path: Path) -> None:
    samples, kinds = _run_with_attacks(tmp_path, str(write_toys(tmp_path / "toys.jsonl")),
                                       hostile=2, n=4)
    _check(samples, kinds, hostile=2)


@pytest.mark.slow
def test_hostile_repairs_on_humanevalpack(tmp_path: Path) -> None:
    """The published attack's shape: 30 HumanEvalPack problems, 3 hostile answers first."""
    if not PACK.is_file():
        pytest.skip(f"{PACK} is absent (see shared/data/README.md)")
    samples, kinds = _run_with_attacks(tmp_path, str(PACK), hostile=3, n=1, limit=30)
    _check(samples, kinds, hostile=3)
