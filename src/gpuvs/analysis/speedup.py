"""How many times faster one case is than another: one type, and one place that decides
what a GPU case is set against.

A speedup is a ratio of medians with a bootstrap 95 % CI (`stats.ratio_ci`), and its
verdict reads the CI, not the estimate: above 1× only when the whole CI is. The baseline
of a GPU case is the fastest finished CPU case of the same size (`best_cpu_by_size`):
whoever asks "is the GPU faster?" — the tables, the crossover, the verdict, the plots,
`gpuvs.compare` — gets the same answer from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpuvs import stats, units
from gpuvs.model import Case, Measurement, Status

RESIDENT, END_TO_END = "resident", "end_to_end"


@dataclass(frozen=True)
class Speedup:
    """`estimate` = baseline time ÷ this case's time (above 1: this case is faster)."""

    device: str        # the device of the case set against the baseline
    data: str          # "resident" or "end_to_end" (host↔device copies paid every call)
    size: int
    estimate: float    # ratio of medians
    low: float         # bootstrap 95 % CI
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


def of(baseline: Measurement, m: Measurement) -> Speedup:
    """`m` against `baseline`: how many times faster `m` is, with its CI."""
    est, lo, hi = stats.ratio_ci(baseline.samples, m.samples)
    return Speedup(m.case.device, data_of(m.case), m.case.size, est, lo, hi)


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
    cpu = best_cpu_by_size(ms)
    return [of(cpu[m.case.size], m) for m in ms
            if m.case.device != "cpu" and m.status is Status.OK and m.samples
            and m.case.size in cpu]
