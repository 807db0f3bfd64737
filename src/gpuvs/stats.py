"""Statistics of samples: summaries, confidence intervals of the median, ratios with CIs.

Everything here is a pure function of numbers (the standard library, NumPy, and SciPy's
rank test imported where it is used), so it is tested on synthetic streams and reused by
the stopping criteria, the caveats and the analysis alike.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, TypeVar

import numpy as np

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 2000
# A fixed seed makes a summary a pure function of its samples: the same samples always
# give the same CI, in the store, the report and a re-export.
BOOTSTRAP_SEED = 20230219
# A run drifts: a host stall, a clock step or a scheduler regime can hold for a stretch
# of samples (on two H200s, small all-reduces moved between 21 and 33 µs a call for a
# second or two at a time). Samples in time order are cut into this many contiguous
# stretches, each of at least MIN_STRETCH samples, and the CI must cover the variation
# between them too (a cluster bootstrap), not only that between single samples.
STRETCHES = 8
MIN_STRETCH = 5
# Student's t at 97.5 % by degrees of freedom (a case's processes less one, at most
# config.MAX_PASSES − 1): the repeat interval's quantile, without importing SciPy for
# every summary. Past the table, SciPy's.
T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.307,
         9: 2.263, 10: 2.229, 11: 2.201, 12: 2.179, 13: 2.161, 14: 2.145, 15: 2.132, 16: 2.12,
         17: 2.11, 18: 2.101, 19: 2.094, 20: 2.086, 21: 2.08, 22: 2.074, 23: 2.069, 24: 2.064,
         25: 2.06, 26: 2.056, 27: 2.052, 28: 2.049, 29: 2.046, 30: 2.043, 31: 2.04}
# How much more a median of K values varies than their mean, for normal values (its
# asymptotic efficiency, π/2): the figure is the median of the processes' medians.
MEDIAN_VARIANCE = math.pi / 2
# From this many processes, a case's CI reaches where a repeat's figure may land
# (`repeat_interval`); with two, the t quantile (12.7) makes an interval of no use.
REPEAT_FROM_PROCESSES = 3
# Below this many processes a case's CI covers every process's median, and a ratio of two
# cases is never narrower than worst to worst: on the H100 VMs a launch-bound loop runs
# in the slower of two groups in about a third of processes, so all of a side's K
# processes fall in one group 0.7^K of the time — 17 % at five. From it on (2.8 % at ten)
# the t intervals on the processes' medians carry their spread and narrow as processes
# are added: the range of twenty processes, 84–158 µs around 126 µs, widened the interval
# to ±29 % and hid a 20 % slowdown that the figure, a median of twenty, shows.
WHOLE_RANGE_BELOW = 10
# Resampled values held in memory at once: bounds every bootstrap's footprint.
_CHUNK_VALUES = 4_000_000
# What `summarize` computes, named in every key of a kept summary (`summary_key`): a
# summary kept under another method is computed again. Bump the number when `summarize`
# changes what it returns for the same samples.
SUMMARY_METHOD = (f"summarize/4 confidence={CONFIDENCE} resamples={BOOTSTRAP_RESAMPLES} "
                  f"seed={BOOTSTRAP_SEED} stretches={STRETCHES}x{MIN_STRETCH}")


@dataclass(frozen=True)
class Summary:
    """Derived statistics of one list of per-call seconds."""

    n: int
    median: float
    p25: float
    p75: float
    mean: float
    std: float
    min: float
    max: float
    ci_low: float  # CI of the median at CONFIDENCE, between stretches included (median_ci)
    ci_high: float

    @property
    def iqr(self) -> float:
        return self.p75 - self.p25

    @property
    def ci_halfwidth_rel(self) -> float:
        """Half the CI width relative to the median: 0.01 means '±1 %'."""
        return (self.ci_high - self.ci_low) / 2 / self.median if self.median > 0 else math.inf

    def apart(self, other: Summary) -> bool:
        """Whether the two medians' CIs do not overlap: which is the faster is measured,
        not a chance of these samples (a winner among implementations, a step in a
        history)."""
        return self.ci_high < other.ci_low or other.ci_high < self.ci_low


def summarize(samples: Sequence[float], groups: Sequence[int] = (),
              floor_rel: float = 0.0) -> Summary:
    """The summary of `samples`, in time order (`_summarize`), computed once in a process
    for the same samples, groups and floor: a run's parent asked for the summary of each
    case's merged samples three times a pass, and those bootstraps were a third of a
    default run's time on an H100 (docs/accuracy.md)."""
    return _kept(summary_key(samples, groups, floor_rel),
                 lambda: _summarize(samples, groups, floor_rel))


# Results kept in a process by `summarize` and `ratio_ci`, the oldest dropped first: more
# than a run's cases and their speedups.
KEPT_RESULTS = 2048
_KEPT: dict[str, Any] = {}
_T = TypeVar("_T")


def _kept(key: str, compute: Callable[[], _T]) -> _T:
    """`compute()`, once per `key` in this process (a pure function of what `key` digests)."""
    if key not in _KEPT:
        _KEPT[key] = compute()
        if len(_KEPT) > KEPT_RESULTS:
            _KEPT.pop(next(iter(_KEPT)))
    found: _T = _KEPT[key]
    return found


def _summarize(samples: Sequence[float], groups: Sequence[int] = (),
               floor_rel: float = 0.0) -> Summary:
    """The summary of `samples`, in time order. `groups` are the lengths of consecutive
    groups taken in separate processes (a case's passes). Over processes the summary is
    hierarchical: the figure is the median of the processes' medians (each process one
    vote, however many samples it took), and the CI covers every process's median, since
    a repeat's processes land anywhere among them — where the processes agree it stays as
    tight as the samples allow, where they differ it shows how far (below
    WHOLE_RANGE_BELOW processes; from there on a figure that is a median of many
    processes is known better than their range). From
    REPEAT_FROM_PROCESSES processes on, it also reaches where a repeat's figure may land
    (`repeat_interval`): the range of K processes alone held another run's figure for
    only 72 % of the cases of two runs on one H100 (docs/accuracy.md). `floor_rel` is a
    half-width the CI is never narrower than: the run-to-run spread measured for that
    kind of case, which samples from one process cannot show."""
    a = np.asarray(samples, dtype=float)
    if a.size == 0:
        raise ValueError("cannot summarise zero samples")
    p25, median, p75 = np.percentile(a, [25, 50, 75])
    ci_low, ci_high = honest_median_ci(a)
    medians = group_medians(a, groups)
    if medians:
        median = float(np.median(medians))
    for m in medians if len(medians) < WHOLE_RANGE_BELOW else ():
        ci_low, ci_high = min(ci_low, m), max(ci_high, m)
    if len(medians) >= REPEAT_FROM_PROCESSES:
        low, high = repeat_interval(medians, float(median))
        ci_low, ci_high = min(ci_low, low), max(ci_high, high)
    ci_low = min(ci_low, float(median) * (1 - floor_rel))
    ci_high = max(ci_high, float(median) * (1 + floor_rel))
    return Summary(
        n=int(a.size), median=float(median), p25=float(p25), p75=float(p75),
        mean=float(a.mean()), std=float(a.std(ddof=1)) if a.size > 1 else 0.0,
        min=float(a.min()), max=float(a.max()), ci_low=ci_low, ci_high=ci_high,
    )


# Processes whose medians fall this far apart, in two groups each tighter than the gap,
# are two regimes, not one noisy number: on the H100 VMs a launch-bound loop runs at about
# 7 µs a call in some processes and 9.8 µs in others, and stays where it started.
REGIME_GAP = 0.08


@dataclass(frozen=True)
class Regimes:
    """Processes whose medians fall in two groups: each group's median and how many
    processes landed in it, the faster first."""

    fast: float
    fast_count: int
    slow: float
    slow_count: int


def regimes(samples: Sequence[float], groups: Sequence[int]) -> Regimes | None:
    """The two groups three or more processes' medians fall in, where they do: the largest
    gap between consecutive medians is REGIME_GAP or more of the faster side, and wider
    than either side's own spread. None where the processes make one group."""
    medians = sorted(group_medians(samples, groups))
    if len(medians) < 3:
        return None
    gaps = [(b / a - 1, i) for i, (a, b) in enumerate(zip(medians[:-1], medians[1:], strict=True))]
    gap, cut = max(gaps)
    fast, slow = medians[:cut + 1], medians[cut + 1:]
    spread = max(fast[-1] / fast[0] - 1, slow[-1] / slow[0] - 1)
    if gap < REGIME_GAP or gap <= spread:
        return None
    return Regimes(float(np.median(fast)), len(fast), float(np.median(slow)), len(slow))


def summary_key(samples: Sequence[float], groups: Sequence[int] = (),
                floor_rel: float = 0.0) -> str:
    """What a `summarize(samples, groups, floor_rel)` is a function of, as a short digest:
    a summary kept beside its samples (a store's record, an export) is taken back only
    under the same key, so it can never disagree with the samples, the passes or the
    method it came from. Two bootstraps of 2000 resamples cost tens of ms a case; a
    stored run of a hundred cases would pay seconds on every read."""
    import hashlib

    digest = hashlib.blake2b(np.asarray(samples, dtype=np.float64).tobytes(), digest_size=12)
    digest.update(repr((tuple(int(g) for g in groups), float(floor_rel),
                        SUMMARY_METHOD)).encode())
    return digest.hexdigest()


def split_groups(samples: Sequence[float] | np.ndarray, groups: Sequence[int]
                 ) -> list[np.ndarray]:
    """`samples` cut into consecutive groups of the lengths `groups` (none when the
    lengths do not add up to the samples, or there is only one group)."""
    if len(groups) < 2 or sum(groups) != len(samples) or min(groups) < 1:
        return []
    a = np.asarray(samples, dtype=float)
    return np.split(a, np.cumsum(groups)[:-1])


def t_975(df: float) -> float:
    """Student's t at 97.5 % for `df` degrees of freedom: T_975's, at `df` rounded down
    (never smaller than the exact quantile), where the table holds it; else SciPy's."""
    found = T_975.get(max(1, int(df)))
    if found is not None:
        return found
    from scipy.stats import t
    return float(t.ppf(0.975, df))


def repeat_interval(medians: Sequence[float], figure: float) -> tuple[float, float]:
    """Where another run's figure (the median of its own processes' medians) lands, 95 %
    of the time, around this run's `figure`: a Student-t prediction interval on the
    logarithms of the processes' medians. The two figures differ by the error of both,
    each a median of K: half-width t(K−1) · s · √(2 · MEDIAN_VARIANCE / K), s the
    processes' spread. It assumes the processes of a repeat are drawn as these were;
    a machine whose processes fall in two groups makes s large, and the interval with it,
    which is what a repeat there does."""
    logs = np.log(np.asarray(medians, dtype=float))
    k = logs.size
    spread = float(np.std(logs, ddof=1))
    half = t_975(k - 1) * spread * math.sqrt(2 * MEDIAN_VARIANCE / k)
    return figure * math.exp(-half), figure * math.exp(half)


def ratio_over_processes(numerator: Sequence[float], numerator_groups: Sequence[int],
                         denominator: Sequence[float], denominator_groups: Sequence[int]
                         ) -> tuple[float, float, float] | None:
    """Two cases each sampled in REPEAT_FROM_PROCESSES processes or more: the ratio of
    their figures (each the median of its processes' medians) with a 95 % interval over
    processes — Moses' distribution-free interval for the shift between the logarithms
    of the two sides' processes' medians (`shift_interval`), which holds the figure's
    ratio, and never narrower than the two sides' processes allow worst to worst (B's
    slowest over A's fastest, and the other way) while a side has fewer than
    WHOLE_RANGE_BELOW. A rank interval asks nothing of the processes' shape: on the H100
    VMs a launch-bound loop's processes fall in two groups, and now and then one stalls
    (558 µs among nineteen of 97–169 µs), which Welch's t on their logarithms read as a
    spread wide enough to hide a 20 % slowdown (1.26× [0.998, 1.59]). Two runs' own
    intervals, each reaching where the other run may land, would count the repeat twice.
    None where either side has fewer processes: its interval is all there is to go on."""
    a = group_medians(np.asarray(numerator, dtype=float), numerator_groups)
    b = group_medians(np.asarray(denominator, dtype=float), denominator_groups)
    if min(len(a), len(b)) < REPEAT_FROM_PROCESSES:
        return None
    ratio = float(np.median(a) / np.median(b))
    low, high = (math.exp(x) for x in shift_interval(np.log(b), np.log(a)))
    low, high = min(low, ratio), max(high, ratio)
    if min(len(a), len(b)) < WHOLE_RANGE_BELOW:
        low, high = min(low, min(a) / max(b)), max(high, max(a) / min(b))
    return ratio, low, high


def shift_interval(before: Sequence[float] | np.ndarray, after: Sequence[float] | np.ndarray,
                   confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Moses' interval for how far `after` lies from `before` (the Hodges–Lehmann shift):
    the k-th smallest and k-th largest of every difference after − before, k set by the
    exact null distribution of the Mann–Whitney U, so that it covers a shift of 0 at least
    `confidence` of the time when both sides are drawn alike, whatever their shape."""
    x, y = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    d = np.sort(np.subtract.outer(y, x).ravel())
    # A shift between the c-th and (c+1)-th smallest difference leaves c differences
    # below it: rejected while c values of U at most are as unlikely as the tail.
    c = max(_u_critical(x.size, y.size, (1 - confidence) / 2) - 1, 0)
    return float(d[c]), float(d[d.size - 1 - c])


@functools.lru_cache(maxsize=256)
def _u_critical(m: int, n: int, tail: float) -> int:
    """How many values of U, from 0 up, have a null probability together of at most
    `tail` (0 where even U = 0 is more likely than that): U's distribution is the
    coefficients of the Gaussian binomial [m + n choose m], built here as floats."""
    m, n = min(m, n), max(m, n)
    counts = np.zeros(m * n + 1)
    counts[0] = 1.0
    for i in range(1, m + 1):  # multiply by (1 − q^(n+i)) / (1 − q^i)
        shifted = counts.copy()
        shifted[n + i:] -= counts[:counts.size - n - i]
        for r in range(i):
            shifted[r::i] = np.cumsum(shifted[r::i])
        counts = shifted
    cdf = np.cumsum(counts / counts.sum())
    return int(np.searchsorted(cdf, tail * (1 + 1e-12), side="right"))


def group_medians(samples: Sequence[float] | np.ndarray, groups: Sequence[int]
                  ) -> list[float]:
    """The median of each consecutive group of `samples` (`split_groups`)."""
    return [float(np.median(g)) for g in split_groups(samples, groups)]


def median_of(samples: Sequence[float]) -> float:
    return float(np.median(np.asarray(samples, dtype=float)))


def bootstrap_median_ci(samples: Sequence[float] | np.ndarray, confidence: float = CONFIDENCE,
                        resamples: int = BOOTSTRAP_RESAMPLES) -> tuple[float, float]:
    """Percentile-bootstrap CI of the median (deterministic: fixed seed)."""
    a = np.asarray(samples, dtype=float)
    if a.size == 1:
        return float(a[0]), float(a[0])
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    medians = _resampled(a, resamples, np.median, rng)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(medians, [alpha, 1 - alpha])
    return float(lo), float(hi)


def _resampled(a: np.ndarray, resamples: int, f: Callable[..., Any],
               rng: np.random.Generator) -> np.ndarray:
    """`f` of each of `resamples` bootstrap resamples of `a`, drawn in chunks of about
    _CHUNK_VALUES values: the very draws of one (resamples, n) matrix, in bounded memory
    (that matrix was 30 GiB for a case of two million samples)."""
    chunk = max(1, _CHUNK_VALUES // a.size)
    return np.concatenate([
        f(a[rng.integers(0, a.size, size=(min(chunk, resamples - i), a.size))], axis=1)
        for i in range(0, resamples, chunk)])


def stretch_median_ci(samples: Sequence[float] | np.ndarray, confidence: float = CONFIDENCE,
                      resamples: int = BOOTSTRAP_RESAMPLES) -> tuple[float, float] | None:
    """Cluster-bootstrap CI of the median over contiguous stretches of the samples (time
    order): whole stretches are resampled, so a stretch that ran slower moves the
    resampled medians as a repeat of the run could. None with fewer than two stretches
    of MIN_STRETCH samples. Samples past the last whole stretch are left out here (they
    count in the ordinary bootstrap)."""
    a = np.asarray(samples, dtype=float)
    k = min(STRETCHES, a.size // MIN_STRETCH)
    if k < 2:
        return None
    m = a.size // k
    blocks = a[:k * m].reshape(k, m)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    picks = rng.integers(0, k, size=(resamples, k))
    chunk = max(1, _CHUNK_VALUES // (k * m))
    medians = np.concatenate([np.median(blocks[picks[i:i + chunk]].reshape(-1, k * m), axis=1)
                              for i in range(0, resamples, chunk)])
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(medians, [alpha, 1 - alpha])
    return float(lo), float(hi)


def honest_median_ci(samples: Sequence[float] | np.ndarray, confidence: float = CONFIDENCE,
                     resamples: int = BOOTSTRAP_RESAMPLES) -> tuple[float, float]:
    """The CI a summary reports: the ordinary bootstrap CI of the median, widened to the
    stretch bootstrap's wherever that reaches further. Either alone can be too narrow:
    the first when the run drifts, the second when its few stretches happen to agree."""
    lo, hi = bootstrap_median_ci(samples, confidence, resamples)
    between = stretch_median_ci(samples, confidence, resamples)
    if between is None:
        return lo, hi
    return min(lo, between[0]), max(hi, between[1])


def median_ci(samples: Sequence[float] | np.ndarray, confidence: float = CONFIDENCE
              ) -> tuple[float, float]:
    """Distribution-free CI of the median from order statistics (binomial).

    Cheap enough to call after every sample, which is what the stopping criterion does;
    the bootstrap is kept for the final summary. With fewer than 6 samples no
    order-statistic interval reaches 95 %, so the whole range is returned.
    """
    a = np.sort(np.asarray(samples, dtype=float))
    n = a.size
    if n == 0:
        return math.nan, math.nan
    # Normal approximation to Binomial(n, 1/2) for the ranks that bracket the median.
    z = NormalDist().inv_cdf((1 + confidence) / 2)
    half = z * math.sqrt(n) / 2
    lo = max(int(math.floor(n / 2 - half)), 0)
    hi = min(int(math.ceil(n / 2 + half)), n - 1)
    if n < 6:
        lo, hi = 0, n - 1
    return float(a[lo]), float(a[hi])


STATISTICS: dict[str, Callable[..., Any]] = {"median": np.median, "mean": np.mean,
                                             "min": np.min, "max": np.max}


def ratio_ci(numerator: Sequence[float], denominator: Sequence[float],
             confidence: float = CONFIDENCE, resamples: int = BOOTSTRAP_RESAMPLES,
             statistic: str = "median") -> tuple[float, float, float]:
    """Ratio of a statistic (the median by default) with a bootstrap CI: (estimate,
    low, high). Used for a change between runs (`analysis.regression.change`), as the
    samples' own part of its interval, and for a statistic other than the median there.
    Computed once in a process for the same samples (`_kept`): a run's tables once asked
    for each speedup two or three times, at about 0.1 s each."""
    import hashlib

    digest = hashlib.blake2b(np.asarray(numerator, dtype=np.float64).tobytes(), digest_size=12)
    digest.update(np.asarray(denominator, dtype=np.float64).tobytes())
    digest.update(repr(("ratio_ci", len(numerator), confidence, resamples, statistic,
                        BOOTSTRAP_SEED)).encode())
    return _kept(digest.hexdigest(),
                 lambda: _ratio_ci(numerator, denominator, confidence, resamples, statistic))


def _ratio_ci(numerator: Sequence[float], denominator: Sequence[float], confidence: float,
              resamples: int, statistic: str) -> tuple[float, float, float]:
    f = STATISTICS[statistic]
    a = np.asarray(numerator, dtype=float)
    b = np.asarray(denominator, dtype=float)
    est = float(f(a) / f(b))
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    ma = _resampled(a, resamples, f, rng)
    mb = _resampled(b, resamples, f, rng)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(ma / mb, [alpha, 1 - alpha])
    return est, float(lo), float(hi)


def widened(summary: Summary, by: float) -> tuple[float, float]:
    """A figure's interval, never narrower than ± `by` of it: what a case timed in one
    process reaches once it borrows its run's spread across processes."""
    return (min(summary.ci_low, summary.median / (1 + by)),
            max(summary.ci_high, summary.median * (1 + by)))


def ratio_of_figures(numerator: Summary, denominator: Summary, lent: tuple[float, float]
                     = (0.0, 0.0)) -> tuple[float, float, float]:
    """The ratio of two cases' figures (each the median of its processes' medians), with
    an interval that holds where a repeat's ratio lands: (estimate, low, high). Each
    case's interval already holds where a repeat's figure lands (`summarize`); the two
    cases are measured apart, so the logarithms of their half-widths add in quadrature,
    each side on its own. `lent` widens each case's interval to ± that fraction first,
    as a case timed in one process borrows its run's spread across processes
    (`analysis.regression.borrowed`). Used for speedups, and for the user's
    implementations set side by side.

    Why not a bootstrap of the pooled samples, as before: it saw each process's samples
    and not the processes, so its interval was as narrow as one process allows. Three full
    `gpuvs seeds` on H200s read seed 002's 10⁹-element `x *= 5` at 210× [210, 211],
    154× [153, 155] and 188× [185, 190], each outside the others' intervals."""
    (a_low, a_high), (b_low, b_high) = widened(numerator, lent[0]), widened(denominator,
                                                                            lent[1])
    estimate = numerator.median / denominator.median
    if min(a_low, b_low) <= 0:  # a bound at zero: nothing above it can be said
        return estimate, 0.0, math.inf
    down = math.hypot(math.log(numerator.median / a_low), math.log(b_high / denominator.median))
    up = math.hypot(math.log(a_high / numerator.median), math.log(denominator.median / b_low))
    return estimate, estimate * math.exp(-down), estimate * math.exp(up)


def ratio_over_rounds(ratios: Sequence[float], confidence: float = CONFIDENCE
                      ) -> tuple[float, float, float]:
    """A ratio measured once per round (each round's two sides taken seconds apart): the
    geometric mean of the rounds' ratios, with the Student-t CI of the mean of their
    logarithms — an interval over rounds, so it covers how the pairs move from round to
    round, not only the samples within one. One round gives no interval (its ratio,
    thrice). SciPy's t quantile, imported here."""
    from scipy.stats import t

    logs = np.log(np.asarray(ratios, dtype=float))
    centre = float(np.mean(logs))
    if logs.size < 2:
        return math.exp(centre), math.exp(centre), math.exp(centre)
    half = float(t.ppf((1 + confidence) / 2, logs.size - 1)
                 * np.std(logs, ddof=1) / math.sqrt(logs.size))
    return math.exp(centre), math.exp(centre - half), math.exp(centre + half)


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """(U of `a`, two-sided p-value): the rank test of whether one sample tends to be
    larger than the other. SciPy's: the exact distribution where both sides are small
    and untied, else the normal approximation with tie and continuity corrections.
    SciPy is imported here, not above: `gpuvs compare` and `check` pay for it, no other
    command does."""
    from scipy.stats import mannwhitneyu

    if len(a) == 0 or len(b) == 0:
        raise ValueError("the rank test needs samples on both sides")
    result = mannwhitneyu(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                          alternative="two-sided")
    return float(result.statistic), float(result.pvalue)


def outlier_fraction(samples: Sequence[float]) -> float:
    """Share of samples outside the Tukey fences (1.5 IQR beyond the quartiles)."""
    a = np.asarray(samples, dtype=float)
    if a.size < 4:
        return 0.0
    p25, p75 = np.percentile(a, [25, 75])
    fence = 1.5 * (p75 - p25)
    return float(np.mean((a < p25 - fence) | (a > p75 + fence)))
