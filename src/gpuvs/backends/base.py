"""What every backend knows: availability, devices, clocks, data movement, memory.

A backend never imports its framework at module top level — only inside the methods
that need it — so `gpuvs --help` and the parent process stay free of torch, CuPy and JAX.
"""

from __future__ import annotations

import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import numpy as np

from gpuvs.errors import BackendUnavailable
from gpuvs.measuring.protocol import Clock, DeviceTimer
from gpuvs.model import on_gpu

GiB = 1024**3
NO_GPU = "no CUDA device (this machine shows no NVIDIA device)"


def _numpy_blas(controller: Any) -> Any:
    """The BLAS that NumPy's wheel bundles (in `numpy.libs`, or NumPy's own directory),
    not the one a framework links (PyTorch's MKL, or an OpenBLAS of its own)."""
    home = os.path.dirname(np.__file__)
    ours = [c for c in controller.lib_controllers if c.user_api == "blas"
            and os.path.realpath(c.filepath).startswith((home + os.sep, home + ".libs"))]
    controller.lib_controllers = ours
    return controller


def host_memory_free() -> int:
    """Bytes the host can still give: `available`, read now (VMs may grow it later)."""
    import psutil

    return int(psutil.virtual_memory().available)


LLC_FLUSH_FACTOR = 2
LLC_FALLBACK_BYTES = 64 * 1024**2


def last_level_cache_bytes() -> int:
    """The largest CPU cache Linux reports (sysfs), else LLC_FALLBACK_BYTES."""
    import glob

    sizes = []
    for path in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*/size"):
        with open(path) as f:
            text = f.read().strip().upper()
        scale = {"K": 1024, "M": 1024**2}.get(text[-1:], 1)
        sizes.append(int(text.rstrip("KM")) * scale)
    return max(sizes, default=LLC_FALLBACK_BYTES)


def device_count_reason(device: str, count: int, seen_by: str) -> str | None:
    """Why `device` is not among the `count` GPUs a framework sees, or None."""
    if count == 0:
        return f"no CUDA device ({seen_by} sees none)"
    if cuda_index(device) >= count:
        return f"no device {device}; {seen_by} sees {count} (cuda:0..cuda:{count - 1})"
    return None


def machine_has_gpu() -> bool:
    """Whether the machine shows an NVIDIA device node at all (Linux: /dev/nvidiaN; WSL:
    /dev/dxg). Without one no framework can see a GPU, installed or not."""
    import glob
    import os

    return bool(glob.glob("/dev/nvidia[0-9]*")) or os.path.exists("/dev/dxg")


def cuda_index(device: str) -> int:
    """`'cuda'` → 0, `'cuda:1'` → 1."""
    _, _, idx = device.partition(":")
    return int(idx) if idx else 0


class EventTimer:
    """Pairs of recorded device events on the current stream (CUDA through torch or CuPy).

    Nothing waits while intervals are recorded; `elapsed` synchronises on the last event
    only, then reads every interval (triton's do_bench: record many, synchronise once).
    """

    def __init__(self, record: Callable[[], Any], elapsed_ms: Callable[[Any, Any], float]
                 ) -> None:
        self._record, self._elapsed_ms = record, elapsed_ms
        self._pairs: list[tuple[Any, Any]] = []
        self._start: Any = None

    def start(self) -> None:
        self._start = self._record()

    def stop(self) -> None:
        self._pairs.append((self._start, self._record()))

    def lap(self) -> None:
        mark = self._record()
        self._pairs.append((self._start, mark))
        self._start = mark

    def elapsed(self) -> list[float]:
        if not self._pairs:
            return []
        self._pairs[-1][1].synchronize()
        out = [self._elapsed_ms(a, b) / 1e3 for a, b in self._pairs]
        self._pairs.clear()
        return out


class EventClock:
    """A CUDA device timed with events, through whichever framework owns the work."""

    name = "cuda_events"
    is_async = True

    def __init__(self, synchronize: Callable[[], None], record: Callable[[], Any],
                 elapsed_ms: Callable[[Any, Any], float]) -> None:
        self._synchronize, self._record, self._elapsed_ms = synchronize, record, elapsed_ms

    def now(self) -> float:
        return time.perf_counter()

    def synchronize(self, result: object = None) -> None:
        self._synchronize()

    def timer(self) -> DeviceTimer | None:
        return EventTimer(self._record, self._elapsed_ms)


class Backend(ABC):
    """One array framework, on one or more devices."""

    name: ClassVar[str]
    device_kinds: ClassVar[tuple[str, ...]]  # "cpu" and/or "cuda"
    dtypes: ClassVar[tuple[str, ...]]
    module: ClassVar[str]  # the import name, for versions and 'not installed'
    # Its "cuda" devices are NVIDIA GPUs (the test suite's simulated device is not).
    needs_nvidia_device: ClassVar[bool] = True
    # Whether this backend's own work runs on NumPy's BLAS (only NumPy's does): the others
    # time their work with NumPy's BLAS held to one thread (`quiet_numpy_blas`).
    computes_with_numpy_blas: ClassVar[bool] = False

    def version(self) -> str | None:
        """The framework's version, or None when it is not installed."""
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version(self.distribution)
        except PackageNotFoundError:
            return None

    @property
    def distribution(self) -> str:
        return self.module

    def unavailable_reason(self, device: str = "cpu") -> str | None:
        """None when this backend can run on `device`; else one readable line why not."""
        import importlib.util

        if self.gpu_missing(device):
            return NO_GPU
        if importlib.util.find_spec(self.module) is None:
            return f"{self.name} is not installed (pip install 'gpuvs[{self.name}]')"
        kind = device.partition(":")[0]
        if kind not in self.device_kinds:
            return f"{self.name} does not run on {kind}; it runs on {', '.join(self.device_kinds)}"
        return self._device_reason(device)

    def _device_reason(self, device: str) -> str | None:
        return None

    def absent(self, device: str) -> bool:
        """True when this backend surely cannot run on `device` here (no GPU, not
        installed), found without importing any framework: a plan's estimate counts
        only the cases that may run."""
        import importlib.util

        return self.gpu_missing(device) or importlib.util.find_spec(self.module) is None

    def gpu_missing(self, device: str) -> bool:
        """True for a CUDA device on a machine with no NVIDIA device: said before any
        framework is imported, whichever is installed."""
        return on_gpu(device) and self.needs_nvidia_device and not machine_has_gpu()

    @abstractmethod
    def clock(self, device: str) -> Clock:
        """How to synchronise and time work on `device`."""

    @abstractmethod
    def from_numpy(self, a: np.ndarray, device: str, dtype: str) -> Any:
        """A copy of host array `a` on `device`, cast to `dtype`."""

    @abstractmethod
    def to_numpy(self, x: Any) -> np.ndarray:
        """Bring `x` back to the host (float64 where NumPy lacks the dtype)."""

    @abstractmethod
    def ones(self, shape: tuple[int, ...], dtype: str, device: str) -> Any: ...

    def memory_free(self, device: str) -> int:
        """Free bytes where this backend's arrays on `device` live."""
        return host_memory_free()

    def empty_cache(self, device: str) -> None:
        """Return cached blocks so the next case (or another framework) can use them."""
        return None

    def peak_memory_reset(self, device: str) -> int | None:
        """Start counting this backend's allocator's peak on `device`; the bytes in use
        now, or None where it keeps no count (on the CPU the process's own high-water
        mark is read instead, by `gpuvs.machine.memory`)."""
        return None

    def peak_memory_bytes(self, device: str) -> int | None:
        """The allocator's peak on `device` since `peak_memory_reset`, in bytes; None
        where it cannot be known. Either may raise: the watch that asks takes an error
        for no count (`gpuvs.machine.memory`)."""
        return None

    def is_oom(self, exc: BaseException) -> bool:
        return isinstance(exc, MemoryError)

    def is_fatal(self, exc: BaseException) -> bool:
        """True when `exc` poisons the process (sticky CUDA errors): replace the worker."""
        return False

    def cache_flusher(self, device: str) -> Callable[[], None]:
        """Something to run before a timed call so that it finds cold caches.

        On the CPU: write a buffer LLC_FLUSH_FACTOR times the last-level cache.
        """
        if device != "cpu":
            raise BackendUnavailable(f"{self.name} cannot flush the caches of {device}")
        buf = np.zeros(LLC_FLUSH_FACTOR * last_level_cache_bytes() // 8)

        def flush() -> None:
            np.add(buf, 1.0, out=buf)

        return flush

    def observes(self, device: str) -> bool:
        """Whether `profile` and `busy_time` can say anything on `device`."""
        return False

    def profile(self, call: Callable[[], object], device: str) -> dict[str, float]:
        """Kernels and host↔device copies one call launches, where a profiler can tell,
        and `busy_kernels_s`: the time its kernels kept the device busy."""
        return {}

    def busy_time(self, call: Callable[[], object], device: str) -> dict[str, float]:
        """`busy_graph_s`: the device's busy time per call with the launches taken away
        (the call replayed as a CUDA graph), where the call can be captured; else {}."""
        return {}

    def uses_tf32(self, device: str) -> bool:
        """Whether float32 matrix products on `device` run on TF32 matrix units (10-bit
        mantissa) — a fair comparison must say so."""
        return False

    def threads(self) -> int | None:
        """CPU threads this backend computes with, for fair-comparison tables."""
        return None

    @contextmanager
    def limit_threads(self, n: int) -> Iterator[None]:
        """Compute with at most `n` CPU threads inside: the BLAS and OpenMP pools, through
        threadpoolctl (seed 000 compares a CPU at all cores with one core)."""
        from threadpoolctl import threadpool_limits

        with threadpool_limits(n):
            yield

    def worker_env(self) -> dict[str, str]:
        """Environment for this backend's worker process, read as NumPy loads its BLAS.

        The workloads build inputs and float64 references with NumPy, so NumPy's OpenBLAS
        has just run on every core when another framework's timing starts, and its idle
        threads keep spinning against that framework's own pool. On the H100 host (16
        cores) seed 000's torch-CPU product took 8–24 ms a call in the worker, against
        76–97 µs once OpenBLAS's threads sleep as soon as their work ends
        (OPENBLAS_THREAD_TIMEOUT=4, its shortest spin) — what `%timeit` gives in a fresh
        process. NumPy's own worker keeps OpenBLAS's default: its spinning threads are
        part of NumPy's speed. A value the user set is kept."""
        if self.computes_with_numpy_blas or "OPENBLAS_THREAD_TIMEOUT" in os.environ:
            return {}
        return {"OPENBLAS_THREAD_TIMEOUT": "4"}

    @contextmanager
    def quiet_numpy_blas(self) -> Iterator[None]:
        """NumPy's OpenBLAS held to one thread while another framework's work is timed
        (with `worker_env`, what made seed 000's torch-CPU product steady on the H100)."""
        if self.computes_with_numpy_blas:
            yield
            return
        from threadpoolctl import ThreadpoolController

        with _numpy_blas(ThreadpoolController()).limit(limits=1):
            yield

    def facts(self, device: str) -> dict[str, Any]:
        """What the environment table and the store record about this backend."""
        return {"version": self.version(), "threads": self.threads()}

    def prepare_worker(self) -> None:
        """Set-up a worker does once, before importing the framework (env variables)."""
        return None

    def preload(self, device: str) -> None:
        """Import the framework and start `device` (a GPU's context), so that a worker
        started ahead of its pass waits ready instead of paying seconds at its first case.
        Whatever fails here fails again at that case, which records why."""
        if self.unavailable_reason(device) is None:
            clock = self.clock(device)
            clock.synchronize(self.ones((1,), self.dtypes[0], device))
