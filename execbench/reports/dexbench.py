"""The DexBench report: forward, backward and dual scores per source, the strict versus
relaxed view of coverage prediction, the failure taxonomy, and the suite's complexity; its
figure places each run's calls in the four forward x backward quadrants."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from execbench.reports.layouts import Layout, View, pyplot, register_layout
from execbench.reports.run_files import Unread, run_instances, run_log
from execbench.reports.tables import Cell, Table, percent, run_labels
from execbench.rundir import Results
from execbench.suite import SuiteError, SuiteFile
from execbench.tasks.base import CORRECT, ERROR
from execbench.tasks.dexbench_payload import Complexity, CounterfactualQuestion, complexity

FORWARD, BACKWARD, DUAL = "coverage", "counterfactual", "dual"


def _sources(results: Sequence[Results]) -> list[str]:
    return sorted({source for result in results
                   for task in (FORWARD, BACKWARD) if task in result.metrics
                   for source in result.metrics[task].by_source})


def dual_table(results: Sequence[Results], ks: list[int], *, paired: bool = False
               ) -> tuple[list[str], list[list[Cell]]]:
    """One row per run; per source, R_exec, R_cf and R_dual at each k."""
    dual_key = "paired_pass@{k}" if paired else "pass@{k}"
    headers = ["run"]
    sources = _sources(results)
    for source in sources:
        for name in ("R_exec", "R_cf", "R_dual"):
            headers += [f"{source} {name} k={k}" for k in ks]
    rows = []
    for label, result in zip(run_labels(results), results, strict=True):
        row: list[Cell] = [label]
        pairing = result.paired_metrics.get(DUAL)
        for source in sources:
            for task in (FORWARD, BACKWARD):
                block = result.metrics.get(task)
                group = None if block is None else block.group(source)
                row += [None if group is None else percent(group.pass_at_k(k)) for k in ks]
            pair = None if pairing is None else pairing.by_source.get(source)
            row += [None if pair is None else percent(pair.number(dual_key.format(k=k)))
                    for k in ks]
        rows.append(row)
    return headers, rows


def strict_relaxed_table(results: Sequence[Results]) -> tuple[list[str], list[list[Cell]]]:
    """Coverage prediction: exact-set pass@1 next to mean Jaccard similarity."""
    headers = ["run", "source", "strict pass@1 (%)", "relaxed Jaccard (%)", "gap"]
    rows: list[list[Cell]] = []
    for label, result in zip(run_labels(results), results, strict=True):
        block = result.metrics.get(FORWARD)
        by_source = {} if block is None else block.by_source
        for source in sorted(by_source):
            group = by_source[source]
            strict, relaxed = percent(group.pass_at_k(1)), percent(group.score)
            gap = None if strict is None or relaxed is None else relaxed - strict
            rows.append([label, source, strict, relaxed, gap])
    return headers, rows


def quadrant_table(results: Sequence[Results]) -> tuple[list[str], list[list[Cell]]]:
    """Per run and source, where the calls fall: forward and backward both right, forward
    only, backward only, neither (DexBench's per-program figure)."""
    headers = ["run", "source", "calls", "both (%)", "forward only (%)", "backward only (%)",
               "neither (%)"]
    rows: list[list[Cell]] = []
    for label, result in zip(run_labels(results), results, strict=True):
        pairing = result.paired_metrics.get(DUAL)
        if pairing is None:
            continue
        for source, group in sorted(pairing.by_source.items()):
            shares = group.quadrants
            rows.append([label, source, group.pairs, *(
                [None] * 4 if shares is None else
                [percent(shares.both), percent(shares.first_only),
                 percent(shares.second_only), percent(shares.neither)])])
    return headers, rows


QUADRANTS = (("both", "tab:green"), ("forward only", "tab:blue"),
             ("backward only", "tab:orange"), ("neither", "tab:red"))


def figure(results: Sequence[Results]) -> Any:
    """Per run and source, a bar of its calls split into the four quadrants (the table's
    numbers); runs from before quadrants were counted have no bar."""
    plt = pyplot()
    _, rows = quadrant_table(results)
    bars = [(f"{row[0]}\n{row[1]}", shares) for row in rows
            if len(shares := [v for v in row[3:] if isinstance(v, float)]) == 4]
    fig, axis = plt.subplots(figsize=(7.0, 0.45 * max(len(bars), 1) + 1.4))
    left = [0.0] * len(bars)
    for index, (name, colour) in enumerate(QUADRANTS):
        widths = [shares[index] for _, shares in bars]
        axis.barh(range(len(bars)), widths, left=left, color=colour, label=name)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    axis.set_yticks(range(len(bars)), [name for name, _ in bars], fontsize=8)
    axis.invert_yaxis()
    axis.set_xlim(0, 100)
    axis.set_xlabel("% of calls (sample i of coverage and of counterfactual)")
    axis.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4, fontsize=8)
    fig.tight_layout()
    return fig


def failure_table(results: Sequence[Results]) -> tuple[list[str], list[list[Cell]]]:
    """Counts of each automatically labelled failure, per run and task."""
    names = sorted({name for result in results for task in (FORWARD, BACKWARD)
                    if task in result.metrics for name in result.metrics[task].all.failures})
    headers = ["run", "task", *names]
    rows: list[list[Cell]] = []
    for label, result in zip(run_labels(results), results, strict=True):
        for task in (FORWARD, BACKWARD):
            if task in result.metrics:
                failures = result.metrics[task].all.failures
                rows.append([label, task, *(failures.get(n, 0) for n in names)])
    return headers, rows


def unwitnessed_table(results: Sequence[Results]) -> tuple[list[str], list[list[Cell]]]:
    """Per run with counterfactual targets kept without a witness (``-T unwitnessed=keep``):
    how many, and its samples on them right, wrong and without an answer (the oracle
    abstains on them: an error). No row where a run has none, or its suite or log cannot
    be read (the other tables still show)."""
    headers = ["run", "targets without witness", "samples", "correct", "not correct",
               "no answer"]
    rows: list[list[Cell]] = []
    for label, result in zip(run_labels(results), results, strict=True):
        if BACKWARD not in result.metrics:
            continue
        try:
            unwitnessed = {instance.id for instance in run_instances(result)
                           if instance.task == BACKWARD and CounterfactualQuestion
                           .from_record(instance.data).witness is None}
            verdicts = [sample.verdict for sample in run_log(result)
                        if sample.instance_id in unwitnessed] if unwitnessed else []
        except Unread:
            continue
        if unwitnessed:
            errors, right = verdicts.count(ERROR), verdicts.count(CORRECT)
            rows.append([label, len(unwitnessed), len(verdicts), right,
                         len(verdicts) - right - errors, errors])
    return headers, rows


def _complexities(folder: Path) -> dict[str, dict[str, Complexity]]:
    """Per source, per program, the complexity its DexBench instances state; none for a
    folder that is not a suite this execbench reads (as ``ces-vetting`` does)."""
    found: dict[str, dict[str, Complexity]] = {}
    try:
        for instance in SuiteFile.open(folder).instances():
            shape = complexity(instance)
            if shape is not None:
                found.setdefault(instance.source, {})[instance.program_id] = shape
    except (SuiteError, OSError):
        return {}
    return found


def complexity_table(suite_dirs: list[Path]) -> tuple[list[str], list[list[Cell]]]:
    """Lines of code and cyclomatic complexity of the suites' selected programs."""
    headers = ["suite", "source", "programs", "LOC min", "LOC max", "LOC mean", "LOC std",
               "CC min", "CC max", "CC mean", "CC std", "CO", "LO", "LC", "Others"]
    rows: list[list[Cell]] = []
    for folder in suite_dirs:
        shapes = _complexities(folder)
        for source in sorted(shapes):
            programs = list(shapes[source].values())
            row: list[Cell] = [str(folder), source, len(programs)]
            for values in ([p.loc for p in programs], [p.cyclomatic for p in programs]):
                spread = statistics.stdev(values) if len(values) > 1 else 0.0
                row += [min(values), max(values), float(statistics.mean(values)), spread]
            categories = [p.category for p in programs]
            row += [categories.count(c) for c in ("CO", "LO", "LC", "Others")]
            rows.append(row)
    return headers, rows


def _sections(results: Sequence[Results], view: View) -> list[Table]:
    suites = sorted({Path(r.config.suite) for r in results})
    ks = ", ".join(map(str, view.ks))
    return [
        Table("Dual-path reasoning, pass@k (%)", *dual_table(results, view.ks),
              note=f"R_exec: coverage prediction (executed lines exactly right); R_cf: "
                   f"counterfactual (the target branch runs); R_dual: both on the same call, "
                   f"the product of per-call pass@k; k = {ks}."),
        Table("R_dual, paired reading (sample i of both tasks) (%)",
              *dual_table(results, view.ks, paired=True),
              note="Sample i of coverage and sample i of counterfactual must both be right."),
        Table("Forward and backward on the same call (%)", *quadrant_table(results), keys=2,
              note="Sample i of coverage (forward) and of counterfactual (backward) on one "
                   "call, each call weighing one: both right, forward only, backward only, "
                   "neither (DexBench's per-program view). Runs from before it was counted "
                   "show -."),
        Table("Coverage prediction: strict vs relaxed", *strict_relaxed_table(results), keys=2,
              note="strict: the executed-line set exactly right; relaxed: mean Jaccard "
                   "similarity of predicted and executed lines; gap: relaxed - strict, points."),
        Table("Failure taxonomy (samples)", *failure_table(results), keys=2),
        *([Table("Counterfactual targets kept without a witness", *unwitnessed,
                 note="Kept by -T unwitnessed=keep, as DexBench keeps them: no input reaching "
                      "the target was found when the suite was built. An answer is still "
                      "judged by running it; reference/oracle has none to give and abstains "
                      "(no answer).")]
          if (unwitnessed := unwitnessed_table(results))[1] else []),
        Table("Suite complexity", *complexity_table([s for s in suites if s.is_dir()]), keys=2,
              digits=2,
              note="LOC: lines of code; CC: cyclomatic complexity; CO: an if but no loop; "
                   "LO: a loop but no if; LC: both; Others: neither."),
    ]


register_layout(Layout("dexbench", "R_exec / R_cf / R_dual per source, forward against "
                       "backward per call, strict vs relaxed, failure taxonomy, suite "
                       "complexity (DexBench)", _sections, figure))
