"""Tasks, source formats and model providers from other installed packages.

A package adds entries to execbench's registries by declaring Python entry points in the
groups ``execbench.tasks``, ``execbench.formats`` and ``execbench.models``; each entry
point names the object the registry holds (a ``Task``, a ``sources.formats.Format``, a
``models.provider.Provider``) under the name the command line takes. Nothing of a plugin
is imported until its name is looked up, so an installed plugin costs a command nothing
that does not use it.

The names are execbench's first: a plugin that takes the name of a built-in entry is left
out, and so is the second of two plugins that take one name, each with a one-line
warning on the ``execbench.plugins`` logger (printed on stderr unless logging is set up
otherwise). A plugin that cannot be loaded is an error where its name is used, saying
which entry point of which distribution failed and why; code that reads every entry
(``Registry.entries``, ``execbench ls``) goes on without it.

Standard library only, as the registry is; the registry imports this module, and this
one nothing of execbench.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

_log = logging.getLogger("execbench.plugins")


class PluginError(Exception):
    """A plugin that was named and cannot be loaded; the message is one line."""


class Plugin:
    """One entry point of a group, imported when its name is first looked up. A failure
    is kept, so a plugin is imported at most once however often it is asked for."""

    def __init__(self, entry_point: EntryPoint, kind: str) -> None:
        self.entry_point = entry_point
        self.kind = kind
        self._error: PluginError | None = None

    @property
    def name(self) -> str:
        return self.entry_point.name

    @property
    def distribution(self) -> str:
        """The distribution that declares the entry point, with its version."""
        dist = self.entry_point.dist
        return "an unnamed distribution" if dist is None else f"{dist.name} {dist.version}"

    def describe(self) -> str:
        """The entry point as its package declares it, and whose it is."""
        return (f"entry point '{self.name} = {self.entry_point.value}' "
                f"({self.entry_point.group}) of {self.distribution}")

    def load(self) -> Any:
        if self._error is not None:
            raise self._error
        try:
            loaded = self.entry_point.load()
        except Exception as exc:  # noqa: BLE001 - third-party code fails in its own ways
            self._error = PluginError(f"{self.kind} {self.name!r} cannot be loaded from the "
                                      f"{self.describe()}: {_one_line(exc)}")
            raise self._error from exc
        named = getattr(loaded, "name", self.name)
        if isinstance(named, str) and named != self.name:
            # a task records its own name in each instance: under another name, a suite
            # built with it could not be run
            self._error = PluginError(f"{self.kind} {self.name!r} from the {self.describe()} "
                                      f"calls itself {named!r}; the two names must agree")
            raise self._error
        return loaded


def discover(group: str, kind: str) -> list[Plugin]:
    """The group's entry points in every installed distribution, in name order, then by
    distribution: an order the search path cannot change, so that which of two plugins
    that take one name is kept does not depend on where each was installed."""
    from importlib.metadata import entry_points

    found = [Plugin(entry, kind) for entry in entry_points(group=group)]
    return sorted(found, key=lambda plugin: (plugin.name, plugin.distribution))


def shadowed(kind: str, plugin: Plugin, why: str) -> None:
    """Say on one line that ``plugin`` is left out, and why."""
    _log.warning("warning: %s %r of the %s is not used: %s", kind, plugin.name,
                 plugin.describe(), why)


def _one_line(exc: Exception) -> str:
    """An exception as one line: its type and the first line of its message."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
