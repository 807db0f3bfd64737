"""Peak memory per case, and the memory guard that learns a series' slope from it. The
host's peak is read from this process's own /proc; the device's from torch's allocator on
a real GPU (the `gpu` tests)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.fakes import SimBackend

import gpuvs
from gpuvs import backends
from gpuvs.execute.wire import Sampling, Take
from gpuvs.execute.worker import run_case
from gpuvs.machine import memory
from gpuvs.model import Case, Measurement, Status

GiB = 1024**3
MiB = 1024**2


def within(found: float, expected: float) -> bool:
    """Within 10 % or 16 MiB of what was allocated."""
    return abs(found - expected) <= max(0.10 * expected, 16 * MiB)


def test_a_case_that_allocates_1_gib_of_numpy_reports_it() -> None:
    """The call builds a 1 GiB array and returns its sum: one array alive at a time."""
    m = gpuvs.measure(lambda: np.ones(GiB // 8).sum(), budget_s=0.1)
    assert m.status is Status.OK
    assert within(m.counters[memory.PEAK_HOST], GiB), m.counters[memory.PEAK_HOST]


def fake_proc(tmp_path: Path, rss_kb: int, hwm_kb: int) -> Path:
    """A /proc/self whose clear_refs cannot be written (a directory): the kernel refuses."""
    (tmp_path / "clear_refs").mkdir(exist_ok=True)
    (tmp_path / "status").write_text(f"Name:\tpython\nVmHWM:\t{hwm_kb} kB\nVmRSS:\t{rss_kb} kB\n")
    return tmp_path


def test_without_a_reset_a_peak_above_the_old_mark_is_still_read(tmp_path: Path) -> None:
    watch = memory.PeakMemory("cpu", proc=fake_proc(tmp_path, 100_000, 500_000))
    watch.case_started()
    fake_proc(tmp_path, 100_000, 900_000)
    assert watch.case_ended().counters == {memory.PEAK_HOST: 800_000 * 1024}


def test_without_a_reset_a_peak_under_the_old_mark_is_unknown(tmp_path: Path) -> None:
    watch = memory.PeakMemory("cpu", proc=fake_proc(tmp_path, 100_000, 500_000))
    watch.case_started()
    fake_proc(tmp_path, 120_000, 500_000)
    assert watch.case_ended().counters == {}


class AllocatorThatRefuses(SimBackend):
    """A GPU framework whose allocator will not count (torch's, before CUDA is started)."""

    def peak_memory_reset(self, device: str) -> int | None:
        raise RuntimeError("Invalid device argument.")


class AllocatorThatCounts(SimBackend):
    def peak_memory_reset(self, device: str) -> int | None:
        return 100 * MiB

    def peak_memory_bytes(self, device: str) -> int | None:
        return 612 * MiB


def test_the_device_peak_is_the_allocators_less_what_it_held_and_never_fails_the_case(
        ) -> None:
    counting = memory.PeakMemory("cuda:0", AllocatorThatCounts())
    counting.case_started()
    assert counting.case_ended().counters[memory.PEAK_DEVICE] == 512 * MiB
    refusing = memory.PeakMemory("cuda:0", AllocatorThatRefuses())
    refusing.case_started()
    assert memory.PEAK_DEVICE not in refusing.case_ended().counters


def test_a_slope_through_the_two_largest_sizes_projects_the_next_peak() -> None:
    peaks = [(5, 1 * MiB), (10, 100 * MiB), (20, 400 * MiB), (40, 1600 * MiB)]
    p = memory.projected(peaks, 400)
    assert p is not None
    assert p.exponent == pytest.approx(2.0)
    assert p.bytes == pytest.approx(1600 * MiB * 100)
    assert p.through == ((20, 400 * MiB), (40, 1600 * MiB))
    assert p.words() == ("peaks measured: 400 MiB at 20, 1.56 GiB at 40, as size^2: "
                         "156 GiB at 400")
    assert memory.projected(peaks[:1], 400) is None  # one size is no slope
    assert memory.projected([(5, 1 * MiB), (10, 4 * MiB)], 20) is None  # under the floor


def test_the_runner_hands_the_guard_the_series_smaller_sizes() -> None:
    def ok(size: int, device: str, peak: float) -> Measurement:
        key = memory.PEAK_DEVICE if device != "cpu" else memory.PEAK_HOST
        return Measurement(Case("jacobian", "correct", "torch", device, "float32", size,
                                (("method", "vectorize"),)), Status.OK, samples=(1.0,),
                           counters={key: peak})

    done = [ok(10, "cuda:0", 1e8), ok(100, "cuda:0", 1e10), ok(100, "cpu", 5e9),
            ok(1000, "cuda:0", 1e12)]
    nxt = Case("jacobian", "correct", "torch", "cuda:0", "float32", 1000,
               (("method", "vectorize"),))
    assert memory.peaks_of(nxt, done) == [(10, 1e8), (100, 1e10)]


def test_the_guard_refuses_a_size_the_measured_slope_cannot_fit_and_names_it() -> None:
    """A size the workload's estimate fits, refused because the series' measured peaks,
    growing as size², cannot: the refusal names both."""
    case = Case("elementwise", "correct", "numpy", "cpu", "float32", 1000, (("op", "scale"),))
    request = Take(case, Sampling(0.05), peaks=((10, 1 * GiB), (20, 4 * GiB)))
    m, fatal = run_case(backends.get("numpy"), request)
    assert m.status is Status.SKIPPED and not fatal
    assert m.reason.startswith("needs 9.77 TiB, ")
    assert m.reason.endswith(" free on cpu (peaks measured: 1 GiB at 10, 4 GiB at 20, as "
                             "size^2: 9.77 TiB at 1000; the estimate: 27.3 KiB)")


@pytest.mark.gpu
def test_a_case_that_allocates_a_4_gib_torch_tensor_reports_it_on_the_device() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    m = gpuvs.measure(lambda: torch.ones(GiB, device="cuda").sum(), device="cuda",
                      budget_s=0.2)
    assert m.status is Status.OK
    assert within(m.counters[memory.PEAK_DEVICE], 4 * GiB), m.counters[memory.PEAK_DEVICE]


def test_the_guard_checks_the_measured_trend_not_the_estimate_where_there_is_one() -> None:
    """Issue 42: 10⁹ elements refused as "needs 26.1 GiB" where the series' own peaks
    put it at 1.92 GiB. With a trend, the guard checks the trend; without, the estimate."""
    estimate = 26.1 * GiB
    peaks = [(10**7, 19.7 * MiB), (10**8, 197 * MiB)]  # a byte and a bit an element
    need, how = memory.guarded_need(estimate, peaks, 10**9)
    assert need == pytest.approx(1970 * MiB, rel=1e-6)
    assert how == (" (peaks measured: 19.7 MiB at 1e7, 197 MiB at 1e8, as size^1: 1.92 GiB "
                   "at 1e9; the estimate: 26.1 GiB)")
    assert memory.guarded_need(estimate, [], 10**9) == (estimate, "")
    assert memory.guarded_need(estimate, peaks[:1], 10**9) == (estimate, "")  # no slope

