"""Peak memory per case, as asv's `peakmem_` benchmarks are used: on the host and on the
device, beside the time, and what the memory guard learns from.

Host: Linux keeps a process's high-water mark of resident memory (`VmHWM` in
/proc/self/status), and writing "5" to /proc/self/clear_refs resets it to the resident
size now (Linux 4.0 and later). The watch resets it when the case starts, before its
inputs are built, and reads it when the case ends: the case's peak is the mark less the
resident size at its start — inputs, the float64 reference and the calls, all that the
case added. Memory the process already held and the case reused (a heap's free blocks)
is not counted. Where the mark cannot be reset (not Linux, a sandbox that refuses), it is
the process's since it started: a case whose peak passed it is read all the same, one
whose peak stayed under it gives none. In the caller's process (`gpuvs.measure`) the reset
also resets what `resource.getrusage` reports as its `ru_maxrss`.

Device: what the framework's allocator counts (`Backend.peak_memory_reset`,
`peak_memory_bytes`): torch's `max_memory_allocated` after `reset_peak_memory_stats`, the
bytes CuPy's pool holds after emptying it at the start (its high-water mark, since a pool
keeps what it allocated), JAX's `peak_bytes_in_use` where `memory_stats()` has it. Less
what was in use at the start. A CUDA context, and libraries that allocate outside the
framework's allocator, are not in it.

The guard that refuses a case before it allocates (`gpuvs.execute.worker`) projects a
series' next peak from those measured at its smaller sizes (`projected`) and, where it
can, checks that measured trend rather than the workload's estimate (`guarded_need`); its
refusal names the slope.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpuvs.backends.base import Backend
from gpuvs.measuring.watch import Seen, Watch
from gpuvs.model import Case, Measurement, Status, on_gpu
from gpuvs.units import nbytes, size

PROC_SELF = Path("/proc/self")
PEAK_HOST, PEAK_DEVICE = "peak_host_bytes", "peak_device_bytes"
# Peaks under this are the allocator's rounding and caches, not the work's growth: a
# slope through them would project nothing useful.
SLOPE_FLOOR_BYTES = 16 * 1024**2


def status_bytes(field: str, proc: Path = PROC_SELF) -> int | None:
    """A `kB` line of /proc/self/status (`VmRSS`, `VmHWM`) in bytes; None without it."""
    try:
        text = (proc / "status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name == field:
            return int(value.split()[0]) * 1024
    return None


def reset_high_water(proc: Path = PROC_SELF) -> bool:
    """Reset the process's high-water mark to its resident size now; False where the
    kernel will not."""
    try:
        (proc / "clear_refs").write_text("5")
    except OSError:
        return False
    return True


class PeakMemory(Watch):
    """What a case added at its peak, on the host (`peak_host_bytes`) and, through the
    backend's allocator, on its device (`peak_device_bytes`)."""

    def __init__(self, device: str, backend: Backend | None = None,
                 proc: Path = PROC_SELF) -> None:
        self.device, self.proc = device, proc
        backend = backend if on_gpu(device) else None
        self.reset_device = backend.peak_memory_reset if backend is not None else None
        self.read_device = backend.peak_memory_bytes if backend is not None else None
        self.reset = False
        self.rss: int | None = None
        self.mark: int | None = None
        self.device_start: int | None = None

    def case_started(self) -> None:
        self.reset = reset_high_water(self.proc)
        self.rss = status_bytes("VmRSS", self.proc)
        self.mark = status_bytes("VmHWM", self.proc)
        self.device_start = _soft(self.reset_device, self.device)

    def case_ended(self) -> Seen:
        counters: dict[str, float] = {}
        mark = status_bytes("VmHWM", self.proc)
        if (mark is not None and self.rss is not None and self.mark is not None
                and (self.reset or mark > self.mark)):
            counters[PEAK_HOST] = float(max(mark - self.rss, 0))
        if self.device_start is not None:
            peak = _soft(self.read_device, self.device)
            if peak is not None:
                counters[PEAK_DEVICE] = float(max(peak - self.device_start, 0))
        return Seen(counters=counters)


def _soft(read: Callable[[str], int | None] | None, device: str) -> int | None:
    """An allocator's count, or None where it cannot be had: a reading never fails the
    case it watches."""
    if read is None:
        return None
    try:
        return read(device)
    except Exception:  # a framework's own error, whatever its type: no count
        return None


def peaks_of(case: Case, measured: Iterable[Measurement]) -> list[tuple[int, float]]:
    """(size, peak) of the finished cases of `case`'s series below its size: the device's
    peaks for a GPU case, the host's for a CPU one — what the guard checks each against."""
    key = PEAK_DEVICE if on_gpu(case.device) else PEAK_HOST
    return sorted((m.case.size, m.counters[key]) for m in measured
                  if m.case.series == case.series and m.case.size < case.size
                  and m.status is Status.OK and key in m.counters)


@dataclass(frozen=True)
class Projection:
    """A series' peak at a size it has not reached, drawn through the two largest sizes
    measured below it as a power of the size: what the vectorised Jacobian's (400·val)²
    identity makes of a measured slope."""

    bytes: float
    exponent: float
    at: int
    through: tuple[tuple[int, float], tuple[int, float]]

    def words(self) -> str:
        """'peaks measured: 1.2 GiB at 100, 4.8 GiB at 200, as size^2.0: 120 GiB at 1000'."""
        (s1, p1), (s2, p2) = self.through
        return (f"peaks measured: {nbytes(p1)} at {size(s1)}, {nbytes(p2)} at {size(s2)}, "
                f"as size^{self.exponent:.2g}: {nbytes(self.bytes)} at {size(self.at)}")


def projected(peaks: Sequence[tuple[int, float]], at: int) -> Projection | None:
    """The peak at size `at` from the series' measured peaks below it; None with fewer
    than two sizes whose peaks rise above SLOPE_FLOOR_BYTES. A peak that fell is read as
    flat: the guard never projects less than it measured."""
    usable = dict(sorted((s, p) for s, p in peaks if s < at and p >= SLOPE_FLOOR_BYTES))
    if len(usable) < 2:
        return None
    (s1, p1), (s2, p2) = list(usable.items())[-2:]
    exponent = max(0.0, math.log(p2 / p1) / math.log(s2 / s1))
    return Projection(p2 * (at / s2) ** exponent, exponent, at, ((s1, p1), (s2, p2)))


def guarded_need(estimate: float, peaks: Sequence[tuple[int, float]], at: int
                 ) -> tuple[float, str]:
    """The bytes the guard checks at size `at`, and, where peaks were measured, how it
    knows: the series' measured trend where there is one (`projected`), else the
    workload's estimate. A trend is what this series took on this machine; an estimate is
    written for every backend and device at once (a GPU case's float64 reference counted,
    which never reaches the device), and refused a 10⁹-element case as needing 26.1 GiB
    that its trend put at 1.92 GiB."""
    projection = projected(peaks, at)
    if projection is None:
        return estimate, ""
    return projection.bytes, f" ({projection.words()}; the estimate: {nbytes(estimate)})"
