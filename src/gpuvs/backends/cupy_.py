"""CuPy on CUDA devices (`cuda:N`).

CuPy work is asynchronous like torch's: samples are CUDA-event intervals, read with one
synchronisation per batch, and every host-clock reading is preceded by a device-wide
synchronise. CuPy ships one wheel per CUDA major version, so its version is looked up
under each of their distribution names.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from gpuvs.backends import register
from gpuvs.backends.base import Backend, EventClock, cuda_index, device_count_reason
from gpuvs.errors import first_line
from gpuvs.measuring.protocol import Clock

# The names CuPy is published under, newest CUDA first; "cupy" is the source build.
DISTRIBUTIONS = ("cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "cupy")


def _recorded_event() -> Any:
    import cupy

    e = cupy.cuda.Event()  # timing is enabled unless disable_timing=True
    e.record()
    return e


def _elapsed_ms(a: Any, b: Any) -> float:
    import cupy

    return float(cupy.cuda.get_elapsed_time(a, b))


@register
class CupyBackend(Backend):
    name = "cupy"
    device_kinds = ("cuda",)
    dtypes = ("float16", "float32", "float64")
    module = "cupy"

    def version(self) -> str | None:
        from importlib.metadata import PackageNotFoundError, version

        for dist in DISTRIBUTIONS:
            try:
                return version(dist)
            except PackageNotFoundError:
                continue
        return None

    def _device_reason(self, device: str) -> str | None:
        try:
            import cupy
        except ImportError as e:  # installed, but its CUDA libraries cannot be loaded
            return f"cupy cannot be imported: {first_line(e)}"
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except cupy.cuda.runtime.CUDARuntimeError as e:
            if "cudaErrorNoDevice" in str(e):  # what the runtime says on a machine without one
                return f"no CUDA device ({first_line(e)})"
            return f"CUDA driver error: {first_line(e)}"
        return device_count_reason(device, count, "CuPy")

    def clock(self, device: str) -> Clock:
        import cupy

        dev = cupy.cuda.Device(cuda_index(device))
        dev.use()
        return EventClock(dev.synchronize, _recorded_event, _elapsed_ms)

    def from_numpy(self, a: np.ndarray, device: str, dtype: str) -> Any:
        import cupy

        with cupy.cuda.Device(cuda_index(device)):
            # Cast on the host first, as torch does: the copy moves `dtype`-sized elements.
            return cupy.asarray(np.asarray(a, dtype=dtype))

    def to_numpy(self, x: Any) -> np.ndarray:
        import cupy

        host: np.ndarray = cupy.asnumpy(x)
        return host

    def ones(self, shape: tuple[int, ...], dtype: str, device: str) -> Any:
        import cupy

        with cupy.cuda.Device(cuda_index(device)):
            return cupy.ones(shape, dtype=dtype)

    def memory_free(self, device: str) -> int:
        import cupy

        # The pool is per device: read both with `device` current.
        with cupy.cuda.Device(cuda_index(device)):
            free, _ = cupy.cuda.runtime.memGetInfo()
            cached = cupy.get_default_memory_pool().free_bytes()
        return int(free + cached)

    def empty_cache(self, device: str) -> None:
        import cupy

        with cupy.cuda.Device(cuda_index(device)):
            cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()

    def peak_memory_reset(self, device: str) -> int | None:
        """CuPy's pool emptied of its free blocks: from here its size (`total_bytes`) is
        its high-water mark, since a pool keeps every block it allocated. Returns the
        bytes live arrays hold now."""
        import cupy

        with cupy.cuda.Device(cuda_index(device)):
            pool = cupy.get_default_memory_pool()
            pool.free_all_blocks()
            return int(pool.used_bytes())

    def peak_memory_bytes(self, device: str) -> int | None:
        """The pool's size: at least the most bytes its arrays held at once, more where it
        could not reuse a freed block for a larger one."""
        import cupy

        with cupy.cuda.Device(cuda_index(device)):
            return int(cupy.get_default_memory_pool().total_bytes())

    def is_oom(self, exc: BaseException) -> bool:
        # cupy.cuda.memory.OutOfMemoryError is a MemoryError; a raw cudaMalloc that fails
        # outside the pool raises the runtime error below, which is not sticky.
        return isinstance(exc, MemoryError) or "cudaErrorMemoryAllocation" in str(exc)

    def is_fatal(self, exc: BaseException) -> bool:
        import cupy
        from cupy_backends.cuda.api.runtime import CUDARuntimeError

        errors = (CUDARuntimeError, cupy.cuda.driver.CUDADriverError)
        return isinstance(exc, errors) and not self.is_oom(exc)

    def cache_flusher(self, device: str) -> Callable[[], None]:
        """Zero a buffer twice the device's L2 before each timed call."""
        import cupy

        with cupy.cuda.Device(cuda_index(device)) as dev:
            l2 = dev.attributes["L2CacheSize"]
            buf = cupy.empty(2 * l2 // 4, dtype=cupy.float32)
        return lambda: buf.fill(0)

    def uses_tf32(self, device: str) -> bool:
        # CuPy uses TF32 for float32 products only when CUPY_TF32=1 (off by default).
        return os.environ.get("CUPY_TF32", "0") == "1"

    def facts(self, device: str) -> dict[str, Any]:
        import cupy

        facts = super().facts(device) | {"cuda_runtime": cupy.cuda.runtime.runtimeGetVersion()}
        if self._device_reason(device) is None:
            props = cupy.cuda.runtime.getDeviceProperties(cuda_index(device))
            name = props["name"]
            facts["device_name"] = name.decode() if isinstance(name, bytes) else str(name)
        return facts
