"""Run against run: did a case get slower, faster, or stay the same?

Two runs' cases are matched on `Case.key` and the workload's version (changed code never
mixes). For each pair, the ratio of medians B ÷ A (above 1: B is slower) with a bootstrap
95 % CI, a Mann–Whitney U rank test, and a verdict against a threshold t (5 % by default),
decided by the CI, never by the point estimate (as nvbench's compare script does):

- **slower** when the whole CI lies above 1 + t; **faster** when it lies below 1 ÷ (1 + t);
- **same** when the whole CI lies inside [1 ÷ (1 + t), 1 + t];
- **ambiguous** when it straddles a threshold: the runs cannot tell, so a gate must not
  fail on it (pytest-benchmark's `--benchmark-compare-fail` compares two numbers and does);
  and a case measured on a busy machine (`contended`) on either side is at most
  ambiguous: other work can slow a run by more than any threshold.

Per workload, the geometric mean of the ratios, with a CI from resampling the cases
(with one case, that case's own CI).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gpuvs import stats
from gpuvs.model import Caveat, Measurement, Status

DEFAULT_THRESHOLD = 0.05
VERDICTS = ("slower", "ambiguous", "faster", "same")


@dataclass(frozen=True)
class Change:
    """One case in two runs: B's statistic over A's, with its CI and what it means."""

    key: str
    workload: str
    series: str     # the case without its size, in words: one line of a plot
    size: int
    a: float        # A's statistic (seconds per call)
    b: float
    ratio: float    # b / a: above 1, B is slower
    low: float
    high: float
    p_value: float  # Mann–Whitney U, two-sided
    verdict: str
    contended: bool  # either side measured on a busy machine


@dataclass(frozen=True)
class Mean:
    """A workload's geometric mean of ratios, with its CI."""

    workload: str
    cases: int
    ratio: float
    low: float
    high: float


@dataclass(frozen=True)
class Unmatched:
    """A case one run has and the other lacks, or has at another workload version."""

    key: str
    why: str


def verdict(low: float, high: float, threshold: float) -> str:
    up, down = 1 + threshold, 1 / (1 + threshold)
    if low > up:
        return "slower"
    if high < down:
        return "faster"
    if down <= low and high <= up:
        return "same"
    return "ambiguous"


def change(a: Measurement, b: Measurement, threshold: float = DEFAULT_THRESHOLD,
           statistic: str = "median") -> Change:
    """B against A for one case (both must have samples)."""
    ratio, low, high = stats.ratio_ci(b.samples, a.samples, statistic=statistic)
    _, p = stats.mann_whitney_u(b.samples, a.samples)
    f = stats.STATISTICS[statistic]
    contended = Caveat.CONTENDED in a.caveats or Caveat.CONTENDED in b.caveats
    word = verdict(low, high, threshold)
    if contended and word in ("slower", "faster"):
        word = "ambiguous"
    c = a.case
    series = " ".join([*([c.variant] if c.variant != "correct" else []), c.backend, c.device,
                       c.dtype, *(f"{k}={v}" for k, v in c.params)])
    return Change(c.key, c.workload, series, c.size, float(f(a.samples)), float(f(b.samples)),
                  ratio, low, high, p, word, contended)


def compare(a: Sequence[Measurement], b: Sequence[Measurement],
            threshold: float = DEFAULT_THRESHOLD, force: bool = False
            ) -> tuple[list[Change], list[Unmatched]]:
    """Every case finished in both runs, matched on its key and workload version. With
    `force`, cases whose workload versions differ are compared anyway (and still listed
    as unmatched, so the output can say so)."""
    first = {m.case.key: m for m in a if m.status is Status.OK and m.samples}
    changes, unmatched = [], []
    for m in b:
        if m.status is not Status.OK or not m.samples:
            continue
        base = first.get(m.case.key)
        if base is None:
            unmatched.append(Unmatched(m.case.key, "only in B"))
            continue
        if base.workload_version != m.workload_version:
            unmatched.append(Unmatched(m.case.key, (
                f"workload version {base.workload_version or '?'} in A, "
                f"{m.workload_version or '?'} in B")))
            if not force:
                continue
        changes.append(change(base, m, threshold))
    seen = {m.case.key for m in b}
    unmatched += [Unmatched(k, "only in A") for k in first if k not in seen]
    return changes, unmatched


def geometric_means(changes: Sequence[Change], resamples: int = stats.BOOTSTRAP_RESAMPLES
                    ) -> list[Mean]:
    """Per workload: exp(mean(log ratio)), its CI by resampling the cases (a single
    case's own CI when there is one)."""
    by: dict[str, list[Change]] = defaultdict(list)
    for c in changes:
        by[c.workload].append(c)
    out = []
    for workload, cs in sorted(by.items()):
        logs = np.log([c.ratio for c in cs])
        mean = float(math.exp(logs.mean()))
        if len(cs) == 1:
            out.append(Mean(workload, 1, mean, cs[0].low, cs[0].high))
            continue
        rng = np.random.default_rng(stats.BOOTSTRAP_SEED)
        means = logs[rng.integers(0, len(cs), size=(resamples, len(cs)))].mean(axis=1)
        lo, hi = np.exp(np.quantile(means, [0.025, 0.975]))
        out.append(Mean(workload, len(cs), mean, float(lo), float(hi)))
    return out


def parse_threshold(text: str) -> float:
    """'5%' → 0.05, '0.05' → 0.05; a ValueError for anything else."""
    value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(text)
    return value
