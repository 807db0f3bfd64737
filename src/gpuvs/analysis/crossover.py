"""From what size on is the GPU faster? Speedups with CIs, the crossover, a cost model.

For each group of a sweep (workload, variant, dtype, params) the CPU reference at each
size is the fastest CPU case there (`speedup.best_cpu_by_size`). Each GPU series
(backend, device, resident or end-to-end) is compared with it:

- the speedup at each size is `speedup.of`: the ratio of medians with the 95 % interval a
  repeat's ratio lands in;
- the **crossover** is the smallest size from which the CI's lower bound stays above 1;
  sizes whose CI straddles 1 form the **tie band**;
- a cost model `t(n) = t0 + work(n) / throughput` is fitted to each series (work =
  FLOPs, else bytes moved, else size) and gives the crossover between sweep points, or
  beyond them (marked extrapolated), and the asymptotic speedup (throughput ratio).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gpuvs.analysis.regression import process_spread
from gpuvs.analysis.speedup import Speedup, best_cpu_by_size, data_of, of
from gpuvs.model import Case, Measurement, Params, Status

GroupKey = tuple[str, str, str, Params]  # workload, variant, dtype, params without data


@dataclass(frozen=True)
class CostModel:
    """t(work) = t0_s + work / throughput, fitted on relative error."""

    t0_s: float
    throughput: float  # work units per second; inf when time does not grow with work

    def predict(self, work: float) -> float:
        return self.t0_s + (work / self.throughput if math.isfinite(self.throughput) else 0.0)


@dataclass(frozen=True)
class Crossover:
    group: GroupKey
    gpu: Case                             # the GPU series (size 0)
    points: tuple[Speedup, ...]
    size: int | None                      # measured crossover
    tie_band: tuple[int, int] | None
    modelled_size: float | None           # where the cost models cross
    extrapolated: bool                    # modelled_size lies outside the swept sizes
    asymptotic_speedup: float | None      # GPU throughput / CPU throughput

    @property
    def data(self) -> str:
        return data_of(self.gpu)


def group_key(case: Case) -> GroupKey:
    return (case.workload, case.variant, case.dtype,
            tuple(p for p in case.params if p[0] != "data"))


def work(m: Measurement) -> float:
    """What the cost model scales with: FLOPs, else bytes moved, else the size."""
    return float(m.counters.get("flops") or m.counters.get("bytes_moved") or m.case.size)


def crossovers(measurements: Iterable[Measurement],
               spread: Mapping[tuple[str, str], float] | None = None) -> list[Crossover]:
    """One Crossover per GPU series that has a CPU reference at two or more sizes. `spread`
    is the run's spread across processes (`regression.process_spread`) for a caller that
    passes one sweep of it; by default it is taken from `measurements`."""
    groups: dict[GroupKey, list[Measurement]] = defaultdict(list)
    everything = list(measurements)
    for m in everything:
        if m.status is Status.OK and m.samples:
            groups[group_key(m.case)].append(m)
    spread = process_spread(everything) if spread is None else spread
    found = []
    for key, ms in groups.items():
        cpu = best_cpu_by_size(ms)
        series: dict[Case, list[Measurement]] = defaultdict(list)
        for m in ms:
            if m.case.device != "cpu" and m.case.size in cpu:
                series[m.case.series].append(m)
        for gpu_series, gpu_ms in series.items():
            found.append(_crossover(key, gpu_series, sorted(gpu_ms, key=_size), cpu, spread))
    return found


def _size(m: Measurement) -> int:
    return m.case.size


def _crossover(key: GroupKey, gpu_series: Case, gpu: list[Measurement],
               cpu: dict[int, Measurement], spread: Mapping[tuple[str, str], float]
               ) -> Crossover:
    points = tuple(of(cpu[m.case.size], m, spread) for m in gpu)
    cpu_ms = [cpu[m.case.size] for m in gpu]
    modelled, extrapolated, asymptotic = _model_crossover(cpu_ms, gpu)
    return Crossover(key, gpu_series, points, measured_crossover(points), tie_band(points),
                     modelled, extrapolated, asymptotic)


def measured_crossover(points: Sequence[Speedup]) -> int | None:
    """The smallest size from which every point's CI lies above 1."""
    size = None
    for p in reversed(points):
        if p.verdict != "gpu":
            break
        size = p.size
    return size


def tie_band(points: Sequence[Speedup]) -> tuple[int, int] | None:
    ties = [p.size for p in points if p.verdict == "tie"]
    return (min(ties), max(ties)) if ties else None


def fit(works: Sequence[float], times: Sequence[float]) -> CostModel:
    """Least squares on relative error with t0 and 1/throughput kept non-negative: SciPy's
    NNLS, the constrained optimum (a clamp after an unconstrained fit is not always). A
    slope of zero means time does not grow with work in this range: all overhead. SciPy
    is imported here: only a sweep with a GPU and a CPU series fits a model."""
    from scipy.optimize import nnls

    w, t = np.asarray(works, dtype=float), np.asarray(times, dtype=float)
    (t0, slope), _ = nnls(np.column_stack([1 / t, w / t]), np.ones_like(t))
    return CostModel(float(t0), float(1 / slope) if slope > 0 else math.inf)


def _model_crossover(cpu: Sequence[Measurement], gpu: Sequence[Measurement]
                     ) -> tuple[float | None, bool, float | None]:
    if len(gpu) < 2:
        return None, False, None
    works = [work(m) for m in gpu]
    c = fit(works, [m.summary.median for m in cpu])  # type: ignore[union-attr]
    g = fit(works, [m.summary.median for m in gpu])  # type: ignore[union-attr]
    asymptotic = (g.throughput / c.throughput
                  if math.isfinite(g.throughput) and math.isfinite(c.throughput) else None)
    if c.t0_s >= g.t0_s and (asymptotic is None or asymptotic >= 1):
        return None, False, asymptotic  # the model has the GPU ahead everywhere
    slope_gap = 1 / c.throughput - (1 / g.throughput if math.isfinite(g.throughput) else 0)
    if slope_gap <= 0:
        return None, False, asymptotic  # the GPU never catches up: no crossover anywhere
    w_star = (g.t0_s - c.t0_s) / slope_gap
    size = _size_for_work(w_star, works, [m.case.size for m in gpu])
    return size, not (min(works) <= w_star <= max(works)), asymptotic


def _size_for_work(w: float, works: Sequence[float], sizes: Sequence[int]) -> float:
    """Invert size → work by log–log interpolation (exact for power laws such as 2n³)."""
    lw, ls = np.log(np.asarray(works)), np.log(np.asarray(sizes, dtype=float))
    x = math.log(max(w, 1e-300))
    if x <= lw[0] or x >= lw[-1]:  # extrapolate along the nearest end's slope
        i, j = (0, 1) if x <= lw[0] else (-2, -1)
        slope = (ls[j] - ls[i]) / (lw[j] - lw[i]) if lw[j] != lw[i] else 1.0
        return float(math.exp(ls[i] + slope * (x - lw[i])))
    return float(math.exp(np.interp(x, lw, ls)))
