"""The closed set of caveats, each with advice, and how they are detected from samples.

Warnings are data (stored with the measurement, shown everywhere) and every one tells
the user what to do next, as hyperfine's and pyperf's do.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpuvs import stats
from gpuvs.model import Caveat

ADVICE: dict[Caveat, str] = {
    Caveat.UNSTABLE: "samples vary a lot (IQR over 10 % of the median); close other "
                     "programs, pin CPU frequency, or raise --budget",
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
    Caveat.MULTIMODAL: "some samples ran far faster than the median (two groups, not one "
                       "spread); it was measured again with three times the budget and "
                       "stayed so: the median may belong to the slower group",
    Caveat.DRIFTING: "the samples moved during the run (the first and last stretches "
                     "differ); it was measured again with three times the budget and "
                     "kept moving: warm the machine up or pin its clocks",
}

# The caveats that put the number itself in doubt: shown beside it in every table, and
# the ones a case is measured again for.
DOUBTS = frozenset({Caveat.UNSTABLE, Caveat.MULTIMODAL, Caveat.DRIFTING, Caveat.CONTENDED,
                    Caveat.THROTTLED})
REMEASURE = frozenset({Caveat.MULTIMODAL, Caveat.DRIFTING})


def doubts(found: Sequence[Caveat]) -> str:
    """' (multimodal, contended)': the caveats that doubt a number, to print beside it."""
    named = [str(c) for c in found if c in DOUBTS]
    return f" ({', '.join(named)})" if named else ""

UNSTABLE_IQR_REL = 0.10
FIRST_CALL_SLOW_FACTOR = 10.0
FEW_SAMPLES = 5
OUTLIER_FRACTION = 0.10
# A median this many times the fastest sample: a faster group of samples exists.
MULTIMODAL_FACTOR = 1.5
# First and last stretches whose medians differ by more than this: the run drifted.
DRIFT_REL = 0.10
MIN_SAMPLES_FOR_SHAPE = 10


def detect(samples: Sequence[float], first_call_s: float | None,
           criterion_met: bool) -> tuple[Caveat, ...]:
    """The caveats that the samples themselves reveal."""
    if not samples:
        return ()
    s = stats.summarize(samples)
    found: list[Caveat] = []
    if s.median > 0 and s.iqr / s.median > UNSTABLE_IQR_REL:
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
    if s.median / s.min > MULTIMODAL_FACTOR:
        found.append(Caveat.MULTIMODAL)
    third = s.n // 3
    first, last = stats.median_of(samples[:third]), stats.median_of(samples[-third:])
    if abs(last / first - 1) > DRIFT_REL:
        found.append(Caveat.DRIFTING)
    return found
