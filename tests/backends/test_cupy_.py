"""The CuPy backend: its reasons and version look-up run anywhere; CUDA paths need the GPU
machine (`gpu`), where CuPy runs for real."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import statistics
import sys
import time
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from gpuvs import backends
from gpuvs.backends import Backend

DTYPES = ("float16", "float32", "float64")
ROUNDOFF = {"float16": 1e-3, "float32": 1e-7, "float64": 0.0}
GiB = 1024**3


@pytest.fixture
def b() -> Backend:
    return backends.get("cupy")


def _pretend_installed(monkeypatch: pytest.MonkeyPatch, installed: bool) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        if name == "cupy":
            return SimpleNamespace(name="cupy") if installed else None
        return real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


class FakeRuntimeError(Exception):
    """Stands in for cupy_backends.cuda.api.runtime.CUDARuntimeError."""


def _fake_cupy(monkeypatch: pytest.MonkeyPatch, count: int = 0, error: str = "") -> None:
    """A `cupy` whose runtime reports `count` devices, or raises `error`."""

    def get_device_count() -> int:
        if error:
            raise FakeRuntimeError(error)
        return count

    runtime = SimpleNamespace(CUDARuntimeError=FakeRuntimeError,
                              getDeviceCount=get_device_count)
    monkeypatch.setitem(sys.modules, "cupy", SimpleNamespace(cuda=SimpleNamespace(
        runtime=runtime)))


def test_not_installed_says_how_to_install(b: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    _pretend_installed(monkeypatch, False)
    assert b.unavailable_reason("cuda:0") == "cupy is not installed (pip install 'gpuvs[cupy]')"


def test_cupy_never_runs_on_the_cpu(b: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    _pretend_installed(monkeypatch, True)
    assert b.unavailable_reason("cpu") == "cupy does not run on cpu; it runs on cuda"


def test_without_cupy_here_the_reason_is_that_it_is_not_installed(b: Backend) -> None:
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("CuPy is installed here")
    assert "cupy is not installed" in b.unavailable_reason("cuda:0")
    assert b.version() is None


@pytest.mark.parametrize(("count", "error", "device", "reason"), [
    (0, "cudaErrorNoDevice: no CUDA-capable device is detected", "cuda:0",
     "no CUDA device (cudaErrorNoDevice: no CUDA-capable device is detected)"),
    (0, "cudaErrorInsufficientDriver: CUDA driver version is insufficient\nmore", "cuda:0",
     "CUDA driver error: cudaErrorInsufficientDriver: CUDA driver version is insufficient"),
    (0, "", "cuda:0", "no CUDA device (CuPy sees none)"),
    (2, "", "cuda:2", "no device cuda:2; CuPy sees 2 (cuda:0..cuda:1)"),
    (2, "", "cuda:1", None),
    (1, "", "cuda", None),
])
def test_device_reasons(b: Backend, monkeypatch: pytest.MonkeyPatch, count: int, error: str,
                        device: str, reason: str | None) -> None:
    _fake_cupy(monkeypatch, count, error)
    assert b._device_reason(device) == reason


def test_a_cupy_that_cannot_load_its_libraries_is_a_reason(
        b: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` raises ImportError
    assert b._device_reason("cuda:0").startswith("cupy cannot be imported: ")


@pytest.mark.parametrize("dist", ["cupy-cuda13x", "cupy-cuda12x", "cupy"])
def test_version_is_found_under_each_wheel_name(b: Backend, monkeypatch: pytest.MonkeyPatch,
                                                dist: str) -> None:
    def version(name: str) -> str:
        if name == dist:
            return "14.2.0"
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    assert b.version() == "14.2.0"


def test_memory_errors_are_out_of_memory_without_importing_cupy(b: Backend) -> None:
    assert b.is_oom(MemoryError("Out of memory allocating 1,024 bytes"))
    assert b.is_oom(RuntimeError("cudaErrorMemoryAllocation: out of memory"))
    assert not b.is_oom(ValueError("operands could not be broadcast together"))


def test_tf32_follows_cupy_tf32(b: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUPY_TF32", raising=False)
    assert b.uses_tf32("cuda:0") is False
    monkeypatch.setenv("CUPY_TF32", "1")
    assert b.uses_tf32("cuda:0") is True


# --- CUDA, on the GPU machine ---------------------------------------------------------


def _cupy() -> Any:
    cp = pytest.importorskip("cupy")
    reason = backends.get("cupy").unavailable_reason("cuda:0")
    if reason is not None:
        pytest.skip(reason)
    return cp


@pytest.mark.gpu
def test_cuda_events_time_known_work_like_synchronised_wall_time(b: Backend) -> None:
    cp = _cupy()
    clock = b.clock("cuda:0")
    assert clock.name == "cuda_events" and clock.is_async
    x = b.ones((GiB // 8,), "float32", "cuda:0")  # 512 MiB: one pass is ~0.3 ms on an H100

    def work(passes: int) -> None:
        for _ in range(passes):
            cp.multiply(x, 1.0, out=x)

    def wall(passes: int) -> float:
        clock.synchronize()
        t0 = clock.now()
        work(passes)
        clock.synchronize()
        return clock.now() - t0

    wall(3)  # warm-up: the first launch compiles the kernel
    walls = statistics.median(wall(20) for _ in range(5))
    timer, host = clock.timer(), []
    for n in (20, 40, 60):
        timer.start()
        t0 = time.perf_counter()
        work(n)
        host.append(time.perf_counter() - t0)  # launches only: the work is still queued
        timer.stop()
    events = timer.elapsed()
    assert len(events) == 3 and timer.elapsed() == []
    assert events[0] == pytest.approx(walls, rel=0.2)
    assert events[1] == pytest.approx(2 * events[0], rel=0.1)
    assert events[2] == pytest.approx(3 * events[0], rel=0.1)
    assert host[0] < events[0] / 3


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_on_cuda(b: Backend, dtype: str) -> None:
    cp = _cupy()
    a = np.linspace(-3.0, 3.0, 1001)
    x = b.from_numpy(a, "cuda:0", dtype)
    assert isinstance(x, cp.ndarray) and x.dtype == np.dtype(dtype) and x.device.id == 0
    back = b.to_numpy(x * 1)
    assert isinstance(back, np.ndarray) and back.dtype == np.dtype(dtype)
    np.testing.assert_allclose(back, a, rtol=ROUNDOFF[dtype], atol=ROUNDOFF[dtype])
    assert (b.to_numpy(b.ones((3, 2), dtype, "cuda:0")) == 1).all()


@pytest.mark.gpu
def test_memory_free_counts_the_pool_and_empty_cache_returns_it(b: Backend) -> None:
    cp = _cupy()
    b.empty_cache("cuda:0")
    before = b.memory_free("cuda:0")
    x = b.ones((GiB // 4,), "float32", "cuda:0")
    assert before - b.memory_free("cuda:0") == pytest.approx(GiB, abs=64 * 2**20)
    del x
    pool = cp.get_default_memory_pool()
    assert pool.free_bytes() >= GiB  # kept by CuPy's pool, yet free for our arrays
    assert b.memory_free("cuda:0") == pytest.approx(before, abs=64 * 2**20)
    b.empty_cache("cuda:0")
    assert pool.free_bytes() == 0


@pytest.mark.gpu
def test_allocating_more_than_is_free_is_out_of_memory_and_the_device_still_works(
        b: Backend) -> None:
    _cupy()
    free = b.memory_free("cuda:0")
    with pytest.raises(MemoryError) as caught:
        b.ones((2 * free // 4,), "float32", "cuda:0")
    assert type(caught.value).__name__ == "OutOfMemoryError"
    assert b.is_oom(caught.value) and not b.is_fatal(caught.value)
    b.empty_cache("cuda:0")
    assert float((b.ones((1000,), "float32", "cuda:0") * 2).sum()) == 2000.0


@pytest.mark.gpu
def test_runtime_errors_are_fatal(b: Backend) -> None:
    _cupy()
    from cupy_backends.cuda.api.runtime import CUDARuntimeError

    assert b.is_fatal(CUDARuntimeError(700))  # cudaErrorIllegalAddress: sticky
    assert not b.is_fatal(ValueError("not a CUDA error"))


@pytest.mark.gpu
def test_facts_version_and_a_missing_device_index(b: Backend) -> None:
    cp = _cupy()
    n = cp.cuda.runtime.getDeviceCount()
    assert b.unavailable_reason(f"cuda:{n}") == f"no device cuda:{n}; CuPy sees {n} " \
                                                 f"(cuda:0..cuda:{n - 1})"
    assert b.version() == cp.__version__
    facts = b.facts("cuda:0")
    assert facts["device_name"] and facts["cuda_runtime"] > 0
