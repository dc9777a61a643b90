"""A run and ``execbench doctor`` against a running llama.cpp server (llama-cpp-python's
``llama_cpp.server``), named by ``EXECBENCH_LLAMA_CPP_URL`` (its base URL, ``.../v1``) and
serving the tiny Llama under ``EXECBENCH_LLAMA_CPP_MODEL`` (default ``tiny-llama``); the
"llama.cpp" section of docs/models-and-servers.md says how to start one. Skipped without it.

What llama-cpp-python 0.3.16 was seen to do: it ignores ``stream_options`` (no usage in a
stream); when a request arrives while a stream is under way, it ends that stream with
``[DONE]`` and no finish reason, then drops the connection before the body's end, while
whole replies wait their turn; it answers an invalid field (``top_k="x"``) with HTTP 500
and its traceback; it tells no context (no ``/props``, and ``/extras/tokenize`` takes text,
not chat messages), so prompts go unchecked. ``tests/fakeserver.py`` plays each of these.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.cli import execbench
from tests.test_runner import PROGRAMS, flat, make_suite, raw_lines

URL = os.environ.get("EXECBENCH_LLAMA_CPP_URL")
SERVED = os.environ.get("EXECBENCH_LLAMA_CPP_MODEL", "tiny-llama")
MODEL = f"openai-api/llama/{SERVED}"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:invalid decimal literal:SyntaxWarning"),
    pytest.mark.skipif(not URL, reason="set EXECBENCH_LLAMA_CPP_URL to a running llama.cpp "
                                       "server's base URL (docs/models-and-servers.md says how)"),
]


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    programs = {name: (code, call) for name, (code, call, _) in PROGRAMS.items()}
    folder, _ = make_suite(tmp_path_factory.mktemp("llama"), programs)
    return folder


def test_doctor_advises_whole_replies() -> None:
    done = execbench("doctor", "--model", MODEL, "--model-base-url", URL)
    assert done.exit_code == 0, done.stdout + done.stderr
    said = flat(done.stdout)
    assert "ok whole reply answered" in said
    assert "no usage" in said  # streams carry none
    assert "!! two at once 1 of two concurrent streams interrupted" in said
    assert "-M stream=false:" in said and "whole replies wait their turn" in said


def test_a_run_with_whole_replies_is_answered(suite: Path, tmp_path: Path) -> None:
    """With the settings doctor gives, every sample is answered with its usage, four
    requests at a time."""
    done = execbench("run", "--suite", suite, "--model", MODEL, "--model-base-url", URL,
                     "--out", tmp_path / "run", "--temperature", 0, "--max-tokens", 8,
                     "--max-connections", 4, "-M", "stream=false")
    assert done.exit_code == 0, done.stderr
    records = raw_lines(tmp_path / "run")
    assert len(records) == 10
    for rec in records:
        assert rec["error"] is None and rec["input_tokens"] and rec["output_tokens"], rec


def test_an_invalid_field_stops_the_run_with_the_servers_words(suite: Path,
                                                                 tmp_path: Path) -> None:
    done = execbench("run", "--suite", suite, "--model", MODEL, "--model-base-url", URL,
                     "--out", tmp_path / "run", "--max-tokens", 8, "--max-connections", 2,
                     "--retry-delay", 0, "-M", "stream=false", "-M", 'top_k="x"')
    assert done.exit_code != 0
    assert "HTTP 500" in flat(done.stderr) and "top_k" in flat(done.stderr), done.stderr
