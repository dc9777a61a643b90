"""Report layouts: named sets of tables (and optionally a figure) that show runs the way a
task family's paper does. Task families name their layout (``Task.layout``); report
modules register the layouts; the CLI and the HTML report list and dispatch them from
``LAYOUTS``, so a new layout needs no change to either.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from execbench.registry import Registry
from execbench.reports.tables import Table
from execbench.rundir import Results
from execbench.text_safety import each_text, visible


@dataclass(frozen=True)
class View:
    """What the reader asked to see, for layouts to honour."""

    ks: list[int]
    """The pass@k columns (``--k``; by default every k up to the largest n)."""
    by_source: bool = False
    """One row per source (``--by-source``), for layouts with ``by_source``."""


@dataclass(frozen=True)
class Layout:
    name: str
    description: str
    sections: Callable[[Sequence[Results], View], list[Table]]
    """The tables of the layout for some runs' results."""
    figure: Callable[[Sequence[Results]], Any] | None = None
    """Draws the layout's figure as a matplotlib figure (``--plot``, ``--plots``, the HTML
    report), where it has one; needs matplotlib (the ``plot`` extra) and raises
    ``RuntimeError`` without it."""
    by_source: bool = False
    """Whether ``--by-source`` changes the layout (it is refused elsewhere)."""
    shows: Callable[[Results], bool] | None = None
    """Whether a run has something the layout shows though none of its tasks is of the
    layout's family (CodeSense-style output and input questions); None: only its family."""
    min_runs: int = 1
    """The fewest runs it shows anything for (a comparison needs two); the page and
    ``--plots`` leave it out below that."""

    def draw(self, results: Sequence[Results], fmt: str = "png") -> bytes:
        """The layout's ``figure`` of ``results`` as ``fmt`` (one of ``FIGURE_FORMATS``)
        bytes, their text (run labels, task and category
        names: from run folders anyone may share) as it can be drawn: control characters
        and lone surrogates as escapes (a lone surrogate has no glyph, and stops the
        drawing) and each ``$`` as ``\\$``, drawn as itself (a pair would be read as
        mathematics, and a bad one stops the drawing too)."""
        if self.figure is None:
            raise RuntimeError(f"the {self.name} layout has no figure")
        if fmt not in FIGURE_FORMATS:
            raise ValueError(f"figures are drawn as {' or '.join(FIGURE_FORMATS)}, not {fmt}")
        return _saved(self.figure([_drawn(result) for result in results]), fmt)


def _drawn(result: Results) -> Results:
    """The run's results with their text as it can be drawn, but for where the run and its
    suite are: figures read samples and instances from there."""
    drawn = Results.from_record(each_text(result.to_record(), _drawable))
    return replace(drawn, run_dir=result.run_dir,
                   config=replace(drawn.config, suite=result.config.suite))


def _drawable(text: str) -> str:
    return visible(text).replace("$", "\\$")


LAYOUTS: Registry[Layout] = Registry("layout", populate="execbench.reports", sort=True)
"""Every layout by name; importing the report package registers them."""


def register_layout(layout: Layout) -> Layout:
    return LAYOUTS.register(layout.name, layout)


def layouts() -> dict[str, Layout]:
    """Every registered layout, by name."""
    return {name: LAYOUTS.get(name) for name in LAYOUTS.names()}


def pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend, or a clear error without it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RuntimeError("plots need matplotlib: pip install 'execbench[plot]'") from None
    return plt


FIGURE_FORMATS = ("png", "svg")
"""What a layout's figure is written as: PNG for the page and a quick look, SVG for a
paper (``report --plots`` writes both)."""


def _saved(figure: Any, fmt: str) -> bytes:
    """A matplotlib figure as ``fmt`` bytes; the figure is closed. An SVG names no date,
    so the same runs give the same file. The picture is grown to hold everything drawn
    (``bbox_inches="tight"``): ``tight_layout`` leaves a long rotated tick label or a
    legend beside the axes cut at the figure's edge (``eference/oracle``)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format=fmt, dpi=110, bbox_inches="tight", pad_inches=0.1,
                   metadata={"Date": None} if fmt == "svg" else None)
    pyplot().close(figure)
    return buffer.getvalue()


def shown_layouts(results: Sequence[Results]) -> list[tuple[Layout, list[Results]]]:
    """The default layout with every run, then each layout some run has something for (its
    tasks' family's, or one whose ``shows`` accepts it) with those runs, by name: what the
    page and ``report --plots`` show."""
    from execbench.tasks import get_task, task_names

    def layouts_of(result: Results) -> set[str]:
        # A run may hold a task this execbench no longer has: it shows in the default layout.
        return {layout for task in set(result.metrics) & set(task_names())
                if (layout := get_task(task).reporting.layout) is not None} | {
            name for name, layout in layouts().items()
            if layout.shows is not None and layout.shows(result)}

    named = [set(layouts_of(result)) for result in results]
    wanted = sorted(set().union(*named))
    shown = [(LAYOUTS.get("default"), list(results))] + [
        (LAYOUTS.get(name), [r for r, has in zip(results, named, strict=True) if name in has])
        for name in wanted]
    return [(layout, runs) for layout, runs in shown if len(runs) >= layout.min_runs]


def figure_files(results: Sequence[Results]) -> dict[str, bytes]:
    """``report --plots``: the figure of every layout ``shown_layouts`` picks, as
    ``<layout>.png`` and ``<layout>.svg``; ``RuntimeError`` without matplotlib."""
    return {f"{layout.name}.{fmt}": layout.draw(shown, fmt)
            for layout, shown in shown_layouts(results) if layout.figure is not None
            for fmt in FIGURE_FORMATS}
