"""NumPy on the CPU: synchronous, so the host clock is the device clock."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuvs.backends import register
from gpuvs.backends.base import Backend
from gpuvs.measuring.protocol import Clock, HostClock


@register
class NumpyBackend(Backend):
    name = "numpy"
    device_kinds = ("cpu",)
    dtypes = ("float16", "float32", "float64")
    module = "numpy"
    computes_with_numpy_blas = True

    def prepare_worker(self) -> None:
        # In-place workloads grow to infinity on purpose; an overflow warning per call
        # would put Python's warning machinery inside the timed region.
        np.seterr(over="ignore")

    def clock(self, device: str) -> Clock:
        return HostClock()

    def from_numpy(self, a: np.ndarray, device: str, dtype: str) -> Any:
        return np.array(a, dtype=dtype, copy=True)

    def to_numpy(self, x: Any) -> np.ndarray:
        return np.asarray(x)

    def ones(self, shape: tuple[int, ...], dtype: str, device: str) -> Any:
        return np.ones(shape, dtype=dtype)

    def threads(self) -> int | None:
        from threadpoolctl import threadpool_info

        blas = [p for p in threadpool_info() if p.get("user_api") == "blas"]
        return int(blas[0]["num_threads"]) if blas else None
