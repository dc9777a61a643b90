"""Stopping a child process together with every process it started.

Kept apart from ``confine`` and ``worker``: the warm sandbox worker imports as little as
possible (every module it holds makes each ``fork()`` slower), and this needs
``subprocess``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess


def stop_group(process: subprocess.Popen, grace: float) -> None:
    """Stop a child started with ``start_new_session`` and every process of its group:
    SIGTERM, up to ``grace`` seconds for the child to exit, then SIGKILL for whatever of
    the group is left (a test suite's or an engine's own workers may outlive the child).
    Safe when the child or the whole group has already ended."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):  # the group ended
            os.killpg(process.pid, signum)
        if signum == signal.SIGTERM:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(grace)
    process.wait()
