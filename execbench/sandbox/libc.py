"""The C library, for the system calls Python's ``os`` does not offer (Landlock, seccomp,
prctl, capabilities, namespaces, mounts), shared by the sandbox's confinement modules."""

from __future__ import annotations

import ctypes
import functools
import os
from typing import Any

PR_SET_NO_NEW_PRIVS = 38


class ConfinementError(RuntimeError):
    """A layer the probe found working could not be applied in a runner."""


@functools.cache
def libc() -> Any:
    """The C library, opened once (in the zygote, so every runner inherits it open)."""
    return ctypes.CDLL(None, use_errno=True)


def fail(what: str) -> None:
    """Raise the ``OSError`` of the C call that just failed."""
    code = ctypes.get_errno()
    raise OSError(code, f"{what}: {os.strerror(code)}")
