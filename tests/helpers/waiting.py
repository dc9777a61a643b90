"""Waiting for something another process does (a process group ending, a pool's processes
going away) without asserting how fast it happens: on a loaded machine anything can take
seconds, so a test states the outcome and ``eventually`` waits for it."""

from __future__ import annotations

import time
from collections.abc import Callable

PATIENCE = 50.0
"""Seconds before ``eventually`` gives up: a guard against a hang with a message, not a
speed requirement. What the tests wait for would otherwise not happen at all, or only after
ten minutes (their programs sleep that long), so a wait that ends shows the outcome was
caused by what the test did."""


def eventually(condition: Callable[[], bool], what: str) -> None:
    """Return once ``condition()`` holds; fail, saying ``what`` did not happen, if it still
    does not after ``PATIENCE`` seconds."""
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not so after {PATIENCE:.0f} s"
        time.sleep(0.05)
