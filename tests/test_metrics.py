"""Tests for pass@k, the bootstrap interval and the results.json metrics block."""

from __future__ import annotations

import json
import math
import random

import pytest

from execbench import metrics
from execbench.kept import Kept
from execbench.metrics import (
    _binomial,
    _log_factorial_ratio,
    bootstrap_ci,
    pass_at_k,
    percentile,
    summarize,
    usage_summary,
    verdict_counts,
)


def sample(
    instance_id: str,
    verdict: str,
    *,
    task: str = "output",
    source: str = "cruxeval",
    index: int = 0,
    score: float | None = None,
    with_score: bool = False,
) -> Kept:
    record = {
        "instance_id": instance_id,
        "task": task,
        "source": source,
        "sample": index,
        "verdict": verdict,
        "correct": verdict == "correct",
        "latency_s": 1.5,  # an unrelated field summarize must ignore
    }
    if with_score:
        record["score"] = score
    return Kept.from_record(record)


def exact_pass_at_k(n: int, c: int, k: int) -> float:
    return 1 - math.comb(n - c, k) / math.comb(n, k)


class TestPassAtK:
    def test_no_correct_sample_is_zero(self) -> None:
        assert pass_at_k(5, 0, 1) == 0.0
        assert pass_at_k(5, 0, 5) == 0.0

    def test_all_correct_is_one(self) -> None:
        for k in range(1, 6):
            assert pass_at_k(5, 5, k) == 1.0

    def test_one_of_five_at_one(self) -> None:
        assert pass_at_k(5, 1, 1) == pytest.approx(0.2)

    def test_three_of_ten_at_two(self) -> None:
        assert pass_at_k(10, 3, 2) == pytest.approx(1 - 21 / 45)

    def test_matches_binomial_formula(self) -> None:
        for n in range(1, 12):
            for c in range(n + 1):
                for k in range(1, n + 1):
                    assert pass_at_k(n, c, k) == pytest.approx(exact_pass_at_k(n, c, k))

    def test_large_n_stays_finite(self) -> None:
        assert pass_at_k(10_000, 1, 1) == pytest.approx(1e-4)

    @pytest.mark.parametrize(("n", "c", "k"), [(5, 1, 6), (5, 1, 0), (3, 4, 1), (3, -1, 1)])
    def test_invalid_arguments_raise(self, n: int, c: int, k: int) -> None:
        with pytest.raises(ValueError):
            pass_at_k(n, c, k)


class TestBootstrap:
    values = [0.0, 1.0, 1.0, 0.5, 0.0, 1.0, 0.2, 0.8, 1.0, 0.0]

    def test_interval_contains_mean(self) -> None:
        low, high = bootstrap_ci(self.values)
        mean = sum(self.values) / len(self.values)
        assert low <= mean <= high
        assert low < high

    def test_deterministic_for_a_seed(self) -> None:
        assert bootstrap_ci(self.values, seed=7) == bootstrap_ci(self.values, seed=7)
        assert bootstrap_ci(self.values, seed=7) != bootstrap_ci(self.values, seed=8)

    def test_leaves_global_random_state_alone(self) -> None:
        random.seed(3)
        expected = random.random()
        random.seed(3)
        bootstrap_ci(self.values)
        assert random.random() == expected

    def test_wider_level_gives_wider_interval(self) -> None:
        narrow = bootstrap_ci(self.values, level=0.5)
        wide = bootstrap_ci(self.values, level=0.99)
        assert wide[0] <= narrow[0] <= narrow[1] <= wide[1]

    def test_single_and_empty(self) -> None:
        assert bootstrap_ci([0.25]) == (0.25, 0.25)
        low, high = bootstrap_ci([])
        assert math.isnan(low) and math.isnan(high)

    @pytest.mark.parametrize("kwargs", [{"resamples": 0}, {"level": 1.0}, {"level": 0.0}])
    def test_invalid_arguments_raise(self, kwargs: dict) -> None:
        with pytest.raises(ValueError):
            bootstrap_ci(self.values, **kwargs)


class TestBootstrapByLevels:
    """Data with few distinct values resample by counting each level's draws; the
    intervals must be those of resampling value by value, up to Monte Carlo error."""

    def test_pinned_intervals(self) -> None:
        # The same on 3.11-3.13 (only random() and math are used). Normal approximations:
        # 0.7 +- 1.96 * sqrt(0.21 / 1000) = [0.672, 0.728]; 0.1 +- 1.96 * sqrt(0.39 / 1000)
        # = [0.061, 0.139].
        assert bootstrap_ci([1.0] * 700 + [0.0] * 300) == (0.671, 0.728)
        assert bootstrap_ci([-1.0] * 150 + [0.0] * 600 + [1.0] * 250) == (0.064, 0.138)

    @pytest.mark.parametrize("levels", [{0.0: 300, 1.0: 700}, {-1.0: 150, 0.0: 600, 1.0: 250},
                                        {0.0: 40, 0.25: 30, 0.5: 20, 0.75: 60, 1.0: 50}])
    def test_agrees_with_drawing_values_one_by_one(self, levels: dict[float, int],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
        values = [value for value, count in levels.items() for _ in range(count)]
        random.Random(4).shuffle(values)
        counted = bootstrap_ci(values, resamples=2000, seed=1)
        monkeypatch.setattr(metrics, "VALUES_PER_LEVEL", len(values) + 1)
        one_by_one = bootstrap_ci(values, resamples=2000, seed=1)
        assert counted != one_by_one  # the two ways really ran
        size = len(values)
        mean = sum(values) / size
        error = math.sqrt(sum((v - mean) ** 2 for v in values) / size / size)
        for low, high in (counted, one_by_one):
            assert low == pytest.approx(mean - 1.96 * error, abs=0.25 * error)
            assert high == pytest.approx(mean + 1.96 * error, abs=0.25 * error)

    def test_one_level_has_no_spread(self) -> None:
        assert bootstrap_ci([0.5] * 100) == (0.5, 0.5)

    @pytest.mark.parametrize(("n", "p"), [
        (0, 0.3), (1, 0.0), (1, 0.5), (7, 1.0), (20, 0.1), (40, 0.5), (1000, 0.97),
        (10**9, 5e-9), (10**12, 0.5), (10**12, 0.999999)])
    def test_binomial_mean_and_variance(self, n: int, p: float) -> None:
        rng = random.Random(11)
        draws = [_binomial(n, p, rng) for _ in range(20_000)]
        assert all(0 <= k <= n for k in draws)
        mean = sum(draws) / len(draws)
        variance = sum((k - mean) ** 2 for k in draws) / (len(draws) - 1)
        expected = n * p * (1 - p)
        if expected == 0:
            assert set(draws) == {round(n * p)}
            return
        # 4.5 standard errors of the mean; the sample variance's is about 1% here.
        assert abs(mean - n * p) <= 4.5 * math.sqrt(expected / len(draws))
        assert variance == pytest.approx(expected, rel=0.05)

    @pytest.mark.parametrize(("n", "p"), [(30, 0.5), (200, 0.03), (60, 0.8), (5000, 0.01)])
    def test_binomial_follows_the_pmf(self, n: int, p: float) -> None:
        """Chi-square over every outcome expected at least 5 times: for these seeds it
        stays well under its 99.9% point (df + 4.5 sqrt(2 df) is above it for df >= 10)."""
        rng = random.Random(12)
        draws = 50_000
        seen = [0] * (n + 1)
        for _ in range(draws):
            seen[_binomial(n, p, rng)] += 1
        chi2, cells = 0.0, 0
        for k in range(n + 1):
            expected = draws * math.exp(math.lgamma(n + 1) - math.lgamma(k + 1)
                                        - math.lgamma(n - k + 1) + k * math.log(p)
                                        + (n - k) * math.log1p(-p))
            if expected >= 5:
                chi2 += (seen[k] - expected) ** 2 / expected
                cells += 1
        assert chi2 < (cells - 1) + 4.5 * math.sqrt(2 * (cells - 1))

    @pytest.mark.parametrize(("a", "b"), [(20, 17), (100, 1000), (16, 5), (3, 40),
                                          (10**6, 10**6 - 300)])
    def test_log_factorial_ratio(self, a: int, b: int) -> None:
        assert _log_factorial_ratio(a, b) == pytest.approx(
            math.lgamma(a + 1) - math.lgamma(b + 1), rel=1e-11)

    def test_log_factorial_ratio_of_huge_neighbours(self) -> None:
        # log((n + 2)! / n!) = log(n + 1) + log(n + 2), where two lgamma values of 2.6e13
        # would have lost every digit.
        n = 10**12
        assert _log_factorial_ratio(n + 2, n) == pytest.approx(
            math.log(n + 1) + math.log(n + 2), rel=1e-12)


def hand_made_samples() -> list[Kept]:
    """Two tasks, two sources, request errors, and one instance short of samples (n=3).

    output/cruxeval: A has 1 of 3 correct (one failed request), B has 3 of 3.
    output/humaneval: C has only 2 samples, none correct.
    input/cruxeval: D's three requests all failed.
    """
    return [
        sample("A", "correct", index=0, score=1.0, with_score=True),
        sample("A", "incorrect", index=1, score=0.0, with_score=True),
        sample("A", "error", index=2),
        sample("B", "correct", index=0),
        sample("B", "correct", index=1),
        sample("B", "correct", index=2),
        sample("C", "incorrect", source="humaneval", index=0, score=0.25, with_score=True),
        sample("C", "unparsable", source="humaneval", index=1, score=None, with_score=True),
        *(sample("D", "error", task="input", index=i) for i in range(3)),
    ]


class TestSummarize:
    def test_shape_and_order(self) -> None:
        metrics = summarize(reversed(hand_made_samples()), n=3)
        assert list(metrics) == ["input", "output"]
        assert list(metrics["output"].by_source) == ["cruxeval", "humaneval"]
        assert list(metrics["input"].by_source) == ["cruxeval"]
        json.dumps({task: block.to_record() for task, block in metrics.items()}, allow_nan=False)

    def test_task_overall(self) -> None:
        block = summarize(hand_made_samples(), n=3)["output"].all.to_record()
        assert block["instances"] == 3
        assert block["samples"] == 8
        assert block["pass@1"] == pytest.approx((1 / 3 + 1 + 0) / 3)
        assert block["pass@2"] == pytest.approx((2 / 3 + 1 + 0) / 3)
        # C has two samples, so pass@3 rests on A and B alone.
        assert block["pass@3"] == pytest.approx(1.0)
        assert block["pass@3_instances"] == 2
        assert "pass@1_instances" not in block
        assert "pass@2_instances" not in block
        assert "pass@4" not in block
        assert block["accuracy"] == pytest.approx(block["pass@1"])
        low, high = block["accuracy_ci95"]
        assert low <= block["accuracy"] <= high
        assert block["score"] == pytest.approx((0.5 + 0.25) / 2)
        assert block["verdicts"] == {"correct": 4, "error": 1, "incorrect": 2, "unparsable": 1}
        assert list(block["verdicts"]) == sorted(block["verdicts"])

    def test_by_source(self) -> None:
        by_source = summarize(hand_made_samples(), n=3)["output"].to_record()["by_source"]
        crux, human = by_source["cruxeval"], by_source["humaneval"]
        assert (crux["instances"], crux["samples"]) == (2, 6)
        assert crux["pass@1"] == pytest.approx(2 / 3)
        assert "pass@3_instances" not in crux
        assert crux["score"] == pytest.approx(0.5)
        assert human["pass@1"] == 0.0
        assert human["pass@3"] is None
        assert human["pass@3_instances"] == 0
        assert human["score"] == pytest.approx(0.25)

    def test_breakdowns_give_each_category_its_own_group(self) -> None:
        kinds = {"output": {"kind": {"A": "loop", "B": "branch", "C": "loop"}}}
        metrics = summarize(hand_made_samples(), n=3, categories=kinds)
        assert "breakdowns" not in metrics["input"].to_record()
        by_kind = metrics["output"].to_record()["breakdowns"]["kind"]
        assert list(by_kind) == ["branch", "loop"]
        assert (by_kind["loop"]["instances"], by_kind["loop"]["samples"]) == (2, 5)
        assert by_kind["loop"]["pass@1"] == pytest.approx((1 / 3 + 0) / 2)
        assert by_kind["branch"]["accuracy_ci95"] == [1.0, 1.0]
        assert "breakdowns" not in summarize(hand_made_samples(), n=3)["output"].to_record()

    def test_errors_are_failures(self) -> None:
        block = summarize(hand_made_samples(), n=3)["input"].all.to_record()
        assert block["instances"] == 1
        assert block["samples"] == 3
        assert [block[f"pass@{k}"] for k in (1, 2, 3)] == [0.0, 0.0, 0.0]
        assert block["accuracy"] == 0.0
        assert block["accuracy_ci95"] == [0.0, 0.0]
        assert block["verdicts"] == {"error": 3}
        assert "score" not in block

    def test_floats_are_plain(self) -> None:
        block = summarize(hand_made_samples(), n=3)["output"].all.to_record()
        for key in ("pass@1", "pass@2", "pass@3", "accuracy", "score"):
            assert type(block[key]) is float
        assert all(type(bound) is float for bound in block["accuracy_ci95"])

    def test_deterministic(self) -> None:
        assert summarize(hand_made_samples(), n=3) == summarize(hand_made_samples(), n=3)

    def test_rejects_n_below_one(self) -> None:
        with pytest.raises(ValueError):
            summarize(hand_made_samples(), n=0)


def test_verdict_counts_for_the_run() -> None:
    counts = verdict_counts(hand_made_samples())
    assert counts == {"correct": 4, "error": 4, "incorrect": 2, "unparsable": 1}
    assert list(counts) == sorted(counts)


def test_percentiles_are_observed_values_and_usage_reads_old_records() -> None:
    ordered = [0.1 * i for i in range(1, 11)]
    assert [percentile(ordered, p) for p in (0.5, 0.9, 0.99, 1.0)] == [
        ordered[4], ordered[8], ordered[9], ordered[9]]
    old = {"instance_id": "o/p/0", "task": "o", "source": "s", "sample": 0,
           "verdict": "correct", "correct": True, "latency": 0.5, "attempts": 1,
           "input_tokens": None, "output_tokens": None}
    usage = usage_summary([Kept.from_record(old),
                           Kept.from_record({**old, "attempts": 3, "output_tokens": 4})],
                          2.0).to_record()
    assert (usage["requests"], usage["retries"], usage["output_tokens"]) == (4, 2, 4)
    assert usage["samples_without_usage"] == 1 and usage["endpoints"] == {}
    assert "cost" not in usage and usage["latency_seconds"]["p99"] == 0.5
