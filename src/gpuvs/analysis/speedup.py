"""How many times faster one case is than another: one type, and one place that decides
what a GPU case is set against.

A speedup is the ratio of two cases' figures with a 95 % interval that holds where a
repeat's ratio lands (`stats.ratio_of_figures`: the two cases' intervals, each over its
processes, a case timed in one process widened by its run's spread), and its verdict
reads the interval, not the estimate: above 1× only when the whole interval is. The baseline
of a GPU case is the fastest finished CPU case of the same size (`best_cpu_by_size`):
whoever asks "is the GPU faster?" — the tables, the crossover, the verdict, the plots,
`gpuvs.compare` — gets the same answer from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gpuvs import stats, units
from gpuvs.analysis.regression import borrowed, process_spread
from gpuvs.model import Case, Measurement, Status

RESIDENT, END_TO_END = "resident", "end_to_end"


@dataclass(frozen=True)
class Speedup:
    """`estimate` = baseline time ÷ this case's time (above 1: this case is faster)."""

    device: str        # the device of the case set against the baseline
    data: str          # "resident" or "end_to_end" (host↔device copies paid every call)
    size: int
    estimate: float    # ratio of medians
    low: float         # 95 % interval: where a repeat's ratio lands
    high: float

    @property
    def verdict(self) -> str:
        """'gpu' when the whole CI lies above 1, 'cpu' when below, else 'tie'."""
        return "gpu" if self.low > 1 else "cpu" if self.high < 1 else "tie"

    def inverse(self) -> Speedup:
        """The same comparison read the other way round."""
        return Speedup(self.device, self.data, self.size, 1 / self.estimate, 1 / self.high,
                       1 / self.low)

    def __float__(self) -> float:
        return self.estimate

    def __str__(self) -> str:
        words = {"gpu": "GPU faster", "cpu": "CPU faster", "tie": "a tie"}[self.verdict]
        return f"{units.ratio(self.estimate, self.low, self.high)}: {words}"

    def __repr__(self) -> str:
        return f"Speedup({self}; {self.device} {self.data} vs cpu at size {self.size})"


def data_of(case: Case) -> str:
    """Where a case's data starts: on the device (resident) or on the host (end_to_end)."""
    return case.param("data", RESIDENT)


def of(baseline: Measurement, m: Measurement,
       spread: Mapping[tuple[str, str], float] | None = None) -> Speedup:
    """`m` against `baseline`: how many times faster `m` is, with its interval. `spread`,
    the run's spread across processes by backend and device
    (`analysis.regression.process_spread`), widens a case timed in one process to where
    its kind's repeats land; without it each case's own interval is taken as it is. A
    post's replay as written keeps its own: it is the post's method, timed as the post
    timed it, and a first call's set-up moves far more than measured cases do (seed 001's
    first GRU call on the CPU: 1.94 ms on one H200 VM, 26.7 ms on another)."""
    assert baseline.summary is not None and m.summary is not None
    lent = (_lent(baseline, spread), _lent(m, spread)) if spread else (0.0, 0.0)
    est, lo, hi = stats.ratio_of_figures(baseline.summary, m.summary, lent)
    return Speedup(m.case.device, data_of(m.case), m.case.size, est, lo, hi)


def _lent(m: Measurement, spread: Mapping[tuple[str, str], float]) -> float:
    return 0.0 if m.case.variant == "as_written" else borrowed(m, spread)


def best_cpu_by_size(ms: Iterable[Measurement]) -> dict[int, Measurement]:
    """The fastest finished CPU case at each size: the baseline a GPU case must beat."""
    best: dict[int, Measurement] = {}
    for m in ms:
        if m.case.device == "cpu" and m.summary is not None:
            cur = best.get(m.case.size)
            if cur is None or m.summary.median < cur.summary.median:  # type: ignore[union-attr]
                best[m.case.size] = m
    return best


def speedups(ms: Sequence[Measurement]) -> list[Speedup]:
    """Every finished GPU case against the fastest CPU case of its size."""
    cpu, spread = best_cpu_by_size(ms), process_spread(ms)
    return [of(cpu[m.case.size], m, spread) for m in ms
            if m.case.device != "cpu" and m.status is Status.OK and m.samples
            and m.case.size in cpu]
