"""``execbench run --model vllm/<folder>`` against the real vLLM: the run starts vLLM's
OpenAI-compatible server on a tiny random Llama made on the spot
(``tests/helpers/tiny_llm.py``), talks to it, streamed and not, and stops it with its
workers. ``tests/models/test_managed.py`` checks the same with a stand-in engine; this is
what the engine itself does.

vLLM is found in this interpreter, or in another named by ``EXECBENCH_VLLM_PYTHON`` (vLLM's
CPU build lives best in a virtualenv of its own; docs/models-and-servers.md says how to
make one), started through ``EXECBENCH_VLLM_COMMAND`` as a user would start a wrapper.
Without either the module is skipped, saying so. Slow: each run starts a server (a minute
on a small CPU machine, most of it vLLM compiling the model).

What vLLM 0.32 (CPU build) was seen to do: it serves the model under the name given to
``--model`` (the folder's path) unless ``--served-model-name`` says otherwise; a stream
ends with a chunk holding the usage and no choices, then ``data: [DONE]``; ``/v1/models``
lists ``max_model_len`` and ``POST /tokenize`` counts chat messages (``{"count",
"max_model_len", "tokens"}``), so the run refuses a prompt that cannot fit before sending
it; sent, a prompt over ``--max-model-len`` is refused with HTTP 400
("This model's maximum context length is 512 tokens. However, your prompt contains at
least 513 input tokens, ..."), and so is a ``max_tokens`` over it, while a ``max_tokens``
over the room the prompt leaves is cut down to that room; an unknown request field is
ignored without a word.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from execbench.models import get_model
from execbench.models.managed import ManagedModel
from tests.helpers.cli import execbench
from tests.helpers.waiting import eventually
from tests.models.test_managed import alive
from tests.test_runner import PROGRAMS, make_suite, raw_lines

ROOT = Path(__file__).parents[2]
PYTHON_VAR = "EXECBENCH_VLLM_PYTHON"


def vllm_python() -> str | None:
    """A Python that can import vLLM: this one, else the one ``EXECBENCH_VLLM_PYTHON``
    names (if it can); None when neither can."""
    if importlib.util.find_spec("vllm") is not None:
        return sys.executable
    python = os.environ.get(PYTHON_VAR)
    if not python:
        return None
    try:
        found = subprocess.run(
            [python, "-c", "import importlib.util as u, sys; "
                           "sys.exit(u.find_spec('vllm') is None)"],
            capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return python if found.returncode == 0 else None


PYTHON = vllm_python()

SKIP = (f"needs vLLM: install it here, or set {PYTHON_VAR} to the python of a "
        "virtualenv that has it (docs/models-and-servers.md's recipe installs vLLM's CPU build)"
        + (f"; {PYTHON_VAR}={os.environ[PYTHON_VAR]} cannot import vllm"
           if os.environ.get(PYTHON_VAR) else ""))

MAX_MODEL_LEN = 512
"""The server's context: a short program's prompt (about 240 tokens) and its 16 new
tokens fit, the long program's prompt does not."""

MAX_TOKENS = 16

SERVER = ["-M", "gpu_memory_utilization=0.1", "-M", f"max_model_len={MAX_MODEL_LEN}",
          "-M", "dtype=float32"]
"""On a CPU, ``--gpu-memory-utilization`` is the share of the machine's memory vLLM keeps
for its cache (its default, 0.92, would take nearly all of it); float32 rather than its
default bfloat16, so that a reply does not depend on what else was in the batch."""

LONG = "long"
"""The program whose prompt is over the server's context."""


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    """The whole run's replies by instance, for the streamed run to compare with."""
    return {}


@pytest.fixture(scope="module")
def env() -> dict[str, str]:
    """The environment of a run: vLLM's server command when it is another Python's, and no
    look-ups on the Hugging Face hub (the model is a local folder)."""
    assert PYTHON is not None
    extra = {"HF_HUB_OFFLINE": "1"}
    if sys.executable != PYTHON:
        extra["EXECBENCH_VLLM_COMMAND"] = shlex.join(
            [PYTHON, "-m", "vllm.entrypoints.openai.api_server"])
    return extra


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Llama's folder, made by vLLM's Python (which has torch and transformers,
    which this one may not)."""
    assert PYTHON is not None
    folder = tmp_path_factory.mktemp("vllm-model") / "tiny-llama"
    subprocess.run([PYTHON, "-c", "import sys; from tests.helpers.tiny_llm import "
                                  "make_tiny_llm; make_tiny_llm(sys.argv[1])", str(folder)],
                   cwd=ROOT, check=True, capture_output=True, timeout=600)
    return folder


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six programs, twelve instances: five short, and one whose padding comment puts its
    two prompts over the server's context."""
    programs = {name: (code, call) for name, (code, call, _) in PROGRAMS.items()}
    padding = "".join(f"    # step {n}: trace the value of x through the loop\n"
                      for n in range(60))
    programs[LONG] = (f"def {LONG}(x):\n{padding}    return x\n", "1")
    folder, _ = make_suite(tmp_path_factory.mktemp("vllm-suite"), programs)
    return folder


def in_group(pgid: int) -> list[int]:
    """The live processes of process group ``pgid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if fields[0] != "Z" and int(fields[2]) == pgid:
                found.append(int(entry.name))
    return found


def server_pids(log: str) -> list[int]:
    """The server's processes as its log names them: ``(APIServer pid=N)``, its engine
    core's and its workers'."""
    return sorted({int(pid) for pid in re.findall(r"\(\w+(?:-\d+)? pid=(\d+)\)", log)})


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.slow
@pytest.mark.skipif(PYTHON is None, reason=SKIP)
def test_a_run_against_vllm(suite: Path, model: Path, env: dict[str, str], texts: dict[str, str],
                            tmp_path: Path, stream: bool) -> None:
    out = tmp_path / "run"
    # Streamed, the server also serves the model under a name of its own, which the
    # requests must then give.
    options = ["-M", "stream=true", "-M", "served_model_name=tiny"] if stream else []
    done = execbench("run", "--suite", suite, "--model", f"vllm/{model}", "--out", out,
                     "--temperature", 0, "--max-tokens", MAX_TOKENS, "--max-connections", 4,
                     *SERVER, *options, env=env)
    log = (out / "server.log").read_text(errors="replace")
    assert done.exit_code == 0, f"{done.stderr}\n{log[-3000:]}"

    started = log.splitlines()[0]
    assert started.startswith("--- execbench ") and f"--model {model} --host 127.0.0.1" in started
    assert "--stream" not in started, "-M stream is the client's, not an engine flag"

    records = {rec["instance_id"]: rec for rec in raw_lines(out)}
    assert len(records) == 12
    # The long prompts are counted by the server's /tokenize and refused before sending,
    # with the counts: vLLM itself would answer HTTP 400, after a request each.
    assert "2 instances (2 samples) not sent" in " ".join(done.stderr.split()), done.stderr
    for instance, rec in records.items():
        if f"/{LONG}/" in instance:
            assert rec["verdict"] == "error" and rec["response"] is None, rec
            assert rec["attempts"] == 0 and rec["input_tokens"] > MAX_MODEL_LEN - MAX_TOKENS
            assert rec["error"] == (
                f"prompt {rec['input_tokens']} tokens + --max-tokens {MAX_TOKENS} > context "
                f"{MAX_MODEL_LEN} tokens (the server's max_model_len); not sent"), rec["error"]
            continue
        assert rec["error"] is None, rec
        assert rec["response"], rec
        assert rec["endpoint"].startswith("http://127.0.0.1:")
        assert 100 < rec["input_tokens"] < MAX_MODEL_LEN
        assert 1 <= rec["output_tokens"] <= MAX_TOKENS
        assert rec["stop_reason"] in ("stop", "length")
        assert rec["truncated"] == (rec["stop_reason"] == "length")
    replies = {instance: rec["response"] for instance, rec in records.items()}
    if not stream:
        texts.update(replies)
    elif texts:  # greedy in float32: the same text, whether streamed or whole
        assert replies == texts

    # Stopped with the run: the server, its engine core and workers, its whole group.
    pids = server_pids(log)
    assert len(pids) >= 3, log[-3000:]  # APIServer, EngineCore, a worker
    leader = re.search(r"\(APIServer pid=(\d+)\)", log)
    assert leader is not None, log[-3000:]
    group = int(leader.group(1))  # the server leads a process group of its own
    eventually(lambda: not any(alive(pid) for pid in pids) and not in_group(group),
               "every server process ended with the run")
    assert "[shutdown]" in log, "the server was asked to stop (SIGTERM), not only killed"


def test_stream_and_the_served_name_are_the_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    """``-M stream`` is execbench's own option, as for ``openai-api/``, not an engine flag
    (vLLM would read ``--stream`` as ``--stream-interval`` and not start); the requests
    name the model as ``-M served_model_name`` has the engine serve it."""
    monkeypatch.setenv("EXECBENCH_VLLM_COMMAND", "true")
    model = get_model("vllm/org/m", model_args={"stream": "true", "max_model_len": "512",
                                                "served_model_name": "m"})
    assert isinstance(model, ManagedModel)
    assert model.flags == ["--max-model-len", "512", "--served-model-name", "m"]
    assert model.client_args == {"stream": "true"} and model.served == "m"
    plain = get_model("vllm/org/m")
    assert isinstance(plain, ManagedModel) and plain.served == "org/m"
