"""The runner on a real GPU: device OOM as data, sticky errors replace the worker."""

from __future__ import annotations

import pytest
from tests.test_runner import Collected

from gpuvs.config import RunConfig
from gpuvs.execute.runner import execute
from gpuvs.model import Case, Status

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("worker_env")]
CONFIG = RunConfig(budget_s=0.3, timeout_s=120)


def _cuda() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")


@pytest.mark.parametrize("backend", ["torch", "cupy", "jax"])
def test_device_out_of_memory_is_recorded_and_the_next_case_runs(backend: str) -> None:
    _cuda()
    pytest.importorskip(backend)
    sink = Collected()
    hog = Case("test_gpu_hog", "correct", backend, "cuda:0", "float32", 1)
    after = Case("matmul", "correct", backend, "cuda:0", "float32", 512, (("shape", "square"),))
    execute(sink, [hog, after], CONFIG)
    assert sink.saved[0].status is Status.OOM, sink.saved[0].reason
    assert sink.saved[1].status is Status.OK, sink.saved[1].reason


def test_a_sticky_cuda_error_is_crashed_and_a_fresh_worker_takes_over() -> None:
    _cuda()
    sink = Collected()
    bad = Case("test_device_assert", "correct", "torch", "cuda:0", "float32", 1)
    after = Case("matmul", "correct", "torch", "cuda:0", "float32", 512, (("shape", "square"),))
    execute(sink, [bad, after], CONFIG)
    assert sink.saved[0].status is Status.CRASHED
    assert sink.saved[1].status is Status.OK, sink.saved[1].reason


@pytest.mark.parametrize("backend", ["torch", "cupy", "jax"])
def test_seed000_resident_and_end_to_end_on_each_gpu_backend(backend: str) -> None:
    _cuda()
    pytest.importorskip(backend)
    sink = Collected()
    seed = (("shape", "seed000"),)
    cases = [Case("matmul", "correct", backend, "cuda:0", "float32", 25600, seed),
             Case("matmul", "correct", backend, "cuda:0", "float32", 25600,
                  (("data", "end_to_end"), *seed))]
    execute(sink, cases, CONFIG)
    resident, e2e = sink.saved
    assert resident.status is Status.OK and e2e.status is Status.OK, (resident.reason, e2e.reason)
    assert resident.wall_samples and e2e.wall_samples  # asynchronous: wall kept beside
    assert resident.summary is not None and e2e.summary is not None
    # Copying 10 MB in and back costs more than the product on data already there.
    assert e2e.summary.median > resident.summary.median


def test_torch_profiler_counts_kernels_and_copies_per_call() -> None:
    _cuda()
    sink = Collected()
    chain = (("op", "chain"),)
    # 10⁵ elements: the end-to-end call stays well under the profiling cut (1 ms a call)
    cases = [Case("elementwise", "correct", "torch", "cuda:0", "float32", 10**5, chain),
             Case("elementwise", "correct", "torch", "cuda:0", "float32", 10**5,
                  (("data", "end_to_end"), *chain))]
    execute(sink, cases, CONFIG)
    resident, e2e = sink.saved
    assert resident.counters["launches"] == 3  # x *= 5; x *= x; x += x
    assert (e2e.counters["h2d_copies"], e2e.counters["d2h_copies"]) == (1, 1)


def test_cold_caches_make_an_l2_sized_case_slower_than_warm() -> None:
    _cuda()
    sink = Collected()
    scale = (("op", "scale"),)  # 4 MB of float32: fits in any recent GPU's L2
    cases = [Case("elementwise", "correct", "torch", "cuda:0", "float32", 10**6, scale),
             Case("elementwise", "correct", "torch", "cuda:0", "float32", 10**6,
                  (("cache", "cold"), *scale))]
    execute(sink, cases, CONFIG)
    warm, cold = sink.saved
    assert cold.status is Status.OK and cold.loops == 1, cold.reason
    assert cold.summary.median > warm.summary.median
