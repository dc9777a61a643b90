"""Every xdist worker collects the tests itself, and a run stops if two of them collect
different lists. A test id made from a set's ``repr`` differs between processes (string
hashes are salted per process), so such a run failed on some starts and not others.
Collecting under two hash seeds must give the same ids in the same order: seeds 1 and 8,
under which both ``{1, 'a', (2, 3)}`` and ``{'x', 'y', 'z'}`` print in other orders."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent


def _collected(seed: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-o", "addopts=", "-n", "0", "-p",
         "no:cacheprovider", "--collect-only", "-q", "--run-slow", "tests"],
        cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True,
        check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_every_process_collects_the_same_test_ids() -> None:
    first = _collected("1")
    assert len(first) > 1000
    assert _collected("8") == first
