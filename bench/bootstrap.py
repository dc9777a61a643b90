"""How long ``metrics.bootstrap_ci`` takes on large inputs, against drawing values one by one.

Usage: ``python bench/bootstrap.py [--resamples N] [--repeats N] [--sizes 1000,10000,124000]``

For each size, values of 0/1 (pass@1 with one sample; 70% ones) and of -1/0/1 (paired
differences of two such runs: 15% -1, 60% 0, 25% 1), in a fixed shuffled order. The
baseline is the resampling ``bootstrap_ci`` did before it counted levels: ``size`` values
drawn with ``random.choices`` per resample. Both run here one after the other, best of
``--repeats``; the script prints both times, their ratio, both intervals and the normal
approximation's (mean +- 1.96 standard errors), which all three must agree with to within
Monte Carlo error. A second table times both ways on data with more distinct values (k/L
for L levels), where counting must draw one binomial per level: it shows where counting
stops paying, which sets ``metrics.VALUES_PER_LEVEL``.
"""

from __future__ import annotations

import argparse
import math
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence

from execbench.metrics import VALUES_PER_LEVEL, _level_means, _percentile, bootstrap_ci

SHARES = {"0/1": {0.0: 0.30, 1.0: 0.70}, "-1/0/1": {-1.0: 0.15, 0.0: 0.60, 1.0: 0.25}}
Interval = tuple[float, float]


def one_by_one(values: Sequence[float], *, resamples: int = 1000, seed: int = 0,
               level: float = 0.95) -> Interval:
    """The baseline: each resample draws ``size`` values with ``random.choices``."""
    rng = random.Random(seed)
    pool = [float(v) for v in values]
    size = len(pool)
    means = sorted(sum(rng.choices(pool, k=size)) / size for _ in range(resamples))
    tail = (1.0 - level) / 2.0
    return (_percentile(means, tail), _percentile(means, 1.0 - tail))


def counted(values: Sequence[float], *, resamples: int = 1000, seed: int = 0,
            level: float = 0.95) -> Interval:
    """``bootstrap_ci``'s way of counting levels, whatever their number."""
    levels = sorted(Counter(float(v) for v in values).items())
    means = sorted(_level_means(levels, len(values), resamples, random.Random(seed)))
    tail = (1.0 - level) / 2.0
    return (_percentile(means, tail), _percentile(means, 1.0 - tail))


def data(shares: dict[float, float], size: int) -> list[float]:
    """``size`` values with each level's share (rounded), shuffled with a fixed seed."""
    values: list[float] = []
    for value, share in shares.items():
        values += [value] * round(share * size)
    values += [values[-1]] * (size - len(values))
    random.Random(1).shuffle(values)
    return values[:size]


def best(method: Callable[..., Interval], values: list[float], resamples: int,
         repeats: int) -> tuple[float, Interval]:
    """The fastest of ``repeats`` runs of ``method`` on ``values`` and the interval it gave."""
    times, interval = [], (math.nan, math.nan)
    for _ in range(repeats):
        start = time.perf_counter()
        interval = method(values, resamples=resamples)
        times.append(time.perf_counter() - start)
    return min(times), interval


def normal(values: Sequence[float]) -> tuple[float, float]:
    """Mean +- 1.96 standard errors."""
    size = len(values)
    mean = sum(values) / size
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / (size - 1) / size)
    return (mean - 1.96 * spread, mean + 1.96 * spread)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=1000, help="default 1000")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats (default 3)")
    parser.add_argument("--sizes", default="1000,10000,124000",
                        help="comma-separated numbers of values (default 1000,10000,124000)")
    options = parser.parse_args(argv)
    sizes = [int(size) for size in options.sizes.split(",")]
    print(f"{options.resamples} resamples, best of {options.repeats}")
    print(f"{'values':>8} {'levels':>7} {'one by one':>11} {'counted':>10} {'ratio':>8}  "
          "intervals (%): one by one | counted | normal")
    for name, shares in SHARES.items():
        for size in sizes:
            values = data(shares, size)
            old_time, old = best(one_by_one, values, options.resamples, options.repeats)
            new_time, new = best(bootstrap_ci, values, options.resamples, options.repeats)
            approx = normal(values)
            print(f"{size:>8,} {name:>7} {old_time:>10.3f}s {new_time:>9.4f}s "
                  f"{old_time / new_time:>7.0f}x  " + " | ".join(
                      f"[{100 * low:.3f}, {100 * high:.3f}]" for low, high in (old, new, approx)))
    crossover(options.resamples, options.repeats)
    return 0


def crossover(resamples: int, repeats: int) -> None:
    """Counting levels against drawing values, as values per level shrink."""
    print(f"\nvalues per level where counting pays (bootstrap_ci counts from "
          f"{VALUES_PER_LEVEL} on)")
    print(f"{'values':>8} {'levels':>7} {'per level':>9} {'one by one':>11} {'counted':>10} "
          f"{'ratio':>7}")
    for size in (1000, 10_000):
        for levels in (8, 16, 32, 64, 128):
            rng = random.Random(2)
            values = [rng.randrange(levels) / levels for _ in range(size)]
            distinct = len(set(values))
            old_time, _ = best(one_by_one, values, resamples, repeats)
            new_time, _ = best(counted, values, resamples, repeats)
            print(f"{size:>8,} {distinct:>7} {size / distinct:>9.0f} "
                  f"{old_time:>10.3f}s {new_time:>9.4f}s {old_time / new_time:>6.1f}x")


if __name__ == "__main__":
    raise SystemExit(main())
