"""The ``ces`` report layout: Table 1 with one column per run, the rules fired, the
divergence kinds and the consistency shares, from ``results.json`` records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from execbench.report.ces import (
    consistency_table,
    divergence_table,
    plot,
    rules_table,
    table1,
)
from execbench.report.layouts import layouts


def _group(samples: int, share: float, **more: Any) -> dict[str, Any]:
    return {"samples": samples, "coherent_correct": share, "coherent_incorrect": 1 - share,
            "incoherent_correct": 0.0, "incoherent_incorrect": 0.0, "errors": 0,
            "unparsable": 0, "rules": {"rule1": 1, "rule2": 0, "rule3": 2}, **more}


def _result(model: str, share: float) -> dict[str, Any]:
    groups = {name: _group(4, share, divergence={"iterable": 2}, quadruples={"TF--": 2})
              for name in ("CO", "LO", "LC", "Others")}
    level = {"strong": share, "weak": 0.0, "random": 1 - share, "programs": 3,
             "different_coverage": 2 / 3}
    return {"run": {"model": model, "run_dir": model}, "task_metrics": {"simulation": {
        "all": _group(16, share), "by_category": groups, "consistency": level,
        "consistency_by_category": dict.fromkeys(groups, level)}}}


def test_the_ces_layout_is_registered_and_shows_every_table() -> None:
    results = [_result("m1", 0.5), _result("m2", 0.25)]
    assert "ces" in layouts()
    headers, rows = table1(results)
    assert headers == ["programs", "reasoning", "output", "m1", "m2"]
    assert len(rows) == 5 * 4
    assert rows[0] == ["CO (4)", "coherent", "correct output", "50.0", "25.0"]
    assert rows[-4][:3] == ["Total (16)", "coherent", "correct output"]
    assert rules_table(results)[1][0] == ["m1", "16", "1", "0", "2", "0", "0"]
    divergence = divergence_table(results)[1]
    assert divergence[0] == ["m1", "CO", "0", "2", "0", "0", "0", "TF--:2"]
    assert consistency_table(results)[1][-1] == ["m2", "Total", "25.0", "0.0", "75.0", "66.7",
                                                 "3"]
    assert [title for title, _ in layouts()["ces"].sections(results)][0].startswith(
        "Execution simulation")


def test_the_consistency_figure_is_drawn(tmp_path: Path) -> None:
    path = plot([_result("m1", 0.5), _result("m2", 0.25)], tmp_path / "figs" / "ces.png")
    assert path.read_bytes().startswith(b"\x89PNG")
