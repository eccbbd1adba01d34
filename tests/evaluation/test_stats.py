"""Wilson and Newcombe intervals against known values; the bounded reservoir."""

from __future__ import annotations

import pytest

import math
import random

from helmdeck_dspy.evaluation.stats import Reservoir, bootstrap_mean_ci, newcombe_diff, resample_indices, wilson


def test_wilson_known_values():
    # 3/6: the published Nemotron success rate
    lo, hi = wilson(3, 6)
    assert lo == pytest.approx(0.1876, abs=1e-4) and hi == pytest.approx(0.8124, abs=1e-4)
    assert wilson(0, 10)[0] == 0.0 and wilson(0, 10)[1] == pytest.approx(0.2775, abs=1e-4)
    assert wilson(10, 10)[1] == pytest.approx(1.0)
    assert wilson(0, 0) == (0.0, 1.0)


def test_newcombe_difference_known_values():
    # Newcombe (1998) example 1: 56/70 vs 48/80 -> 0.2 [0.0524, 0.3339]
    d, lo, hi = newcombe_diff(56, 70, 48, 80)
    assert d == pytest.approx(0.2)
    assert lo == pytest.approx(0.0524, abs=5e-4) and hi == pytest.approx(0.3339, abs=5e-4)


def test_reservoir_exact_then_bounded():
    r = Reservoir(capacity=100, seed=1)
    for v in range(50):
        r.add(v)
    assert r.percentile(50) == pytest.approx(24.5) and r.summary()["exact"]
    for v in range(50, 10_000):
        r.add(v)
    assert len(r.values) == 100 and r.count == 10_000 and r.maximum == 9999
    assert not r.summary()["exact"]
    assert 3500 < r.percentile(50) < 6500  # a uniform sample of 0..9999


def test_reservoir_merge_keeps_counts_and_max():
    a, b = Reservoir(capacity=1000), Reservoir(capacity=1000)
    for v in range(300):
        a.add(v)
    for v in range(300, 500):
        b.add(v)
    a.merge(b)
    assert a.count == 500 and a.maximum == 499 and len(a.values) == 500
    assert a.percentile(50) == pytest.approx(249.5)
    big = Reservoir(capacity=100)
    for v in range(1000):
        big.add(v)
    a.merge(big)
    # 600 kept values now stand for 1500 records: big's 100 values weigh 10 records each
    assert a.count == 1500 and len(a.values) == 600 and not a.summary()["exact"]
    assert 350 < a.percentile(50) < 650  # the weighted median of 0..499 (500) and 0..999 (1000)


def test_merged_percentiles_match_one_stream():
    one = Reservoir(capacity=50_000)
    parts = [Reservoir(capacity=50_000) for _ in range(4)]
    for v in range(20_000):
        one.add(v % 997)
        parts[v % 4].add(v % 997)
    merged = Reservoir(capacity=50_000)
    for part in parts:
        merged.merge(part)
    for q in (50, 90, 95):
        assert merged.percentile(q) == pytest.approx(one.percentile(q), abs=1)


def test_paired_difference_without_correlation_equals_the_independent_interval():
    from helmdeck_dspy.evaluation.stats import newcombe_paired_diff

    # 5 both, 5 first only, 5 second only, 5 neither: no correlation (phi = 0), so method 10 reduces
    # to the independent Newcombe interval for the same margins (10/20 against 10/20).
    assert newcombe_paired_diff(5, 5, 5, 5) == pytest.approx(newcombe_diff(10, 20, 10, 20))


def test_paired_difference_is_narrower_when_the_pairs_agree():
    from helmdeck_dspy.evaluation.stats import newcombe_paired_diff

    d, lo, hi = newcombe_paired_diff(30, 8, 2, 10)  # mostly concordant pairs
    _, ilo, ihi = newcombe_diff(38, 50, 32, 50)
    assert d == pytest.approx(6 / 50)
    assert lo < d < hi and (hi - lo) < (ihi - ilo)
    assert newcombe_paired_diff(0, 0, 0, 0) == (0.0, -1.0, 1.0)
    d, lo, hi = newcombe_paired_diff(0, 0, 12, 0)  # the second always better: a clear negative difference
    assert d == -1.0 and hi < 0


def _bootstrap_one_at_a_time(values: list[float], resamples: int, seed: int = 0) -> tuple[float, float]:
    """The bootstrap as it was written first: each index a ``randrange`` call, each mean a ``sum``."""
    n = len(values)
    rng = random.Random(seed)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    return means[int(0.025 * (resamples - 1))], means[int(math.ceil(0.975 * (resamples - 1)))]


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 49, 120, 257])
def test_the_bulk_bootstrap_draws_and_sums_exactly_as_one_draw_at_a_time(n):
    values = [random.Random(n).choice([0.0, 0.25, 1 / 3, 1.0, -1.0]) + i * 1e-4 for i in range(n)]
    rng = random.Random(11)
    assert resample_indices(n, 5000, 11).tolist() == [rng.randrange(n) for _ in range(5000)]
    assert bootstrap_mean_ci(values, resamples=999) == _bootstrap_one_at_a_time(values, 999)
