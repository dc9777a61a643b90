"""``execbench run`` end to end against the scripted HTTP server in ``tests/fakeserver.py``.

The server reads each prompt, finds the instance it asks about (by the assertion line the
prompt must contain) and answers right, wrong or unparsably on purpose, so every verdict,
metric and request count below is known in advance. The command runs in this process
(``tests/helpers/cli.py``), except where a test kills it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from execbench import runner
from execbench.models.base import GenerateConfig
from execbench.settings import SettingError
from execbench.suite import BuildOptions, SuiteError, build_suite, load_suite
from tests.fakeserver import FakeServer, Reply, Responder, prompt_of
from tests.helpers.cli import EXECBENCH, FORCED, execbench
from tests.helpers.data import padded_suite

MODEL = "openai-api/fake/test-model"

# entry point -> (code, the dataset's call, arguments that give a different result)
PROGRAMS = {
    "add": ("def add(a, b):\n    return a + b\n", "2, 3", "1, 1"),
    "rev": ("def rev(s):\n    return s[::-1]\n", "'abc'", "'xy'"),
    "size": ("def size(xs):\n    return len(xs)\n", "[7, 8, 9]", "[]"),
    "top": ("def top(xs):\n    return max(xs)\n", "[4, 9, 2]", "[1]"),
    "neg": ("def neg(x):\n    return -x\n", "5", "0"),
}
WRONG_ARGS = {name: wrong for name, (_, _, wrong) in PROGRAMS.items()}

Plan = Callable[[dict[str, Any], int | None], str]
"""The verdict to aim for, given the instance and the seed sent with the request."""


def make_suite(folder: Path, programs: dict[str, tuple[str, str]]) -> tuple[Path, list[dict]]:
    """Build a suite with both tasks from ``{entry point: (code, call)}``."""
    source = folder / "progs.jsonl"
    source.write_text("".join(
        json.dumps({"id": name, "code": code, "entry_point": name, "calls": [call]}) + "\n"
        for name, (code, call) in programs.items()))
    build_suite([str(source)], folder / "suite",
                BuildOptions(tasks=["output", "input"], workers=1))
    _, instances, _ = load_suite(folder / "suite")
    return folder / "suite", instances


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """Five programs, so ten instances (one output and one input each)."""
    programs = {name: (code, call) for name, (code, call, _) in PROGRAMS.items()}
    return make_suite(tmp_path_factory.mktemp("small"), programs)


def find(instances: list[dict], prompt: str) -> dict[str, Any]:
    for inst in instances:
        ep = inst.entry_point
        line = (f"assert {ep}({inst.args}) == ??" if inst.task == "output"
                else f"assert {ep}(??) == {inst.data['truth']['output_repr']}")
        if line in prompt and inst.code in prompt:
            return inst
    raise AssertionError(f"no instance matches the prompt {prompt[:300]!r}")


def answer(inst: dict[str, Any], verdict: str) -> str:
    """A response that the task should score as ``verdict``."""
    if verdict == "unparsable":
        return "I could not work out what this returns."
    ep = inst.entry_point
    if inst.task == "output":
        value = inst.data["truth"]["repr"] if verdict == "correct" else "None"
        return f"Tracing it...\n[ANSWER]\nassert {ep}({inst.args}) == {value}\n[/ANSWER]"
    args = inst.args if verdict == "correct" else WRONG_ARGS[ep]
    return f"[ANSWER]\nassert {ep}({args}) == {inst.data['truth']['output_repr']}\n[/ANSWER]"


def scripted(instances: list[dict], plan: Plan, delay: float = 0.0) -> Responder:
    def responder(body: dict, attempt: int) -> Reply:
        inst = find(instances, prompt_of(body))
        return Reply(text=answer(inst, plan(inst, body.get("seed"))), delay=delay)

    return responder


def mixed(inst: dict[str, Any], seed: int | None) -> str:
    """Right, wrong, unparsable, right for even seeds only, and right on one task only."""
    return {
        "add": "correct",
        "rev": "incorrect",
        "size": "unparsable",
        "top": "correct" if seed is not None and seed % 2 == 0 else "incorrect",
        "neg": "correct" if inst.task == "input" else "incorrect",
    }[inst.entry_point]


def expected_pass1(instances: list[dict], plan: Plan, seeds: list[int | None]) -> dict:
    per_task: dict[str, list[float]] = {}
    for inst in instances:
        right = sum(plan(inst, seed) == "correct" for seed in seeds)
        per_task.setdefault(inst.task, []).append(right / len(seeds))
    return {task: sum(values) / len(values) for task, values in per_task.items()}


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a CI job or a pipe, for the console script in a process of its
    own: no terminal width or colour forced."""
    env = {k: v for k, v in os.environ.items() if k not in FORCED}
    return {**env, **extra}


CONNECTIONS = 4
"""Requests in flight at once: a few, so that retries and resumes overlap."""


def run_args(suite: Path, server: FakeServer, out: Path, *extra: object) -> list[object]:
    return ["run", "--suite", suite, "--model", MODEL, "--model-base-url", server.base_url,
            "--out", out, "--max-connections", CONNECTIONS, *extra]


def flat(text: str) -> str:
    """Text with every run of whitespace as one space, whatever the line wrapping."""
    return " ".join(text.split())


def results_of(out: Path) -> dict[str, Any]:
    return json.loads((out / runner.RESULTS).read_text())


def raw_lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / runner.SAMPLES).read_text().splitlines()]


def requested(server: FakeServer, instances: list[dict], since: int = 0) -> Counter:
    """How often each (instance id, seed) was asked for, from request ``since`` on."""
    return Counter((find(instances, r.prompt).id, r.body.get("seed"))
                   for r in server.requests[since:])


def order_free(value: Any) -> Any:
    """Metrics without the bootstrap interval, which depends on the order of the log (see
    ``test_results_do_not_depend_on_log_order``). Where every instance's fraction correct is
    0 or 1, as in ``even_right``, the other figures are exact whatever the order."""
    if isinstance(value, dict):
        return {k: order_free(v) for k, v in value.items() if k != "accuracy_ci95"}
    return value


def test_scripted_answers_are_scored_as_scripted(small: tuple[Path, list[dict]],
                                                 tmp_path: Path) -> None:
    suite, instances = small
    with FakeServer(scripted(instances, mixed)) as server:
        done = execbench(*run_args(suite, server, tmp_path / "run", "-n", 3, "--seed", 7,
                                   "--temperature", 0.8))
        asked = requested(server, instances)
    assert done.exit_code == 0, done.stderr

    assert asked == Counter({(inst.id, seed): 1 for inst in instances for seed in (7, 8, 9)})
    samples = runner.read_samples(tmp_path / "run" / runner.SAMPLES)
    assert set(samples) == {(inst.id, s) for inst in instances for s in range(3)}
    by_id = {inst.id: inst for inst in instances}
    for (iid, index), record in samples.items():
        assert record.seed == 7 + index
        assert record.verdict == mixed(by_id[iid], record.seed), record
        assert record.correct == (record.verdict == "correct")
        assert record.attempts == 1 and record.error is None, record

    results = results_of(tmp_path / "run")
    want = expected_pass1(instances, mixed, [7, 8, 9])
    assert want == pytest.approx({"output": (1 + 1 / 3) / 5, "input": (2 + 1 / 3) / 5})
    for task, value in want.items():
        assert results["metrics"][task]["all"]["pass@1"] == pytest.approx(value)
    verdicts = Counter(mixed(by_id[iid], 7 + index) for iid, index in samples)
    assert results["counts"]["verdicts"] == dict(verdicts)
    assert results["counts"]["samples"] == results["counts"]["expected_samples"] == 30


def test_anthropic_provider_end_to_end(small: tuple[Path, list[dict]], tmp_path: Path) -> None:
    suite, instances = small

    def by_task(inst: dict, seed: int | None) -> str:
        return "correct" if inst.task == "output" else "incorrect"

    with FakeServer(scripted(instances, by_task)) as server:
        env = {"ANTHROPIC_BASE_URL": server.anthropic_base_url,
               "ANTHROPIC_API_KEY": "sk-ant-test"}
        done = execbench("run", "--suite", suite, "--model", "anthropic/claude-test",
                         "--out", tmp_path / "run", "-n", 2, "--seed", 3, "--temperature", 0.8,
                         "--max-connections", CONNECTIONS, env=env)
        received = server.requests
    assert done.exit_code == 0, done.stderr
    assert len(received) == 20
    assert {r.path for r in received} == {"/v1/messages"}
    assert {r.headers["x-api-key"] for r in received} == {"sk-ant-test"}
    assert all(r.body["model"] == "claude-test" and "seed" not in r.body for r in received)
    assert {rec["seed"] for rec in raw_lines(tmp_path / "run")} == {None}, \
        "the Messages API takes no seed, so none is recorded as sent"
    metrics = results_of(tmp_path / "run")["metrics"]
    assert metrics["output"]["all"]["pass@1"] == 1.0
    assert metrics["input"]["all"]["pass@1"] == 0.0


FAULTS = {"add": "rate limited once", "rev": "server error", "size": "too slow",
          "top": "malformed once", "neg": "fine"}


def test_faults_are_retried_then_recorded_as_errors(small: tuple[Path, list[dict]],
                                                    tmp_path: Path) -> None:
    suite, instances = small

    def responder(body: dict, attempt: int) -> Reply:
        inst = find(instances, prompt_of(body))
        fault = FAULTS[inst.entry_point]
        if fault == "server error":
            return Reply.error(500, "the server is on fire")
        if fault == "too slow":
            return Reply(text=answer(inst, "correct"), delay=5.0)
        if attempt == 1 and fault == "rate limited once":
            return Reply.error(429, "slow down", retry_after=0.2)
        if attempt == 1 and fault == "malformed once":
            return Reply.malformed()
        return Reply(text=answer(inst, "correct"))

    fast = GenerateConfig(max_retries=2, retry_base_delay=0.01, timeout=1.0,
                          max_connections=CONNECTIONS)
    with FakeServer(responder) as server:
        config = runner.RunConfig(suite=str(suite), model=MODEL, base_url=server.base_url,
                                  tasks=["output"], generate=fast)
        results = runner.run(config, tmp_path / "run")
        counts = Counter(find(instances, r.prompt).entry_point for r in server.requests)

    samples = {rec.instance_id.split("/")[2]: rec.to_record()
               for rec in runner.read_samples(tmp_path / "run" / runner.SAMPLES).values()}
    assert counts == {"add": 2, "rev": 3, "size": 3, "top": 2, "neg": 1}

    assert samples["add"]["verdict"] == "correct" and samples["add"]["attempts"] == 2
    assert samples["add"]["latency"] >= 0.2  # the server's Retry-After was waited out
    assert samples["top"]["verdict"] == "correct" and samples["top"]["attempts"] == 2
    assert samples["neg"]["verdict"] == "correct" and samples["neg"]["attempts"] == 1
    for name, why in (("rev", "HTTP 500 after 3 attempts"), ("size", "timed out after 3")):
        record = samples[name]
        assert (record["verdict"], record["correct"], record["response"]) == ("error", False,
                                                                              None)
        assert record["attempts"] == 3
        assert record["error"].startswith(why), record["error"]
    assert "the server is on fire" in samples["rev"]["error"]

    assert results["counts"] == results_of(tmp_path / "run")["counts"]
    assert results["counts"]["verdicts"] == {"correct": 3, "error": 2}
    assert results["metrics"]["output"]["all"]["pass@1"] == pytest.approx(0.6)


def test_retry_errors_asks_again_only_for_failed_samples(small: tuple[Path, list[dict]],
                                                         tmp_path: Path) -> None:
    suite, instances = small
    healed = threading.Event()

    def responder(body: dict, attempt: int) -> Reply:
        inst = find(instances, prompt_of(body))
        if inst.entry_point == "rev" and not healed.is_set():
            return Reply.error(503, "overloaded")
        return Reply(text=answer(inst, "correct"))

    out = tmp_path / "run"
    with FakeServer(responder) as server:
        args = run_args(suite, server, out, "--max-retries", 0)
        first = execbench(*args)
        assert first.exit_code == 0, first.stderr
        assert "2 requests failed" in flat(first.stderr)
        results = results_of(out)
        assert results["counts"]["verdicts"] == {"correct": 8, "error": 2}
        assert results["metrics"]["output"]["all"]["pass@1"] == pytest.approx(0.8)

        healed.set()
        plain = execbench(*args)  # resuming alone leaves failed samples as they are
        assert plain.exit_code == 0, plain.stderr
        assert len(server.requests) == 10

        again = execbench(*args, "--retry-errors")
        assert again.exit_code == 0, again.stderr
        retried = requested(server, instances, since=10)

    assert retried == {(f"{task}/progs/rev/0", None): 1 for task in ("output", "input")}
    raw = raw_lines(out)
    assert len(raw) == 12
    assert Counter(rec["instance_id"] for rec in raw if rec["verdict"] == "error") == {
        "output/progs/rev/0": 1, "input/progs/rev/0": 1}
    final = runner.read_samples(out / runner.SAMPLES)
    assert len(final) == 10
    assert {rec.verdict for rec in final.values()} == {"correct"}
    assert results_of(out)["counts"]["verdicts"] == {"correct": 10}


def test_retry_flags_set_the_back_off(small: tuple[Path, list[dict]], tmp_path: Path) -> None:
    """--retry-delay is the first back-off (halved at most by jitter), doubling per retry.
    One instance per task: the waits are the point, not how many samples wait."""
    suite, instances = small

    def responder(body: dict, attempt: int) -> Reply:
        inst = find(instances, prompt_of(body))
        return Reply.error(503, "busy") if attempt <= 2 else Reply(text=answer(inst, "correct"))

    with FakeServer(responder) as server:
        refused = execbench(*run_args(suite, server, tmp_path / "bad", "--retry-delay", -1))
        assert refused.exit_code == 2 and "--retry-delay" in refused.stderr
        start = time.monotonic()
        done = execbench(*run_args(suite, server, tmp_path / "run", "--max-retries", 2,
                                   "--retry-delay", 0.4, "--limit", 1))
        elapsed = time.monotonic() - start
    assert done.exit_code == 0, done.stderr
    assert {(r["verdict"], r["attempts"]) for r in raw_lines(tmp_path / "run")} == {("correct", 3)}
    assert elapsed >= 0.2 + 0.4  # two waits: at least half of 0.4 s, then of 0.8 s


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """Thirty programs (sixty instances), enough to stop a run half-way."""
    programs = {f"p{i}": (f"def p{i}(x):\n    return x + {i}\n", str(i)) for i in range(30)}
    return make_suite(tmp_path_factory.mktemp("wide"), programs)


def even_right(inst: dict[str, Any], seed: int | None) -> str:
    return "correct" if int(inst.entry_point[1:]) % 2 == 0 else "unparsable"


def test_killed_run_resumes_without_repeating_logged_samples(wide: tuple[Path, list[dict]],
                                                             tmp_path: Path) -> None:
    suite, instances = wide
    out = tmp_path / "run"
    log = out / runner.SAMPLES
    pairs = {(inst.id, s) for inst in instances for s in range(2)}
    with FakeServer(scripted(instances, even_right, delay=0.05)) as server:
        args = run_args(suite, server, out, "-n", 2, "--seed", 0, "--temperature", 0.8)
        proc = subprocess.Popen([EXECBENCH, *map(str, args)], env=cli_env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        deadline = time.monotonic() + 60
        while not (log.exists() and log.read_bytes().count(b"\n") >= 20):
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "the run logged too little in 60 s"
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        before = runner.read_samples(log)
        assert 20 <= len(before) < len(pairs)
        with log.open("a") as handle:  # as if it had died in the middle of a write
            handle.write('{"instance_id": "output/progs/p0/0", "sample": 0, "verd')

        resumed = execbench(*args)
        assert resumed.exit_code == 0, resumed.stderr
        assert f"resuming: {len(before)} of {len(pairs)} samples" in flat(resumed.stderr)
        asked = requested(server, instances)

        clean = execbench(*run_args(suite, server, tmp_path / "clean", "-n", 2, "--seed", 0,
                                    "--temperature", 0.8))
        assert clean.exit_code == 0, clean.stderr

    raw = raw_lines(out)  # every line parses: the torn one was cut off
    assert Counter((rec["instance_id"], rec["sample"]) for rec in raw) == dict.fromkeys(pairs, 1)
    for iid, index in before:
        assert asked[(iid, index)] == 1, f"{iid} sample {index} was logged, yet asked again"
    assert set(asked) == pairs
    assert sum(asked.values()) - len(pairs) <= CONNECTIONS  # at most those in flight at the kill

    resumed_results, clean_results = results_of(out), results_of(tmp_path / "clean")
    assert order_free(resumed_results["metrics"]) == order_free(clean_results["metrics"])
    assert resumed_results["counts"] == clean_results["counts"]
    assert clean_results["metrics"]["output"]["all"]["pass@1"] == pytest.approx(0.5)


def test_results_do_not_depend_on_log_order(small: tuple[Path, list[dict]],
                                            tmp_path: Path) -> None:
    suite, instances = small
    out, shuffled = tmp_path / "run", tmp_path / "shuffled"
    with FakeServer(scripted(instances, mixed)) as server:
        done = execbench(*run_args(suite, server, out, "-n", 3, "--seed", 7, "--temperature", 0.8))
    assert done.exit_code == 0, done.stderr
    shuffled.mkdir()
    (shuffled / runner.RUN_CONFIG).write_bytes((out / runner.RUN_CONFIG).read_bytes())
    lines = (out / runner.SAMPLES).read_text().splitlines(keepends=True)
    (shuffled / runner.SAMPLES).write_text("".join(reversed(lines)))
    again = runner.write_results(runner.load_run_config(shuffled), shuffled)
    assert again["metrics"] == results_of(out)["metrics"]


def test_the_temperature_is_stated_never_left_to_the_provider(
        small: tuple[Path, list[dict]], tmp_path: Path) -> None:
    suite, instances = small
    with FakeServer(scripted(instances, mixed)) as server:
        greedy = execbench(*run_args(suite, server, tmp_path / "greedy"))
        sent = {request.body.get("temperature") for request in server.requests}
        many = execbench(*run_args(suite, server, tmp_path / "many", "-n", 3))
    assert greedy.exit_code == 0, greedy.stderr
    assert sent == {0.0}
    pinned = json.loads((tmp_path / "greedy" / runner.RUN_CONFIG).read_text())["pinned"]
    assert pinned["temperature"] == 0.0
    assert many.exit_code == 2 and not (tmp_path / "many").exists()
    assert ("-n above 1 or --top-p needs --temperature: 0.2 to report pass@1 as CRUXEval "
            "does, 0.8 for pass@5 and beyond") in flat(many.stderr)


def test_a_resume_takes_the_temperature_its_run_pinned(small: tuple[Path, list[dict]],
                                                        tmp_path: Path) -> None:
    # one sample each at the stated 0, then grown to three: the run goes on as it began
    suite, instances = small
    out = tmp_path / "run"
    with FakeServer(scripted(instances, mixed)) as server:
        first = execbench(*run_args(suite, server, out))
        before = len(server.requests)
        grown = execbench(*run_args(suite, server, out, "-n", 3))
        sent = {request.body.get("temperature") for request in server.requests[before:]}
        asked = len(server.requests) - before
    assert first.exit_code == 0 and grown.exit_code == 0, grown.stderr
    assert sent == {0.0} and asked == 2 * before


def test_a_run_that_pinned_no_temperature_resumes_as_it_began(
        small: tuple[Path, list[dict]], tmp_path: Path) -> None:
    # made before the default was stated: its provider chose, and its resume goes on so
    suite, instances = small
    out = tmp_path / "run"
    with FakeServer(scripted(instances, mixed)) as server:
        config = runner.RunConfig(suite=str(suite), model=MODEL, n=2, limit=2,
                                  base_url=server.base_url)
        runner.run(config, out)
        before = len(server.requests)
        resumed = execbench(*run_args(suite, server, out, "-n", 2))
        sent = {request.body.get("temperature") for request in server.requests[before:]}
    assert resumed.exit_code == 0, resumed.stderr
    assert sent == {None}
    assert json.loads((out / runner.RUN_CONFIG).read_text())["pinned"]["temperature"] is None


def test_resume_refuses_changed_settings_and_grows_n(small: tuple[Path, list[dict]],
                                                     tmp_path: Path) -> None:
    suite, instances = small
    out = tmp_path / "run"
    with FakeServer(scripted(instances, mixed)) as server:
        args = run_args(suite, server, out, "--seed", 0, "--temperature", 0.0)
        first = execbench(*args, "-n", 1)
        assert first.exit_code == 0, first.stderr
        logged = (out / runner.SAMPLES).read_bytes()

        hotter = execbench(*run_args(suite, server, out, "--seed", 0, "--temperature", 0.5))
        assert hotter.exit_code == 2
        assert "error:" in hotter.stderr and "different temperature" in flat(hotter.stderr)
        other = run_args(suite, server, out, "--seed", 0, "--temperature", 0.0)
        other[other.index(MODEL)] = "openai-api/fake/other-model"
        renamed = execbench(*other)
        assert renamed.exit_code == 2
        assert "different model" in flat(renamed.stderr)
        assert len(server.requests) == 10
        assert (out / runner.SAMPLES).read_bytes() == logged

        grown = execbench(*args, "-n", 3)
        assert grown.exit_code == 0, grown.stderr
        asked = requested(server, instances, since=10)

    assert asked == Counter({(inst.id, seed): 1 for inst in instances for seed in (1, 2)})
    results = results_of(out)
    assert results["counts"]["samples"] == 30
    for task, value in expected_pass1(instances, mixed, [0, 1, 2]).items():
        assert results["metrics"][task]["all"]["pass@1"] == pytest.approx(value)


def test_refusal_is_one_line(small: tuple[Path, list[dict]], tmp_path: Path) -> None:
    suite, instances = small
    out = tmp_path / "a-run-folder-with-a-fairly-long-name-as-real-ones-have"
    with FakeServer(scripted(instances, mixed)) as server:
        assert execbench(*run_args(suite, server, out, "--temperature", 0.0)).exit_code == 0
        refused = execbench(*run_args(suite, server, out, "--temperature", 1.0))
    assert refused.exit_code == 2
    assert refused.stderr.count("\n") == 1, refused.stderr


def test_score_and_report(small: tuple[Path, list[dict]], tmp_path: Path) -> None:
    suite, instances = small
    out = tmp_path / "run"
    with FakeServer(scripted(instances, mixed)) as server:
        assert execbench(*run_args(suite, server, out, "--seed", 0)).exit_code == 0
        original = results_of(out)
        # Spoil every stored verdict: re-scoring must rebuild them from the responses.
        spoiled = [{**rec, "verdict": "incorrect", "correct": False, "answer": None}
                   for rec in raw_lines(out)]
        (out / runner.SAMPLES).write_text("".join(json.dumps(r) + "\n" for r in spoiled))
        rescored = execbench("score", out)
        assert rescored.exit_code == 0, rescored.stderr
        assert len(server.requests) == 10  # scoring asks the model nothing

    assert results_of(out) == original
    by_id = {inst.id: inst for inst in instances}
    for (iid, _), record in runner.read_samples(out / runner.SAMPLES).items():
        assert record.verdict == mixed(by_id[iid], 0)

    oracle = tmp_path / "oracle"
    done = execbench("run", "--suite", suite, "--model", "reference/oracle", "--out", oracle)
    assert done.exit_code == 0, done.stderr
    report = execbench("report", out, oracle, "--format", "json")
    assert report.exit_code == 0, report.stderr
    [table] = json.loads(report.stdout)["tables"]
    rows = table["rows"]
    assert [row["run"] for row in rows] == [MODEL, "reference/oracle"]
    for task in ("output", "input"):
        pass1 = original["metrics"][task]["all"]["pass@1"]
        assert rows[0][f"{task} pass@1"]["value"] == pytest.approx(100 * pass1)
        assert rows[1][f"{task} pass@1"]["value"] == 100.0


def test_a_bad_model_name_does_not_pin_the_run_folder(small: tuple[Path, list[dict]],
                                                      tmp_path: Path) -> None:
    suite, _ = small
    out = tmp_path / "run"
    typo = execbench("run", "--suite", suite, "--model", "reference/oracel", "--out", out)
    assert typo.exit_code == 2 and "unknown reference model" in typo.stderr
    fixed = execbench("run", "--suite", suite, "--model", "reference/oracle", "--out", out)
    assert fixed.exit_code == 0, fixed.stderr


def test_a_narrower_resume_keeps_the_wider_scope(small: tuple[Path, list[dict]],
                                                 tmp_path: Path) -> None:
    suite, instances = small
    out = tmp_path / "run"
    wide = runner.RunConfig(suite=str(suite), model="reference/oracle", n=3)
    runner.run(wide, out)
    narrow = runner.RunConfig(suite=str(suite), model="reference/oracle", n=1, tasks=["input"])
    results = runner.run(narrow, out)
    assert results["run"]["n"] == 3 and results["run"]["tasks"] is None
    assert results["counts"]["samples"] == 3 * len(instances)
    assert runner.rescore(out).results["counts"]["samples"] == 3 * len(instances)


def test_a_run_folder_from_before_the_config_record_still_resumes(
        small: tuple[Path, list[dict]], tmp_path: Path) -> None:
    """run.json once kept the model, shots, base URL and model args only among the pinned
    values; such a folder still re-scores and resumes."""
    suite, instances = small
    out = tmp_path / "run"
    config = runner.RunConfig(suite=str(suite), model="reference/oracle", n=2)
    runner.run(config, out)
    path = out / runner.RUN_CONFIG
    record = json.loads(path.read_text())
    for key in ("model", "shots", "base_url", "model_args"):
        del record[key]
    path.write_text(json.dumps(record))
    assert runner.load_run_config(out) == runner.RunConfig(
        suite=str(suite.resolve()), model="reference/oracle", n=2,
        generate=runner.load_run_config(out).generate)
    assert runner.rescore(out).results["counts"]["samples"] == 2 * len(instances)
    assert runner.run(config, out)["counts"]["samples"] == 2 * len(instances)


def test_a_corrupt_log_line_is_named_not_a_traceback(small: tuple[Path, list[dict]],
                                                     tmp_path: Path) -> None:
    suite, _ = small
    out = tmp_path / "run"
    config = runner.RunConfig(suite=str(suite), model="reference/oracle")
    runner.run(config, out)
    lines = (out / "samples.jsonl").read_text().splitlines(keepends=True)
    lines[1] = lines[1][:30] + "\n"
    (out / "samples.jsonl").write_text("".join(lines))
    resumed = execbench("run", "--suite", suite, "--model", "reference/oracle", "--out", out)
    assert resumed.exit_code == 2
    assert "samples.jsonl:2: not a sample record" in resumed.stderr


def test_an_unknown_task_name_is_refused(small: tuple[Path, list[dict]], tmp_path: Path) -> None:
    suite, _ = small
    result = execbench("run", "--suite", suite, "--model", "reference/oracle",
                       "--out", tmp_path / "run", "--tasks", "output,outptu")
    assert result.exit_code == 2 and "no task outptu" in result.stderr


def append_a_record(path: Path) -> None:
    """A valid new instance at the end: the suite still loads, but is not the one run."""
    first = json.loads(path.read_text().splitlines()[0])
    path.write_text(path.read_text() + json.dumps({**first, "id": first["id"] + "-new"}) + "\n")


def edit_a_byte(path: Path) -> None:
    """The output 5 of add(2, 3) made 6: one byte, still valid JSON."""
    data = path.read_bytes()
    digit = data.index(b'"truth"') + data[data.index(b'"truth"'):].index(b"5")
    path.write_bytes(data[:digit] + b"6" + data[digit + 1:])


@pytest.mark.parametrize("change", [append_a_record, edit_a_byte])
def test_score_refuses_a_suite_changed_since_the_run(
        tmp_path: Path, change: Callable[[Path], None]) -> None:
    suite, _ = make_suite(tmp_path, {"add": PROGRAMS["add"][:2]})
    out = tmp_path / "run"
    done = execbench("run", "--suite", suite, "--model", "reference/oracle", "--out", out)
    assert done.exit_code == 0, done.stderr
    kept = {name: (out / name).read_bytes()
            for name in (runner.SAMPLES, runner.RESULTS, runner.RUN_CONFIG)}
    original = (suite / "instances.jsonl").read_bytes()
    change(suite / "instances.jsonl")
    assert (suite / "instances.jsonl").read_bytes() != original

    refused = execbench("score", out)
    assert refused.exit_code == 2
    assert refused.stderr.count("\n") == 1, refused.stderr
    said = flat(refused.stderr)
    assert f"error: {out} holds a run with different suite_sha256;" in said
    assert f"the suite {suite} has changed since the run" in said
    assert {name: (out / name).read_bytes() for name in kept} == kept

    (suite / "instances.jsonl").write_bytes(original)
    again = execbench("score", out)
    assert again.exit_code == 0, again.stderr


def test_score_refuses_a_run_whose_suite_is_gone(tmp_path: Path) -> None:
    suite, _ = make_suite(tmp_path, {"add": PROGRAMS["add"][:2]})
    out = tmp_path / "run"
    runner.run(runner.RunConfig(suite=str(suite), model="reference/oracle"), out)
    kept = {name: (out / name).read_bytes() for name in (runner.SAMPLES, runner.RESULTS)}
    suite.rename(tmp_path / "elsewhere")

    refused = execbench("score", out)
    assert refused.exit_code == 2
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert (f"error: {out} was run on the suite {suite}, which is gone; put it back there "
            "to re-score") in flat(refused.stderr)
    assert {name: (out / name).read_bytes() for name in kept} == kept


@contextlib.contextmanager
def stopped_after(server: FakeServer, answered: threading.Semaphore, count: int,
                  what: str) -> Iterator[None]:
    """Stop ``server`` once it has answered ``count`` requests (its responder releases
    ``answered`` for each), while the body runs a command; fail, saying ``what``, if it
    never does."""
    errors: list[str] = []

    def stop() -> None:
        try:
            for _ in range(count):
                if not answered.acquire(timeout=60):
                    errors.append(what)
                    return
        finally:
            server.__exit__(None, None, None)

    stopper = threading.Thread(target=stop)
    stopper.start()
    try:
        yield
    finally:
        stopper.join()
    assert not errors, errors[0]


def dead_url() -> str:
    """The base URL of a port nothing listens on: every connection is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def test_a_dead_endpoint_ends_the_run_at_once(small: tuple[Path, list[dict]],
                                              tmp_path: Path) -> None:
    """The health probe finds no server: one line, exit 3, no samples. The probe's message
    (not the breaker's, "no model server answers") shows that the run stopped before any
    request was sent and backed off."""
    suite, _ = small
    out = tmp_path / "run"
    done = execbench("run", "--suite", suite, "--model", MODEL, "--model-base-url", dead_url(),
                     "--out", out)
    assert done.exit_code == 3, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "error: cannot reach the model server: http://127.0.0.1:" in flat(done.stderr)
    assert not (out / runner.SAMPLES).exists() or not (out / runner.SAMPLES).read_bytes()


def test_a_run_that_answered_nothing_pins_nothing(small: tuple[Path, list[dict]],
                                                  tmp_path: Path) -> None:
    """Issue #23: a run against a dead URL, then the right URL (and, once the first was
    fixed, another setting) into the same folder goes on, where it was refused as "a run
    with different base_url". The failed attempt stays in run.json's sessions."""
    suite, instances = small
    out = tmp_path / "run"
    dead = execbench("run", "--suite", suite, "--model", MODEL, "--model-base-url",
                     dead_url(), "--out", out)
    assert dead.exit_code == 3, dead.stderr
    with FakeServer(scripted(instances, mixed)) as server:
        done = execbench(*run_args(suite, server, out, "--temperature", 0.5))
    assert done.exit_code == 0, done.stderr
    assert results_of(out)["counts"]["samples"] == len(instances)
    record = json.loads((out / runner.RUN_CONFIG).read_text())
    assert record["base_urls"] == [server.base_url]
    assert [s["outcome"].split(":")[0] for s in record["sessions"]] == ["stopped", "completed"]


def test_a_run_whose_every_request_failed_is_taken_over_whole(
        small: tuple[Path, list[dict]], tmp_path: Path) -> None:
    """Every request failed (logged as errors), then other settings take the folder over:
    the failed samples went with the old log, so all are asked again, not counted as done."""
    suite, instances = small
    out = tmp_path / "run"
    with FakeServer(lambda body, attempt: Reply.error(500, f"down ({len(json.dumps(body))})")
                    ) as server:
        failed = execbench(*run_args(suite, server, out, "--max-retries", 0))
    assert failed.exit_code == 1, failed.stderr
    assert results_of(out)["counts"]["verdicts"] == {"error": len(instances)}
    with FakeServer(scripted(instances, mixed)) as server:
        done = execbench(*run_args(suite, server, out, "--temperature", 0.5))
    assert done.exit_code == 0, done.stderr
    assert "resuming" not in done.stderr
    assert len(server.requests) == len(instances)
    assert "error" not in results_of(out)["counts"]["verdicts"]


def test_a_resume_at_a_new_url_goes_on_and_records_both(small: tuple[Path, list[dict]],
                                                        tmp_path: Path) -> None:
    """The endpoint is not part of a run's identity: the same model back at another port
    resumes the run; each sample says which server answered it, run.json lists both."""
    suite, instances = small
    out = tmp_path / "run"
    with FakeServer(scripted(instances, mixed)) as first:
        assert execbench(*run_args(suite, first, out, "--limit", 1)).exit_code == 0
    with FakeServer(scripted(instances, mixed)) as second:
        resumed = execbench(*run_args(suite, second, out))
    assert resumed.exit_code == 0, resumed.stderr
    endpoints = Counter(rec["endpoint"] for rec in raw_lines(out))
    assert endpoints == {first.base_url: 2, second.base_url: len(instances) - 2}
    assert json.loads((out / runner.RUN_CONFIG).read_text())["base_urls"] == [
        first.base_url, second.base_url]
    assert results_of(out)["run"]["base_url"] == second.base_url


def test_a_suite_folder_or_a_folder_of_other_files_is_no_run_folder(
        small: tuple[Path, list[dict]], tmp_path: Path) -> None:
    suite, _ = small
    before = sorted(path.name for path in suite.iterdir())
    refused = execbench("run", "--suite", suite, "--model", "reference/oracle", "--out", suite)
    assert refused.exit_code == 2
    assert f"--out {suite} is a suite folder" in flat(refused.stderr)
    assert sorted(path.name for path in suite.iterdir()) == before
    other = tmp_path / "notes"
    other.mkdir()
    (other / "todo.txt").write_text("x")
    refused = execbench("run", "--suite", suite, "--model", "reference/oracle", "--out", other)
    assert refused.exit_code == 2 and "holds other files (todo.txt)" in flat(refused.stderr)


def test_a_run_without_out_gets_a_folder_under_runs(small: tuple[Path, list[dict]],
                                                    tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    suite, instances = small
    monkeypatch.chdir(tmp_path)
    done = execbench("run", "--suite", suite, "--model", "reference/oracle")
    assert done.exit_code == 0, done.stderr
    made = list((tmp_path / "runs").iterdir())
    assert len(made) == 1 and made[0].name.startswith(f"reference-oracle_{suite.name}_")
    assert f"run folder: runs/{made[0].name} (to resume, add --out runs/{made[0].name})" \
        in done.stderr
    assert results_of(made[0])["counts"]["samples"] == len(instances)


def test_a_server_that_dies_trips_the_breaker_and_the_run_resumes(
        wide: tuple[Path, list[dict]], tmp_path: Path) -> None:
    """A server that stops mid-run: the run stops with exit 3 after a few refused
    connections instead of backing off every sample; what was answered is kept, nothing is
    logged for the rest, and the same command finishes the run once a server is back."""
    suite, instances = wide
    out = tmp_path / "run"
    answered = threading.Semaphore(0)

    def responder(body: dict, attempt: int) -> Reply:
        answered.release()
        return scripted(instances, even_right)(body, attempt)

    server = FakeServer(responder).__enter__()
    args = run_args(suite, server, out, "--retry-delay", 0.05)
    with stopped_after(server, answered, 20, "the run sent too few requests"):
        stopped = execbench(*args)
    assert stopped.exit_code == 3, stopped.stderr
    said = flat(stopped.stderr)
    assert "no model server answers: 5 requests in a row could not connect" in said
    assert "run the same command again to resume" in said
    kept = raw_lines(out)
    assert 20 - CONNECTIONS <= len(kept) < len(instances)
    assert all(rec["verdict"] != "error" for rec in kept)

    with FakeServer(scripted(instances, even_right), port=server.port) as again:
        resumed = execbench(*args)
        asked = requested(again, instances)
    assert resumed.exit_code == 0, resumed.stderr
    logged = Counter(rec["instance_id"] for rec in raw_lines(out))
    assert logged == dict.fromkeys((inst.id for inst in instances), 1)
    assert set(asked) == {(inst.id, None) for inst in instances} - {
        (rec["instance_id"], None) for rec in kept}


def test_reference_original_without_mutants_is_refused_before_the_run(
        small: tuple[Path, list[dict]], tmp_path: Path) -> None:
    suite, _ = small
    out = tmp_path / "run"
    done = execbench("run", "--suite", suite, "--model", "reference/original", "--out", out)
    assert done.exit_code == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert ("reference/original answers only the tasks on mutants (choice, mutation), not "
            "input, output; build a suite with --tasks choice,mutation") in flat(done.stderr)
    assert not out.exists()


def test_no_connections_is_refused_by_the_runner_too(small: tuple[Path, list[dict]],
                                                     tmp_path: Path) -> None:
    suite, _ = small
    config = runner.RunConfig(suite=str(suite), model="reference/oracle",
                              generate=GenerateConfig(max_connections=0))
    with pytest.raises(SettingError, match="max_connections must be at least 1, not 0"):
        runner.run(config, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_usage_provenance_and_stop_reasons_are_recorded(small: tuple[Path, list[dict]],
                                                        tmp_path: Path) -> None:
    """Tokens, requests, retries, latency, wall time and cost in results.json and on
    stderr; stop reasons, refusals and the endpoint in each sample; one session per
    invocation in run.json (progress in a piped log: ``tests/cli/test_progress.py``)."""
    suite, instances = small

    def responder(body: dict, attempt: int) -> Reply:
        inst = find(instances, prompt_of(body))
        if inst.entry_point == "add" and attempt == 1:
            return Reply.error(503, "busy")
        if inst.entry_point == "rev":
            return Reply(text="[ANSWER]\nassert rev('abc') == ", finish_reason="length",
                         input_tokens=100, output_tokens=7)
        if inst.entry_point == "size":
            return Reply(refusal="I will not run code.", input_tokens=100, output_tokens=3)
        return Reply(text=answer(inst, "correct"), input_tokens=100, output_tokens=20)

    out = tmp_path / "run"
    with FakeServer(responder) as server:
        args = run_args(suite, server, out, "--retry-delay", 0.01, "--price-input", 2,
                        "--price-output", 10)
        first = execbench(*args, "--tasks", "output")
        assert first.exit_code == 0, first.stderr
        second = execbench(*args)
        assert second.exit_code == 0, second.stderr

    records = {rec["instance_id"].split("/")[2]: rec for rec in raw_lines(out)
               if rec["task"] == "output"}
    assert {name: (rec["stop_reason"], rec["truncated"], rec["refused"])
            for name, rec in records.items()} == {
        "add": ("stop", False, False), "rev": ("length", True, False),
        "size": ("stop", False, True), "top": ("stop", False, False),
        "neg": ("stop", False, False)}
    assert records["size"]["refusal"] == "I will not run code."
    assert {rec["endpoint"] for rec in raw_lines(out)} == {server.base_url}

    results = results_of(out)
    usage = results["usage"]
    assert (usage["samples"], usage["requests"], usage["retries"]) == (10, 12, 2)
    assert usage["input_tokens"] == 1000
    assert usage["output_tokens"] == 2 * (20 + 7 + 3 + 20 + 20)
    assert usage["endpoints"] == {server.base_url: 10}
    latency = usage["latency_seconds"]
    assert 0 < latency["p50"] <= latency["p90"] <= latency["p99"] <= latency["max"]
    assert usage["cost"]["total"] == pytest.approx((1000 * 2 + 140 * 10) / 1e6)
    assert (results["counts"]["truncated"], results["counts"]["refused"]) == (2, 2)

    sessions = json.loads((out / runner.RUN_CONFIG).read_text())["sessions"]
    assert results["sessions"] == sessions and len(sessions) == 2
    assert [s["outcome"] for s in sessions] == ["completed", "completed"]
    assert "--tasks output" in sessions[0]["command"] and "--tasks" not in sessions[1]["command"]
    assert all(s["host"] and s["python"] and s["execbench_version"] for s in sessions)
    assert usage["wall_seconds"] == pytest.approx(sum(s["seconds"] for s in sessions), abs=0.01)
    stated = json.loads((out / runner.RUN_CONFIG).read_text())["sampling_defaults"]
    assert stated == results["run"]["sampling_defaults"]
    assert "generation_config.json" in stated["temperature"]  # an openai-api/ model
    assert results["run"]["generate"]["timeout"] is None  # the provider's, by model
    assert results["run"]["generate"]["sample_deadline"] == 3600

    said = flat(second.stderr)
    assert "usage: 12 requests (2 retries), 1,000 input and 140 output tokens; latency p50" in said
    assert "cost 0.0034 at the prices given" in said
    assert "2 answers cut off at the token limit, 2 refused or filtered" in said
    assert f"samples in {out / runner.SAMPLES}, results in {out / runner.RESULTS}" in said


def test_prices_go_together(small: tuple[Path, list[dict]], tmp_path: Path) -> None:
    suite, _ = small
    done = execbench("run", "--suite", suite, "--model", "reference/oracle",
                     "--out", tmp_path / "run", "--price-input", 1)
    assert done.exit_code == 2 and "--price-input and --price-output go together" in done.stderr


def test_two_endpoints_one_dying_mid_run(wide: tuple[Path, list[dict]], tmp_path: Path) -> None:
    """Two replicas behind one run; one stops answering part-way. Its requests move to
    the other, no sample fails, and the samples say which replica answered each."""
    suite, instances = wide
    out = tmp_path / "run"
    answered = threading.Semaphore(0)

    def dying(body: dict, attempt: int) -> Reply:
        answered.release()
        return scripted(instances, even_right, delay=0.02)(body, attempt)

    with FakeServer(scripted(instances, even_right, delay=0.02)) as steady:
        doomed = FakeServer(dying).__enter__()
        with stopped_after(doomed, answered, 10, "the doomed replica got too few requests"):
            done = execbench("run", "--suite", suite, "--model", MODEL, "--out", out, "-n", 2,
                             "--temperature", 0.8, "--max-connections", CONNECTIONS,
                             "--model-base-url", doomed.base_url,
                             "--model-base-url", steady.base_url)
    assert done.exit_code == 0, done.stderr
    records = raw_lines(out)
    assert len(records) == 2 * len(instances)
    assert all(rec["error"] is None for rec in records)
    by_endpoint = Counter(rec["endpoint"] for rec in records)
    assert set(by_endpoint) == {doomed.base_url, steady.base_url}
    assert by_endpoint[doomed.base_url] >= 10 - CONNECTIONS
    usage = results_of(out)["usage"]
    assert usage["endpoints"] == dict(sorted(by_endpoint.items()))
    assert results_of(out)["run"]["base_url"] == f"{doomed.base_url},{steady.base_url}"


def test_model_args_reach_the_server_and_are_pinned(small: tuple[Path, list[dict]],
                                                    tmp_path: Path) -> None:
    suite, instances = small
    out = tmp_path / "run"
    with FakeServer(scripted(instances, mixed)) as server:
        args = run_args(suite, server, out, "-M", "top_k=20", "-M",
                        'chat_template_kwargs={"enable_thinking": false}')
        done = execbench(*args)
        assert done.exit_code == 0, done.stderr
        bodies = [r.body for r in server.requests]
        changed = execbench(*run_args(suite, server, out, "-M", "top_k=40"))
        refused = execbench(*run_args(suite, server, tmp_path / "other", "-M", "temperature=1"))
    assert len(bodies) == 10
    assert all(b["top_k"] == 20 and b["chat_template_kwargs"] == {"enable_thinking": False}
               for b in bodies)
    assert changed.exit_code == 2 and "different model_args" in flat(changed.stderr)
    assert refused.exit_code == 2
    assert "sets these request fields itself, not with -M: temperature: --temperature" in flat(
        refused.stderr)


def test_a_run_opens_its_suite_once_and_makes_its_model_once(
        small: tuple[Path, list[dict]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite, instances = small
    calls: Counter = Counter()

    def counted(name: str, real: Callable) -> Callable:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(runner, "open_suite", counted("open_suite", runner.open_suite))
    monkeypatch.setattr(runner, "get_model", counted("get_model", runner.get_model))
    config = runner.RunConfig(suite=str(suite), model="reference/oracle", n=2)
    results = runner.run(config, tmp_path / "run")
    assert results["counts"]["verdicts"] == {"correct": 2 * len(instances)}
    assert calls == {"open_suite": 1, "get_model": 1}
    calls.clear()
    runner.rescore(tmp_path / "run")
    assert calls == {"open_suite": 1}


def test_usage_a_server_does_not_report_is_said_so(small: tuple[Path, list[dict]],
                                                    tmp_path: Path) -> None:
    """llama.cpp sends no usage in streams: the run says so instead of counting zero
    tokens; a count over --max-tokens (llama.cpp: 65 for 64) is kept as the server said."""
    suite, _ = small
    for usage, said in ((False, "the server reported no token usage"),
                        (True, "20 input and 130 output tokens")):
        out = tmp_path / str(usage)
        reply = Reply(text="42", usage=usage, input_tokens=2, output_tokens=13, stream="no-done")
        with FakeServer(lambda body, attempt, reply=reply: reply) as server:
            done = execbench("run", "--suite", suite, "--model", "openai-api/fake/m",
                             "--model-base-url", server.base_url, "--out", out,
                             "--max-tokens", "12", "-M", "stream=true")
        assert done.exit_code == 0, done.stderr
        assert f"usage: 10 requests (0 retries), {said}" in flat(done.stderr)
        tokens = {line["output_tokens"] for line in raw_lines(out)}
        assert tokens == ({13} if usage else {None})


def test_a_run_its_rescoring_and_its_results_hold_no_suite_in_memory(
        small: tuple[Path, list[dict]], tmp_path: Path) -> None:
    """A suite of 240 instances whose code is 200 KB each (48 MB): the oracle's run, the
    re-scoring and the results read it as a stream, and Python's allocations peak at a
    small part of it (before, each held the whole suite, and the results every record)."""
    import tracemalloc

    source, _ = small
    lines = (source / "instances.jsonl").read_bytes().splitlines()
    big, copies = padded_suite(source, tmp_path / "suite")
    size = (big / "instances.jsonl").stat().st_size
    config = runner.RunConfig(suite=str(big), model="reference/oracle", n=2)
    tracemalloc.start()
    try:
        results = runner.run(config, tmp_path / "run")
        ran = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        rescored = runner.rescore(tmp_path / "run")
        scored = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert results["counts"]["verdicts"] == {"correct": 2 * copies * len(lines)}
    assert rescored.results["counts"] == results["counts"] and not rescored.changed
    assert ran < size / 4 and scored < size / 4, (ran, scored, size)


def test_a_suite_changed_while_it_is_re_scored_leaves_the_log_as_it_was(
        small: tuple[Path, list[dict]], tmp_path: Path) -> None:
    """Re-scoring seeks to each sample's instance, so it never reads every line: a suite
    changed under it (here, one byte of the last program, after the first sample) stops
    it before the log is replaced, instead of mixing verdicts from two suites."""
    source, instances = small
    suite = tmp_path / "suite"
    suite.mkdir()
    for name in ("manifest.json", "instances.jsonl"):
        (suite / name).write_bytes((source / name).read_bytes())
    config = runner.RunConfig(suite=str(suite), model="reference/oracle")
    runner.run(config, tmp_path / "run")
    log = (tmp_path / "run" / "samples.jsonl").read_bytes()
    path = suite / "instances.jsonl"
    original = path.read_bytes()
    at = original.rindex(b"return")  # in the last instance, read after the change
    changed = original[:at] + b"retUrn" + original[at + 6:]

    def change_the_suite(done: int, total: int) -> None:
        if done == 1:
            path.write_bytes(changed)

    with pytest.raises(SuiteError, match="changed while it was read"):
        runner.rescore(tmp_path / "run", progress=change_the_suite)
    assert (tmp_path / "run" / "samples.jsonl").read_bytes() == log
    assert not (tmp_path / "run" / "samples.jsonl.tmp").exists()
