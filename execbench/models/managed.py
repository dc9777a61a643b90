"""``vllm/<model>`` and ``sglang/<model>``: the engine's OpenAI-compatible server, started
by the run as a child process and stopped with it.

Users with GPUs expect to name a model and have the engine started for them, rather than
start a server by hand, find a free port and remember to stop it. The server gets a free
port on 127.0.0.1 and the user's ``-M`` options as command-line flags
(``-M tensor_parallel_size=2`` becomes ``--tensor-parallel-size 2``); its output goes to
``RUN/server.log``. The run waits for its health endpoint, then talks to it as to any
``openai-api/`` server. If it exits while starting, the run fails at once with the end of
its log; if it dies during the run, the circuit breaker stops the run and says so, keeping
the samples, and the same command resumes with a new server. It is stopped when the run
ends, however it ends: its own process group is signalled (engines start workers of their
own), and the kernel signals it should execbench be killed outright.

The engines are optional extras, looked for only when such a model is named. A stand-in
executable (``EXECBENCH_VLLM_COMMAND``, ``EXECBENCH_SGLANG_COMMAND``: a command line, split
like a shell's) replaces the engine's own, for tests or a wrapper script.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import aiohttp

from execbench.models.base import (
    ContextWindow,
    CountError,
    GenerateConfig,
    Generation,
    ModelBase,
    ModelError,
    Request,
    Unreachable,
)
from execbench.models.openai import OpenAIModel
from execbench.models.provider import SERVER_DEFAULTS, ModelKind, Provider
from execbench.sandbox.confine import die_with_parent
from execbench.sandbox.process_group import stop_group

LOG = "server.log"
TAIL_LINES = 15
"""Lines of the server's log shown when it fails: enough for a Python traceback's end."""
STOP_GRACE = 20.0
"""Seconds a server has to exit after SIGTERM (vLLM frees GPU memory, joins its workers)
before its process group is killed."""
POLL = 0.25
"""Seconds between health checks while the server starts."""


@dataclass(frozen=True)
class Engine:
    """How to start one engine's OpenAI-compatible server."""

    name: str
    module: str
    """The package that must be importable (the optional extra), unless overridden."""
    command: tuple[str, ...]
    """The server's command line before the model's flag."""
    model_flag: str
    override: str
    """The environment variable whose command line replaces ``command``."""

    def argv(self, model: str, port: int, flags: list[str]) -> list[str]:
        custom = os.environ.get(self.override)
        start = shlex.split(custom) if custom else list(self.command)
        return [*start, self.model_flag, model, "--host", "127.0.0.1", "--port", str(port),
                *flags]


ENGINES = {
    "vllm": Engine("vllm", "vllm", (sys.executable, "-m", "vllm.entrypoints.openai.api_server"),
                   "--model", "EXECBENCH_VLLM_COMMAND"),
    "sglang": Engine("sglang", "sglang", (sys.executable, "-m", "sglang.launch_server"),
                     "--model-path", "EXECBENCH_SGLANG_COMMAND"),
}

RESERVED_FLAGS = {"model", "model_path", "host", "port"}
"""Flags execbench sets itself: the model comes from the name, the address is its own."""
CLIENT_OPTIONS = {"stream"}
"""``-M`` keys for execbench's client, as for ``openai-api/``, not flags for the engine
(``--stream`` is none of vLLM's: its parser takes it for ``--stream-interval``)."""


def engine_flags(model_args: dict[str, str]) -> list[str]:
    """``-M key=value`` as flags: ``--key-with-dashes value``, or the bare ``--key`` for
    ``true`` (engines take switches that way)."""
    flags: list[str] = []
    for key, value in model_args.items():
        flag = "--" + key.replace("_", "-")
        flags.extend([flag] if value.lower() == "true" else [flag, value])
    return flags


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ManagedModel(ModelBase):
    """A model served by an engine server this run starts, stops and talks to over HTTP."""

    def __init__(self, name: str, engine: Engine, model: str,
                 model_args: dict[str, str]) -> None:
        taken = sorted(RESERVED_FLAGS & set(model_args))
        if taken:
            raise ModelError(f"{name} sets {', '.join(taken)} itself; -M takes the other "
                             f"{engine.name} server flags (e.g. -M tensor_parallel_size=2)")
        if not os.environ.get(engine.override) and importlib.util.find_spec(engine.module) is None:
            raise ModelError(f"{name} needs {engine.name}: pip install 'execbench[{engine.name}]'"
                             f" (or point {engine.override} at a server command)")
        self.name = name
        self.engine = engine
        self.model = model
        self.flags = engine_flags({key: value for key, value in model_args.items()
                                   if key not in CLIENT_OPTIONS})
        self.client_args = {key: value for key, value in model_args.items()
                            if key in CLIENT_OPTIONS}
        self.served = model_args.get("served_model_name", model)
        """The name requests give: the engine serves under ``--served-model-name`` alone."""
        self.process: subprocess.Popen[bytes] | None = None
        self.log: Path | None = None
        self.client: OpenAIModel | None = None

    async def start(self, config: GenerateConfig, run_dir: Path) -> None:
        """Start the server, wait until it is healthy, then probe it as any endpoint.

        Raises :class:`Unreachable` if it exits first (with the end of its log) or is not
        ready within ``config.server_start_timeout`` seconds (then it is stopped).
        """
        port = _free_port()
        argv = self.engine.argv(self.model, port, self.flags)
        self.log = run_dir / LOG
        with self.log.open("ab") as log:
            stamp = datetime.now(UTC).isoformat(timespec="seconds")
            log.write(f"--- execbench {stamp}: {shlex.join(argv)}\n".encode())
            log.flush()
            # SIGTERM to the server when execbench ends, even by SIGKILL, which runs no
            # cleanup, so its GPU memory is never orphaned; only Linux has the request.
            dies_with_us = (die_with_parent(signal.SIGTERM, preexec=True)
                            if sys.platform == "linux" else None)
            self.process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=dies_with_us)
        base_url = f"http://127.0.0.1:{port}"
        await self._wait_healthy(f"{base_url}/health", config.server_start_timeout)
        self.client = OpenAIModel(self.name, self.served, f"{base_url}/v1", None,
                                  self.client_args)
        for endpoint in self.client.endpoints.all:
            endpoint.proxy = None  # a proxy named in the environment cannot reach our loopback
        await self.client.start(config, run_dir)

    async def _wait_healthy(self, url: str, timeout: float) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        async with aiohttp.ClientSession() as session:
            while True:
                if self.process.poll() is not None:
                    raise Unreachable(self._exited("while starting"))
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    async with session.get(url, timeout=aiohttp.ClientTimeout(total=5)) as reply:
                        if reply.status == 200:
                            return
                if time.monotonic() > deadline:
                    self.stop()
                    raise Unreachable(
                        f"the {self.engine.name} server for {self.model} was not ready within "
                        f"{timeout:g} s (--server-start-timeout) and was stopped"
                        + self._tail())
                await asyncio.sleep(POLL)

    async def generate(self, request: Request, config: GenerateConfig) -> Generation:
        assert self.client is not None, "start() first"
        try:
            return await self.client.generate(request, config)
        except Unreachable:
            if self.process is not None and self.process.poll() is not None:
                raise Unreachable(self._exited("during the run")) from None
            raise

    async def context(self) -> ContextWindow | None:
        """The engine's context, as its server tells it (vLLM: ``max_model_len``)."""
        return None if self.client is None else await self.client.context()

    async def prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        if self.client is None:
            raise CountError("start() first")
        return await self.client.prompt_tokens(messages)

    def _exited(self, when: str) -> str:
        assert self.process is not None
        return (f"the {self.engine.name} server for {self.model} exited with code "
                f"{self.process.returncode} {when}; the samples logged so far are kept and "
                "the same command resumes with a new server" + self._tail())

    def _tail(self) -> str:
        """The end of the server's log, each line indented under the one-line error."""
        assert self.log is not None
        with self.log.open("rb") as log:
            lines = deque(log, maxlen=TAIL_LINES)
        text = b"".join(lines).decode("utf-8", "replace").rstrip()
        return f"; the end of {self.log}:\n" + "\n".join(f"  {line}" for line in
                                                        text.splitlines())

    def stop(self) -> None:
        """Stop the server and every process of its group: SIGTERM, then SIGKILL after
        ``STOP_GRACE`` seconds. Safe to call twice, or when it already exited."""
        process, self.process = self.process, None
        if process is None:
            return
        stop_group(process, STOP_GRACE)

    async def aclose(self) -> None:
        try:
            if self.client is not None:
                await self.client.aclose()
        finally:
            self.stop()


def _provider(engine: Engine, description: str, model_args: str) -> Provider:
    def create(name: str, model: str, base_url: str | None,
               args: dict[str, str]) -> ManagedModel:
        if base_url:
            raise ModelError(f"{engine.name} models start their own server and take no "
                             "--model-base-url (use openai-api/<name>/<model> for a running "
                             "one)")
        return ManagedModel(name, engine, model, args)

    return Provider(create, (ModelKind(f"{engine.name}/<hub id or folder>", description,
                                       f"{engine.override} (replaces the server command)",
                                       model_args),), SERVER_DEFAULTS)


VLLM = _provider(ENGINES["vllm"], "a vLLM server the run starts and stops",
                 "engine flags (tensor_parallel_size=2, ...)")
SGLANG = _provider(ENGINES["sglang"], "an SGLang server the run starts and stops",
                   "engine flags")
