"""The generalization report: execution prediction (OC, MC, OR, MR) and execution choice
(Pref, OC, MC, OR, MR) per source, the same by lines-of-code bin, and a plot of it.

Tables are (headers, rows) of strings for ``tables.render_table``; the plot needs the
``plot`` extra (matplotlib), imported only when a plot is asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from execbench.analysis.shape import bin_order
from execbench.report.layouts import Layout, Section, register_layout
from execbench.report.tables import percent, run_labels

PREDICTION, CHOICE = "mutation", "choice"
PREDICTION_KEYS = ("OC", "MC", "OR", "MR")
CHOICE_KEYS = ("Pref", "OC", "MC", "OR", "MR")


def _block(result: dict[str, Any], task: str) -> dict[str, Any]:
    return result.get("task_metrics", {}).get(task, {})


def table(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """One row per (run, source), as in the paper's Table 3."""
    headers = ["run", "source", *(f"prediction {k}" for k in PREDICTION_KEYS),
               *(f"choice {k}" for k in CHOICE_KEYS)]
    rows = []
    for label, result in zip(run_labels(results), results, strict=True):
        prediction, choice = _block(result, PREDICTION), _block(result, CHOICE)
        sources = sorted(set(prediction.get("by_source", {})) | set(choice.get("by_source", {})))
        for source in sources:
            p = prediction.get("by_source", {}).get(source, {})
            c = choice.get("by_source", {}).get(source, {})
            rows.append([label, source, *(percent(p.get(k)) for k in PREDICTION_KEYS),
                         *(percent(c.get(k)) for k in CHOICE_KEYS)])
    return headers, rows


def loc_table(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Execution prediction by lines-of-code bin (all sources together)."""
    headers = ["run", "LOC", *PREDICTION_KEYS, "problems"]
    rows = []
    for label, result in zip(run_labels(results), results, strict=True):
        by_loc = _block(result, PREDICTION).get("by_loc", {})
        for name in sorted(by_loc, key=bin_order):
            group = by_loc[name]
            rows.append([label, name, *(percent(group.get(k)) for k in PREDICTION_KEYS),
                         str(group.get("O_problems", 0))])
    return headers, rows


def plot(results: list[dict[str, Any]], path: Path) -> Path:
    """Fig. 4 style: one panel per run, OC/MC/OR/MR against lines of code."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RuntimeError("plots need matplotlib: pip install 'execbench[plot]'") from None
    labels = run_labels(results)
    figure, axes = plt.subplots(1, len(results), figsize=(4.5 * len(results), 3.6),
                                squeeze=False, sharey=True)
    for axis, label, result in zip(axes[0], labels, results, strict=True):
        bins = _block(result, PREDICTION).get("by_loc", {})
        names = sorted(bins, key=bin_order)
        for key, style in zip(PREDICTION_KEYS, ("o-", "s-", "o--", "s--"), strict=True):
            values = [bins[n].get(key) for n in names]
            points = [(i, 100 * v) for i, v in enumerate(values) if v is not None]
            if points:
                axis.plot([p[0] for p in points], [p[1] for p in points], style, label=key)
        axis.set_xticks(range(len(names)), names)
        axis.set_xlabel("lines of code")
        axis.set_title(label, fontsize=9)
        axis.set_ylim(-5, 105)
        axis.grid(alpha=0.3)
    axes[0][0].set_ylabel("% of samples")
    axes[0][-1].legend(loc="center right", fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def _sections(results: list[dict[str, Any]]) -> list[Section]:
    return [("Execution prediction and execution choice (%)", table(results)),
            ("Execution prediction by lines of code (%)", loc_table(results))]


register_layout(Layout("generalization", "OC/MC/OR/MR and choice, by source and by lines of "
                       "code", _sections, plot))
