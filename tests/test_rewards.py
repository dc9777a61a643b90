"""Rewards equal verdicts: a suite exported as verl parquet and as a ``datasets`` folder,
reloaded, and scored by ``compute_score``, the TRL callable and the HTTP service, against
the verdicts ``execbench run`` and ``execbench score`` give the same responses."""

from __future__ import annotations

import gzip
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from execbench.export import ExportOptions, export_suite, parse_splits
from execbench.rewards import (
    Rewarder,
    RewardError,
    TRLReward,
    compute_score,
    read_truth,
    truth_text,
)
from execbench.rundir import RunConfig, prompt_hash, read_samples
from execbench.runner import SAMPLES, rescore, run
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks import get_task
from execbench.tasks.asking import ask
from execbench.tasks.dexbench_payload import CoverageQuestion
from execbench.tasks.protocol import Protocol
from tests.fakeserver import FakeServer, Reply
from tests.helpers.data import shared_data
from tests.helpers.fake_model import FAKE_MODEL
from tests.helpers.red_team import RED_TEAM
from tests.tasks.test_prediction import hand_instance

pyarrow = pytest.importorskip("pyarrow", reason="the export extra (pyarrow) is not installed")
datasets = pytest.importorskip("datasets", reason="the export extra (datasets) is not installed")

PROGRAMS = {
    "clip": ("def clip(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n"
             "        return hi\n    return x\n", ["5, 0, 3", "-2, 0, 3", "1, 0, 3"]),
    "total": ("def total(xs):\n    s = 0\n    for x in xs:\n        if x % 2:\n"
              "            s += x\n    return s\n", ["[1, 2, 3]", "[2, 4]", "[]"]),
    "count_vowels": ("def count_vowels(text):\n    n = 0\n    for ch in text:\n"
                     "        if ch in 'aeiou':\n            n += 1\n    return n\n",
                     ["'banana'", "'xyz'"]),
    "fizz": ("def fizz(n):\n    out = []\n    for i in range(1, n + 1):\n"
             "        if i % 3 == 0:\n            out.append('fizz')\n        else:\n"
             "            out.append(i)\n    return out\n", ["4", "2"]),
    "sign": ("def sign(x):\n    if x > 0:\n        return 1\n    elif x < 0:\n        return -1\n"
             "    return 0\n", ["7", "-3", "0"]),
    "pairs": ("def pairs(xs):\n    d = {}\n    for i, x in enumerate(xs):\n"
              "        d[x] = i\n    return d\n", ["['a', 'b']", "[]"]),
    "collatz": ("def collatz(n):\n    steps = 0\n    while n != 1:\n        if n % 2:\n"
                "            n = 3 * n + 1\n        else:\n            n //= 2\n"
                "        steps += 1\n    return steps\n", ["6", "1"]),
    "rev": ("def rev(s):\n    if not s:\n        return s\n    return s[::-1]\n",
            ["'abc'", "''"]),
}
TASKS = ["output", "input", "coverage", "simulation", "statement"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A suite of the programs above (output, input, coverage, simulation) and CodeSense's
    published statement records, exported three ways."""
    folder = tmp_path_factory.mktemp("rewards")
    source = folder / "progs.jsonl"
    source.write_text("".join(json.dumps({"id": name, "code": code, "entry_point": name,
                                          "calls": calls}) + "\n"
                              for name, (code, calls) in PROGRAMS.items()))
    statements = folder / "statement_prediction_dataset.jsonl"
    with gzip.open(shared_data("codesense/statement_prediction_dataset.jsonl.gz"), "rt") as fh:
        statements.write_text("".join(line for _, line in zip(range(40), fh, strict=False)))
    build_suite([str(source), str(statements)], folder / "suite",
                BuildOptions(tasks=TASKS, workers=2, task_options={"tests": "3"}))
    for layout in ("verl", "hf", "jsonl"):
        export_suite(folder / "suite", folder / layout,
                     ExportOptions(layout=layout, splits=parse_splits("train=0.75,test=0.25"),
                                   seed=3))
    return {"folder": folder, "suite": folder / "suite"}


def _responses(instances: list, marker: str) -> dict[str, list[str]]:
    """Per instance: the reference answer, another instance's (mostly wrong), empty, prose,
    and every hostile completion."""
    references = {i.id: get_task(i.task).asking.reference_response(i) for i in instances}
    by_task: dict[str, list[str]] = {}
    for instance in instances:
        by_task.setdefault(instance.task, []).append(references[instance.id])
    scripted = {}
    for instance in instances:
        ref = references[instance.id]
        same = by_task[instance.task]
        other = same[(same.index(ref) + 1) % len(same)]
        scripted[instance.id] = [ref, other, "", "I am not sure what this returns.",
                                 ref.replace("[ANSWER]", "```").replace("[/ANSWER]", "```"),
                                 *(make(ref, marker) for make in RED_TEAM.values())]
    return scripted


def test_rewards_equal_the_verdicts_of_run_and_score(exported: dict[str, Any],
                                                      tmp_path: Path) -> None:
    _, instances, _ = load_suite(exported["suite"])
    assert {i.task for i in instances} == set(TASKS)
    marker = str(tmp_path / "ran")
    scripted = _responses(instances, marker)
    n = len(next(iter(scripted.values())))
    by_prompt = {prompt_hash(ask(get_task(i.task), i, Protocol(shots=0))): i.id for i in instances}

    def responder(body: dict, attempt: int) -> Reply:
        return Reply(text=scripted[by_prompt[prompt_hash(body["messages"])]][body["seed"]])

    out = tmp_path / "run"
    with FakeServer(responder) as server:
        from execbench.models.base import GenerateConfig

        run(RunConfig(suite=str(exported["suite"]), model=FAKE_MODEL, base_url=server.base_url,
                      n=n, generate=GenerateConfig(seed=0)), out)
    rescored = rescore(out)
    assert not rescored.changed
    samples = read_samples(out / SAMPLES)
    assert len(samples) == n * len(instances) >= 1000
    verdicts = {(s.instance_id, s.response): s for s in samples.values()}

    # verl parquet, reloaded with pyarrow
    rows = {}
    for split in ("train", "test"):
        for row in pyarrow.parquet.read_table(exported["folder"] / "verl" / f"{split}.parquet"
                                              ).to_pylist():
            assert row["extra_info"]["split"] == split
            rows[row["extra_info"]["id"]] = row
    assert set(rows) == {i.id for i in instances}
    for (instance_id, response), sample in verdicts.items():
        row = rows[instance_id]
        assert row["extra_info"]["prompt_sha256"] == sample.prompt_hash
        got = compute_score(row["data_source"], response, row["reward_model"]["ground_truth"],
                            row["extra_info"])
        assert got["score"] == float(sample.correct), (instance_id, response[:80])
        assert got["correct"] == float(sample.correct)

    # the datasets folder, reloaded with datasets, through the TRL callable in batches
    loaded = datasets.load_from_disk(str(exported["folder"] / "hf"))
    hf_rows = {row["id"]: row for split in loaded for row in loaded[split]}
    assert set(hf_rows) == set(rows)
    reward = TRLReward()
    items = list(verdicts.items())
    for start in range(0, len(items), 64):
        batch = items[start:start + 64]
        got = reward(prompts=[hf_rows[i]["prompt"] for (i, _), _ in batch],
                     completions=[[{"role": "assistant", "content": r}] for (_, r), _ in batch],
                     ground_truth=[hf_rows[i]["ground_truth"] for (i, _), _ in batch])
        assert got == [float(sample.correct) for _, sample in batch]
    reward.close()

    # the HTTP service, in OpenRLHF's form, with the verdicts themselves
    from execbench.rewards import Rewarder
    from execbench.suite import SuiteFile
    from tests.test_reward_server import served

    limits = SuiteFile.open(exported["suite"]).limits
    with Rewarder(limits=[limits]) as rewarder, served(rewarder) as post:
        for start in range(0, len(items), 200):
            batch = items[start:start + 200]
            prompts = [f"<prompt of {i}>\n" for (i, _), _ in batch]
            answer = post({"query": [p + r for p, ((_, r), _) in zip(prompts, batch,
                                                                      strict=True)],
                           "prompts": prompts,
                           "labels": [hf_rows[i]["ground_truth"] for (i, _), _ in batch]})
            assert answer["verdicts"] == [sample.verdict for _, sample in batch]
            assert answer["rewards"] == [float(sample.correct) for _, sample in batch]
    assert not os.path.exists(marker), "a hostile completion ran"


def test_partial_credit_options_read_the_verdicts_parts(exported: dict[str, Any]) -> None:
    _, instances, _ = load_suite(exported["suite"])
    manifest, _, _ = load_suite(exported["suite"])
    coverage = next(i for i in instances if i.task == "coverage")
    simulation = next(i for i in instances if i.task == "simulation")
    statement = next(i for i in instances if i.task == "statement")
    lines = list(CoverageQuestion.from_record(coverage.data).lines)
    half = f"[ANSWER]\n{json.dumps(lines[: len(lines) // 2 or 1])}\n[/ANSWER]"
    with Rewarder("coverage=jaccard,simulation=coherence,statement=string_match") as rewarder:
        truth = truth_text(coverage, manifest.recipe.limits)
        got = rewarder.reward(truth, half)
        assert got.option == "jaccard" and got.value == got.score.score
        assert 0 < got.value < 1 and not got.score.correct
        shortcut = get_task("simulation").asking.shortcut_response(simulation)
        got = rewarder.reward(truth_text(simulation, manifest.recipe.limits), shortcut)
        assert got.option == "coherence" and got.value == 0.0 and got.score.extra["output_right"]
        right = get_task("statement").asking.reference_response(statement)
        got = rewarder.reward(truth_text(statement, manifest.recipe.limits), right)
        assert got.option == "string_match" and got.value == 1.0
        # an option for every task leaves the rows of tasks it does not serve unrewarded
    assert TRLReward("jaccard")(completions=["x"], ground_truth=[
        truth_text(statement, manifest.recipe.limits)]) == [None]
    with pytest.raises(RewardError, match="does not serve task 'output'"):
        Rewarder("output=jaccard")
    with pytest.raises(RewardError, match="unknown reward option 'jacard'; did you mean"):
        Rewarder("jacard")
    with pytest.raises(RewardError, match="does not serve task 'statement'"):
        compute_score("execbench/statement", "x", truth_text(statement, manifest.recipe.limits),
                      reward="jaccard")


@pytest.mark.parametrize(("truth", "why"), [
    ("not json", "not JSON"),
    ("[1]", "not a JSON object"),
    ('{"schema": 9}', "schema 9 is not 1"),
    ('{"schema": 1}', "no instance record"),
    ('{"schema": 1, "instance": {"id": 3}}', "field 'id' should be str"),
])
def test_a_ground_truth_that_is_none_is_refused_in_one_line(truth: str, why: str) -> None:
    with pytest.raises(RewardError, match=why):
        read_truth(truth)


def test_a_ground_truth_of_a_task_that_runs_code_needs_its_limits(
        exported: dict[str, Any]) -> None:
    manifest, instances, _ = load_suite(exported["suite"])
    record = json.loads(truth_text(next(i for i in instances if i.task == "input"),
                                   manifest.recipe.limits))
    assert record["limits"]["cpu_seconds"] == manifest.recipe.limits.cpu_seconds
    del record["limits"]
    with pytest.raises(RewardError, match="has no limits"):
        read_truth(json.dumps(record))
    record["limits"] = {"cpu_seconds": -1}
    with pytest.raises(RewardError, match="positive"):
        read_truth(json.dumps(record))
    # an output truth carries no limits: nothing of it runs
    assert "limits" not in json.loads(truth_text(
        next(i for i in instances if i.task == "output"), manifest.recipe.limits))


def test_the_rewarder_is_shared_safely_between_threads(exported: dict[str, Any]) -> None:
    manifest, instances, _ = load_suite(exported["suite"])
    chosen = [i for i in instances if i.task in ("input", "output")][:16]
    truths = [truth_text(i, manifest.recipe.limits) for i in chosen]
    answers = [get_task(i.task).asking.reference_response(i) for i in chosen]
    results: list[list[float | None]] = []
    with Rewarder(workers=2) as rewarder:
        def score() -> None:
            results.append([r.value for r in rewarder.rewards(truths, answers)])

        threads = [threading.Thread(target=score) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert results == [[1.0] * len(chosen)] * 4


def test_kept_ground_truths_are_bounded_in_bytes_and_odd_keys_refused() -> None:
    """A label padded with ``[],[],...`` (64 KB of text, 1.5 MB read) was kept 4,096 times
    over; now what is kept is bounded by its estimated cost, and a key a ground truth
    does not have is refused by name rather than carried."""
    from execbench.rewards import _cost, _TruthCache

    record = {"schema": 1, "instance": hand_instance("output", truth={
        "value": ["int", 1], "repr": "1"}).to_record()}
    with pytest.raises(RewardError, match="unknown key 'junk'"):
        read_truth(json.dumps({**record, "junk": []}))
    cache = _TruthCache(limit=2_000_000)
    padded = [json.dumps({"schema": 1, "instance": {**record["instance"], "id": f"o/{n}",
                                                    "pad": [[]] * 20_000}})
              for n in range(40)]
    for text in padded:
        assert cache(text).instance.id == json.loads(text)["instance"]["id"]
    assert _cost(padded[0]) > 1_000_000
    assert 0 < cache._total <= 2_000_000 and len(cache._kept) == 1
