"""Where units of work run: in this process, one after another, or as Ray tasks on a
cluster.

A unit is a module-level function and one argument, both picklable, whose result is
picklable too; the caller gets ``(position, result)`` pairs as units finish and puts them
back in the order it gave them, so the output is the same bytes whichever executor ran it
and in whatever order units finished. A unit reports its own failures in its result.

Ray is an optional extra (``execbench[ray]``), imported only when asked for. A Ray task
whose worker process or node dies is run again (``RAY_RETRIES`` times) on whichever node
has room; the driver takes one result per unit, so a retried unit is never counted twice.
A unit that still fails (retries spent, or it raised) is the caller's to turn into a
result (``failed``), else the work stops with one line. Arguments are made and handed to
Ray only as room opens (``IN_FLIGHT_PER_CPU`` units per CPU of the cluster), so neither
the inputs nor the results waiting for their turn grow with the work.
"""

from __future__ import annotations

import itertools
import os
import socket
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

EXECUTORS = ("local", "ray")
RAY_RETRIES = 3
"""Times a unit is run again after its worker or node died (not after it raised)."""
IN_FLIGHT_PER_CPU = 2
CONNECT_SECONDS = 5.0
"""How long the cluster's address may take to accept a connection before it is said to be
unreachable (Ray itself retries for minutes)."""


class ExecutorError(Exception):
    """The executor cannot run: Ray missing, its cluster unreachable, a unit lost."""


@dataclass(frozen=True)
class ExecutorChoice:
    """``--executor`` and ``--ray-address`` as one value, checked before any work starts:
    a choice of Ray is refused at once where Ray is not installed."""

    name: str = "local"
    ray_address: str | None = None

    def __post_init__(self) -> None:
        if self.name not in EXECUTORS:
            raise ExecutorError(f"unknown executor {self.name!r}: choose one of "
                                f"{', '.join(EXECUTORS)}")
        if self.ray_address is not None and self.name != "ray":
            raise ExecutorError("--ray-address is for --executor ray")
        if self.name == "ray":
            ray_module()


LOCAL = ExecutorChoice()


def run_units(choice: ExecutorChoice, unit: Callable[[Any], Any], args: Iterable[Any],
              cpus: int = 1, failed: Callable[[str], Any] | None = None,
              ordered: bool = False) -> Iterator[tuple[int, Any]]:
    """Run ``unit(arg)`` for every ``arg`` (taken from ``args`` only when its unit is
    about to start); yield ``(position, result)`` as each finishes, or in the order given
    when ``ordered`` (results that finish early wait, and count against the units in
    flight). ``cpus`` is what one unit takes of a Ray node; ``failed`` turns a lost
    unit's reason into its result."""
    if choice.name == "local":
        for position, arg in enumerate(args):
            yield position, unit(arg)
        return
    yield from _ray_units(choice.ray_address, unit, iter(args), cpus, failed, ordered)


def _ray_units(address: str | None, unit: Callable[[Any], Any], args: Iterator[Any],
               cpus: int, failed: Callable[[str], Any] | None, ordered: bool
               ) -> Iterator[tuple[int, Any]]:
    first = next(args, None)
    if first is None:
        return  # nothing to run: no cluster needed
    ray = ray_module()
    _connect(ray, address)
    largest = max((node.get("Resources", {}).get("CPU", 0) for node in ray.nodes()
                   if node.get("Alive")), default=0)
    if cpus > largest:
        raise ExecutorError(f"each task needs {cpus} CPUs (--workers) and the largest Ray "
                            f"node has {largest:g}")
    room = max(1, int(ray.cluster_resources().get("CPU", 1)) * IN_FLIGHT_PER_CPU // cpus)
    remote = ray.remote(num_cpus=cpus, max_retries=RAY_RETRIES, retry_exceptions=False)(unit)
    pending: dict[Any, int] = {}
    early: dict[int, Any] = {}  # results finished before their turn (ordered)
    turn = 0
    numbered = enumerate(itertools.chain([first], args))
    del first  # the driver keeps no input once Ray holds it
    while True:
        while len(pending) + len(early) < room and (item := next(numbered, None)) is not None:
            pending[remote.remote(ray.put(item[1]))] = item[0]
            del item
        if not pending:
            return
        done, _ = ray.wait(list(pending), num_returns=1)
        position = pending.pop(done[0])
        try:
            result = ray.get(done[0])
        except ray.exceptions.RayError as exc:
            said = " ".join(str(exc).split())[:300]
            if failed is None:
                raise ExecutorError(f"a Ray task failed: {said}") from None
            result = failed(f"its Ray task failed: {said}")
        if not ordered:
            yield position, result
            continue
        early[position] = result
        while turn in early:
            yield turn, early.pop(turn)
            turn += 1


def _connect(ray: Any, address: str | None) -> None:
    """Join the cluster at ``address`` (see ``ray.init``), once per process; an address
    that does not answer is said in one line within seconds."""
    if ray.is_initialized():
        return
    if address and "://" not in address and address != "auto":
        host, _, port = address.rpartition(":")
        try:
            socket.create_connection((host or "127.0.0.1", int(port)),
                                     timeout=CONNECT_SECONDS).close()
        except (OSError, ValueError) as exc:
            raise ExecutorError(f"cannot reach Ray at {address}: {exc}") from None
    try:
        ray.init(address=address, log_to_driver=False, include_dashboard=False,
                 logging_level="ERROR")
    except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as exc:
        said = " ".join(str(exc).split())
        raise ExecutorError(f"cannot reach Ray at {address or 'a new local cluster'}: "
                            f"{said}{_token_hint(address)}") from None


def _token_hint(address: str | None) -> str:
    """What to check when a cluster may have refused us for want of its token: Ray turns
    token authentication on for a cluster started where a token exists (``~/.ray``), and
    a driver given an address sends one only when told to; Ray then says only that it
    failed to connect (its own log lines say "Unauthenticated")."""
    if not address:
        return ""
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "token":
        return ("; if the cluster asks for a token, check that it is the one in "
                "RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token")
    return ("; if the cluster asks for a token (Ray's log lines say Unauthenticated), set "
            "RAY_AUTH_MODE=token and RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH) to its token")


def ray_module() -> Any:
    """Ray, or a one-line error saying how to get it."""
    try:
        import ray
    except ImportError:
        raise ExecutorError("--executor ray needs Ray: pip install 'execbench[ray]'") from None
    return ray
