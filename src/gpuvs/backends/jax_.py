"""JAX on the CPU and on CUDA devices.

JAX dispatch is asynchronous on every device and offers no device events to Python, so
samples are synchronised host time: every read of the clock follows
`jax.block_until_ready` on the last output (JAX has no device-wide synchronise).
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from gpuvs.backends import register
from gpuvs.backends.base import Backend, cuda_index, host_memory_free
from gpuvs.protocol import Clock, DeviceTimer


def _jax() -> Any:
    """JAX with float64 enabled, so that float64 cases really are float64."""
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


class JaxClock:
    name = "host_sync"
    is_async = True

    def now(self) -> float:
        return time.perf_counter()

    def synchronize(self, result: object = None) -> None:
        if result is not None:
            _jax().block_until_ready(result)

    def timer(self) -> DeviceTimer | None:
        return None


@register
class JaxBackend(Backend):
    name = "jax"
    device_kinds = ("cpu", "cuda")
    dtypes = ("float16", "bfloat16", "float32", "float64")
    module = "jax"

    def prepare_worker(self) -> None:
        # JAX takes 75 % of the GPU at its first operation unless told otherwise; other
        # frameworks on the machine (and the memory guard) need to see the real figure.
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

    def _device(self, device: str) -> Any:
        jax = _jax()
        if device == "cpu":
            return jax.devices("cpu")[0]
        return jax.devices("gpu")[cuda_index(device)]

    def _device_reason(self, device: str) -> str | None:
        if device == "cpu":
            return None
        jax = _jax()
        try:
            gpus = jax.devices("gpu")
        except RuntimeError:
            return (f"no CUDA device (jax {jax.__version__} has no GPU backend here; "
                    "pip install 'jax[cuda12]')")
        if cuda_index(device) >= len(gpus):
            return f"no device {device}; JAX sees {len(gpus)} GPU(s)"
        return None

    def clock(self, device: str) -> Clock:
        return JaxClock()

    def from_numpy(self, a: np.ndarray, device: str, dtype: str) -> Any:
        jax = _jax()
        import jax.numpy as jnp

        host = np.asarray(a, dtype=np.float32 if dtype == "bfloat16" else dtype)
        x = jax.device_put(host, self._device(device))
        return x.astype(jnp.bfloat16) if dtype == "bfloat16" else x

    def to_numpy(self, x: Any) -> np.ndarray:
        import jax.numpy as jnp

        if x.dtype == jnp.bfloat16:
            x = x.astype(jnp.float32)
        return np.asarray(x)

    def ones(self, shape: tuple[int, ...], dtype: str, device: str) -> Any:
        jax = _jax()
        import jax.numpy as jnp

        with jax.default_device(self._device(device)):
            return jnp.ones(shape, dtype=getattr(jnp, dtype))

    def memory_free(self, device: str) -> int:
        if device == "cpu":
            return host_memory_free()
        stats = self._device(device).memory_stats() or {}
        if "bytes_limit" in stats:
            return int(stats["bytes_limit"] - stats.get("bytes_in_use", 0))
        return host_memory_free()

    def uses_tf32(self, device: str) -> bool:
        # JAX's default matmul precision on NVIDIA GPUs since Ampere is TF32 for float32.
        precision = getattr(_jax().config, "jax_default_matmul_precision", None)
        return device != "cpu" and precision in (None, "default", "tensorfloat32", "bfloat16")

    def is_oom(self, exc: BaseException) -> bool:
        return isinstance(exc, MemoryError) or "RESOURCE_EXHAUSTED" in str(exc)

    def is_fatal(self, exc: BaseException) -> bool:
        text = str(exc)
        return type(exc).__name__ == "XlaRuntimeError" and not self.is_oom(exc) and (
            "CUDA" in text or "INTERNAL" in text)

    def facts(self, device: str) -> dict[str, Any]:
        facts = super().facts(device) | {"x64": True}
        if self._device_reason(device) is None:
            facts["device_name"] = str(self._device(device).device_kind)
        return facts
