"""A real Ray cluster on this machine for the executor's tests: a head node and a second
node, each a ``ray start --block`` process of its own (its own raylet, one CPU each), as
an operator would start them on two machines. Not ``local_mode``, not a mocked cluster.

Each node runs in a session of its own, so stopping it kills its whole process group:
``ray start --block`` waits on a graceful stop that can hang once its raylet is gone.

Token authentication is set for each cluster, never left to Ray: Ray turns it on for any
cluster started where ``~/.ray/auth_token`` exists (a local ``ray.init()`` writes one), and
a driver given an address (as the tests' drivers are) then fails to join. A cluster is
made without it, or with a token of its own (``token``), which its drivers must be given.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

RAY = Path(sys.executable).with_name("ray")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def ray_env(token: str | None) -> dict[str, str]:
    """The environment of a node, a ``ray`` command or a driver process for a cluster
    with ``token`` (None: a cluster without token authentication)."""
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    for name in ("RAY_ADDRESS", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        env.pop(name, None)
    if token is None:
        return {**env, "RAY_AUTH_MODE": "disabled"}
    return {**env, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}


def _node(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with open(log, "wb") as handle:
        return subprocess.Popen([str(RAY), "start", "--block", "--num-cpus=1",
                                 "--object-store-memory=200000000", *args],
                                stdout=handle, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def _stop(node: subprocess.Popen[bytes]) -> None:
    """A graceful stop first, then the whole group killed: the raylet's workers are in it
    too, and none may outlive the test."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(node.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        node.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(node.pid, signal.SIGKILL)
    node.wait()


@contextmanager
def ray_cluster(folder: Path, nodes: int = 2, token: str | None = None) -> Iterator[str]:
    """Start a head and ``nodes - 1`` more nodes; yield the address to give
    ``--ray-address``; stop them all, and the driver's connection, on the way out. A
    driver in this process joins a cluster without ``token`` only: Ray reads the mode
    once, when it is imported."""
    if not RAY.is_file():
        raise RuntimeError(f"no ray command beside {sys.executable}")
    import ray

    folder.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    address = f"127.0.0.1:{port}"
    env = ray_env(token)
    started: list[subprocess.Popen[bytes]] = []
    # Ray's sockets live under its temp folder, and a socket's path may not pass 107 bytes
    sessions = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    try:
        started.append(_node(["--head", f"--port={port}", "--include-dashboard=false",
                              f"--temp-dir={sessions}"], folder / "head.log", env))
        _wait_for(address, 1, started, folder, env)
        for index in range(1, nodes):
            started.append(_node([f"--address={address}"], folder / f"node{index}.log", env))
        _wait_for(address, nodes, started, folder, env)
        yield address
    finally:
        # this process's connection to this cluster, not to another one a test still uses
        if ray.is_initialized() and \
                ray.get_runtime_context().gcs_address.endswith(f":{port}"):
            ray.shutdown()
        for node in reversed(started):
            _stop(node)
        shutil.rmtree(sessions, ignore_errors=True)


def _wait_for(address: str, count: int, started: list[subprocess.Popen[bytes]],
              folder: Path, env: dict[str, str], timeout: float = 90.0) -> None:
    """Until the cluster has ``count`` live nodes (asked with ``ray status``); if it does
    not, the error holds what ``ray status`` last said and the nodes' logs."""
    deadline = time.monotonic() + timeout
    said = ""
    while time.monotonic() < deadline:
        for node in started:
            if node.poll() is not None:
                raise RuntimeError(f"a Ray node exited ({node.returncode}):\n{_logs(folder)}")
        status = subprocess.run([str(RAY), "status", f"--address={address}"],
                                capture_output=True, text=True, check=False, env=env)
        if status.returncode == 0 and status.stdout.count(" node_") >= count:
            return
        said = (status.stdout + status.stderr)[-2000:]
        time.sleep(1)
    raise RuntimeError(f"the Ray cluster at {address} did not reach {count} nodes; "
                       f"`ray status` said:\n{said}\n{_logs(folder)}")


def _logs(folder: Path) -> str:
    return "\n".join(p.read_text(errors="replace")[-2000:] for p in sorted(folder.glob("*.log")))
