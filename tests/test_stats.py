from __future__ import annotations

import numpy as np
import pytest

from gpuvs import stats


def test_summary_of_known_samples() -> None:
    s = stats.summarize([1.0, 2.0, 3.0, 4.0, 5.0])
    assert (s.n, s.median, s.min, s.max, s.mean) == (5, 3.0, 1.0, 5.0, 3.0)
    assert s.p25 == 2.0 and s.p75 == 4.0
    assert s.ci_low <= 3.0 <= s.ci_high


def test_bootstrap_ci_is_deterministic_and_covers_the_median() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(10, 1, 200)
    assert stats.bootstrap_median_ci(x) == stats.bootstrap_median_ci(x)
    lo, hi = stats.bootstrap_median_ci(x)
    assert lo < np.median(x) < hi
    assert hi - lo < 0.6


def test_order_statistic_ci_narrows_with_more_samples() -> None:
    rng = np.random.default_rng(1)
    small, large = rng.normal(1, 0.1, 20), rng.normal(1, 0.1, 2000)
    w = lambda a: np.subtract(*reversed(stats.median_ci(a)))  # noqa: E731
    assert w(large) < w(small) / 5


def test_ratio_ci_of_a_tenfold_speedup() -> None:
    rng = np.random.default_rng(2)
    cpu, gpu = rng.normal(10, 0.1, 50), rng.normal(1, 0.01, 50)
    est, lo, hi = stats.ratio_ci(cpu, gpu)
    assert est == pytest.approx(10, rel=0.02)
    assert lo < est < hi and lo > 9.5 and hi < 10.5


def test_outlier_fraction() -> None:
    assert stats.outlier_fraction([1.0] * 18 + [1.01, 50.0]) == pytest.approx(0.1)


def test_a_stretch_of_slower_samples_widens_the_ci_to_reach_it() -> None:
    """The two-H200 all-gather of 4 KiB: batches at 20, 30, 31, 30, 20 µs. A repeat
    could land on 30; samples resampled one by one never gather enough slow ones to
    say so."""
    rng = np.random.default_rng(3)
    runs = [20.0] * 40 + [30.0] * 50 + [20.0] * 30  # µs, in time order
    a = np.asarray(runs) * (1 + rng.normal(0, 0.01, len(runs)))
    iid_lo, iid_hi = stats.bootstrap_median_ci(a)
    s = stats.summarize(a)
    assert iid_hi < 26  # the ordinary bootstrap stops halfway
    assert s.ci_high > 29 and s.ci_low <= iid_lo


def test_steady_samples_keep_a_tight_ci() -> None:
    a = 1e-3 * (1 + np.random.default_rng(4).normal(0, 0.005, 400))
    s = stats.summarize(a)
    assert s.ci_halfwidth_rel < 0.002
    assert (s.ci_low, s.ci_high) == stats.honest_median_ci(a)


def test_too_few_samples_for_two_stretches_use_the_ordinary_bootstrap() -> None:
    a = [1.0, 1.1, 0.9, 1.05, 0.95, 1.0, 1.02, 0.98, 1.01]
    assert stats.stretch_median_ci(a) is None
    assert stats.honest_median_ci(a) == stats.bootstrap_median_ci(a)


def test_a_summary_or_a_ratio_asked_twice_is_computed_once_and_is_the_same() -> None:
    a, b = [1.0, 1.1, 0.9, 1.05, 0.95] * 20, [2.0, 2.1, 1.9] * 30
    assert stats.summarize(a, (50, 50)) is stats.summarize(list(a), (50, 50))
    assert stats.summarize(a, (50, 50), floor_rel=0.2) != stats.summarize(a, (50, 50))
    assert stats.ratio_ci(a, b) == stats.ratio_ci(a, b)
    # the same values split otherwise between the two sides are another ratio
    assert stats.ratio_ci(a + b[:1], b[1:]) != stats.ratio_ci(a, b)
