"""Rewards per second: output prediction (nothing run), input prediction and bug repair
(sandboxed), in process and through ``execbench serve-rewards``, beside a baseline that
scores each answer in a fresh process. The goal: 20,000 output rewards/s in process.

Usage: ``python bench/rewards.py [--data PATH] [--programs N] [--baseline N]``

Builds a CRUXEval suite (output, input) of the first ``--programs`` programs and a
HumanEvalPack bug-repair suite of its first 20 problems, untimed. Responses: for output,
five per instance (the right answer bare, after a ``<think>`` block and fenced, a wrong
value, a non-literal); for input, the right call and a wrong one; for bug repair, the
fixed and the buggy function. Each is scored as a trainer's batch, best of 3 repeats; the
HTTP rate posts batches of 256 to a server on this machine. The baseline starts
``python`` for each answer (``--baseline`` answers of each task, 2 at a time), which
reads the ground truth and scores it: what a reward script that shells out per answer
costs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import DEFAULT_DATA

from execbench.reward_server import serving
from execbench.rewards import Rewarder, _read_text, truth_text
from execbench.sandbox.pool import Limits
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks import get_task

GOAL = 20_000
REASONING = "<think>\n" + "The loop appends one more item to the result.\n" * 40 + "</think>\n"
BASELINE = """
import json, sys
from execbench.rewards import Rewarder
truth, response = json.loads(sys.stdin.read())
with Rewarder() as rewarder:
    print(rewarder.reward(truth, response).value)
"""


def _work(folder: Path, data: Path, programs: int
          ) -> tuple[dict[str, list[tuple[str, str]]], set[Limits]]:
    """(ground truth, response) pairs per task, and the suites' limits (the server's)."""
    build_suite([str(data)], folder / "crux", BuildOptions(tasks=["output", "input"],
                                                           limit=programs))
    manifest, instances, _ = load_suite(folder / "crux")
    limits = {manifest.recipe.limits}
    work: dict[str, list[tuple[str, str]]] = {"output": [], "input": [], "bug-repair": []}
    for instance in instances:
        truth = truth_text(instance, manifest.recipe.limits)
        right = get_task(instance.task).asking.reference_response(instance)
        if instance.task == "output":
            call = instance.call
            answers = [right, REASONING + right,
                       f"```python\nassert {call} == {instance.data['truth']['repr']}\n```",
                       f"[ANSWER]\nassert {call} == ()\n[/ANSWER]",
                       f"[ANSWER]\nassert {call} == sorted({instance.args})\n[/ANSWER]"]
        else:
            answers = [right, f"[ANSWER]\n{instance.entry_point}(0)\n[/ANSWER]"]
        work[instance.task] += [(truth, answer) for answer in answers]
    pack = data.parent / "humanevalpack.jsonl.gz"
    if pack.is_file():
        build_suite([str(pack)], folder / "bugs", BuildOptions(tasks=["bug-repair"],
                                                               limit=20))
        manifest, instances, _ = load_suite(folder / "bugs")
        limits.add(manifest.recipe.limits)
        for instance in instances:
            truth = truth_text(instance, manifest.recipe.limits)
            fixed = get_task("bug-repair").asking.reference_response(instance)
            buggy = instance.code[instance.code.index(f"def {instance.entry_point}("):]
            work["bug-repair"] += [(truth, fixed), (truth, f"```python\n{buggy}```")]
    return work, limits


def _best(repeats: int, score: Callable[[], object]) -> float:
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        score()
        timings.append(time.perf_counter() - start)
    return min(timings)


def _post_all(url: str, pairs: list[tuple[str, str]]) -> list[float | None]:
    rewards: list[float | None] = []
    for start in range(0, len(pairs), 256):
        batch = pairs[start:start + 256]
        body = json.dumps({"ground_truths": [t for t, _ in batch],
                           "responses": [r for _, r in batch]}).encode()
        request = urllib.request.Request(url, data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=600) as response:
            rewards += json.loads(response.read())["rewards"]
    return rewards


def _fresh_processes(pairs: list[tuple[str, str]]) -> tuple[float, list[float | None]]:
    def one(pair: tuple[str, str]) -> float | None:
        done = subprocess.run([sys.executable, "-c", BASELINE], input=json.dumps(pair),
                              capture_output=True, text=True, check=True)
        value = done.stdout.strip()
        return None if value == "None" else float(value)

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=2) as pool:
        values = list(pool.map(one, pairs))
    return time.perf_counter() - start, values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="CRUXEval JSONL file (default: ../shared/data/cruxeval.jsonl)")
    parser.add_argument("--programs", type=int, default=200)
    parser.add_argument("--baseline", type=int, default=30,
                        help="answers per task scored a fresh process each (default 30)")
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args(argv)
    if not options.data.is_file():
        print(f"CRUXEval not found at {options.data}; pass --data", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        work, limits = _work(Path(folder), options.data, options.programs)
    print(f"{'task':11} {'answers':>8} {'in process/s':>13} {'HTTP/s':>9} "
          f"{'fresh process/s':>16} {'in process / fresh':>19}")
    with Rewarder(limits=limits) as rewarder:
        for task, pairs in work.items():
            if not pairs:
                print(f"{task:11} (no suite: humanevalpack.jsonl.gz not beside --data)")
                continue
            truths, answers = [t for t, _ in pairs], [r for _, r in pairs]
            expected = [r.value for r in rewarder.rewards(truths, answers)]  # warm

            def cold(truths: list[str] = truths, answers: list[str] = answers) -> None:
                _read_text.cache_clear()  # each ground truth read anew, as a new batch's are
                rewarder.rewards(truths, answers)

            local = _best(options.repeats, cold)
            with serving(rewarder) as url:
                served = _best(options.repeats, lambda url=url, pairs=pairs: _post_all(url, pairs))
                assert _post_all(url, pairs) == expected, "the service disagrees"
            sample = pairs[: options.baseline]
            fresh, values = _fresh_processes(sample)
            assert values == expected[: len(sample)], "the baseline disagrees"
            rates = (len(pairs) / local, len(pairs) / served, len(sample) / fresh)
            print(f"{task:11} {len(pairs):>8,} {rates[0]:>13,.0f} {rates[1]:>9,.0f} "
                  f"{rates[2]:>16,.1f} {rates[0] / rates[2]:>18,.0f}x")
            if task == "output":
                output_rate = rates[0]
    print(f"output prediction in process: {output_rate:,.0f} rewards/s; at least {GOAL:,}: "
          f"{'yes' if output_rate >= GOAL else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
