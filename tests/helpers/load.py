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


def harvest_processes() -> dict[int, str]:
    """Processes of any harvest's jail or child alive on this machine, by pid, with their
    command lines."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "execbench.sandbox.harvest_" in command:
            found[int(entry.name)] = command
    return found
