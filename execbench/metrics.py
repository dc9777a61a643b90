"""Metrics over a run's samples: pass@k, accuracy with a bootstrap interval, verdict counts.

Everything here is a pure function of the sample records, so a results file can always be
rebuilt from ``samples.jsonl`` and two rebuilds agree bit for bit (the bootstrap is seeded).

A sample whose verdict is ``"error"`` (the request failed, so there is no answer) is a failure
in every metric rather than being dropped: dropping it would reward a model for timing out on
the hard instances. How many there were stays visible in the ``verdicts`` counts.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence

from execbench.kept import Kept
from execbench.results import (
    Cost,
    Group,
    Latency,
    Paired,
    PairedGroup,
    Quadrants,
    TaskMetrics,
    Usage,
)
from execbench.tasks.base import ERROR
from execbench.tasks.common.taxonomy_payload import LABEL_KEY


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k samples drawn from n (c of them correct) is correct.

    This is the unbiased estimator ``1 - C(n-c, k) / C(n, k)``. The ratio of binomials is
    evaluated as ``prod_{i=n-c+1}^{n} (1 - k/i)`` so that large n never builds huge integers
    or overflows a float.
    """
    if k < 1 or k > n:
        raise ValueError(f"pass@k needs 1 <= k <= n, got k={k}, n={n}")
    if not 0 <= c <= n:
        raise ValueError(f"correct count must lie in [0, n], got c={c}, n={n}")
    if n - c < k:
        # Every k-subset must contain a correct sample.
        return 1.0
    failure = 1.0
    for i in range(n - c + 1, n + 1):
        failure *= 1.0 - k / i
    return 1.0 - failure


def bootstrap_ci(
    values: Sequence[float], *, resamples: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval for the mean of ``values``.

    The interval is over instances, so it reflects how much the score would move on a
    different draw of benchmark problems of the same kind. A private ``random.Random`` keeps
    it reproducible without touching the global generator. One value has no spread to
    resample, so its interval collapses to the value; no values give ``(nan, nan)``.

    Benchmark scores take few distinct levels (0/1, -1/0/1 for paired differences, k/n
    with n samples), and a resample's sum then depends only on how many copies of each
    level it drew: a multinomial count, drawn exactly in a handful of binomial draws
    however many values there are. Data with fewer than ``VALUES_PER_LEVEL`` values per
    distinct value are resampled value by value, which is as quick there.
    """
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")
    size = len(values)
    if size == 0:
        return (math.nan, math.nan)
    if size == 1:
        only = float(values[0])
        return (only, only)
    rng = random.Random(seed)
    pool = [float(v) for v in values]
    counts = Counter(pool)
    if len(counts) * VALUES_PER_LEVEL <= size:
        means = _level_means(sorted(counts.items()), size, resamples, rng)
    else:
        # random.choices + sum keeps the inner loop in C.
        means = [sum(rng.choices(pool, k=size)) / size for _ in range(resamples)]
    means.sort()
    tail = (1.0 - level) / 2.0
    return (_percentile(means, tail), _percentile(means, 1.0 - tail))


# A level's binomial draw costs about as much as drawing 25 values one by one, so counting
# levels pays where there are at least this many values per level (measured by
# bench/bootstrap.py's second table).
VALUES_PER_LEVEL = 32


def _level_means(levels: list[tuple[float, int]], size: int, resamples: int,
                 rng: random.Random) -> list[float]:
    """Means of ``resamples`` bootstrap resamples of data holding each level ``count``
    times. The counts of a resample are Multinomial(size; count / size), drawn as each
    level's binomial share of what the levels before it left."""
    means = []
    for _ in range(resamples):
        left, mass, total = size, size, []
        for value, count in levels[:-1]:
            drawn = _binomial(left, count / mass, rng)
            total.append(value * drawn)
            left -= drawn
            mass -= count
        total.append(levels[-1][0] * left)
        means.append(math.fsum(total) / size)
    return means


def _binomial(n: int, p: float, rng: random.Random) -> int:
    """An exact Binomial(n, p) draw from ``rng.random()`` and ``math`` alone, so a seed gives
    the same draws on every Python version (``random.binomialvariate`` is 3.12 and later)."""
    if n <= 0 or p <= 0.0:
        return 0
    if p >= 1.0:
        return n
    if p > 0.5:
        return n - _binomial(n, 1.0 - p, rng)
    if n * p < 10.0:
        return _binomial_inversion(n, p, rng)
    return _binomial_btrs(n, p, rng)


def _binomial_inversion(n: int, p: float, rng: random.Random) -> int:
    """Inversion from 0: walk the pmf up until it covers a uniform draw (expected n*p + 1
    steps). Should rounding leave the uniform past every term, it draws again."""
    ratio = p / (1.0 - p)
    first = math.exp(n * math.log1p(-p))
    while True:
        u = rng.random()
        k, term = 0, first
        while u >= term:
            u -= term
            k += 1
            term *= ratio * (n - k + 1) / k
            if k > n or term == 0.0:
                break
        else:
            return k


def _binomial_btrs(n: int, p: float, rng: random.Random) -> int:
    """Hörmann's transformed rejection with squeeze (BTRS, 1993) for p <= 1/2 and
    n*p >= 10: a candidate from a hat over the pmf, kept by comparing a uniform with the
    pmf's ratio to its value at the mode, about 1.2 pairs of uniforms a draw whatever n."""
    q = 1.0 - p
    spq = math.sqrt(n * p * q)
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    squeeze = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    log_odds = math.log(p / q)
    mode = math.floor((n + 1) * p)
    while True:
        u = rng.random() - 0.5
        v = rng.random()
        us = 0.5 - abs(u)
        k = math.floor((2.0 * a / us + b) * u + c)
        if k < 0 or k > n:
            continue
        if us >= 0.07 and v <= squeeze:
            return k
        # log pmf(k) - log pmf(mode)
        ratio = (_log_factorial_ratio(mode, k) + _log_factorial_ratio(n - mode, n - k)
                 + (k - mode) * log_odds)
        if math.log(v * alpha / (a / (us * us) + b)) <= ratio:
            return k


def _log_factorial_ratio(a: int, b: int) -> float:
    """log(a!) - log(b!), without the cancellation of two huge ``lgamma`` values when both
    are large (Stirling's series with the difference of logs as ``log1p``), so the
    acceptance test above stays accurate for any n."""
    if min(a, b) < 16:
        return math.lgamma(a + 1) - math.lgamma(b + 1)
    return (_stirling(a, b) + _stirling_tail(a) - _stirling_tail(b))


def _stirling(a: int, b: int) -> float:
    """(a + 1/2) log(a + 1) - (b + 1/2) log(b + 1) - (a - b), the main part of
    log(a!) - log(b!) by Stirling, written so that no two large terms cancel."""
    return (a + 0.5) * math.log1p((a - b) / (b + 1)) + (a - b) * (math.log(b + 1) - 1.0)


def _stirling_tail(x: int) -> float:
    """log(x!) minus its Stirling main part, (x + 1/2) log(x + 1) - (x + 1) + log(2 pi)/2:
    the series in 1/(x + 1), accurate to about 1e-14 from x = 15."""
    z = x + 1.0
    z2 = z * z
    return (1.0 / 12.0 - (1.0 / 360.0 - (1.0 / 1260.0 - 1.0 / (1680.0 * z2)) / z2) / z2) / z


def _percentile(ordered: Sequence[float], q: float) -> float:
    """The q-quantile of sorted data, interpolating linearly between neighbouring ranks."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    fraction = position - below
    return ordered[below] + (ordered[above] - ordered[below]) * fraction


def verdict_counts(samples: Iterable[Kept]) -> dict[str, int]:
    """How many samples received each verdict, keyed by verdict in sorted order."""
    counts = Counter(sample.verdict for sample in samples)
    return {verdict: counts[verdict] for verdict in sorted(counts)}


def summarize(samples: Iterable[Kept], n: int,
              categories: Mapping[str, Mapping[str, Mapping[str, str]]] | None = None
              ) -> dict[str, TaskMetrics]:
    """The ``metrics`` block of results.json: per task, overall, per source and per
    category of each breakdown its task declares.

    ``n`` is the number of samples the run asked for per instance; it bounds which pass@k
    are reported, since pass@k for k beyond what was requested would be meaningless.
    ``categories`` gives, per task, each breakdown's category of every instance
    (``{task: {breakdown: {instance_id: category}}}``, from ``Task.breakdowns``).
    Tasks, sources and categories come sorted.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    by_task: dict[str, list[Kept]] = defaultdict(list)
    for sample in samples:
        by_task[sample.task].append(sample)

    metrics = {}
    for task in sorted(by_task):
        task_samples = by_task[task]
        splits = (categories or {}).get(task) or {}
        metrics[task] = TaskMetrics(
            all=_group_metrics(task_samples, n),
            by_source=_split(task_samples, n, lambda sample: sample.source),
            breakdowns={name: _split(task_samples, n, _category_of(splits[name]))
                        for name in sorted(splits)})
    return metrics


def _category_of(categories: Mapping[str, str]) -> Callable[[Kept], str]:
    """A sample's category, looked up by its instance."""
    return lambda sample: categories[sample.instance_id]


def _split(samples: list[Kept], n: int, key: Callable[[Kept], str]
           ) -> dict[str, Group]:
    """A group's metrics for each value of ``key``, in sorted order."""
    parts: dict[str, list[Kept]] = defaultdict(list)
    for sample in samples:
        parts[key(sample)].append(sample)
    return {name: _group_metrics(parts[name], n) for name in sorted(parts)}


def is_correct(sample: Kept) -> bool:
    """Whether a sample counts as solved; a failed request never does, whatever it claims."""
    return bool(sample.correct) and sample.verdict != ERROR


def _group_metrics(samples: list[Kept], n: int) -> Group:
    """Metrics for one set of samples (a task, or a task restricted to one source).

    Instances are the unit: accuracy and pass@k average per-instance values, so an instance
    that happens to have more samples does not weigh more. An instance with fewer than k
    samples cannot estimate pass@k and is left out of it; ``rested_on`` then says how many
    instances that figure rests on (pass@k is None if none qualify).
    """
    per_instance: dict[str, list[Kept]] = defaultdict(list)
    for sample in samples:
        per_instance[sample.instance_id].append(sample)
    # Instances in id order: the log's order depends on which request finished first, and
    # the bootstrap must not.
    groups = [per_instance[key] for key in sorted(per_instance)]
    tallies = [(len(group), sum(is_correct(s) for s in group)) for group in groups]
    instances = len(tallies)

    passes: list[float | None] = []
    rested_on: list[int] = []
    for k in range(1, n + 1):
        estimates = [pass_at_k(size, correct, k) for size, correct in tallies if size >= k]
        passes.append(sum(estimates) / len(estimates) if estimates else None)
        rested_on.append(len(estimates))

    fractions = [correct / size for size, correct in tallies]
    instance_scores = []
    for group in groups:
        scores = [float(s.score) for s in group if s.score is not None]
        if scores:
            instance_scores.append(sum(scores) / len(scores))
    failures = Counter(failure for s in samples
                       if isinstance(failure := s.added("failure"), str))
    errors = Counter(label for s in samples if isinstance(label := s.added(LABEL_KEY), str))
    return Group(instances=instances, samples=len(samples), pass_at=tuple(passes),
                 rested_on=tuple(rested_on), accuracy=sum(fractions) / instances,
                 accuracy_ci95=bootstrap_ci(fractions), verdicts=verdict_counts(samples),
                 score=sum(instance_scores) / len(instance_scores) if instance_scores else None,
                 failures={name: failures[name] for name in sorted(failures)},
                 errors={name: errors[name] for name in sorted(errors)})


def paired_summary(samples: Iterable[Kept], n: int, first: str,
                   second: str) -> Paired:
    """Success on two tasks posed on the same (program, call), e.g. DexBench's dual score.

    Instances pair up when their ids agree after the task name. Two readings:

    * ``pass@k``: the product of the two tasks' per-pair unbiased pass@k. When the samples
      of the two tasks are drawn independently, P(some of k first-task samples pass and
      some of k second-task samples pass) factorises, so the product of two unbiased
      estimates is an unbiased estimate of the dual pass@k.
    * ``paired_pass@k``: sample i of one task is matched with sample i of the other, a
      pair counts as correct when both are, and pass@k is taken over those pairs (the
      paper's reading).
    """
    tallies: dict[str, dict[str, list[bool]]] = defaultdict(lambda: {first: [], second: []})
    sources: dict[str, str] = {}
    by_index: dict[tuple[str, str], dict[int, bool]] = defaultdict(dict)
    for sample in samples:
        if sample.task not in (first, second):
            continue
        key = sample.instance_id.split("/", 1)[1]
        sources[key] = sample.source
        tallies[key][sample.task].append(is_correct(sample))
        by_index[(key, sample.task)][sample.sample] = is_correct(sample)
    keys = sorted(k for k, t in tallies.items() if t[first] and t[second])
    groups: dict[str, list[str]] = defaultdict(list)
    for key in keys:
        groups[sources[key]].append(key)

    def quadrants(members: list[str]) -> Quadrants | None:
        """The shares of matched sample pairs in each quadrant, each call weighing one."""
        shares = [0.0, 0.0, 0.0, 0.0]
        counted = 0
        for key in members:
            common = by_index[(key, first)].keys() & by_index[(key, second)].keys()
            if not common:
                continue
            counted += 1
            for i in common:
                a, b = by_index[(key, first)][i], by_index[(key, second)][i]
                shares[(0 if b else 1) if a else (2 if b else 3)] += 1 / len(common)
        return Quadrants(*(share / counted for share in shares)) if counted else None

    def block(members: list[str]) -> PairedGroup:
        independent_at: list[float | None] = []
        paired_at: list[float | None] = []
        for k in range(1, n + 1):
            independent, paired = [], []
            for key in members:
                a, b = tallies[key][first], tallies[key][second]
                if len(a) >= k and len(b) >= k:
                    independent.append(pass_at_k(len(a), sum(a), k) * pass_at_k(len(b), sum(b), k))
                common = by_index[(key, first)].keys() & by_index[(key, second)].keys()
                both = sum(by_index[(key, first)][i] and by_index[(key, second)][i]
                           for i in common)
                if len(common) >= k:
                    paired.append(pass_at_k(len(common), both, k))
            independent_at.append(sum(independent) / len(independent) if independent else None)
            paired_at.append(sum(paired) / len(paired) if paired else None)
        return PairedGroup(len(members), tuple(independent_at), tuple(paired_at),
                           quadrants(members))

    return Paired(tasks=(first, second), all=block(keys),
                  by_source={source: block(groups[source]) for source in sorted(groups)})


def percentile(ordered: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile of an ascending, non-empty sequence: a value that was
    actually observed, so a p99 over few samples is the slowest one, not an extrapolation."""
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def usage_summary(samples: Iterable[Kept], wall_seconds: float,
                  price_input: float | None = None,
                  price_output: float | None = None) -> Usage:
    """The ``usage`` block of results.json: what a run cost, from its sample records.

    ``requests`` counts every attempt sent (``retries`` those beyond the first); token
    counts add what the servers reported (samples without usage add nothing, and
    ``samples_without_usage`` says how many). Latency is per sample, all attempts and
    back-off included, the wait a user sees. ``cost`` appears when a price per million
    tokens is given for both directions, in the unit of those prices. Records written
    before a field existed count as lacking it, so older runs still summarize.
    """
    samples = list(samples)
    latencies = sorted(s.latency for s in samples if s.latency is not None)
    requests = sum(s.attempts or 0 for s in samples)
    input_tokens = sum(s.input_tokens or 0 for s in samples)
    output_tokens = sum(s.output_tokens or 0 for s in samples)
    endpoints = Counter(s.endpoint for s in samples if s.endpoint is not None)
    cost = None
    if price_input is not None and price_output is not None:
        cost = Cost(input=input_tokens * price_input / 1e6,
                    output=output_tokens * price_output / 1e6,
                    price_input_per_million=price_input, price_output_per_million=price_output)
    return Usage(
        samples=len(samples), requests=requests,
        retries=requests - sum(1 for s in samples if s.attempts),
        input_tokens=input_tokens, output_tokens=output_tokens,
        samples_without_usage=sum(1 for s in samples if s.output_tokens is None),
        latency_seconds=Latency(
            mean=sum(latencies) / len(latencies), p50=percentile(latencies, 0.5),
            p90=percentile(latencies, 0.9), p99=percentile(latencies, 0.99),
            max=latencies[-1]) if latencies else None,
        wall_seconds=wall_seconds, endpoints=dict(sorted(endpoints.items())), cost=cost)
