"""Bounds from measured ceilings, each with a sentence that cites the numbers."""

from __future__ import annotations

from gpuvs.analysis.roofline import Bound, classify, findings
from gpuvs.model import Case, Ceiling, Measurement, Status

CEILINGS = [
    Ceiling("per-op dispatch cost", "cuda:0", "torch", 8e-6, "s", ""),
    Ceiling("matmul float32 tf32=off", "cuda:0", "torch", 5e13, "FLOP/s", ""),
    Ceiling("memory bandwidth (copy)", "cuda:0", "torch", 3e12, "B/s", ""),
]


def _m(seconds: float, size: int = 1, data: str = "", **counters: float) -> Measurement:
    params = (("data", data),) if data else ()
    case = Case("w", "correct", "torch", "cuda:0", "float32", size, params)
    return Measurement(case, Status.OK, samples=(seconds,) * 5, counters=counters)


def test_a_call_near_the_dispatch_floor_is_launch_bound() -> None:
    f = classify(_m(12e-6, flops=1e3, bytes_moved=8e3, launches=1), CEILINGS)
    assert f is not None and f.bound is Bound.LAUNCH
    assert f.why.startswith("8 µs of 12 µs per call is the dispatch floor (1 op(s) × 8 µs)")


def test_three_launches_raise_the_floor() -> None:
    f = classify(_m(40e-6, flops=3e3, bytes_moved=24e3, launches=3), CEILINGS)
    assert f is not None and f.bound is Bound.LAUNCH


def test_an_end_to_end_call_dominated_by_copies_is_transfer_bound() -> None:
    resident = _m(1e-3, size=4096, flops=1e11, bytes_moved=2e8)
    e2e = _m(10e-3, size=4096, data="end_to_end", flops=1e11, bytes_moved=2e8)
    assert findings([resident, e2e], CEILINGS)[e2e.case.key].bound is Bound.TRANSFER
    assert "90% of the 10 ms call is host↔device copying" in classify(
        e2e, CEILINGS, resident).why
    counted = _m(10e-3, size=4096, data="end_to_end", flops=1e11, bytes_moved=2e8,
                 h2d_copies=2, d2h_copies=1)
    assert "copying, 2 copies in and 1 out (the work" in classify(counted, CEILINGS, resident).why


def test_intensity_against_the_ridge_separates_memory_from_compute() -> None:
    ridge = 5e13 / 3e12  # ≈ 16.7 FLOP per byte
    gemm = classify(_m(2.5e-3, flops=1.1e11, bytes_moved=1.1e11 / (10 * ridge)), CEILINGS)
    scale = classify(_m(1e-3, flops=1e8, bytes_moved=2.4e9), CEILINGS)
    assert gemm is not None and gemm.bound is Bound.COMPUTE
    assert "88% of peak FLOP/s" in gemm.why
    assert scale is not None and scale.bound is Bound.MEMORY
    assert "80% of measured bandwidth" in scale.why


def test_without_ceilings_nothing_is_claimed() -> None:
    assert classify(_m(1e-3, flops=1e9, bytes_moved=1e9), []) is None


def test_a_gpu_busy_for_a_third_of_the_call_is_launch_bound_and_says_both_numbers() -> None:
    """Seed 000's product on an H100: kernel 6.6 µs, 18.6 µs a call in a loop."""
    f = classify(_m(18.6e-6, flops=5.1e6, bytes_moved=1.0e7, busy_graph_s=6.6e-6), CEILINGS)
    assert f is not None and f.bound is Bound.LAUNCH
    assert f.why.startswith("GPU busy 6.6 µs of 18.6 µs a call; the rest is the host issuing")


def test_a_gpu_busy_for_most_of_the_call_is_judged_by_its_work() -> None:
    f = classify(_m(2.7e-3, flops=1.37e11, bytes_moved=2e8, busy_kernels_s=2.65e-3), CEILINGS)
    assert f is not None and f.bound is Bound.COMPUTE


def test_a_graph_replay_is_preferred_to_the_profilers_kernel_time() -> None:
    from gpuvs.analysis.roofline import busy_seconds
    assert busy_seconds(_m(1e-5, busy_graph_s=4e-6, busy_kernels_s=3e-6)) == 4e-6
    assert busy_seconds(_m(1e-5, busy_kernels_s=3e-6)) == 3e-6
    assert busy_seconds(_m(1e-5)) is None


def test_a_cpu_array_that_fits_a_cache_is_held_against_that_caches_roof() -> None:
    """A 39 KiB array is no memory-bound case at 90 % of memory bandwidth: it sits in L2."""
    ceilings = [Ceiling("memory bandwidth (triad) threads=all", "cpu", "torch", 2e10, "B/s",
                        ""),
                Ceiling("L2 cache bandwidth (1048576 B)", "cpu", "numpy", 9e10, "B/s", "")]
    case = Case("elementwise", "correct", "torch", "cpu", "float32", 10_000)
    m = Measurement(case, Status.OK, samples=(4.4e-6,) * 5,
                    counters={"bytes_moved": 8e4, "working_set_bytes": 4e4})
    f = classify(m, ceilings)
    assert f is not None and f.bound is Bound.MEMORY
    assert "20% of the L2 cache's measured bandwidth (its 39.1 KiB fit there)" in f.why


def test_over_100_percent_of_memory_with_data_beyond_every_cache_is_called_suspicious() -> None:
    """400 MB sits in no cache: 113 % of the memory roof means the roof is wrong."""
    ceilings = [Ceiling("memory bandwidth (triad) threads=1", "cpu", "numpy", 1e10, "B/s", ""),
                Ceiling("L3 cache bandwidth (33554432 B)", "cpu", "numpy", 4e10, "B/s", "")]
    case = Case("elementwise", "correct", "torch", "cpu", "float32", 100_000_000)
    m = Measurement(case, Status.OK, samples=(7.08e-2,) * 5,
                    counters={"bytes_moved": 8e8, "working_set_bytes": 4e8})
    f = classify(m, ceilings)
    assert f is not None and "113% of measured bandwidth" in f.why
    assert "more data than any cache holds: the bandwidth ceiling was measured low" in f.why
