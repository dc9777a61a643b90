"""Bar and line charts written as inline SVG text.

The HTML page must open anywhere with the network off and without optional packages, so
its charts are drawn here, in a few dozen lines of SVG, rather than by a plotting
library or a script fetched at view time. Values are percentages (0-100). Elements carry
classes (``bar``, ``ci``, ``point``, ``line``) that the page's style colours and that
tests count; each bar and point has a ``<title>`` the browser shows on hover.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from xml.sax import saxutils

from execbench.text_safety import visible

PALETTE = ("#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#000000",
           "#b8a000")
"""Okabe and Ito's colours, told apart with any colour vision; a run keeps its colour on
every chart of the page."""

LABEL_ROOM = 26
"""Characters of a group label shown; a longer one is cut with ``…`` and shown whole on
hover."""
PLOT_WIDTH = 220
BAR = 12
GAP = 4
GROUP_GAP = 10
TOP = 30
AXIS = 24


@dataclass(frozen=True)
class Bar:
    """One bar: a run's value (None: it has none) and its 95% interval where known."""

    colour: str
    value: float | None
    interval: tuple[float, float] | None = None
    hover: str = ""
    """The tooltip: what the bar is."""
    faint: bool = False
    """Drawn pale: a value that is no result (the run answered nothing)."""
    note: str = ""
    """Said after the value (``no answer``)."""


@dataclass(frozen=True)
class Series:
    """One line: a run's values at each x."""

    colour: str
    points: list[tuple[int, float]]
    hover: str = ""


def escape(text: str) -> str:
    """Text for an SVG element: labels come from run folders and datasets."""
    return saxutils.escape(visible(text))


def quoteattr(text: str) -> str:
    """Text for an SVG attribute, quoted."""
    return saxutils.quoteattr(visible(text))


def _text(x: float, y: float, text: str, cls: str, anchor: str = "start") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" class="{cls}" text-anchor="{anchor}">'
            f"{escape(text)}</text>")


def text_width(text: str, size: float) -> float:
    """How wide ``text`` is drawn at ``size`` px, erring wide so nothing is clipped: the
    page's sans-serif draws Latin letters at most about 0.62 em on average, and East
    Asian wide characters a full em. The chart's width is made from it, since an SVG
    clips what is drawn past its edge."""
    return sum(size if unicodedata.east_asian_width(char) in "WF" else 0.62 * size
               for char in visible(text))


def _short(label: str, room: int = LABEL_ROOM) -> str:
    return label if len(label) <= room else label[:room - 1] + "…"


def _label(x: float, y: float, label: str) -> str:
    """A group's label, right-aligned before its bars; cut, with the whole label as its
    tooltip, where it is long."""
    shown = _short(label)
    if shown == label:
        return _text(x, y, label, "label", "end")
    return (f'<text x="{x:.1f}" y="{y:.1f}" class="label" text-anchor="end">'
            f"<title>{escape(label)}</title>{escape(shown)}</text>")


def _open(kind: str, title: str, width: float, height: float, meaning: str = ""
          ) -> list[str]:
    """The chart's opening: its title, and what its number means as the chart's tooltip."""
    width = max(width, text_width(title, 12) + 12)
    hover = f"<title>{escape(title + ': ' + meaning)}</title>" if meaning else ""
    return [f'<svg class="chart" data-chart="{kind}" xmlns="http://www.w3.org/2000/svg" '
            f'width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
            f"role=\"img\" aria-label={quoteattr(title)}>{hover}",
            _text(4, 16, title, "chart-title")]


def _said(bar: Bar) -> str:
    """The text after a bar: its value, interval and note."""
    said = "-" if bar.value is None else f"{bar.value:.1f}"
    if bar.interval is not None:
        said += f" [{bar.interval[0]:.1f}, {bar.interval[1]:.1f}]"
    return f"{said} {bar.note}" if bar.note else said


def bars(kind: str, title: str, groups: list[tuple[str, list[Bar]]], meaning: str = ""
         ) -> str:
    """Horizontal bars from 0 to 100 with interval whiskers, in labelled groups (one
    group per run with its label, or one per category with a bar per run). The margins
    are as wide as the longest label and value text; ``meaning`` (what the number is) is
    the chart's tooltip."""
    height = TOP + sum(len(members) * (BAR + GAP) + GROUP_GAP for _, members in groups) + AXIS
    label_width = 12 + max((text_width(_short(label), 11) for label, _ in groups), default=0)
    value_width = 12 + max((text_width(_said(bar), 11) for _, members in groups
                            for bar in members), default=0)
    width = label_width + PLOT_WIDTH + value_width
    parts = _open(kind, title, width, height, meaning)

    def x(value: float) -> float:
        return label_width + PLOT_WIDTH * min(max(value, 0.0), 100.0) / 100

    bottom = height - AXIS + 4
    for tick in (0, 25, 50, 75, 100):
        parts.append(f'<line class="grid" x1="{x(tick):.1f}" y1="{TOP - 4}" '
                     f'x2="{x(tick):.1f}" y2="{bottom:.1f}"/>')
        parts.append(_text(x(tick), bottom + 13, str(tick), "tick", "middle"))
    y = float(TOP)
    for label, members in groups:
        middle = y + len(members) * (BAR + GAP) / 2
        parts.append(_label(label_width - 6, middle + 4, label))
        for bar in members:
            faint = ' style="opacity:.35"' if bar.faint else ""
            hover = f"<title>{escape(bar.hover)}</title>" if bar.hover else ""
            if bar.value is not None:
                parts.append(f'<rect class="bar" x="{x(0):.1f}" y="{y:.1f}" '
                             f'width="{x(bar.value) - x(0):.1f}" height="{BAR}" '
                             f'fill="{bar.colour}"{faint}>{hover}</rect>')
            if bar.interval is not None:
                low, high = (x(bound) for bound in bar.interval)
                centre = y + BAR / 2
                parts.append(f'<path class="ci" d="M{low:.1f},{centre - 4:.1f}v8'
                             f"M{low:.1f},{centre:.1f}H{high:.1f}"
                             f'M{high:.1f},{centre - 4:.1f}v8"/>')
            parts.append(_text(x(100) + 6, y + BAR - 2, _said(bar), "value"))
            y += BAR + GAP
        y += GROUP_GAP
    parts.append("</svg>")
    return "".join(parts)


def lines(kind: str, title: str, xs: list[int], series: list[Series],
          x_label: str, meaning: str = "") -> str:
    """Values against whole-number x (pass@k against k): a line and points per series;
    ``meaning`` is the chart's tooltip."""
    plot_height = 150
    left, width = 40, 40 + PLOT_WIDTH + 20
    height = TOP + plot_height + AXIS + 14
    parts = _open(kind, title, width, height, meaning)
    low, high = xs[0], max(xs[-1], xs[0] + 1)

    def at(k: int, value: float) -> tuple[float, float]:
        return (left + PLOT_WIDTH * (k - low) / (high - low),
                TOP + plot_height * (1 - min(max(value, 0.0), 100.0) / 100))

    for tick in (0, 50, 100):
        _, y = at(low, tick)
        parts.append(f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{left + PLOT_WIDTH}" '
                     f'y2="{y:.1f}"/>')
        parts.append(_text(left - 4, y + 4, str(tick), "tick", "end"))
    for k in xs:
        x, _ = at(k, 0)
        parts.append(_text(x, TOP + plot_height + 16, str(k), "tick", "middle"))
    parts.append(_text(left + PLOT_WIDTH / 2, height - 4, x_label, "tick", "middle"))
    for line in series:
        placed = [at(k, value) for k, value in line.points]
        hover = f"<title>{escape(line.hover)}</title>" if line.hover else ""
        if len(placed) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in placed)
            parts.append(f'<polyline class="line" points="{path}" stroke="{line.colour}">'
                         f"{hover}</polyline>")
        for (k, value), (x, y) in zip(line.points, placed, strict=True):
            parts.append(f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="3.5" '
                         f'fill="{line.colour}"><title>{escape(line.hover)}: {value:.1f} at '
                         f"{escape(x_label)} = {k}</title></circle>")
    parts.append("</svg>")
    return "".join(parts)
