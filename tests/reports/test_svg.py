"""The page's SVG charts leave room for their text: an SVG clips what is drawn past its
edge, which cut run labels short ("eference/oracle")."""

from __future__ import annotations

import html
import re

from execbench.reports.svg import Bar, bars, lines, text_width

LONG = "reference/oracle (runs/a-very-long-folder-name)"
VALUE = "100.0 [99.1, 100.0] n=1166 no answer"


def _texts(svg: str) -> list[tuple[float, str, str]]:
    """(x, anchor, text) of each text element, titles left out."""
    return [(float(x), anchor, html.unescape(re.sub(r"<title>.*?</title>", "", body)))
            for x, anchor, body in re.findall(
                r'<text x="([\d.]+)" y="[\d.]+" class="[^"]*" text-anchor="(\w+)">(.*?)</text>',
                svg)]


def test_long_labels_are_cut_with_the_whole_label_on_hover_and_values_fit() -> None:
    svg = bars("headline", "output pass@1 (%)",
               [(LONG, [Bar("#000", 100.0, (99.1, 100.0), note="n=1166 no answer")]),
                ("short", [Bar("#000", 50.0)])], meaning="share of instances answered right")
    width = float(re.search(r'<svg [^>]*width="([\d.]+)"', svg).group(1))
    texts = _texts(svg)
    labels = [(x, text) for x, anchor, text in texts if anchor == "end"]
    assert [text for _, text in labels] == ["reference/oracle (runs/a-…", "short"]
    assert f"<title>{html.escape(LONG, quote=False)}</title>" in svg
    # 11 px text at most 0.62 em (6.82 px) a character: each label starts inside the chart
    assert all(x - 6.82 * len(text) >= 0 for x, text in labels)
    [(x, _, said)] = [t for t in texts if t[2].startswith("100.0 [")]
    assert said == VALUE and x + 6.82 * len(VALUE) <= width
    assert "<title>output pass@1 (%): share of instances answered right</title>" in svg


def test_a_chart_is_as_wide_as_its_title() -> None:
    title = "a title much longer than the plot of a pass at k chart is wide " * 2
    svg = lines("pass-at-k", title, [1, 2], [], "k")
    width = float(re.search(r'<svg [^>]*width="([\d.]+)"', svg).group(1))
    assert width >= 0.62 * 12 * len(title)


def test_wide_characters_count_a_full_em() -> None:
    assert text_width("ab", 10) == 12.4
    assert text_width("模型", 10) == 20
