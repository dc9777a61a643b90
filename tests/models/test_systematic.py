"""A run whose every request is refused the same way stops at once with the server's own
message, logging nothing; failures that come and go, or that start after answers came,
are still per-sample errors. Scripted servers answer as the real ones were seen to."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest
from typer.testing import Result

from execbench import runner
from tests.fakeserver import FakeServer, Reply, prompt_of, scripted
from tests.helpers.cli import execbench
from tests.test_runner import flat, make_suite, results_of

WRONG_KEY = Reply.error(401, "Incorrect API key provided: sk-wrong.", code="invalid_api_key")
LLAMA_CPP_500 = Reply(status=500, raw='{"error":{"code":500,"message":"invalid \'top_k\'",'
                                      '"type":"server_error"}}')


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five hundred programs, so a thousand instances."""
    programs = {f"p{i}": (f"def p{i}(x):\n    return x + {i}\n", str(i)) for i in range(500)}
    return make_suite(tmp_path_factory.mktemp("systematic"), programs)[0]


def run_against(server: FakeServer, suite: Path, out: Path, *more: object,
                model: str = "openai-api/fake/m") -> Result:
    return execbench("run", "--suite", suite, "--model", model,
                     "--model-base-url", server.base_url, "--out", out,
                     "--retry-delay", "1", *more)


@pytest.mark.parametrize(("reply", "said"), [
    (WRONG_KEY, "HTTP 401: Incorrect API key provided: sk-wrong.; check the API key"),
    (Reply.error(404, "The model `m` does not exist."), "HTTP 404: The model `m` does not "
                                                        "exist.; check --model-base-url"),
    (Reply.error(422, "Extra inputs are not permitted"), "HTTP 422: Extra inputs are not "
                                                         "permitted; the server refuses a"),
    (LLAMA_CPP_500, "HTTP 500: invalid 'top_k'; the server fails every request"),
])
def test_a_run_whose_every_request_fails_alike_stops_at_once(
        reply: Reply, said: str, suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with FakeServer(scripted(reply)) as server:
        start = time.monotonic()
        done = run_against(server, suite, out)
        seconds = time.monotonic() - start
        sent = len(server.requests)
    assert done.exit_code == 2 and seconds < 30  # retried with backoff, it would take minutes
    assert "every request fails the same way, none answered" in flat(done.stderr)
    assert said in flat(done.stderr) and "run the same command again" in done.stderr
    assert sent < 40
    assert not (out / runner.RESULTS).exists()
    samples = out / runner.SAMPLES
    assert not samples.exists() or samples.read_text() == ""  # nothing logged as answered

    with FakeServer(scripted(Reply(text="42")), port=server.port) as fixed:
        again = run_against(fixed, suite, out)
    assert again.exit_code == 0 and results_of(out)["counts"]["samples"] == 1000


def test_transient_failures_are_still_retried(suite: Path, tmp_path: Path) -> None:
    """Overloaded (503), rate limited (429): every first attempt fails alike, and every
    sample is answered on its retry."""
    for first in (Reply.error(503, "overloaded"), Reply.error(429, "slow down")):
        with FakeServer(scripted(first, Reply(text="42"))) as server:
            done = run_against(server, suite, tmp_path / first.text, "--retry-delay", "0.01",
                               "--limit", "40")
        assert done.exit_code == 0, done.stderr
        assert results_of(tmp_path / first.text)["counts"]["verdicts"].get("error", 0) == 0


def test_failures_after_answers_are_each_samples_own(suite: Path, tmp_path: Path) -> None:
    """Once a request was answered, the server works: a refused request is that sample's
    error (say, one prompt over the context), and the rest of the run goes on."""
    answered = {"done": False}

    def responder(body: dict, attempt: int) -> Reply:
        if not answered["done"]:
            answered["done"] = True
            return Reply(text="42")
        return Reply.error(400, "This model's maximum context length is 64 tokens.")

    with FakeServer(responder) as server:
        done = run_against(server, suite, tmp_path / "run", "--max-connections", "1",
                           "--limit", "40")
    counts = results_of(tmp_path / "run")["counts"]
    assert done.exit_code == 0 and counts["samples"] == 80
    assert counts["verdicts"]["error"] == 79


def test_different_refusals_are_not_one_cause(suite: Path, tmp_path: Path) -> None:
    """Each sample refused for a reason of its own: no common cause, so no stop; each is
    logged, after being held a few seconds at most."""
    def responder(body: dict, attempt: int) -> Reply:
        digest = hashlib.sha256(prompt_of(body).encode()).hexdigest()
        return Reply.error(400, f"cannot take request {digest}")

    with FakeServer(responder) as server:
        done = run_against(server, suite, tmp_path / "run", "--limit", "4")
    assert done.exit_code == 1  # every sample failed: the run says so with its status
    counts = results_of(tmp_path / "run")["counts"]
    assert counts["verdicts"]["error"] == counts["samples"] > 3


def test_a_refused_key_stops_the_run_at_the_probe(suite: Path, tmp_path: Path) -> None:
    listing = (401, {"error": {"message": "Incorrect API key provided: sk-wrong."}})
    with FakeServer(scripted(Reply(text="42")), listing=listing) as server:
        done = run_against(server, suite, tmp_path / "run")
        assert server.requests == []
    assert done.exit_code == 2
    assert "refuses the request's key (HTTP 401: Incorrect API key provided: sk-wrong.)" \
        in flat(done.stderr)


def test_a_model_vllm_does_not_serve_stops_the_run_at_the_probe(suite: Path,
                                                                 tmp_path: Path) -> None:
    """vLLM serves only the names it lists (each with its max_model_len)."""
    listing = (200, {"object": "list", "data": [{"id": "Qwen/Qwen3-8B", "max_model_len": 8}]})
    with FakeServer(scripted(Reply(text="42")), listing=listing) as server:
        done = run_against(server, suite, tmp_path / "run", model="openai-api/v/Qwen3-8B")
        assert server.requests == []
    assert done.exit_code == 2
    assert "serves Qwen/Qwen3-8B, not Qwen3-8B: check the model name" in flat(done.stderr)
    with FakeServer(scripted(Reply(text="42")), listing=listing) as server:
        done = run_against(server, suite, tmp_path / "ok", "--limit", "1",
                           model="openai-api/v/Qwen/Qwen3-8B")
    assert done.exit_code == 0, done.stderr


def test_a_model_another_server_does_not_list_is_tried(suite: Path, tmp_path: Path) -> None:
    """transformers serve answers for a model folder it does not list: the list is only
    shown when every request is refused."""
    missing = Reply.error(404, "The model `m` does not exist.")
    with FakeServer(scripted(missing)) as server:
        done = run_against(server, suite, tmp_path / "run")
    assert done.exit_code == 2 and "(the server lists fake)" in flat(done.stderr)
    with FakeServer(scripted(Reply(text="42"))) as server:
        done = run_against(server, suite, tmp_path / "ok", "--limit", "1")
    assert done.exit_code == 0, done.stderr
