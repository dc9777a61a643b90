"""Every number the leaderboard can show has a meaning one hover or one note away, from
one place (``meanings``), and the page shows it."""

from __future__ import annotations

import html
import re
from dataclasses import replace
from pathlib import Path

from execbench.reports.html import render_html
from execbench.reports.meanings import TERMS, footnotes, meaning
from execbench.results import DeclaredMetric, Metric, Place
from execbench.runner import declared_metrics
from execbench.tasks import task_names
from tests.reports.test_leaderboard import mixed


def test_every_headline_metric_of_every_task_has_a_meaning() -> None:
    headline = [m for m in declared_metrics(list(task_names())) if m.metric.headline]
    assert len(headline) > 30
    unsaid = [(m.task, m.name) for m in headline
              if len(meaning(m)) < 20 or "do not describe" in meaning(m)]
    assert unsaid == []


def test_suspicious_means_a_right_output_the_simulation_does_not_support() -> None:
    simulation = next(m for m in declared_metrics(["simulation"]) if m.name == "suspicious")
    said = meaning(simulation)
    assert "right" in said and "coherence rule" in said and said.endswith("(lower is better)")
    assert "before the bug's first line" in TERMS["suspicious (bug vetting)"]


def test_results_without_descriptions_still_say_what_their_numbers_are() -> None:
    bare = DeclaredMetric("output", "prediction", Metric("pass@1", Place.summary("output", "pass")))
    assert meaning(bare).startswith("share of instances answered right")
    odd = DeclaredMetric("toy", "toy", Metric("said even", Place.summary("toy", "even")))
    assert meaning(odd) == "a toy number its results do not describe"
    assert footnotes([bare, bare, odd]) == [("output pass@1", meaning(bare)),
                                            ("toy said even", meaning(odd))]


def test_the_page_has_a_leaderboard_per_suite_each_column_with_its_meaning(
        tmp_path: Path) -> None:
    """Suite names come from run folders: shown as text, never as markup."""
    results = mixed()
    hostile = "suites/<script>alert(1)</script>"
    results[0] = replace(results[0], config=replace(results[0].config, suite=hostile))
    page, _ = render_html([tmp_path / "gone"] * 3, results)
    board = page.split('<section id="leaderboard">')[1].split("</section>")[0]
    assert "<script>" not in board
    suites = [html.unescape(name) for name in re.findall(r'data-suite="([^"]*)"', board)]
    assert suites == [hostile, "suites/crux"]
    titles = [html.unescape(t) for t in re.findall(r'<th class="metric" title="([^"]*)"',
                                                     board)]
    assert len(titles) == 4 and all(t.startswith("share of samples") or
                                    t.startswith("share of output") for t in titles)
    assert board.count("<dt>output pass@1</dt>") == 2
