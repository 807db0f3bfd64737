"""JAX on the CPU and on CUDA devices (`cuda:N` is JAX's N-th GPU).

JAX dispatch is asynchronous on every device, the CPU included, and offers Python no
device events, so samples are synchronised host time: every read of the clock follows
`jax.block_until_ready` on the last output (JAX has no device-wide synchronise).
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any

import numpy as np

from gpuvs.backends import register
from gpuvs.backends.base import Backend, cuda_index, device_count_reason, host_memory_free
from gpuvs.measuring.protocol import Clock, DeviceTimer

# Exception class names JAX has used for runtime errors from XLA (renamed in 2025).
RUNTIME_ERRORS = ("XlaRuntimeError", "JaxRuntimeError")


@functools.cache
def _jax() -> Any:
    """JAX, imported once with float64 enabled so that float64 cases really are float64."""
    # Also here, whichever path imports JAX first: otherwise it takes 75 % of the GPU.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


class JaxClock:
    name = "host_sync"
    is_async = True

    def now(self) -> float:
        return time.perf_counter()

    def synchronize(self, result: object = None) -> None:
        # Blocking on the last output is the only wait JAX offers; work is issued in order.
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

    def __init__(self) -> None:
        self._used_gpu = False  # is_fatal only replaces workers that touched a GPU
        self._peak_before: dict[str, int] = {}  # XLA's peak when each case started

    def prepare_worker(self) -> None:
        # JAX preallocates 75 % of the GPU at its first operation unless told otherwise;
        # other frameworks on the machine (and the memory guard) need the real figure.
        # JAX itself is imported (and float64 enabled) by `_jax()` on first use, so a
        # worker without JAX still starts and reports each case unavailable.
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        _share_compiled_programs()

    def _device(self, device: str) -> Any:
        jax = _jax()
        if device == "cpu":
            return jax.devices("cpu")[0]
        self._used_gpu = True
        return jax.devices("gpu")[cuda_index(device)]

    def _device_reason(self, device: str) -> str | None:
        if device == "cpu":
            return None
        jax = _jax()
        try:
            gpus = jax.devices("gpu")
        except RuntimeError:  # "Unknown backend: 'gpu' requested, but no platforms ..."
            return (f"no CUDA device (jax {jax.__version__} has no GPU backend; "
                    "pip install 'jax[cuda12]')")
        return device_count_reason(device, len(gpus), "JAX")

    def clock(self, device: str) -> Clock:
        return JaxClock()

    def from_numpy(self, a: np.ndarray, device: str, dtype: str) -> Any:
        jax = _jax()
        import jax.numpy as jnp

        # Cast on the host (bfloat16 too: jnp.bfloat16 is a NumPy dtype, from ml_dtypes),
        # so that one copy of `dtype`-sized elements goes to the device and nothing lands
        # on JAX's default device first.
        host = np.asarray(a, dtype=jnp.dtype(dtype))
        return jax.device_put(host, self._device(device))

    def to_numpy(self, x: Any) -> np.ndarray:
        import jax.numpy as jnp

        if x.dtype == jnp.bfloat16:
            x = x.astype(jnp.float32)
        return np.asarray(x)

    def ones(self, shape: tuple[int, ...], dtype: str, device: str) -> Any:
        jax = _jax()
        import jax.numpy as jnp

        dev = self._device(device)
        try:
            return jnp.ones(shape, dtype=jnp.dtype(dtype), device=dev)
        except TypeError:  # older JAX: jnp.ones has no device= argument
            with jax.default_device(dev):
                return jnp.ones(shape, dtype=jnp.dtype(dtype))

    def memory_free(self, device: str) -> int:
        if device == "cpu":
            return host_memory_free()
        stats = self._device(device).memory_stats() or {}
        if "bytes_limit" in stats:  # the allocator's limit, a share of the GPU's memory
            return int(stats["bytes_limit"] - stats.get("bytes_in_use", 0))
        return host_memory_free()

    def peak_memory_reset(self, device: str) -> int | None:
        """XLA keeps a peak (`peak_bytes_in_use`) but no way to reset it: the peak when
        the case starts is kept, to tell whether the case passed it."""
        if device == "cpu":
            return None
        stats = self._device(device).memory_stats() or {}
        if "peak_bytes_in_use" not in stats:
            return None
        self._peak_before[device] = int(stats["peak_bytes_in_use"])
        return int(stats.get("bytes_in_use", 0))

    def peak_memory_bytes(self, device: str) -> int | None:
        """XLA's peak, where the case raised it; None where it stayed under an earlier
        case's (the case's own peak is then unknown)."""
        if device == "cpu" or device not in self._peak_before:
            return None
        peak = (self._device(device).memory_stats() or {}).get("peak_bytes_in_use")
        if peak is None or peak <= self._peak_before[device]:
            return None
        return int(peak)

    def uses_tf32(self, device: str) -> bool:
        # JAX's default matmul precision on NVIDIA GPUs since Ampere is TF32 for float32.
        precision = _jax().config.jax_default_matmul_precision
        return device != "cpu" and precision in (None, "default", "tensorfloat32", "bfloat16")

    def is_oom(self, exc: BaseException) -> bool:
        return isinstance(exc, MemoryError) or "RESOURCE_EXHAUSTED" in str(exc)

    def is_fatal(self, exc: BaseException) -> bool:
        """A failed GPU kernel (XLA's INTERNAL / CUDA errors) leaves the context unusable."""
        if not self._used_gpu or self.is_oom(exc):
            return False
        text = str(exc)
        xla = any(cls.__name__ in RUNTIME_ERRORS for cls in type(exc).__mro__)
        return xla and ("CUDA" in text or "INTERNAL" in text)

    def facts(self, device: str) -> dict[str, Any]:
        facts = super().facts(device) | {"x64": bool(_jax().config.jax_enable_x64)}
        if self._device_reason(device) is None:
            facts["device_name"] = str(self._device(device).device_kind)
        return facts


# The workers of one run share XLA's compiled programs on disk: each of a case's
# processes would otherwise compile it again (a 512² product's first call took 1.09 s in
# a fresh process on the H100, and 0.008 s where it loaded the program another process
# had compiled; 20–25 s of a default run). The first process of a run compiles, as a
# user's first call does, and its first call is the one recorded; later processes load
# it, with the kernels its autotuning chose (as a user's process does from JAX's cache). The
# folder is the parent's (a run's workers share their parent), and a folder whose
# parent is gone is removed by the next worker to start.
COMPILED_PREFIX = "gpuvs-jax-compiled-"


def _share_compiled_programs() -> None:
    import shutil
    import tempfile

    if "JAX_COMPILATION_CACHE_DIR" in os.environ:  # the user's own cache is kept
        return
    root = tempfile.gettempdir()
    for name in os.listdir(root):
        pid = name.removeprefix(COMPILED_PREFIX)
        if name.startswith(COMPILED_PREFIX) and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
    os.environ["JAX_COMPILATION_CACHE_DIR"] = os.path.join(
        root, f"{COMPILED_PREFIX}{os.getppid()}")
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "-1"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
