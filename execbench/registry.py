"""One kind of named thing (tasks, recorders, report layouts, source formats, model
providers), looked up by the name a user typed.

Every list the command line prints or accepts is read from a ``Registry``, so what
``execbench ls`` shows is what a run or a build takes, and a misspelt name gets the
closest known one back. An entry may be registered lazily, as ``"module:attribute"``,
so that naming a model provider costs nothing until the provider is used: importing
the HTTP client is what made the command slow to start.

Standard library only: the sandbox worker and the harvest child import the tracer,
which keeps its recorders here.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownName(KeyError):
    """A name no entry has; the message suggests the closest ones and lists them all."""

    def __str__(self) -> str:
        return str(self.args[0])


class _Lazy:
    """An entry not imported yet: ``module:attribute``."""

    def __init__(self, target: str) -> None:
        self.module, _, self.attribute = target.partition(":")


class Registry(Generic[T]):
    """Entries of one kind by name, in the order they were registered (or by name, with
    ``sort``: where the order comes from imports, it says nothing).

    ``populate`` names a module whose import registers the entries (a package that
    imports every task module): it is imported on the first lookup, not before, so that
    modules which register can import this one freely.
    """

    def __init__(self, kind: str, *, populate: str | None = None, sort: bool = False) -> None:
        self.kind = kind
        self._populate = populate
        self._sort = sort
        self._entries: dict[str, T | _Lazy] = {}

    def register(self, name: str, entry: T) -> T:
        """Add ``entry`` as ``name``; a name registered twice is a bug, refused."""
        self._add(name, entry)
        return entry

    def register_lazy(self, name: str, target: str) -> None:
        """Add the entry ``module:attribute``, imported when it is first looked up."""
        self._add(name, _Lazy(target))

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a test's entry, once the test is done)."""
        del self._entries[name]

    def get(self, name: str) -> T:
        """The entry called ``name``; ``UnknownName`` says what else there is."""
        self._load()
        if name not in self._entries:
            raise self.unknown([name])
        entry = self._entries[name]
        if isinstance(entry, _Lazy):
            entry = getattr(importlib.import_module(entry.module), entry.attribute)
            self._entries[name] = entry
        return entry

    def names(self) -> list[str]:
        """Every name, without importing lazy entries."""
        self._load()
        return sorted(self._entries) if self._sort else list(self._entries)

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries

    def unknown(self, names: Iterable[str]) -> UnknownName:
        """The error for ``names`` (none of them registered)."""
        return unknown_name(self.kind, names, self.names())

    def _add(self, name: str, entry: T | _Lazy) -> None:
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = entry

    def _load(self) -> None:
        # Once imported, never again; a lookup while the module is being imported (by a
        # module it imports) finds it in sys.modules and sees what is registered so far.
        if self._populate is not None:
            importlib.import_module(self._populate)
            self._populate = None


def unknown_name(kind: str, names: Iterable[str], known: list[str]) -> UnknownName:
    """The error for ``names``, none of them ``known``: each close known name is suggested
    (case aside), then every known name is listed. Registries and the values a command
    checks before it works (a filter's, a built-in source's) say it alike."""
    names = list(names)
    lowered = {name.lower(): name for name in known}
    close = [lowered.get(name.lower()) or next(iter(difflib.get_close_matches(
        name, known, n=1)), None) for name in names]
    said = ", ".join(map(repr, names))
    found = [name for name in dict.fromkeys(close) if name is not None]
    hint = f"did you mean {' or '.join(map(repr, found))}? " if found else ""
    plural = "s" if len(names) > 1 else ""
    return UnknownName(f"unknown {kind}{plural} {said}; {hint}"
                       f"known {kind}s: {', '.join(known) or 'none'}")
