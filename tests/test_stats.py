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
