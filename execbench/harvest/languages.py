"""What a compiled language gives the native harvest driver (``native``, whose package
docstring says more), and the registries through which the rest of the harvest reaches
it: the native harvest writes CodeSense facts, so it comes after the tasks in the import
graph, and the harvest's options and its per-project entry find it by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from execbench.registry import Registry


@dataclass(frozen=True)
class Recorder:
    """How the test command runs under a language's recorder inside the jail."""

    argv: list[str]
    """What the jail ``exec``s: the recorder wrapping ``/bin/sh -c TEST``."""
    read: list[str] = field(default_factory=list)
    """Paths the jail may read beyond the system's (the recorder's own files)."""
    env: dict[str, str] = field(default_factory=dict)
    """Additions to the jail's scrubbed environment."""
    ptrace: bool = False
    """The recorder traces processes of the jail (``jail``'s ``ptrace`` switch)."""
    loopback: bool = False
    """The recorder needs the loopback interface of the jail's own network namespace."""


class Language(Protocol):
    """One compiled language's part of a native harvest."""

    name: str
    """The generic record's ``language`` and ``--language``'s value."""
    suffixes: tuple[str, ...]
    """Source files the driver snapshots (``code`` comes from them)."""

    def tools(self) -> list[str]:
        """Paths of the tools the build and the recorder need (readable in the jail);
        raises ``HarvestError`` naming a missing one."""
        ...

    def build_env(self, options: Any) -> dict[str, str]:
        """What the build's environment adds (debug information, no optimisation), for the
        harvest's ``HarvestOptions`` (not imported here: they import this module)."""
        ...

    def recorder(self, scratch: Path, test: str, config: Path) -> Recorder:
        """The recorder for the shell command ``test``; its files go under ``scratch``
        (outside the project copy), ``config`` is the driver's JSON for it."""
        ...


LANGUAGES: Registry[Language] = Registry("language")
LANGUAGES.register_lazy("c", "execbench.harvest.native.c:LANGUAGE")
LANGUAGES.register_lazy("java", "execbench.harvest.native.java:LANGUAGE")
NATIVE: Registry[Callable[..., Any]] = Registry("native harvest")
"""The driver of a native harvest (``native.driver.harvest``), by the one name
``harvest``."""
NATIVE.register_lazy("harvest", "execbench.harvest.native.driver:harvest")
