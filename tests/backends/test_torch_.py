"""The torch backend for real: CPU paths everywhere, CUDA paths on the GPU machine (`gpu`)."""

from __future__ import annotations

import os
import statistics
import time

import numpy as np
import pytest

from gpuvs import backends
from gpuvs.backends import Backend

torch = pytest.importorskip("torch")

DTYPES = ("float16", "bfloat16", "float32", "float64")
# Relative error a round trip through each dtype may add (its unit roundoff, with room).
ROUNDOFF = {"float16": 1e-3, "bfloat16": 8e-3, "float32": 1e-7, "float64": 0.0}


@pytest.fixture
def b() -> Backend:
    return backends.get("torch")


def _cuda() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_on_the_cpu_keeps_values_within_the_dtype(b: Backend, dtype: str) -> None:
    a = np.linspace(-3.0, 3.0, 101)
    x = b.from_numpy(a, "cpu", dtype)
    assert x.dtype == getattr(torch, dtype) and x.device.type == "cpu"
    back = b.to_numpy(x)
    assert back.shape == a.shape
    assert back.dtype == (np.float32 if dtype == "bfloat16" else np.dtype(dtype))
    np.testing.assert_allclose(back, a, rtol=ROUNDOFF[dtype], atol=ROUNDOFF[dtype])


def test_from_numpy_copies(b: Backend) -> None:
    a = np.ones(4)
    x = b.from_numpy(a, "cpu", "float64")
    a[:] = 7
    assert b.to_numpy(x).tolist() == [1.0] * 4


@pytest.mark.parametrize("dtype", DTYPES)
def test_ones(b: Backend, dtype: str) -> None:
    x = b.ones((3, 2), dtype, "cpu")
    assert tuple(x.shape) == (3, 2) and x.dtype == getattr(torch, dtype)
    assert (b.to_numpy(x) == 1).all()


def test_the_cpu_clock_is_the_synchronous_host_clock(b: Backend) -> None:
    clock = b.clock("cpu")
    assert clock.name == "host" and not clock.is_async
    assert clock.timer() is not None


def test_cuda_is_unavailable_with_a_reason_on_a_machine_without_one(b: Backend) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    reason = b.unavailable_reason("cuda:0")
    assert reason is not None and reason.startswith("no CUDA device")
    if torch.version.cuda is None:
        assert "CPU-only build" in reason


def test_threads_and_host_memory(b: Backend) -> None:
    assert b.threads() > 0
    assert b.memory_free("cpu") > 0
    assert b.uses_tf32("cpu") is False


def test_out_of_memory_is_recognised_and_is_not_fatal(b: Backend) -> None:
    oom = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 158.36 GiB.")
    assert b.is_oom(oom) and b.is_oom(MemoryError())
    assert not b.is_fatal(oom)
    assert not b.is_oom(ValueError("bad shape"))


def test_sticky_cuda_errors_are_fatal_and_ordinary_errors_are_not(b: Backend) -> None:
    assert b.is_fatal(RuntimeError("CUDA error: device-side assert triggered"))
    assert not b.is_fatal(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))
    assert not b.is_fatal(ValueError("CUDA error in a message that is not a RuntimeError"))


# --- CUDA, on the GPU machine ---------------------------------------------------------


def _sleep_wall(cycles: int) -> float:
    """Synchronised host seconds for one `torch.cuda._sleep(cycles)` (a spinning kernel)."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    torch.cuda._sleep(cycles)
    torch.cuda.synchronize()
    return time.perf_counter() - t0


@pytest.mark.gpu
def test_cuda_events_time_a_kernel_of_known_length(b: Backend) -> None:
    _cuda()
    clock = b.clock("cuda:0")
    assert clock.name == "cuda_events" and clock.is_async
    cycles = 20_000_000  # about 10 ms at 2 GHz: launch and sync costs are noise beside it
    _sleep_wall(cycles)  # warm-up: the first launch loads the module
    wall = statistics.median(_sleep_wall(cycles) for _ in range(5))
    timer = clock.timer()
    host = []
    for n in (1, 2, 3):
        timer.start()
        t0 = time.perf_counter()
        torch.cuda._sleep(n * cycles)
        host.append(time.perf_counter() - t0)  # the launch only: the kernel is still running
        timer.stop()
    events = timer.elapsed()
    assert len(events) == 3 and timer.elapsed() == []
    assert events[0] == pytest.approx(wall, rel=0.2)
    assert events[1] == pytest.approx(2 * events[0], rel=0.1)
    assert events[2] == pytest.approx(3 * events[0], rel=0.1)
    assert max(host) < events[0] / 5  # unsynchronised host time would have been wrong


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_on_cuda(b: Backend, dtype: str) -> None:
    _cuda()
    a = np.linspace(-3.0, 3.0, 1001)
    x = b.from_numpy(a, "cuda:0", dtype)
    assert x.device.type == "cuda" and x.dtype == getattr(torch, dtype)
    np.testing.assert_allclose(b.to_numpy(x * 1), a, rtol=ROUNDOFF[dtype], atol=ROUNDOFF[dtype])
    assert b.ones((5,), dtype, "cuda:0").device.type == "cuda"


@pytest.mark.gpu
def test_allocating_twice_the_device_is_out_of_memory_and_the_device_still_works(
        b: Backend) -> None:
    _cuda()
    assert b.unavailable_reason("cuda:0") is None
    total = torch.cuda.get_device_properties(0).total_memory
    assert 0 < b.memory_free("cuda:0") <= total
    with pytest.raises(Exception) as caught:
        b.ones((2 * total // 4,), "float32", "cuda:0")
    assert b.is_oom(caught.value) and not b.is_fatal(caught.value)
    b.empty_cache("cuda:0")
    assert float((b.ones((1000,), "float32", "cuda:0") * 2).sum()) == 2000.0


@pytest.mark.gpu
def test_cuda_facts_and_a_missing_device_index(b: Backend) -> None:
    _cuda()
    n = torch.cuda.device_count()
    assert b.unavailable_reason(f"cuda:{n}") == f"no device cuda:{n}; torch sees {n} " \
                                                 f"(cuda:0..cuda:{n - 1})"
    facts = b.facts("cuda:0")
    assert facts["device_name"] and facts["cuda"]


def test_kernels_on_two_streams_that_overlap_keep_the_device_busy_once() -> None:
    from gpuvs.backends.torch_ import union_ns
    assert union_ns([(0, 10), (5, 15), (20, 30)]) == 25
    assert union_ns([(20, 30), (0, 10)]) == 20
    assert union_ns([(0, 100), (10, 20)]) == 100


@pytest.mark.gpu
def test_busy_time_tells_a_tiny_launch_bound_op_from_a_product_that_fills_the_gpu(
        b: Backend) -> None:
    """A graph replay takes the host's launches away: an elementwise op on 10⁴ elements
    keeps the GPU busy for a small part of a call in a loop, a 4096² product for nearly
    all of it; the profiler's kernel time says the same."""
    import torch

    from gpuvs.api import measure
    x = torch.rand(10_000, device="cuda")
    small = measure(lambda: x.mul_(1.0), device="cuda", budget_s=0.3)
    small_busy = b.busy_time(lambda: x.mul_(1.0), "cuda:0")["busy_graph_s"]
    assert small.summary is not None and small_busy < 0.5 * small.summary.median
    a = torch.rand(4096, 4096, device="cuda")
    big = measure(lambda: a @ a, device="cuda", budget_s=0.5)
    big_busy = b.busy_time(lambda: a @ a, "cuda:0")["busy_graph_s"]
    kernels = b.profile(lambda: a @ a, "cuda:0")["busy_kernels_s"]
    assert big.summary is not None
    assert big_busy == pytest.approx(big.summary.median, rel=0.05)
    assert kernels == pytest.approx(big.summary.median, rel=0.05)


def test_a_torch_worker_compiles_in_its_own_process_unless_the_user_chose(
        b: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCHINDUCTOR_COMPILE_THREADS", raising=False)
    b.prepare_worker()
    assert os.environ["TORCHINDUCTOR_COMPILE_THREADS"] == "1"
    monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", "8")
    b.prepare_worker()
    assert os.environ["TORCHINDUCTOR_COMPILE_THREADS"] == "8"


@pytest.mark.gpu
def test_a_compiled_case_leaves_no_compile_processes_to_contend_with_the_next() -> None:
    """Inductor's default pool (a compile process per core) outlives the compile, and each
    of its starts imports torch in every process while the next case is timed. A torch
    worker compiles in its own process: none is left behind."""
    _cuda()
    psutil = pytest.importorskip("psutil")
    from gpuvs.execute.runner import Worker
    from gpuvs.execute.wire import Measured, Sampling, Take
    from gpuvs.model import Case, Status
    tuned = Case("elementwise", "tuned", "torch", "cuda:0", "float32", 10**6, (("op", "chain"),))
    worker = Worker("torch", "cuda:0")
    try:
        answer = worker.ask(Take(tuned, Sampling(0.1)), timeout_s=300)
        assert isinstance(answer, Measured) and answer.measurement.status is Status.OK
        assert psutil.Process(worker.proc.pid).children(recursive=True) == []
    finally:
        worker.close()
