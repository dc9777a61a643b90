"""``execbench run`` against a real OpenAI-compatible server: ``transformers serve`` with a
tiny random Llama made on the spot (``tests/helpers/tiny_llm.py``), through the
``openai-api/`` provider, as a user would point a run at a server of their own.

The scripted server in ``tests/fakeserver.py`` plays what we believe servers do; this one
is what one does. It found, for example, that ``transformers serve`` ends a stream after
the chunk with the finish reason and the usage, with no ``data: [DONE]``, and that it
refuses a request field it does not know (HTTP 422). Its model answers nonsense, but at
temperature 0 the same nonsense every time, so a resumed run can be compared text for text
with one that was never interrupted. The model's own generation config samples: equal
texts show that the server decodes greedily when sent temperature 0.

Slow (the server imports torch and transformers), and skipped without the serving extras
(``pip install 'transformers[serving]'``); one server serves the whole module.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import EXECBENCH, execbench
from tests.test_runner import PROGRAMS, cli_env, flat, make_suite, raw_lines

NEEDED = ("torch", "transformers", "tokenizers", "fastapi", "uvicorn", "openai", "accelerate")
MISSING = [name for name in NEEDED if importlib.util.find_spec(name) is None]

TRANSFORMERS = Path(sys.executable).parent / "transformers"
"""The ``transformers`` command of this environment, whose ``serve`` is under test."""
if not TRANSFORMERS.exists():
    MISSING.append(f"the {TRANSFORMERS.name} command")

pytestmark = [
    pytest.mark.slow,
    # Scoring parses the random model's nonsense, which Python warns about ("17ple").
    pytest.mark.filterwarnings("ignore:invalid decimal literal:SyntaxWarning"),
    pytest.mark.skipif(bool(MISSING), reason=f"transformers serve needs {', '.join(MISSING)}: "
                                             "pip install 'execbench[serve]' (CI does)"),
]

MODEL_DIR = "tiny-llama"
"""The model's folder name, which is also its name on the server: the server runs in the
folder's parent, so the folder's relative path is the model id it lists and accepts."""

MODEL = f"openai-api/tserve/{MODEL_DIR}"

START_TIMEOUT = 180.0
"""Seconds the server may take to answer its health check: importing torch and
transformers takes most of it, several seconds even on an idle machine."""

LIMIT, SAMPLES = 3, 2
"""Instances per task (of five) and samples per instance: six instances in two tasks, twelve
requests a run, enough to interrupt a run part-way."""

REQUESTS = 2 * LIMIT * SAMPLES


def free_port() -> int:
    """A port nothing listens on now (the server binds it a moment later)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tail(path: Path, lines: int = 40) -> str:
    """The end of a log, for a failure message."""
    text = path.read_text(errors="replace") if path.exists() else "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def healthy(base: str) -> bool:
    """Whether the server answers its health check with 200."""
    try:
        with urllib.request.urlopen(f"{base}/health", timeout=2) as reply:
            return reply.status == 200
    except (OSError, urllib.error.URLError):
        return False


@contextlib.contextmanager
def transformers_serve(model_dir: Path, log: Path) -> Iterator[str]:
    """Run ``transformers serve`` on a free port of 127.0.0.1, with ``model_dir`` loaded
    at start, and yield its base URL (``.../v1``). It runs offline, on the CPU, in a
    process group of its own, which is killed at the end whatever happened; if it is not
    healthy within ``START_TIMEOUT`` seconds the test fails with the end of its log."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(log.parent / "hf-home"),
           "TOKENIZERS_PARALLELISM": "false"}
    command = [str(TRANSFORMERS), "serve", model_dir.name, "--host", "127.0.0.1",
               "--port", str(port), "--device", "cpu", "--dtype", "float32",
               "--log-level", "info"]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, cwd=model_dir.parent, env=env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not healthy(base):
            if proc.poll() is not None:
                pytest.fail(f"transformers serve exited with code {proc.returncode} before "
                            f"it was healthy; the end of {log}:\n{tail(log)}")
            if time.monotonic() > deadline:
                pytest.fail(f"transformers serve was not healthy within {START_TIMEOUT:.0f} s; "
                            f"the end of {log}:\n{tail(log)}")
            time.sleep(0.25)
        yield f"{base}/v1"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="session")
def tiny_llm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model's folder, made once per test session."""
    from tests.helpers.tiny_llm import make_tiny_llm

    return make_tiny_llm(tmp_path_factory.mktemp("models") / MODEL_DIR)


@pytest.fixture(scope="module")
def server(tiny_llm: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One server for the module; its base URL."""
    with transformers_serve(tiny_llm, tmp_path_factory.mktemp("serve") / "server.log") as url:
        yield url


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five programs, output and input tasks: ten instances."""
    programs = {name: (code, call) for name, (code, call, _) in PROGRAMS.items()}
    folder, _ = make_suite(tmp_path_factory.mktemp("tserve"), programs)
    return folder


def run_args(suite: Path, server: str, out: Path, *extra: object, stream: bool = False,
             temperature: float = 0.0) -> list[str]:
    """The run every test makes, whole or streamed replies; 16 tokens each."""
    return ["run", "--suite", str(suite), "--model", MODEL, "--model-base-url", server,
            "--out", str(out), "-n", str(SAMPLES), "--temperature", str(temperature),
            "--max-tokens", "16", "--max-connections", "2", "--limit", str(LIMIT),
            "-M", f"stream={'true' if stream else 'false'}", *map(str, extra)]


def texts(out: Path) -> dict[tuple[str, int], str | None]:
    """Each logged sample's text, by (instance, sample)."""
    return {(rec["instance_id"], rec["sample"]): rec["response"] for rec in raw_lines(out)}


def check_answered(records: list[dict[str, Any]]) -> None:
    """Every sample has an answer from the server: text (perhaps empty, if the model's
    first token was its end), the token counts the server reported, and a finish reason;
    no errors, no retries."""
    assert len(records) == REQUESTS
    for rec in records:
        assert rec["error"] is None and rec["verdict"] != "error", rec
        assert isinstance(rec["response"], str), rec
        assert rec["input_tokens"] and rec["input_tokens"] > 0, rec
        assert rec["output_tokens"] is not None and 1 <= rec["output_tokens"] <= 16, rec
        assert rec["stop_reason"] in ("stop", "length"), rec
        assert rec["truncated"] == (rec["stop_reason"] == "length"), rec
        assert rec["attempts"] == 1, rec


@pytest.fixture(scope="module")
def greedy(suite: Path, server: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run with whole replies at temperature 0, never interrupted: the texts the other
    runs at temperature 0 must match."""
    out = tmp_path_factory.mktemp("greedy") / "run"
    done = execbench(*run_args(suite, server, out))
    assert done.exit_code == 0, done.stderr
    return out


def test_whole_replies_are_answers_with_their_usage(greedy: Path) -> None:
    """Each sample is an answer, and at temperature 0 all samples of an instance are the
    same text, though the model's generation config samples: the server decodes greedily
    when sent temperature 0 (``test_the_model_samples_when_asked`` shows the config does
    sample)."""
    records = raw_lines(greedy)
    check_answered(records)
    by_instance: dict[str, set[str | None]] = {}
    for rec in records:
        by_instance.setdefault(rec["instance_id"], set()).add(rec["response"])
    assert all(len(seen) == 1 for seen in by_instance.values()), by_instance


def test_the_model_samples_when_asked(suite: Path, server: str, greedy: Path,
                                      tmp_path: Path) -> None:
    """At temperature 1 the texts differ from the greedy ones: equal texts at temperature 0
    are the server's greedy decoding, not a model that cannot do otherwise."""
    out = tmp_path / "run"
    done = execbench(*run_args(suite, server, out, temperature=1.0))
    assert done.exit_code == 0, done.stderr
    check_answered(raw_lines(out))
    greedy_texts = texts(greedy)
    differ = [key for key, text in texts(out).items() if text != greedy_texts[key]]
    assert len(differ) >= REQUESTS // 2, "sampling at temperature 1 gave the greedy texts"


def test_a_direct_prompt_is_sent_as_rendered_and_answered(suite: Path, server: str,
                                                          greedy: Path, tmp_path: Path
                                                          ) -> None:
    """The same run in direct style, with a system message: the server answers every
    sample, the prompt it was sent differs from the reasoning one (the logged prompt
    hashes differ), and the run pins its style."""
    out = tmp_path / "run"
    done = execbench(*run_args(suite, server, out, "--prompt", "direct", "--system",
                               "Answer tersely."))
    assert done.exit_code == 0, done.stderr
    records = raw_lines(out)
    check_answered(records)
    reasoning = {rec["instance_id"]: rec["prompt_hash"] for rec in raw_lines(greedy)}
    assert all(rec["prompt_hash"] != reasoning[rec["instance_id"]] for rec in records)
    assert all(rec["input_tokens"] > 0 for rec in records)
    pinned = json.loads((out / "run.json").read_text())["pinned"]["protocol"]
    assert pinned["style"] == "direct" and pinned["system"] == "Answer tersely."


def test_streamed_replies_are_the_same_answers(suite: Path, server: str, greedy: Path,
                                               tmp_path: Path) -> None:
    """The server ends a stream with a chunk that has the finish reason and the usage, and
    then closes it, without ``data: [DONE]``: that is a complete reply."""
    out = tmp_path / "run"
    done = execbench(*run_args(suite, server, out, stream=True))
    assert done.exit_code == 0, done.stderr
    check_answered(raw_lines(out))
    assert texts(out) == texts(greedy)


def test_an_interrupted_run_resumes_to_the_same_texts(suite: Path, server: str, greedy: Path,
                                                      tmp_path: Path) -> None:
    """Ctrl-C part-way, then the same command: the log ends with each sample once, and its
    texts are those of the run that was never interrupted."""
    out = tmp_path / "run"
    args = run_args(suite, server, out)
    proc = subprocess.Popen([EXECBENCH, *args], env=cli_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    log = out / "samples.jsonl"
    deadline = time.monotonic() + 60
    while not (log.exists() and log.read_bytes().count(b"\n") >= 3):
        assert proc.poll() is None, "the run ended before it could be interrupted"
        assert time.monotonic() < deadline, "the run logged too little in 60 s"
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted; run the same command again to resume" in flat(stderr)
    before = texts(out)
    assert 3 <= len(before) < REQUESTS, "interrupted part-way"

    resumed = execbench(*args)
    assert resumed.exit_code == 0, resumed.stderr
    assert f"resuming: {len(before)} of {REQUESTS} samples" in flat(resumed.stderr)
    records = raw_lines(out)
    check_answered(records)
    assert texts(out) == texts(greedy)


def test_a_field_the_server_does_not_take_stops_the_run_with_its_words(
        suite: Path, server: str, tmp_path: Path) -> None:
    """``transformers serve`` refuses a field it does not know, such as vLLM's ``top_k``,
    with HTTP 422 (``Unexpected fields in the request: {'top_k'}``): every request fails
    the same way, so the run stops, saying what the server said."""
    done = execbench(*run_args(suite, server, tmp_path / "run", "-M", "top_k=20"))
    assert done.exit_code != 0
    assert "Unexpected fields in the request" in flat(done.stderr), done.stderr


def test_doctor_sees_what_the_server_does(server: str) -> None:
    """``execbench doctor`` against the real server: it answers with usage, ends streams at
    their finish reason without ``[DONE]`` (whole: no setting needed for it), serves two
    streams at once, tells no context, and refuses ``top_k`` with HTTP 422, which the
    settings say not to pass; a usable server, exit 0."""
    done = execbench("doctor", "--model", MODEL, "--model-base-url", server)
    assert done.exit_code == 0, done.stdout + done.stderr
    said = flat(done.stdout)
    assert f"ok model {MODEL_DIR} is listed" in said or "the server lists no models" in said
    assert "ok whole reply answered" in said and "prompt +" in said
    assert "ok streamed reply finish_reason" in said and "no [DONE], usage reported" in said
    assert "ok two at once" in said
    assert "context not told" in said
    assert "top_k=20 refused: HTTP 422 Unexpected fields in the request: {'top_k'}" in said
    assert "do not pass -M top_k: the server refuses it (HTTP 422)" in said
    assert "-M stream=false" not in said
