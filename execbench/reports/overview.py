"""The default layout: the headline metrics of each task family present (and per source)."""

from __future__ import annotations

from collections.abc import Sequence

from execbench.reports.families import family_tables
from execbench.reports.layouts import Layout, View, register_layout
from execbench.reports.tables import Table
from execbench.rundir import Results


def _sections(results: Sequence[Results], view: View) -> list[Table]:
    return family_tables(results, view.ks, by_source=view.by_source)


register_layout(Layout("default", "each task family's headline metrics with their intervals "
                       "and instance counts", _sections, by_source=True))
