"""The closed set of caveats, each with advice, and how they are detected from samples.

Warnings are data (stored with the measurement, shown everywhere) and every one tells
the user what to do next, as hyperfine's and pyperf's do.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpuvs import stats
from gpuvs.model import Caveat

ADVICE: dict[Caveat, str] = {
    Caveat.UNSTABLE: "the 95 % CI of the median is wider than ±5 %: the number is only "
                     "known that well; close other programs, pin CPU frequency, or raise "
                     "--budget",
    Caveat.FIRST_CALL_SLOW: "the first call was over 10x the median (compilation, handles, "
                            "caches); it is reported as first_call_s, not in the median",
    Caveat.BUDGET_EXHAUSTED: "the budget ended before the CI of the median reached the "
                             "target; raise --budget for a tighter interval",
    Caveat.FEW_SAMPLES: "fewer than 5 samples; the interval is wide — raise --budget",
    Caveat.THROTTLED: "the GPU slowed down for heat or power during the samples; let it "
                      "cool and rerun",
    Caveat.DTYPE_MISMATCH: "backends compared here use different dtypes; compare at one "
                           "dtype with --dtype",
    Caveat.TF32_ON: "float32 matrix products used TF32 (10-bit mantissa); compare with "
                    "TF32 off or say so",
    Caveat.OUTLIERS: "over 10 % of samples are outliers; something else is using the "
                     "machine",
    Caveat.CONTENDED: "other processes used the CPUs (or the GPU) while this case ran, "
                      "and did again when it was measured a second time; the number is "
                      "the busy machine's: stop them and rerun",
    Caveat.MULTIMODAL: "a tenth or more of the samples ran far faster than the median (two "
                       "groups, not one spread); it was measured again with three times the "
                       "budget and stayed so: the median may belong to the slower group",
    Caveat.DRIFTING: "the samples moved during the run (the first and last stretches "
                     "differ); it was measured again with three times the budget and "
                     "kept moving: warm the machine up or pin its clocks",
    Caveat.PROCESS_DEPENDENT: "the passes, each in a fresh process, gave medians further "
                              "apart than each pass's own interval, and the interval that "
                              "covers them is wider than ±5 %: the process itself (where its "
                              "allocator put the data, the host's state when it started) "
                              "sets this number; a repeat may land anywhere in the interval",
    Caveat.THINNED: "the file or store held more samples of this case than gpuvs reads "
                    "(`store.export.MAX_SAMPLES`); an evenly spaced subset was read, in time "
                    "order, and `samples_stored` counts them all: its interval is wider "
                    "than all of them would give",
}

# The caveats that put the number itself in doubt: shown beside it in every table, and
# the ones a case is measured again for.
DOUBTS = frozenset({Caveat.UNSTABLE, Caveat.MULTIMODAL, Caveat.DRIFTING, Caveat.CONTENDED,
                    Caveat.THROTTLED, Caveat.PROCESS_DEPENDENT})
REMEASURE = frozenset({Caveat.MULTIMODAL, Caveat.DRIFTING})


def doubts(found: Sequence[Caveat]) -> str:
    """' (multimodal, contended)': the caveats that doubt a number, to print beside it."""
    named = [str(c) for c in found if c in DOUBTS]
    return f" ({', '.join(named)})" if named else ""

# A median whose 95 % CI is wider than this (half-width, relative) is doubtful: a wide
# spread of samples alone is not (a launch-bound call's samples spread by a tenth or more,
# and a thousand of them still pin the median to ±0.5 %).
UNSTABLE_CI_REL = 0.05
FIRST_CALL_SLOW_FACTOR = 10.0
FEW_SAMPLES = 5
OUTLIER_FRACTION = 0.10
# A median this many times the fastest tenth of the samples: a faster group exists (one
# fast sample is an outlier, not a group).
MULTIMODAL_FACTOR = 1.5
MULTIMODAL_GROUP = 10  # percentile: the fastest tenth
# First and last stretches whose medians differ by more than this: the run drifted.
DRIFT_REL = 0.10
MIN_SAMPLES_FOR_SHAPE = 10


def detect(samples: Sequence[float], first_call_s: float | None,
           criterion_met: bool, summary: stats.Summary | None = None) -> tuple[Caveat, ...]:
    """The caveats that the samples themselves reveal, from their `summary` where the
    caller has one (else it is computed: a bootstrap, tens of ms for a thousand samples)."""
    if not samples:
        return ()
    s = summary or stats.summarize(samples)
    found: list[Caveat] = []
    if s.median > 0 and s.ci_halfwidth_rel > UNSTABLE_CI_REL:
        found.append(Caveat.UNSTABLE)
    if first_call_s is not None and first_call_s > FIRST_CALL_SLOW_FACTOR * s.median:
        found.append(Caveat.FIRST_CALL_SLOW)
    if not criterion_met:
        found.append(Caveat.BUDGET_EXHAUSTED)
    if s.n < FEW_SAMPLES:
        found.append(Caveat.FEW_SAMPLES)
    if stats.outlier_fraction(samples) > OUTLIER_FRACTION:
        found.append(Caveat.OUTLIERS)
    found += _shape(samples, s)
    return tuple(found)


def _shape(samples: Sequence[float], s: stats.Summary) -> list[Caveat]:
    """Two groups of samples, or samples that moved: seed 000's torch-CPU case had a
    median of 213 µs and a fastest sample of 72 µs."""
    if s.n < MIN_SAMPLES_FOR_SHAPE or s.min <= 0:
        return []
    found = []
    fast = float(np.percentile(np.asarray(samples, dtype=float), MULTIMODAL_GROUP))
    if fast > 0 and s.median / fast > MULTIMODAL_FACTOR:
        found.append(Caveat.MULTIMODAL)
    third = s.n // 3
    first, last = stats.median_of(samples[:third]), stats.median_of(samples[-third:])
    if abs(last / first - 1) > DRIFT_REL:
        found.append(Caveat.DRIFTING)
    return found


# What only a pass can judge: its shape (two groups, a drift, outliers) is a property of
# one process's samples — two passes laid end to end look like a drift or two groups when
# they merely differ — and what it saw from outside the samples.
WITHIN_A_PASS = frozenset({Caveat.MULTIMODAL, Caveat.DRIFTING, Caveat.OUTLIERS,
                           Caveat.CONTENDED, Caveat.THROTTLED, Caveat.TF32_ON})


def of_passes(samples: Sequence[float], passes: Sequence[int], first_call_s: float | None,
              criterion_met: bool, each_pass: Sequence[Sequence[Caveat]],
              floor_rel: float = 0.0) -> tuple[Caveat, ...]:
    """The caveats of one case measured in several passes, each in a fresh process, each
    doubt named once by its cause: a shape or an outside event as any pass saw it; an
    interval wider than ±5 % either `process_dependent` (the passes disagree beyond
    each one's own interval: the process sets the number) or `unstable` (the samples
    themselves spread). Passes that disagree within a ±5 % interval are no doubt: the
    interval covers both, and `passes_apart` says by how much. On a full `gpuvs seeds` on
    an H100, judging the merged samples as one run flagged 77 of 176 cases, 56 of them
    `drifting` across the join of two passes."""
    s = stats.summarize(samples, passes, floor_rel)
    # the merged samples' own summary would differ only in what is left out here: its
    # interval (`unstable` is judged over processes below) and the shape of one process
    found: list[Caveat] = [c for c in detect(samples, first_call_s, criterion_met, s)
             if c not in WITHIN_A_PASS and c is not Caveat.UNSTABLE]
    if s.median > 0 and s.ci_halfwidth_rel > UNSTABLE_CI_REL:
        found.append(Caveat.PROCESS_DEPENDENT if process_dependent(samples, passes)
                     else Caveat.UNSTABLE)
    seen = {c for caveats in each_pass for c in caveats if c in WITHIN_A_PASS}
    return tuple(dict.fromkeys((*found, *sorted(seen))))


def process_dependent(samples: Sequence[float], passes: Sequence[int]) -> bool:
    """Whether the passes, each in a process of its own, disagree beyond what each saw of
    itself: no pass's median lies inside another pass's own CI (its order-statistic CI:
    a bootstrap of each pass, at each pass of each case, was seconds of a run's parent)."""
    groups = stats.split_groups(samples, passes)
    medians = [float(np.median(g)) for g in groups]
    own = [stats.median_ci(g) for g in groups]
    return len(groups) > 1 and not any(lo <= m <= hi for i, (lo, hi) in enumerate(own)
                                       for j, m in enumerate(medians) if i != j)
