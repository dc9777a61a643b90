"""A results file made by someone else may hold anything under ``task_metrics``: each
family's summary is read back through its typed reader, which takes a malformed entry as
a summary that says nothing, so every layout still reports (the numbers it could not read
shown as missing) instead of stopping."""

from __future__ import annotations

import pytest

from execbench.reports.layouts import View, layouts
from execbench.reports.tables import render
from execbench.rundir import Results
from tests.helpers.results import make_results

SUMMARIZED = ("simulation", "mutation", "choice", "bug-prediction", "statement", "output",
              "loop", "branch", "block", "alias")
WRONG = [[1, 2], "text", 3, None, True,
         {"all": [], "by_kind": "x", "by_source": {"s": 5}, "by_loc": {"1-5": "x"},
          "by_category": {"CO": {"samples": "many", "rules": [1]}},
          "consistency": {"strong": "high"}, "by_values": {"concrete": {"samples": True}}}]


@pytest.mark.parametrize("wrong", WRONG, ids=repr)
def test_every_layout_reports_a_malformed_summary_as_missing_numbers(wrong: object) -> None:
    hostile = make_results("hostile", "h", task_metrics=dict.fromkeys(SUMMARIZED, wrong))
    honest = make_results("honest", "o")
    runs: list[Results] = [hostile, honest]
    for name, layout in layouts().items():
        for table in layout.sections(runs, View(ks=[1])):
            for fmt in ("text", "json", "csv"):
                assert render([table], fmt), (name, fmt)
