"""How long scoring 4,000 output-prediction responses takes (the goal: under a second).

Usage: ``python bench/scoring.py [--data PATH] [--repeats N]``

Builds a CRUXEval output suite in a temporary folder, then makes five responses per
instance (800 x 5 = 4,000) in the shapes models write them: the oracle's answer as is,
after a ``<think>`` block, in a fenced code block, a wrong value, and a non-literal
answer. Each repeat extracts and scores all of them with the task's ``score``; the best
repeat is reported. Building the suite is not timed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from common import DEFAULT_DATA

from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks import get_task

GOAL_SECONDS = 1.0
REASONING = "<think>\n" + "The loop appends one more item to the result.\n" * 40 + "</think>\n"


def responses(instance: dict[str, Any]) -> list[str]:
    """Five responses to one instance: three right in different wrappings, two not."""
    task = get_task("output")
    right = task.asking.reference_response(instance)
    call = f"{instance['entry_point']}({instance['args']})"
    return [
        right,
        REASONING + right,
        f"Tracing the call gives:\n```python\nassert {call} == {instance['truth']['repr']}\n```",
        f"[ANSWER]\nassert {call} == ()\n[/ANSWER]",
        f"[ANSWER]\nassert {call} == sorted({instance['args']})\n[/ANSWER]",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="CRUXEval JSONL file (default: ../shared/data/cruxeval.jsonl)")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats (default 3)")
    options = parser.parse_args(argv)
    if not options.data.is_file():
        print(f"CRUXEval not found at {options.data}; pass --data", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory() as folder:
        build_suite([str(options.data)], Path(folder), BuildOptions(tasks=["output"]))
        _, instances, _ = load_suite(Path(folder))
    work = [(instance, text) for instance in instances for text in responses(instance)]

    task = get_task("output")
    timings: list[float] = []
    verdicts: Counter[str] = Counter()
    for _ in range(options.repeats):
        start = time.perf_counter()
        scores = [task.judging.score(instance, text, None) for instance, text in work]
        timings.append(time.perf_counter() - start)
        verdicts = Counter(score.verdict for score in scores)

    best = min(timings)
    tally = ", ".join(f"{verdict} {count}" for verdict, count in sorted(verdicts.items()))
    print(f"scored {len(work)} output predictions for {len(instances)} CRUXEval instances "
          f"({tally})")
    print(f"best of {options.repeats}: {best:.3f} s ({len(work) / best:,.0f} responses/s); "
          f"all repeats: {', '.join(f'{t:.3f}' for t in timings)} s")
    verdict = "yes" if best < GOAL_SECONDS else "NO"
    print(f"under {GOAL_SECONDS:g} s: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
