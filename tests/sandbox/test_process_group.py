"""Stopping a child with every process it started, including one that ignores SIGTERM."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from execbench.sandbox.process_group import stop_group
from tests.helpers.waiting import eventually

# The child starts a grandchild that ignores SIGTERM, then waits for it.
STUBBORN = ("import signal, subprocess, sys\n"
            "subprocess.Popen([sys.executable, '-c', 'import signal, time; "
            "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)'])\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "import time; time.sleep(600)\n")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")
def test_the_whole_group_ends_even_when_it_ignores_sigterm() -> None:
    child = subprocess.Popen([sys.executable, "-c", STUBBORN], start_new_session=True)
    time.sleep(1.0)  # let the grandchild start
    stop_group(child, grace=0.5)
    assert child.returncode == -9  # killed after the grace, not ended by its own sleep
    # The grandchild is reaped by init once killed; it would otherwise sleep ten minutes.
    eventually(lambda: not _group_alive(child.pid), "the group has ended")
    stop_group(child, grace=0.5)  # a second stop of an ended group is harmless
