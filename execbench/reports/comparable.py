"""Whether runs put side by side answered the same questions.

Two runs of one task on different suites (HumanEval's 1,166 output instances against
CRUXEval's 20), or on one suite cut short by ``--limit`` or an interrupted run, share a
column in every layout; their numbers then do not compare like with like, and the reader
must be told so before reading them.
"""

from __future__ import annotations

from collections.abc import Sequence

from execbench.rundir import Results


def coverage_warning(results: Sequence[Results]) -> str | None:
    """One line naming the tasks the runs answered on different instances (other counts,
    or as many from another suite), or None when every task shared by several runs was
    answered on the same ones."""
    tasks = sorted({task for result in results for task in result.metrics})
    differing = []
    suites_differ = False
    for task in tasks:
        answered = [(result.suite_sha256, result.metrics[task].all.instances)
                    for result in results if task in result.metrics]
        if len(set(answered)) < 2:
            continue
        counts = sorted({count for _, count in answered}, reverse=True)
        if len(counts) > 1:
            differing.append(f"{task}: {' vs '.join(map(str, counts))}")
        else:
            differing.append(f"{task}: {counts[0]} each")
        suites_differ |= len({suite for suite, _ in answered}) > 1
    if not differing:
        return None
    where = "; suites differ" if suites_differ else ""
    return (f"the runs compared do not cover the same instances ({'; '.join(differing)} "
            f"instances{where}), so their numbers do not compare like with like")
