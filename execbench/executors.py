"""Where units of work run: in this process, one after another, or as Ray tasks on a
cluster.

A unit is a module-level function and one argument, both picklable, whose result is
picklable too; the caller gets ``(position, result)`` pairs as units finish and puts them
back in the order it gave them, so the output is the same bytes whichever executor ran it
and in whatever order units finished. A unit reports its own failures in its result: an
exception it raises is a bug, and stops the work whichever executor runs it.

Ray is an optional extra (``execbench[ray]``), imported only when asked for. A Ray task
whose worker process or node dies is run again (``RAY_RETRIES`` times) on whichever node
has room; the driver takes one result per unit, so a retried unit is never counted twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

EXECUTORS = ("local", "ray")
RAY_RETRIES = 3
"""Times a unit is run again after its worker or node died (not after it raised)."""


class ExecutorError(Exception):
    """The executor cannot run: Ray missing, or its cluster unreachable."""


@dataclass(frozen=True)
class ExecutorChoice:
    """``--executor`` and ``--ray-address`` as one value, checked before any work starts."""

    name: str = "local"
    ray_address: str | None = None

    def __post_init__(self) -> None:
        if self.name not in EXECUTORS:
            raise ExecutorError(f"unknown executor {self.name!r}: choose one of "
                                f"{', '.join(EXECUTORS)}")
        if self.ray_address is not None and self.name != "ray":
            raise ExecutorError("--ray-address is for --executor ray")


LOCAL = ExecutorChoice()


def run_units(choice: ExecutorChoice, unit: Callable[[Any], Any], args: Sequence[Any],
              cpus: float = 1.0) -> Iterator[tuple[int, Any]]:
    """Run ``unit(arg)`` for every ``arg``; yield ``(position, result)`` as each finishes.
    ``cpus`` is what one unit takes of a Ray node (Ray schedules by it)."""
    if choice.name == "local":
        for position, arg in enumerate(args):
            yield position, unit(arg)
        return
    yield from _ray_units(choice.ray_address, unit, args, cpus)


def _ray_units(address: str | None, unit: Callable[[Any], Any], args: Sequence[Any],
               cpus: float) -> Iterator[tuple[int, Any]]:
    ray = ray_module()
    if not ray.is_initialized():
        try:
            ray.init(address=address, log_to_driver=False, include_dashboard=False,
                     logging_level="ERROR")
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = address or "a new local cluster"
            said = " ".join(str(exc).split())
            raise ExecutorError(f"cannot reach Ray at {where}: {said}") from None
    remote = ray.remote(num_cpus=cpus, max_retries=RAY_RETRIES, retry_exceptions=False)(unit)
    pending = {remote.remote(ray.put(arg)): position for position, arg in enumerate(args)}
    while pending:
        [done], _ = ray.wait(list(pending), num_returns=1)
        position = pending.pop(done)
        yield position, ray.get(done)


def ray_module() -> Any:
    """Ray, or a one-line error saying how to get it."""
    try:
        import ray
    except ImportError:
        raise ExecutorError("--executor ray needs Ray: pip install 'execbench[ray]'") from None
    return ray
