"""What the numbers on a report mean, in one place.

A metric's meaning is its declaration's (``Metric.description``, which each task writes
beside the metric and ``results.json`` carries), so a new task's columns explain
themselves. What is left is said here once: the words the page itself uses (best, no
answer, lower is better, intervals), the words that mean two things in two places
(``suspicious``), and a meaning for the few metric names every family shares, for
results written before metrics carried a description.
"""

from __future__ import annotations

from collections.abc import Iterable

from execbench.results import DeclaredMetric

TERMS: dict[str, str] = {
    "best": "the top value of its column (the lowest where lower is better) among the runs "
            "of that suite that gave the task a readable answer; ties are all marked, and a "
            "leaderboard of one row marks nothing",
    "no answer": "greyed: the run gave the task no readable answer (every request failed, "
                 "or no answer could be read), so its number is no result, even a 0 where "
                 "lower is better",
    "lower is better": "marked ↓: a share of mistakes, where the smaller number wins",
    "interval": "95% bootstrap interval over instances: the range the number would likely "
                "fall in on another draw of instances like these",
    "n": "the instances a number is measured on; numbers on different counts or suites do "
         "not compare like with like",
    "pass@k": "share of instances with at least one right answer among k samples, "
              "estimated without bias from the n samples each run drew",
    "suite": "the benchmark folder the runs answered, as the run recorded it; runs of "
             "different suites are never put in one column",
    "incorrect": "an answer was read and it is wrong",
    "unparsable": "no answer could be read from the reply (no answer block, or not in the "
                  "form the task asks for)",
    "error": "no answer at all: the request failed, or the model could not give one (the "
             "oracle abstains where no answer is known)",
    "suspicious (simulation)": "share of samples whose output is right although the "
                               "model's own step-by-step simulation of the program breaks "
                               "a coherence rule: a right answer its reasoning does not "
                               "support (recall or luck, not execution)",
    "suspicious (bug vetting)": "a bug-task success whose simulation of the buggy program "
                                "is coherent but ends in a wrong output, with the first "
                                "wrong value before the bug's first line: the success "
                                "does not rest on seeing the bug",
}
"""The page's own words and the two readings of ``suspicious``."""

SHARED: dict[str, str] = {
    "pass@1": "share of instances answered right (type-aware comparison), averaged over "
              "samples",
    "string match": "share of samples whose answer, read as text, equals the truth's text "
                    "once both are normalized",
    "majority class": "share of samples whose truth is the suite's most common answer: "
                      "the accuracy of always giving it",
    "balanced accuracy": "mean over the answers in the truth of the share of samples right "
                         "among those with that truth",
    "suspicious": TERMS["suspicious (simulation)"],
}
"""Meanings by metric name, for declarations that carry none (results from before
metrics were described)."""


def meaning(metric: DeclaredMetric) -> str:
    """What the metric's number is: its declaration's description (``suspicious`` told
    apart from the bug-vetting class of that name), else the shared one for its name,
    else a line saying the results do not say."""
    said = TERMS["suspicious (simulation)"] if metric.name == "suspicious" \
        else metric.description or SHARED.get(metric.name, "")
    if not said:
        said = f"a {metric.task} number its results do not describe"
    return said if metric.higher_is_better else f"{said} (lower is better)"


def footnotes(metrics: Iterable[DeclaredMetric]) -> list[tuple[str, str]]:
    """Each distinct column's name (task and metric) and meaning, in order."""
    seen: dict[str, str] = {}
    for metric in metrics:
        seen.setdefault(f"{metric.task} {metric.name}", meaning(metric))
    return list(seen.items())
