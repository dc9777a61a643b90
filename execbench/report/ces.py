"""The CES report: the paper's Table 1 (four coherence x output classes per construct
category, one column per run), the coherence rules that fired, the divergence kinds per
category (Figure 7's data), and the consistency of each program's calls (Figure 6's data,
also drawn as a PNG with ``--plot``).

Every table function returns (headers, rows) of strings for ``tables.render_table``; the
plot needs the ``plot`` extra (matplotlib), imported only when a plot is asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from execbench.report.layouts import Layout, Section, register_layout
from execbench.report.tables import MISSING, percent, run_labels

TASK = "simulation"
CATEGORIES = ("CO", "LO", "LC", "Others")
RULES = ("rule1", "rule2", "rule3")
LEVELS = ("strong", "weak", "random")
"""The keys of ``task_metrics.simulation`` this report reads (reports reach tasks only
through the results, never by importing them)."""
KINDS = ("loop variable", "iterable", "predicate", "branch", "output")
_CLASS_LABELS = {"coherent_correct": ("coherent", "correct output"),
                 "coherent_incorrect": ("coherent", "wrong output"),
                 "incoherent_correct": ("incoherent", "correct output"),
                 "incoherent_incorrect": ("incoherent", "wrong output")}


def _block(result: dict[str, Any]) -> dict[str, Any]:
    return result.get("task_metrics", {}).get(TASK, {})


def _groups(result: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    block = _block(result)
    by_category = block.get("by_category", {})
    return [*((name, by_category.get(name, {})) for name in CATEGORIES),
            ("Total", block.get("all", {}))]


def _named(name: str, group: dict[str, Any]) -> str:
    return f"{name} ({group['samples']})" if group.get("samples") else name


def table1(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Rows: category x class; columns: runs (shares of the category's samples, %)."""
    headers = ["programs", "reasoning", "output", *run_labels(results)]
    rows = []
    first = _groups(results[0])
    for position, (name, group) in enumerate(first):
        for key, (reasoning, output) in _CLASS_LABELS.items():
            cells = [percent(_groups(result)[position][1].get(key)) for result in results]
            rows.append([_named(name, group), reasoning, output, *cells])
    return headers, rows


def rules_table(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Samples on which each rule fired, with the unreadable and failed ones."""
    headers = ["run", "samples", *RULES, "unparsable", "errors"]
    rows = []
    for label, result in zip(run_labels(results), results, strict=True):
        group = _block(result).get("all", {})
        fired = group.get("rules", {})
        rows.append([label, str(group.get("samples", MISSING)),
                     *(str(fired.get(rule, MISSING)) for rule in RULES),
                     str(group.get("unparsable", MISSING)), str(group.get("errors", MISSING))])
    return headers, rows


def divergence_table(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Coherent samples with a wrong output, by the kind of their first wrong property."""
    headers = ["run", "programs", *KINDS, "statement states (LV LI P B)"]
    rows = []
    for label, result in zip(run_labels(results), results, strict=True):
        for name, group in _groups(result):
            kinds = group.get("divergence", {})
            states = group.get("quadruples", {})
            rows.append([label, name, *(str(kinds.get(kind, 0)) for kind in KINDS),
                         " ".join(f"{k}:{v}" for k, v in states.items()) or MISSING])
    return headers, rows


def consistency_table(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Programs by consistency across their calls (%), and how many could differ."""
    headers = ["run", "programs", *LEVELS, "with two coverages", "count"]
    rows = []
    for label, result in zip(run_labels(results), results, strict=True):
        block = _block(result)
        by_category = block.get("consistency_by_category", {})
        groups = [*((name, by_category.get(name, {})) for name in CATEGORIES),
                  ("Total", block.get("consistency", {}))]
        for name, group in groups:
            rows.append([label, name, *(percent(group.get(level)) for level in LEVELS),
                         percent(group.get("different_coverage")),
                         str(group.get("programs", MISSING))])
    return headers, rows


def plot(results: list[dict[str, Any]], path: Path) -> Path:
    """Figure 6 style: per run, the share of programs simulated with strong, weak and
    random consistency as stacked bars, and the share whose calls differ in coverage as a
    line (the most a run could have strong)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RuntimeError("plots need matplotlib: pip install 'execbench[plot]'") from None
    labels = run_labels(results)
    groups = [_block(result).get("consistency", {}) for result in results]
    figure, axis = plt.subplots(figsize=(1.2 * len(results) + 2.5, 3.6))
    bottom = [0.0] * len(results)
    for level, colour in zip(LEVELS, ("tab:green", "tab:orange", "tab:red"), strict=True):
        heights = [100 * (group.get(level) or 0.0) for group in groups]
        axis.bar(range(len(results)), heights, bottom=bottom, color=colour, label=level)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    differing = [100 * (group.get("different_coverage") or 0.0) for group in groups]
    axis.plot(range(len(results)), differing, "k--", label="two coverages")
    axis.set_xticks(range(len(results)), labels, rotation=30, ha="right", fontsize=8)
    axis.set_ylabel("% of programs")
    axis.set_ylim(0, 105)
    axis.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def _sections(results: list[dict[str, Any]]) -> list[Section]:
    return [("Execution simulation: coherence x output per construct category "
             "(% of samples)", table1(results)),
            ("Coherence rules that fired (samples)", rules_table(results)),
            ("Divergence points of coherent simulations with a wrong output (samples)",
             divergence_table(results)),
            ("Consistency across each program's calls (% of programs)",
             consistency_table(results))]


register_layout(Layout("ces", "CES Table 1 per construct category, rules fired, divergence "
                       "kinds, consistency", _sections, plot))
