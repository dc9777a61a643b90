"""One kind of named thing (tasks, recorders, report layouts, source formats, model
providers), looked up by the name a user typed.

Every list the command line prints or accepts is read from a ``Registry``, so what
``execbench ls`` shows is what a run or a build takes, and a misspelt name gets the
closest known one back. An entry may be registered lazily, as ``"module:attribute"``,
so that naming a model provider costs nothing until the provider is used: importing
the HTTP client is what made the command slow to start. A registry with a ``plugins``
group also takes the entries other installed packages declare as Python entry points
(``execbench.plugins``), loaded as lazily.

Standard library only: the sandbox worker and the harvest child import the tracer,
which keeps its recorders here.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from execbench.plugins import Plugin

T = TypeVar("T")


class UnknownName(KeyError):
    """A name no entry has; the message suggests the closest ones and lists them all."""

    def __str__(self) -> str:
        return str(self.args[0])


class _Deferred:
    """An entry not loaded yet: ``load`` gives it (imports its module)."""

    def __init__(self, load: Callable[[], Any]) -> None:
        self.load = load


def _attribute(target: str) -> Any:
    """What ``module:attribute`` names, its module imported."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


class Registry(Generic[T]):
    """Entries of one kind by name, in the order they were registered (or by name, with
    ``sort``: where the order comes from imports, it says nothing).

    ``populate`` names a module whose import registers the entries (a package that
    imports every task module): it is imported on the first lookup, not before, so that
    modules which register can import this one freely. ``plugins`` names the entry-point
    group read after it, once, for the entries of other packages: those come after the
    built-in ones, and a name execbench has already is kept for the built-in entry.
    """

    def __init__(self, kind: str, *, populate: str | None = None, plugins: str | None = None,
                 sort: bool = False) -> None:
        self.kind = kind
        self._populate = populate
        self._populating = False
        self._plugins = plugins
        self._sort = sort
        self._entries: dict[str, T | _Deferred] = {}
        self._from_plugins: dict[str, Plugin] = {}

    def register(self, name: str, entry: T) -> T:
        """Add ``entry`` as ``name``; a name registered twice is a bug, refused."""
        self._add(name, entry)
        return entry

    def register_lazy(self, name: str, target: str) -> None:
        """Add the entry ``module:attribute``, imported when it is first looked up."""
        self._add(name, _Deferred(lambda: _attribute(target)))

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a test's entry, once the test is done)."""
        del self._entries[name]
        self._from_plugins.pop(name, None)

    def get(self, name: str) -> T:
        """The entry called ``name``; ``UnknownName`` says what else there is, and a
        plugin that cannot be loaded raises ``plugins.PluginError``."""
        self._load()
        if name not in self._entries:
            raise self.unknown([name])
        entry = self._entries[name]
        if isinstance(entry, _Deferred):
            entry = entry.load()
            self._entries[name] = entry
        return entry

    def entries(self) -> dict[str, T]:
        """Every entry that loads, by name, in the order of ``names``: for code that reads
        them all (families of tasks, format detection), so that a plugin which cannot be
        loaded stops only what names it."""
        from execbench.plugins import PluginError

        loaded = {}
        for name in self.names():
            try:
                loaded[name] = self.get(name)
            except PluginError:
                continue
        return loaded

    def origin(self, name: str) -> str | None:
        """The distribution (name and version) that added ``name`` as a plugin; None for
        a built-in entry."""
        self._load()
        plugin = self._from_plugins.get(name)
        return None if plugin is None else plugin.distribution

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

    def _add(self, name: str, entry: T | _Deferred) -> None:
        if name in self._from_plugins:  # a plugin came first: execbench's own entry wins
            from execbench.plugins import shadowed

            shadowed(self.kind, self._from_plugins.pop(name),
                     f"execbench has a built-in {self.kind} of that name")
        elif name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = entry

    def _load(self) -> None:
        # Once imported, never again; a lookup while the module is being imported (by a
        # module it imports) sees what is registered so far, and no plugin yet: a plugin
        # read before every built-in entry is in could take a built-in name.
        if self._populate is not None and not self._populating:
            self._populating = True
            try:
                importlib.import_module(self._populate)
            finally:
                self._populating = False
            self._populate = None
        if self._plugins is not None and self._populate is None:
            from execbench.plugins import discover, shadowed

            group, self._plugins = self._plugins, None
            for plugin in discover(group, self.kind):
                if plugin.name in self._entries:
                    held = self._from_plugins.get(plugin.name)
                    shadowed(self.kind, plugin, f"the {held.describe()} declares it first"
                             if held else f"execbench has a built-in {self.kind} of that name")
                    continue
                self._entries[plugin.name] = _Deferred(plugin.load)
                self._from_plugins[plugin.name] = plugin


def unknown_name(kind: str, names: Iterable[str], known: list[str]) -> UnknownName:
    """The error for ``names``, none of them ``known``: each close known name is suggested
    (case aside), then every known name is listed. Registries and the values a command
    checks before it works (a filter's, a built-in source's) say it alike."""
    names = list(names)
    said = ", ".join(map(repr, names))
    plural = "s" if len(names) > 1 else ""
    return UnknownName(f"unknown {kind}{plural} {said}; {close_names(names, known)}"
                       f"known {kind}s: {', '.join(known) or 'none'}")


def close_names(names: Iterable[str], known: list[str]) -> str:
    """``did you mean 'x'? `` for the known names close to ``names`` (case aside), or an
    empty text when none is."""
    lowered = {name.lower(): name for name in known}
    close = [lowered.get(name.lower()) or next(iter(difflib.get_close_matches(
        name, known, n=1)), None) for name in names]
    found = [name for name in dict.fromkeys(close) if name is not None]
    return f"did you mean {' or '.join(map(repr, found))}? " if found else ""
