"""The default layout: pass@k and the accuracy interval per task (and per source)."""

from __future__ import annotations

from typing import Any

from execbench.report.layouts import Layout, View, register_layout
from execbench.report.tables import Table, comparison_table


def _sections(results: list[dict[str, Any]], view: View) -> list[Table]:
    return [comparison_table(results, view.ks, by_source=view.by_source)]


register_layout(Layout("default", "pass@k and accuracy per task", _sections, by_source=True))
