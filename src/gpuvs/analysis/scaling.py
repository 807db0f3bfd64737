"""Data-parallel scaling: each rank count's rounds joined, and its efficiency against one
rank, with an interval that says how sure it is.

`gpuvs dist scaling` measures the rank counts in rounds, interleaved (1, 2, 1, 2, …: the
cases' `round` is 1, 2, …). The host's pace moves while they run — on two H100s N = 1
moved by −11 %, −8 % and +35 % between launches minutes apart — so a ratio of two cases
far apart carries that drift, and an interval built to cover it was 20–30 points wide.
Within a round, N and the N = 1 before it are seconds apart: their ratio pairs the drift
out. The efficiency is the geometric mean of the rounds' ratios, and its interval is
Student's t over them (`stats.ratio_over_rounds`): it covers how the pairs move from round
to round, which no interval from one round's samples can see. It is never narrower than
LAUNCH_SPREAD either side: what a repeat launch gives, which no round of this one can see.

Runs made before rounds measured each N once, and N = 1 before the others and again
after them (`round=after`): their efficiency is the ratio of medians against the first
N = 1, and its interval the union of the intervals against each N = 1 (`speedup.of`). A run of one
round is read the same way.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from gpuvs import stats
from gpuvs.analysis import speedup
from gpuvs.model import Measurement, Status

AFTER = "after"  # N = 1 again after the others, in a run from before rounds
# How far one launch's efficiency can land from another's, relative: the interval of a
# launch's efficiency is never narrower than this either side. Rounds pair out the drift
# within a launch, not the pace each launch's processes happen to run at (docs/accuracy.md
# and issue 40: a launch-bound loop's speed is decided per process). Three launches of
# `gpuvs dist scaling --nproc 2` (seed 003's CNN, batch 32 a rank) on two H100s, minutes
# apart, gave 76.0 % [69.2, 83.4], 95.8 % [91.5, 100.3] and 89.9 % [82.7, 97.7], a fourth
# as two nodes 95.5 %; at batch 256, 89 %, 93 % and 93 % (docs/distributed.md). The widest
# gap, 76.0 against 95.8, is 23 % of their mean: each side's interval must reach half of
# it for the two to overlap.
LAUNCH_SPREAD = 0.12


@dataclass(frozen=True)
class Efficiency:
    """Throughput at N over N × throughput at N = 1: (estimate, low, high), and the paired
    rounds it was taken over (0: a single pair, or a run from before rounds)."""

    estimate: float
    low: float
    high: float
    rounds: int = 0


@dataclass(frozen=True)
class Row:
    """One rank count of a series: its cases (one per round) and them joined."""

    n: int
    again: bool  # N = 1 measured again after the others (a run from before rounds)
    cases: tuple[Measurement, ...]
    joined: Measurement
    efficiency: Efficiency | None  # None: no finished N = 1, or none of this N


def round_of(m: Measurement) -> int | None:
    """The case's round (1, 2, …); None for a run from before rounds."""
    text = m.case.param("round")
    return int(text) if text.isdigit() else None


def rows(series: Sequence[Measurement]) -> list[Row]:
    """The series' rank counts in order, each with its rounds joined (`joined`) and its
    efficiency; a run from before rounds keeps its N = 1 measured after the others as a
    row of its own, after N = 1."""
    keys = sorted({(m.case.size, m.case.param("round") == AFTER) for m in series})
    out = []
    for n, again in keys:
        cases = tuple(m for m in series
                      if m.case.size == n and (m.case.param("round") == AFTER) == again)
        out.append(Row(n, again, cases, joined(cases),
                       None if again else efficiency(series, n)))
    return out


def joined(cases: Sequence[Measurement]) -> Measurement:
    """A rank count's rounds as one measurement: the finished rounds' steps in order, the
    throughput of their median step, the median of their compute times (the comm is the
    rest of the step), every caveat once, and the last finished round's other counters
    (peaks, the energy window, which only the last round reads). A rank count none of
    whose rounds finished is its first case."""
    done = [m for m in cases if m.status is Status.OK and m.samples]
    if len(cases) == 1 or not done:
        return cases[0]
    samples = tuple(s for m in done for s in m.samples)
    counters = dict(done[-1].counters)
    if "compute_s" in counters and "global_batch" in counters:
        step = statistics.median(samples)
        compute = statistics.median(m.counters["compute_s"] for m in done)
        counters |= {"samples_per_s": counters["global_batch"] / step, "compute_s": compute,
                     "comm_s": max(0.0, step - compute)}
    walls = tuple(s for m in done for s in m.wall_samples)
    return replace(done[0], samples=samples,
                   wall_samples=walls if all(m.wall_samples for m in done) else (),
                   counters=counters,
                   caveats=tuple(dict.fromkeys(cv for m in done for cv in m.caveats)))


def efficiency(series: Sequence[Measurement], n: int, spread: float = LAUNCH_SPREAD
               ) -> Efficiency | None:
    """The efficiency of rank count `n` in its series (1 exactly for N = 1): over the
    rounds where both N = 1 and N finished, if two or more did; else against every
    finished N = 1 (see the module's docstring); its interval reaching `spread` either
    side at least (another launch's, LAUNCH_SPREAD; 0 for one launch's own)."""
    if n == 1:
        return Efficiency(1.0, 1.0, 1.0)
    done = [m for m in series if m.status is Status.OK and m.samples]
    ones = {r: m for m in done if m.case.size == 1 and (r := round_of(m)) is not None}
    mine = {r: m for m in done if m.case.size == n and (r := round_of(m)) is not None}
    paired = sorted(ones.keys() & mine.keys())
    per = _per_rank(series[0], n)
    if len(paired) >= 2:
        est, low, high = stats.ratio_over_rounds(
            [statistics.median(ones[r].samples) / statistics.median(mine[r].samples) * per
             for r in paired])
        return _widened(Efficiency(est, low, high, len(paired)), spread)
    bases = [m for m in done if m.case.size == 1]
    target = next((m for m in done if m.case.size == n), None)
    if not bases or target is None:
        return None
    ratios = [speedup.of(one, target) for one in bases]
    return _widened(Efficiency(
        statistics.median(bases[0].samples) / statistics.median(target.samples) * per,
        min(r.low for r in ratios) * per, max(r.high for r in ratios) * per), spread)


def _widened(e: Efficiency, spread: float) -> Efficiency:
    """The interval reaching `spread` either side at least: what another launch of the
    same command gives, which no interval over one launch's rounds can show."""
    return replace(e, low=min(e.low, e.estimate * (1 - spread)),
                   high=max(e.high, e.estimate * (1 + spread)))


def baseline_moved(series: Sequence[Measurement]) -> tuple[float, float] | None:
    """How far N = 1's step moved while the other counts ran: (first, last) of its
    finished cases' medians in a run from before rounds; (fastest, slowest) round's
    median with rounds. None with fewer than two."""
    ones = [m for m in series if m.case.size == 1 and m.status is Status.OK and m.samples]
    if len(ones) < 2:
        return None
    medians = [statistics.median(m.samples) for m in ones]
    if any(round_of(m) is not None for m in ones):
        return min(medians), max(medians)
    return medians[0], medians[-1]


def _per_rank(m: Measurement, n: int) -> float:
    """Weak scaling keeps each rank's batch (t1 / tN); strong splits one batch over N
    ranks (t1 / (N · tN))."""
    return 1.0 if m.case.param("scaling") == "weak" else 1.0 / n
