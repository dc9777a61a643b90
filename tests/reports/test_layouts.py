"""Layout figures keep every label whole: the saved picture is grown to hold what is drawn,
so a long rotated run label is never cut at the edge ("eference/oracle")."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import pytest

from execbench.reports.layouts import layouts
from execbench.rundir import read_results


@pytest.mark.parametrize("name", ["ces", "generalization"])
def test_long_run_labels_are_not_cut_at_the_pictures_edge(report_runs: list[Path],
                                                          name: str) -> None:
    """Two runs of one model, so each label carries its (long) folder: the picture's
    outer band of 3 pixels stays blank on every side."""
    pytest.importorskip("matplotlib")
    image = pytest.importorskip("PIL.Image", reason="the edge check needs Pillow")
    oracle = read_results(report_runs[0])
    runs = [replace(oracle, run_dir=report_runs[0].parent / "a-rather-long-folder" / name),
            oracle]
    with image.open(io.BytesIO(layouts()[name].draw(runs))) as drawn:
        grey = drawn.convert("L")
        width, height = grey.size
        for box in ((0, 0, 3, height), (width - 3, 0, width, height), (0, 0, width, 3),
                    (0, height - 3, width, height)):
            assert grey.crop(box).getextrema()[0] > 240, (name, box)
