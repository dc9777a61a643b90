"""A machine under load, for tests whose results must not depend on it."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections.abc import Iterator


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
