"""The page's charts, read from results alone: a panel per headline metric of each family,
pass@k against k, and a panel per declared breakdown; runs that answered nothing drawn
pale. (``test_html.py`` checks that Chromium draws them.)"""

from __future__ import annotations

import re
from pathlib import Path

from execbench.reports.charts import charts
from execbench.rundir import Results, read_results
from tests.helpers.results import make_results


def _titles(svgs: list[str]) -> list[str]:
    return [re.search(r'class="chart-title"[^>]*>([^<]*)<', svg).group(1) for svg in svgs]


def test_every_family_and_breakdown_is_charted(report_runs: list[Path]) -> None:
    results = [read_results(folder) for folder in report_runs]
    drawn = charts(results)
    assert [label for label, _ in drawn.legend] == ["reference/oracle", "reference/constant"]
    assert [family for family, _ in drawn.families] == ["ces", "codesense", "dexbench",
                                                        "generalization", "prediction"]
    prediction = dict(drawn.families)["prediction"]
    assert _titles(prediction) == ["input pass@1 (%), n=5", "output pass@1 (%), n=5",
                                   "output string match (%), n=5"]
    assert prediction[0].count('class="bar"') == 2 and prediction[0].count('class="ci"') == 2
    assert len(drawn.pass_at_k) == 8  # every task: the oracle drew two samples
    assert drawn.pass_at_k[0].count('class="point"') == 3
    assert _titles(drawn.breakdowns) == [
        "choice pass@1 by mutation operator (%)", "mutation pass@1 by mutation operator (%)",
        "simulation pass@1 by construct (%)", "statement pass@1 by kind (%)"]


def _results(verdicts: list[str], n: int = 1) -> Results:
    records = [{"instance_id": f"output/s/p/{i}", "task": "output", "source": "s",
                "sample": 0, "verdict": verdict, "correct": verdict == "correct"}
               for i, verdict in enumerate(verdicts)]
    kinds = {"output": {"size": {f"output/s/p/{i}": f"block-{10 if i else 2}"
                                 for i in range(len(verdicts))}}}
    return make_results(f"m{len(verdicts)}", "r", n=n, samples=records, categories=kinds)


def test_runs_that_answered_nothing_are_pale_and_numbers_in_order() -> None:
    drawn = charts([_results(["correct", "incorrect"]), _results(["error"] * 3)])
    # Results made from samples alone hold no summary: the string-match panel has no bars.
    [(_, [panel, matched])] = drawn.families
    assert _titles([panel, matched]) == ["output pass@1 (%)",  # the runs' counts differ
                                         "output string match (%)"]
    assert 'class="bar"' not in matched
    assert "n=2" in panel and "n=3 no answer" in panel and panel.count("opacity:.35") == 1
    [by_size] = drawn.breakdowns
    assert [label for label in re.findall(r'class="label"[^>]*>([^<]*)<', by_size)] == [
        "block-2", "block-10"]
    assert drawn.pass_at_k == []  # one sample each: pass@k is pass@1
