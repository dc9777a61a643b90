"""Run folders written before the typed run records still load, resume and re-score: the
files here are written as the earlier code wrote them, key for key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from execbench import runner
from execbench.rundir import (
    RunError,
    Sample,
    iter_samples,
    load_run_config,
    read_samples,
    repair_log,
)
from execbench.suite import BuildOptions, build_suite, load_suite
from tests.helpers.cli import execbench

SOURCE = {"id": "twice", "code": "def f(x):\n    return 2 * x\n", "entry_point": "f",
          "calls": ["1", "2"]}
GENERATE = {"temperature": None, "top_p": None, "max_tokens": None, "seed": None,
            "max_connections": 16, "max_retries": 5, "timeout": None,
            "sample_deadline": 3600.0, "retry_base_delay": 1.0, "server_start_timeout": 900.0,
            "max_connection_failures": 5}


def _old_sample(instance_id: str, response: str, verdict: str, *, newer_keys: bool) -> dict:
    """A samples.jsonl record; without ``newer_keys`` as logs were before stop reasons,
    refusals and endpoints were recorded."""
    record = {"schema_version": 1, "instance_id": instance_id, "task": "output",
              "source": "small", "sample": 0, "seed": None, "prompt_hash": "0" * 16,
              "response": response, "reasoning": None, "answer": None, "verdict": verdict,
              "correct": verdict == "correct", "score": None, "detail": None, "extra": None,
              "input_tokens": None, "output_tokens": None, "latency": 0.0, "attempts": 1,
              "error": None}
    if newer_keys:
        record.update(stop_reason=None, truncated=False, refused=False, refusal=None,
                      endpoint=None)
    return record


@pytest.fixture
def old_run(tmp_path: Path) -> tuple[Path, list[str]]:
    """A suite and, beside it, a run of ``reference/oracle`` with one sample of each of its
    two instances: the first logged with a wrong verdict (as a scorer bug would have), the
    second from an older log without the newer keys."""
    source = tmp_path / "small.jsonl"
    source.write_text(json.dumps(SOURCE) + "\n")
    build_suite([str(source)], tmp_path / "suite", BuildOptions(tasks=["output"]))
    _, instances, sha = load_suite(tmp_path / "suite")
    ids = [instance.id for instance in instances]
    out = tmp_path / "run"
    out.mkdir()
    pinned = {"suite_sha256": sha, "model": "reference/oracle", "base_url": None,
              "model_args": {}, "shots": 0, "temperature": None, "top_p": None,
              "max_tokens": None, "seed": None}
    session = {"started": "2026-11-23T10:00:00+00:00", "ended": "2026-11-23T10:00:01+00:00",
               "seconds": 1.0, "outcome": "completed", "execbench_version": "0.1.0",
               "python": "CPython 3.12.3", "host": "old", "command": "execbench run"}
    settings = {"model": "reference/oracle", "suite": str((tmp_path / "suite").resolve()),
                "n": 1, "shots": 0, "limit": None, "tasks": None, "base_url": None,
                "model_args": {}, "generate": GENERATE, "price_input": None,
                "price_output": None, "sampling_defaults": {}}
    (out / "run.json").write_text(json.dumps(
        {"schema_version": 1, "execbench_version": "0.1.0", "pinned": pinned, **settings,
         "sessions": [session]}, indent=2, sort_keys=True) + "\n")
    lines = [_old_sample(ids[0], "[ANSWER]\nassert f(1) == 2\n[/ANSWER]", "incorrect",
                         newer_keys=True),
             _old_sample(ids[1], "[ANSWER]\nassert f(2) == 4\n[/ANSWER]", "correct",
                         newer_keys=False)]
    (out / "samples.jsonl").write_text("".join(
        json.dumps(line, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"
        for line in lines))
    (out / "results.json").write_text(json.dumps({
        "schema_version": 1, "execbench_version": "0.1.0",
        "run": {**settings, "run_dir": str(out), "suite_sha256": sha},
        "counts": {"instances": 2, "samples": 2, "expected_samples": 2,
                   "verdicts": {"correct": 1, "incorrect": 1}, "truncated": 0, "refused": 0},
        "metrics": {}, "usage": {}, "sessions": [session], "declared_metrics": []},
        indent=2, sort_keys=True) + "\n")
    return out, ids


def test_an_old_run_loads(old_run: tuple[Path, list[str]]) -> None:
    out, ids = old_run
    config = load_run_config(out)
    assert (config.model, config.n, config.generate.max_connections) == ("reference/oracle",
                                                                          1, 16)
    samples = read_samples(out / "samples.jsonl")
    assert [samples[(i, 0)].verdict for i in ids] == ["incorrect", "correct"]
    older = samples[(ids[1], 0)]
    assert (older.stop_reason, older.truncated, older.refused, older.endpoint) == (
        None, False, False, None)


def test_an_old_run_resumes_asking_only_what_it_lacks(old_run: tuple[Path, list[str]]) -> None:
    out, ids = old_run
    config = load_run_config(out)
    config.n = 2
    planned = runner.plan(config, out)
    assert sorted((instance.id, sample) for instance, sample in planned.work()) == [
        (ids[0], 1), (ids[1], 1)]
    results = runner.run(config, out, planned=planned)
    assert results["counts"]["samples"] == 4
    assert results["counts"]["verdicts"] == {"correct": 3, "incorrect": 1}  # kept as logged
    run_json = json.loads((out / "run.json").read_text())
    assert [s["host"] for s in run_json["sessions"]][0] == "old"
    assert len(run_json["sessions"]) == 2


def test_an_old_run_rescores(old_run: tuple[Path, list[str]]) -> None:
    out, ids = old_run
    results = runner.rescore(out).results
    assert results["counts"]["verdicts"] == {"correct": 2}
    assert results["metrics"]["output"]["all"]["pass@1"] == 1.0
    lines = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [(line["instance_id"], line["verdict"]) for line in lines] == [
        (ids[0], "correct"), (ids[1], "correct")]
    assert Sample.from_record(lines[1]).to_record() == lines[1]
    assert json.loads((out / "results.json").read_text()) == results


def test_score_says_how_many_verdicts_changed_and_how(old_run: tuple[Path, list[str]]
                                                      ) -> None:
    """Issue #23: ``score`` prints the verdicts it changed, by direction (the old run logged
    its first answer wrong, as a scorer bug would have); a second score changes none."""
    out, ids = old_run
    done = execbench("score", out)
    assert done.exit_code == 0, done.stderr
    assert ("verdicts changed: 1 of 2 (1 now correct, 0 no longer correct): incorrect -> "
            "correct 1") in done.stderr
    again = execbench("score", out)
    assert "verdicts changed: none of 2" in again.stderr


def test_a_changed_suite_is_not_rescored(old_run: tuple[Path, list[str]]) -> None:
    out, _ = old_run
    before = (out / "samples.jsonl").read_bytes()
    instances = out.parent / "suite" / "instances.jsonl"
    instances.write_text(instances.read_text().replace("return 2 * x", "return 3 * x"))
    with pytest.raises(RunError, match="different suite_sha256"):
        runner.rescore(out)
    assert (out / "samples.jsonl").read_bytes() == before


def _logged(path: Path, *records: tuple[str, int, str]) -> None:
    with path.open("a") as log:
        for instance_id, sample, verdict in records:
            record = _old_sample(instance_id, verdict, verdict, newer_keys=True)
            log.write(json.dumps({**record, "sample": sample}) + "\n")


def test_the_log_is_read_as_a_stream_the_last_record_winning(tmp_path: Path) -> None:
    """A sample logged twice (``--retry-errors``) is read once, as last logged, and the
    others in log order; a line a crash cut is left unread, then cut off by ``repair``."""
    log = tmp_path / "samples.jsonl"
    _logged(log, ("a", 0, "error"), ("b", 0, "correct"), ("a", 1, "incorrect"),
            ("a", 0, "correct"), ("c", 0, "unparsable"))
    whole = log.read_bytes()
    log.write_bytes(whole + b'{"instance_id": "d", "samp')
    read = [(s.instance_id, s.sample, s.verdict) for s in iter_samples(log)]
    assert read == [("b", 0, "correct"), ("a", 1, "incorrect"), ("a", 0, "correct"),
                    ("c", 0, "unparsable")]
    assert log.read_bytes().endswith(b'"samp')  # reading alone changes nothing
    assert [(s.instance_id, s.verdict) for s in iter_samples(log, repair=True)][-1] == \
        ("c", "unparsable")
    assert log.read_bytes() == whole
    assert read_samples(log)[("a", 0)].verdict == "correct"


def test_lines_appended_while_the_log_is_read_are_not_half_read(tmp_path: Path) -> None:
    """A run appending while a report reads: what the first pass did not see is not
    yielded by the second, and a key's newer record does not hide the one read."""
    log = tmp_path / "samples.jsonl"
    _logged(log, ("a", 0, "error"), ("b", 0, "correct"))
    stream = iter_samples(log)
    first = next(stream)
    _logged(log, ("b", 0, "incorrect"), ("z", 0, "correct"))
    assert [(first.instance_id, first.verdict)] + [(s.instance_id, s.verdict) for s in stream] \
        == [("a", "error"), ("b", "correct")]


def test_a_long_partial_line_is_cut_back_to_the_last_newline(tmp_path: Path) -> None:
    log = tmp_path / "samples.jsonl"
    _logged(log, ("a", 0, "correct"))
    whole = log.read_bytes()
    log.write_bytes(whole + b"x" * 200_000)  # longer than one block read back from the end
    repair_log(log)
    assert log.read_bytes() == whole
    log.write_bytes(b"y" * 70_000)
    repair_log(log)
    assert log.read_bytes() == b""
