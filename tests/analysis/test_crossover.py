"""The crossover finder on sweeps whose true costs are known."""

from __future__ import annotations

import numpy as np
import pytest

from gpuvs.analysis.crossover import crossovers, fit, measured_crossover, tie_band
from gpuvs.analysis.speedup import Speedup
from gpuvs.model import Case, Measurement, Status


def point(size: int, estimate: float, low: float, high: float) -> Speedup:
    return Speedup("cuda:0", "resident", size, estimate, low, high)


CPU_T0, CPU_PER = 1e-6, 1e-9    # seconds, seconds per element
GPU_T0, GPU_PER = 2e-5, 1e-11   # launch-bound below ~2e4 elements, 100x the throughput
TRUE_CROSSOVER = (GPU_T0 - CPU_T0) / (CPU_PER - GPU_PER)  # ≈ 19192


def sweep(sizes, noise: float = 0.01, data: str = "resident") -> list[Measurement]:
    rng = np.random.default_rng(0)
    out = []
    for n in sizes:
        for device, t0, per in (("cpu", CPU_T0, CPU_PER), ("cuda:0", GPU_T0, GPU_PER)):
            t = t0 + n * per
            params = (("data", data),) if device != "cpu" and data != "resident" else ()
            case = Case("w", "correct", "torch", device, "float32", n, params)
            samples = tuple(t * (1 + noise * rng.standard_normal(30)))
            out.append(Measurement(case, Status.OK, samples=samples, counters={"flops": n}))
    return out


def test_finds_the_first_size_from_which_the_gpu_stays_faster() -> None:
    (c,) = crossovers(sweep([10**e for e in range(3, 7)]))
    assert c.size == 10**5
    assert [p.verdict for p in c.points] == ["cpu", "cpu", "gpu", "gpu"]
    assert c.modelled_size == pytest.approx(TRUE_CROSSOVER, rel=0.1)
    assert not c.extrapolated
    assert c.asymptotic_speedup == pytest.approx(CPU_PER / GPU_PER, rel=0.1)


def test_when_the_gpu_never_wins_in_range_the_model_extrapolates() -> None:
    (c,) = crossovers(sweep([100, 300, 1000, 3000]))
    assert c.size is None
    assert c.modelled_size == pytest.approx(TRUE_CROSSOVER, rel=0.2)
    assert c.extrapolated


def test_a_ci_that_straddles_one_is_a_tie_not_a_win() -> None:
    points = [point(10, 0.5, 0.4, 0.6), point(20, 1.0, 0.9, 1.1),
              point(40, 1.5, 1.2, 1.8), point(80, 3.0, 2.5, 3.5)]
    assert measured_crossover(points) == 40
    assert tie_band(points) == (20, 20)


def test_a_win_that_is_lost_again_does_not_count() -> None:
    points = [point(10, 2, 1.5, 2.5), point(20, 0.5, 0.4, 0.6),
              point(40, 2, 1.5, 2.5)]
    assert measured_crossover(points) == 40


def test_end_to_end_series_are_separate_crossovers() -> None:
    ms = sweep([10**3, 10**4, 10**5]) + [
        m for m in sweep([10**3, 10**4, 10**5], data="end_to_end") if m.case.device != "cpu"]
    assert sorted(c.data for c in crossovers(ms)) == ["end_to_end", "resident"]


def test_no_crossover_without_a_gpu_series() -> None:
    assert crossovers([m for m in sweep([10, 100]) if m.case.device == "cpu"]) == []


def test_cost_model_fit_recovers_overhead_and_rate() -> None:
    works = np.array([1e3, 1e4, 1e5, 1e6])
    model = fit(works, 5e-6 + works / 1e9)
    assert model.t0_s == pytest.approx(5e-6, rel=1e-6)
    assert model.throughput == pytest.approx(1e9, rel=1e-6)


def test_a_cost_model_keeps_both_terms_non_negative() -> None:
    """Times flat in work are all overhead (no rate); a pure rate whose noise would pull
    the intercept below zero gets none: the constrained optimum, not a clamp."""
    works = np.array([1e3, 1e4, 1e5, 1e6])
    flat = fit(works, np.array([2.0e-5, 1.9e-5, 2.1e-5, 1.95e-5]))
    assert flat.throughput == np.inf and 1.9e-5 < flat.t0_s < 2.1e-5
    rate = fit(works, works / 1e9 * np.array([0.9, 1.0, 1.02, 1.0]))
    assert rate.t0_s == 0.0 and rate.throughput == pytest.approx(1e9, rel=0.05)


def test_refinement_adds_the_midpoint_of_a_wide_bracket_for_every_series() -> None:
    from gpuvs.analysis.refine import refined_cases
    ms = sweep([10**3, 10**4, 10**5, 10**6])  # crossover bracketed by 1e4 and 1e5
    new = refined_cases(ms, factor=2)
    assert {c.size for c in new} == {31623}
    assert {c.device for c in new} == {"cpu", "cuda:0"}
    assert refined_cases(ms, factor=20) == []
