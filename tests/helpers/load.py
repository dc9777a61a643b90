"""A machine under load, for tests whose results must not depend on it, and the harvest's
processes still alive on it."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections.abc import Iterator
from pathlib import Path


def _spin() -> None:
    while True:
        pass


@contextlib.contextmanager
def busy_cores() -> Iterator[None]:
    """A process spinning on every core for as long as the block runs."""
    context = multiprocessing.get_context("spawn")
    spinners = [context.Process(target=_spin, daemon=True) for _ in range(os.cpu_count() or 1)]
    for spinner in spinners:
        spinner.start()
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.join()


def harvest_processes(anyones: bool = False) -> dict[int, str]:
    """Processes of a harvest's jail or child alive on this machine, by pid, with their
    command lines: by default those this test process started (below it) or that nobody
    holds any more (left to init, as a harvest that leaks leaves them), so that another
    xdist worker's harvest running meanwhile is not taken for a leak; ``anyones`` for
    every one (those a Ray worker started)."""
    commands, parents = {}, {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            parent = int((entry / "stat").read_bytes().rpartition(b")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        commands[int(entry.name)], parents[int(entry.name)] = command, parent
    found = {pid: command for pid, command in commands.items()
             if "execbench.harvest.jail" in command or "execbench.harvest.child" in command}
    if anyones:
        return found
    return {pid: command for pid, command in found.items()
            if _holder(pid, found, parents) in (os.getpid(), 0, 1)}


def _holder(pid: int, harvests: dict[int, str], parents: dict[int, int]) -> int:
    """The first process above ``pid`` that is not itself a harvest's (0: none left)."""
    seen = set()
    while pid in harvests and pid not in seen:
        seen.add(pid)
        pid = parents.get(pid, 0)
    return pid
