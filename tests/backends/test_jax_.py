"""The JAX backend for real: CPU paths wherever JAX is installed, CUDA on the GPU machine."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from gpuvs import backends
from gpuvs.backends import Backend

jax = pytest.importorskip("jax")

DTYPES = ("float16", "bfloat16", "float32", "float64")
ROUNDOFF = {"float16": 1e-3, "bfloat16": 8e-3, "float32": 1e-7, "float64": 0.0}


@pytest.fixture
def b() -> Backend:
    return backends.get("jax")


def _has_gpu() -> bool:
    try:
        return bool(jax.devices("gpu"))
    except RuntimeError:
        return False


def _gpu() -> None:
    if not _has_gpu():
        pytest.skip("JAX has no GPU backend here")


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_on_the_cpu_keeps_the_dtype_and_the_values(b: Backend, dtype: str) -> None:
    a = np.linspace(-3.0, 3.0, 101)
    x = b.from_numpy(a, "cpu", dtype)
    assert str(x.dtype) == dtype
    assert x.devices() == {jax.devices("cpu")[0]}
    back = b.to_numpy(x)
    assert back.dtype == (np.float32 if dtype == "bfloat16" else np.dtype(dtype))
    np.testing.assert_allclose(back, a, rtol=ROUNDOFF[dtype], atol=ROUNDOFF[dtype])


def test_float64_really_is_float64(b: Backend) -> None:
    third = np.array([1 / 3])
    x = b.from_numpy(third, "cpu", "float64")
    y = x * 3 - 1  # computed by JAX: silently float32 unless x64 is on
    assert str(y.dtype) == "float64"
    assert b.to_numpy(x)[0] == third[0]
    assert abs(b.to_numpy(y)[0]) < 1e-15


@pytest.mark.parametrize("dtype", DTYPES)
def test_ones(b: Backend, dtype: str) -> None:
    x = b.ones((3, 2), dtype, "cpu")
    assert x.shape == (3, 2) and str(x.dtype) == dtype
    assert x.devices() == {jax.devices("cpu")[0]}
    assert (b.to_numpy(x) == 1).all()


def test_the_clock_is_synchronised_host_time_and_synchronize_blocks(b: Backend) -> None:
    clock = b.clock("cpu")
    assert clock.name == "host_sync" and clock.is_async
    assert clock.timer() is None  # the protocol then times with synchronised host time
    clock.synchronize()  # nothing to wait on: returns
    x = b.from_numpy(np.random.default_rng(0).random((500, 500)), "cpu", "float32")
    y = jax.jit(lambda m: (m @ m) @ m)(x)
    clock.synchronize(y)
    assert y.is_ready()


def test_cuda_is_unavailable_with_a_reason_without_a_gpu_backend(b: Backend) -> None:
    if _has_gpu():
        pytest.skip("JAX has a GPU backend here")
    reason = b.unavailable_reason("cuda:0")
    assert reason is not None and reason.startswith("no CUDA device")
    assert f"jax {jax.__version__} has no GPU backend" in reason
    assert b.unavailable_reason("cpu") is None


def test_host_memory_threads_and_tf32_on_the_cpu(b: Backend) -> None:
    assert b.memory_free("cpu") > 0
    assert b.threads() is None
    assert b.uses_tf32("cpu") is False
    assert b.facts("cpu")["x64"] is True


def test_resource_exhausted_is_out_of_memory(b: Backend) -> None:
    exhausted = jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying "
                                           "to allocate 171798691840 bytes.")
    assert b.is_oom(exhausted) and b.is_oom(MemoryError())
    assert not b.is_oom(ValueError("incompatible shapes"))
    assert not b.is_fatal(exhausted)


def test_xla_internal_errors_are_fatal_only_once_a_gpu_was_used(b: Backend) -> None:
    internal = jax.errors.JaxRuntimeError("INTERNAL: CUDA error: an illegal memory access")
    assert not b.is_fatal(internal)  # a CPU-only worker: nothing to poison
    b._used_gpu = True  # as `_device("cuda:N")` records
    assert b.is_fatal(internal)
    assert not b.is_fatal(ValueError("INTERNAL in a message that is not from XLA"))
    assert not b.is_fatal(jax.errors.JaxRuntimeError("INVALID_ARGUMENT: bad shape"))


def test_prepare_worker_turns_preallocation_off_before_jax_is_imported() -> None:
    code = ("import os, sys; os.environ.pop('XLA_PYTHON_CLIENT_PREALLOCATE', None); "
            "from gpuvs import backends; backends.get('jax').prepare_worker(); "
            "print(os.environ['XLA_PYTHON_CLIENT_PREALLOCATE'], 'jax' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env).stdout.split()
    assert out == ["false", "False"]


# --- CUDA, on the GPU machine ---------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_on_cuda(b: Backend, dtype: str) -> None:
    _gpu()
    a = np.linspace(-3.0, 3.0, 1001)
    x = b.from_numpy(a, "cuda:0", dtype)
    assert str(x.dtype) == dtype and x.devices() == {jax.devices("gpu")[0]}
    np.testing.assert_allclose(b.to_numpy(x * 1), a, rtol=ROUNDOFF[dtype], atol=ROUNDOFF[dtype])
    assert b.ones((5,), dtype, "cuda:0").devices() == {jax.devices("gpu")[0]}


@pytest.mark.gpu
def test_gpu_memory_and_out_of_memory(b: Backend) -> None:
    _gpu()
    assert b.unavailable_reason("cuda:0") is None
    free = b.memory_free("cuda:0")
    assert 0 < free <= jax.devices("gpu")[0].memory_stats()["bytes_limit"]
    with pytest.raises(Exception) as caught:
        x = b.ones((2 * free // 4,), "float32", "cuda:0")
        b.clock("cuda:0").synchronize(x)
    assert b.is_oom(caught.value), repr(caught.value)
    assert not b.is_fatal(caught.value)
    assert float(b.to_numpy(b.ones((1000,), "float32", "cuda:0") * 2).sum()) == 2000.0


@pytest.mark.gpu
def test_gpu_facts_and_a_missing_device_index(b: Backend) -> None:
    _gpu()
    n = len(jax.devices("gpu"))
    assert b.unavailable_reason(f"cuda:{n}") == f"no device cuda:{n}; JAX sees {n} " \
                                                 f"(cuda:0..cuda:{n - 1})"
    assert b.facts("cuda:0")["device_name"]
