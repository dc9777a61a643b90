"""The date each harvested function carries, and whether it is new since a date.

A harvest given a ``Dating`` stamps every listed function before its tests run: the
stamp's ``meta`` (``date``, a day as ``build --after/--before`` and ``report --layout
cutoff-split`` read it, and where it comes from) goes into the function's record, and a
function stamped ``unchanged`` or ``undated`` is skipped with the reason, counted as any
skipped function is. The states are counted per project (``HarvestResult.ages``).

Two datings: a registry release (``SinceRelease``: the release's upload time; with an
earlier release to compare with, a function is ``unchanged`` when its normalised syntax
tree occurs anywhere in the earlier release, ``changed`` when it does not but a function
of the same name in the same module did, else ``new``) and a git checkout
(``history.SinceCommit``). The normalised tree is ``ast.dump`` without positions, with
every docstring dropped: moving a function, re-indenting it, editing its comments or its
docstring leaves it unchanged; any change of its code, decorators or name does not.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Protocol

from execbench.harvest.index import Release
from execbench.harvest.listing import Function, list_functions

NEW, CHANGED, UNCHANGED, UNDATED = "new", "changed", "unchanged", "undated"
STATES = (NEW, CHANGED, UNCHANGED, UNDATED)


@dataclass(frozen=True)
class Stamp:
    """One function's date and state."""

    state: str | None
    """One of ``STATES``; None where nothing was compared (a release harvested whole)."""
    meta: dict[str, Any] = field(default_factory=dict)
    """What its record's ``meta`` gains: ``date`` and where it comes from."""
    reason: str = ""
    """Why an ``unchanged`` or ``undated`` function is skipped."""


class Dating(Protocol):
    """What stamps a harvest's functions (picklable: it travels to Ray with its project)."""

    def stamps(self, functions: list[Function]) -> dict[str, Stamp]:
        """A stamp per function id."""


def skip_reason(stamp: Stamp | None) -> str | None:
    """Why a function with this stamp is not harvested, or None if it is."""
    if stamp is None or stamp.state not in (UNCHANGED, UNDATED):
        return None
    return stamp.reason


def fingerprint(code: str) -> str:
    """A function's source (its dedented ``def``) as its normalised tree (module doc);
    the text itself, stripped, where it does not parse alone."""
    try:
        tree = ast.parse(code)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) \
                    and node.body and _is_docstring(node.body[0]):
                node.body = node.body[1:] or [ast.Pass()]
        return ast.dump(tree.body[0]) if tree.body else ""
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return code.strip()


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
        and isinstance(statement.value.value, str)


@dataclass(frozen=True)
class SinceRelease:
    """Every function of a registry release dated by the release's upload, and, given
    the release before ``since``, stamped new, changed or unchanged against it."""

    release: Release
    since: date | None = None
    earlier: Release | None = None
    earlier_trees: frozenset[str] = frozenset()
    earlier_ids: frozenset[str] = frozenset()

    @classmethod
    def of(cls, release: Release, since: date | None, earlier: Release | None,
           earlier_root: Path | None, warn: Callable[[str], None]) -> SinceRelease:
        """The dating of ``release``, comparing with the earlier release's files in
        ``earlier_root`` (read as a harvest lists a project's functions)."""
        if earlier_root is None:
            return cls(release, since, earlier)
        listed = list_functions(earlier_root, 1, lambda message: warn(
            f"{earlier.version if earlier else 'earlier release'}: {message}"))
        return cls(release, since, earlier, frozenset(fingerprint(f.code) for f in listed),
                   frozenset(_plain_id(f) for f in listed))

    def stamps(self, functions: list[Function]) -> dict[str, Stamp]:
        meta = {"date": self.release.uploaded.date().isoformat(),
                "released": self.release.uploaded.isoformat(timespec="seconds"),
                "package": self.release.name, "version": self.release.version}
        if self.since is None:
            return {f.id: Stamp(None, meta) for f in functions}
        compared = self.earlier.version if self.earlier else None
        stamped = {}
        for f in functions:
            state = NEW if compared is None else UNCHANGED if fingerprint(f.code) in \
                self.earlier_trees else CHANGED if _plain_id(f) in self.earlier_ids else NEW
            stamped[f.id] = Stamp(state, {**meta, "since": state, "compared_with": compared},
                                  f"unchanged since {compared}")
        return stamped


def _plain_id(function: Function) -> str:
    """A function's module and qualified name, without the line a duplicate gets."""
    return function.id.partition(":")[0]
