"""A real Ray cluster on this machine for the executor's tests: a head node and a second
node, each a ``ray start --block`` process of its own (its own raylet, one CPU each), as
an operator would start them on two machines. Not ``local_mode``, not a mocked cluster.

Each node runs in a session of its own, so stopping it kills its whole process group:
``ray start --block`` waits on a graceful stop that can hang once its raylet is gone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

RAY = Path(sys.executable).with_name("ray")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _node(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
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
def ray_cluster(folder: Path, nodes: int = 2) -> Iterator[str]:
    """Start a head and ``nodes - 1`` more nodes; yield the address to give
    ``--ray-address``; stop them all, and the driver's connection, on the way out."""
    if not RAY.is_file():
        raise RuntimeError(f"no ray command beside {sys.executable}")
    import ray

    folder.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    address = f"127.0.0.1:{port}"
    started = [_node(["--head", f"--port={port}", "--include-dashboard=false",
                      f"--temp-dir={folder / 'ray'}"], folder / "head.log")]
    try:
        _wait_for(address, 1, started, folder)
        for index in range(1, nodes):
            started.append(_node([f"--address={address}"], folder / f"node{index}.log"))
        _wait_for(address, nodes, started, folder)
        yield address
    finally:
        if ray.is_initialized():
            ray.shutdown()
        for node in reversed(started):
            _stop(node)


def _wait_for(address: str, count: int, started: list[subprocess.Popen[bytes]],
              folder: Path, timeout: float = 90.0) -> None:
    """Until the cluster has ``count`` live nodes (asked with ``ray status``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for node in started:
            if node.poll() is not None:
                logs = "\n".join(p.read_text(errors="replace")[-2000:]
                                 for p in sorted(folder.glob("*.log")))
                raise RuntimeError(f"a Ray node exited ({node.returncode}):\n{logs}")
        status = subprocess.run([str(RAY), "status", f"--address={address}"],
                                capture_output=True, text=True, check=False)
        if status.returncode == 0 and status.stdout.count(" node_") >= count:
            return
        time.sleep(1)
    raise RuntimeError(f"the Ray cluster at {address} did not reach {count} nodes")
