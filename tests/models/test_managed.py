"""``vllm/`` and ``sglang/`` models: the run starts the engine's server, waits for it,
talks to it and stops it. A stand-in executable (``tests/standin_engine.py``) speaks the
protocol in place of the engine, named by ``EXECBENCH_VLLM_COMMAND`` as a user would name a
wrapper script. The run is ``execbench run`` in this process (``tests/helpers/cli.py``), so
only its own clean-up can stop the server; a run that is sent a signal is the console script
in a process of its own."""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from execbench.models import get_model
from execbench.models.base import ModelError
from execbench.models.managed import engine_flags
from tests.helpers.cli import EXECBENCH, execbench, said
from tests.helpers.waiting import eventually
from tests.test_runner import PROGRAMS, cli_env, flat, make_suite, raw_lines

STANDIN = shlex.join([sys.executable, str(Path(__file__).parents[1] / "standin_engine.py")])


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five programs, ten instances; -n sets how many requests a run makes."""
    programs = {name: (code, call) for name, (code, call, _) in PROGRAMS.items()}
    folder, _ = make_suite(tmp_path_factory.mktemp("managed"), programs)
    return folder


ENGINES = {"EXECBENCH_VLLM_COMMAND": STANDIN, "EXECBENCH_SGLANG_COMMAND": STANDIN}


def run_args(suite: Path, out: Path, *extra: object, model: str = "vllm/org/tiny-model"
             ) -> list[str]:
    return ["run", "--suite", str(suite), "--model", model, "--out", str(out),
            "--temperature", "0.8", "--max-connections", "4", "--retry-delay", "0.05",
            *map(str, extra)]


def alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def pids(pid_file: Path) -> list[int]:
    child = pid_file.with_name(pid_file.name + ".child")
    return [int(path.read_text()) for path in (pid_file, child) if path.exists()]


@pytest.mark.parametrize("model", ["vllm/org/tiny-model", "sglang/org/tiny-model"])
def test_the_server_is_started_with_the_options_and_stopped(suite: Path, tmp_path: Path,
                                                            model: str) -> None:
    out, pid_file = tmp_path / "run", tmp_path / "server.pid"
    done = execbench(
        *run_args(suite, out, "-n", 2, "-M", "tensor_parallel_size=2", "-M",
                  "enforce_eager=true", "-M", "startup_delay=0.3", "-M", f"pid_file={pid_file}",
                  "-M", "grandchild=true", model=model), env=ENGINES)
    assert done.exit_code == 0, done.stderr
    log = (out / "server.log").read_text()
    flag = "--model" if model.startswith("vllm") else "--model-path"
    assert f'"{flag}", "org/tiny-model", "--host", "127.0.0.1", "--port"' in log
    assert '"--tensor-parallel-size", "2", "--enforce-eager", "--startup-delay", "0.3"' in log
    assert "stand-in engine: ready" in log and "stand-in engine: stopped" in log
    records = raw_lines(out)
    assert len(records) == 20 and all(rec["error"] is None for rec in records)
    assert {rec["endpoint"] for rec in records} == {records[0]["endpoint"]}
    assert records[0]["endpoint"].startswith("http://127.0.0.1:")
    assert len(pids(pid_file)) == 2
    for pid in pids(pid_file):
        assert not alive(pid), "a server process outlived the run"


def test_a_server_that_dies_while_starting_fails_fast_with_its_log(suite: Path,
                                                                   tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = execbench(*run_args(suite, out, "-M", "no_such_flag=1"), env=ENGINES)
    assert done.exit_code == 3, done.stderr
    first, *tail = said(done.stderr)
    assert first.startswith("error: the vllm server for org/tiny-model exited with code 2 "
                            "while starting;")
    assert f"the end of {out / 'server.log'}:" in first
    assert any("unrecognized arguments: --no-such-flag 1" in line for line in tail)
    assert not (out / "samples.jsonl").exists()


def test_a_server_not_ready_in_time_is_stopped(suite: Path, tmp_path: Path) -> None:
    out, pid_file = tmp_path / "run", tmp_path / "server.pid"
    # 5 s: long enough for the stand-in to write its pid file on a busy machine (it does
    # so after importing aiohttp), far below its 60 s start-up.
    done = execbench(*run_args(suite, out, "--server-start-timeout", 5, "-M", "startup_delay=60",
                               "-M", f"pid_file={pid_file}"), env=ENGINES)
    assert done.exit_code == 3, done.stderr
    assert ("the vllm server for org/tiny-model was not ready within 5 s "
            "(--server-start-timeout) and was stopped") in flat(done.stderr)
    assert pids(pid_file) and not any(alive(pid) for pid in pids(pid_file))


def test_a_server_that_dies_during_the_run_stops_it_and_the_run_resumes(
        suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = run_args(suite, out, "-n", 4, "-M", "latency=0.02")
    died = execbench(*args, env={**ENGINES, "EXECBENCH_STANDIN_DIE_AFTER": "12"})
    assert died.exit_code == 3, died.stderr
    said = flat(died.stderr)
    assert "the vllm server for org/tiny-model exited with code 1 during the run" in said
    assert "stand-in engine: dying after 12 answers" in said
    kept = raw_lines(out)
    assert 12 - 4 <= len(kept) <= 12 and all(rec["error"] is None for rec in kept)

    resumed = execbench(*args, env=ENGINES)
    assert resumed.exit_code == 0, resumed.stderr
    records = raw_lines(out)
    assert len(records) == 40
    assert len({(rec["instance_id"], rec["sample"]) for rec in records}) == 40
    assert (out / "server.log").read_text().count("--- execbench ") == 2


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_no_server_process_outlives_an_interrupted_run(suite: Path, tmp_path: Path,
                                                       how: signal.Signals) -> None:
    """Ctrl-C (SIGINT) and a batch system's SIGTERM stop the server and its workers; even
    SIGKILL, which runs no cleanup, takes the server with it, by a SIGTERM that lets it shut
    down and free its GPU memory (its workers are the engine's business: a real engine's
    workers watch their parent)."""
    out, pid_file = tmp_path / "run", tmp_path / "server.pid"
    # A process of its own: the signal goes to the run, and SIGKILL must end it.
    proc = subprocess.Popen(
        [EXECBENCH, *run_args(suite, out, "-n", 200, "-M", "latency=0.05",
                              "-M", f"pid_file={pid_file}", "-M", "grandchild=true")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=cli_env(**ENGINES))
    log = out / "samples.jsonl"
    eventually(lambda: log.exists() and log.read_bytes().count(b"\n") >= 20,
               "the run logged 20 samples")
    server = pids(pid_file)
    assert len(server) == 2 and all(alive(pid) for pid in server)
    proc.send_signal(how)
    _, stderr = proc.communicate(timeout=60)
    if how == signal.SIGKILL:
        eventually(lambda: not alive(server[0]), "the server ended with the killed run")
        log_text = (out / "server.log").read_text()
        assert "stand-in engine: stopped" in log_text, "SIGTERM, so the server shut down"
        os.kill(server[1], signal.SIGKILL)  # the stand-in's worker does not watch its parent
        return
    assert proc.returncode == 130, stderr
    assert "interrupted; run the same command again to resume" in flat(stderr)
    eventually(lambda: not any(alive(pid) for pid in server),
               "every server process ended with the interrupted run")
    record = json.loads((out / "run.json").read_text())["sessions"][-1]
    assert record["outcome"] == "interrupted"


def test_engine_flags_and_refusals(monkeypatch: pytest.MonkeyPatch) -> None:
    assert engine_flags({"tensor_parallel_size": "2", "enforce_eager": "true",
                         "max_model_len": "4096"}) == [
        "--tensor-parallel-size", "2", "--enforce-eager", "--max-model-len", "4096"]
    monkeypatch.setenv("EXECBENCH_VLLM_COMMAND", STANDIN)
    with pytest.raises(ModelError, match="vllm/m sets port itself"):
        get_model("vllm/m", model_args={"port": "8000"})
    with pytest.raises(ModelError, match="take no --model-base-url"):
        get_model("vllm/m", base_url="http://h:1/v1")


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_missing_engine_is_one_clear_error(monkeypatch: pytest.MonkeyPatch,
                                             engine: str) -> None:
    if importlib.util.find_spec(engine) is not None:
        pytest.skip(f"{engine} is installed here")
    monkeypatch.delenv(f"EXECBENCH_{engine.upper()}_COMMAND", raising=False)
    with pytest.raises(ModelError, match=rf"{engine}/m needs {engine}: pip install "
                                         rf"'execbench\[{engine}\]' \(or point "
                                         rf"EXECBENCH_{engine.upper()}_COMMAND at"):
        get_model(f"{engine}/m")
