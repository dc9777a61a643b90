"""Report layouts: named sets of tables (and optionally a plot) that show runs the way a
task family's paper does. Task families name their layout (``Task.layout``); report
modules register the layouts; the CLI lists and dispatches them from ``layouts()``, so a
new layout needs no change to the CLI.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Table = tuple[list[str], list[list[str]]]
Section = tuple[str, Table]
"""A titled table: (title, (headers, rows of strings))."""


@dataclass(frozen=True)
class Layout:
    name: str
    description: str
    sections: Callable[[list[dict[str, Any]]], list[Section]]
    """The tables of the layout for some runs' ``results.json`` records."""
    plot: Callable[[list[dict[str, Any]], Path], Path] | None = None
    """Draws the layout's figure to a PNG (``--plot``), where it has one."""


_LAYOUTS: dict[str, Layout] = {}


def register_layout(layout: Layout) -> Layout:
    if layout.name in _LAYOUTS:
        raise ValueError(f"report layout {layout.name!r} is registered twice")
    _LAYOUTS[layout.name] = layout
    return layout


def layouts() -> dict[str, Layout]:
    """Every registered layout, by name (importing the report package registers them)."""
    from execbench import report  # noqa: F401

    return dict(sorted(_LAYOUTS.items()))
