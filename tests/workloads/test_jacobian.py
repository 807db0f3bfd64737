"""Seed 004's Jacobians: each method against the float64 reference, the memory guard
through the real worker, the memory model against measured peaks, the launch counts."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import numpy as np
import pytest
from tests.helpers import measured_and_observed

from gpuvs import backends, workloads
from gpuvs.errors import WrongResult
from gpuvs.execute.wire import Sampling, Take
from gpuvs.model import Case, Measurement, Status
from gpuvs.workloads import jacobian as jac
from gpuvs.workloads.jacobian import CORRECT, METHODS, OUT, Jacobian

torch = pytest.importorskip("torch")

NEEDS = re.compile(r"^needs [\d.]+ [GT]iB, [\d.]+ [GMT]iB free on cpu")


def _case(method: str, val: int, device: str = "cpu", dtype: str = "float32",
          variant: str | None = None) -> Case:
    variant = variant or ("correct" if method in CORRECT else "tuned")
    return Case("jacobian", variant, "torch", device, dtype, val, (("method", method),))


def _run(case: Case) -> tuple:
    from gpuvs.execute.worker import run_case
    return run_case(backends.get("torch"), Take(case, Sampling(0.02, "fixed")))


def _prepared_output(case: Case):
    prepared = workloads.get("jacobian").prepare(backends.get("torch"), case)
    return prepared, prepared.call()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("method", METHODS)
def test_each_method_matches_the_float64_reference(method: str, dtype: str) -> None:
    prepared, out = _prepared_output(_case(method, 4, dtype=dtype))
    full = method in CORRECT
    assert tuple(out.shape) == ((4, OUT, 4, 1) if full else (4, OUT, 1))
    prepared.check(out)


def test_the_reference_is_torchs_own_jacobian_in_float64() -> None:
    net, t = jac.post_model_and_input(5)
    full = torch.autograd.functional.jacobian(net.double(), t.double().reshape(5, 1))
    blocks = jac.per_sample_reference(net, t.numpy())
    assert jac.block_diagonal_error(full.numpy(), blocks) < 1e-14


@pytest.mark.parametrize("method", METHODS)
def test_a_corrupted_output_fails_the_check(method: str) -> None:
    prepared, out = _prepared_output(_case(method, 3))
    bad = out.detach().clone()
    bad.view(-1)[7] += 0.1 * bad.abs().max()
    with pytest.raises(WrongResult, match="relative error"):
        prepared.check(bad)
    with pytest.raises(WrongResult, match="shape"):
        prepared.check(out[:2])


def test_the_full_jacobians_cross_batch_zeros_are_checked_too() -> None:
    prepared, out = _prepared_output(_case("naive", 3))
    bad = out.detach().clone()
    bad[0, :, 1, 0] = bad[0, :, 0, 0]  # sample 0's block copied off the diagonal
    with pytest.raises(WrongResult, match="relative error"):
        prepared.check(bad)
    bad = out.detach().clone()
    bad[2, 5, 2, 0] = float("nan")
    with pytest.raises(WrongResult, match="NaN"):
        prepared.check(bad)


def test_the_check_compares_in_chunks_of_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jac, "CHECK_CHUNK", 1)  # one row of the Jacobian a chunk
    net, t = jac.post_model_and_input(6)
    full = torch.autograd.functional.jacobian(net.double(), t.double().reshape(6, 1))
    blocks = jac.per_sample_reference(net, t.numpy())
    assert jac.block_diagonal_error(full.numpy(), blocks) < 1e-14
    shifted = full.numpy().copy()
    shifted[5, 0, 5, 0] += 1.0
    assert jac.block_diagonal_error(shifted, blocks) > 1e-3


def test_vectorize_at_1000_is_skipped_by_the_worker_before_allocating(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def never(self, backend, case):
        raise AssertionError("prepare ran: the guard let a 700 GiB case through")

    monkeypatch.setattr(Jacobian, "prepare", never)
    start = time.perf_counter()
    m, fatal = _run(_case("vectorize", 1000))
    assert m.status is Status.SKIPPED and not fatal
    assert NEEDS.match(m.reason), m.reason
    assert float(m.reason.split()[1]) > 600  # (400·1000)² float32 alone is 596 GiB
    assert time.perf_counter() - start < 5


def test_the_per_sample_jacrev_basis_is_guarded_too() -> None:
    m, _ = _run(_case("vmap", 1_000_000))  # a 400×400 basis per sample: 1.5 TiB
    assert m.status is Status.SKIPPED and NEEDS.match(m.reason), m.reason


def test_naive_on_the_cpu_is_refused_where_the_heap_would_fragment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in jac.ALLOCATOR_FIXES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LD_PRELOAD", "")
    monkeypatch.setattr(jac, "host_memory_free", lambda: 16 * 1024**3)
    # val = 300 passes the worker's guard (its outputs take 0.5 GiB), not this one (84 GiB).
    m, _ = _run(_case("naive", 300))
    assert m.status is Status.SKIPPED, m.reason
    assert NEEDS.match(m.reason) and "MALLOC_MMAP_THRESHOLD_" in m.reason
    # The same val needs little memory on a GPU: only the CPU's heap fragments.
    w = workloads.get("jacobian")
    assert w.memory_needed(1000, (("method", "naive"),), "float32") < 4 * 1024**3
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    assert not jac.allocator_keeps_fragments()


def test_the_memory_model_grows_as_each_method_does() -> None:
    def need(method: str, val: int) -> int:
        return jac.device_bytes(method, val, 4)

    assert need("vectorize", 1000) > (400 * 1000) ** 2 * 4        # the identity
    assert need("vectorize", 100) < 9 * 1024**3                    # 7.4 GB on an H100
    assert need("vmap", 10_000) > 15.5e9                           # 15.4 GB on an H100
    assert need("vmap_jacfwd", 100_000) < 2 * 1024**3              # 0.9 GB on an H100
    assert need("naive", 100) < 256 * 1024**2


RSS_PROBE = """
import sys, threading, time, psutil, torch
from gpuvs.workloads import jacobian as jac
method, val = sys.argv[1], int(sys.argv[2])
net, t = jac.post_model_and_input(val)
fn, x = jac.method_fn(method, net), t.reshape(val, 1)
fn(t[:2].reshape(2, 1))
proc, peak, done = psutil.Process(), [0], []
def watch():
    while not done:
        peak[0] = max(peak[0], proc.memory_info().rss)
        time.sleep(0.001)
base = proc.memory_info().rss
watcher = threading.Thread(target=watch)
watcher.start()
fn(x)
done.append(1)
watcher.join()
print(max(0, peak[0] - base))
"""


@pytest.mark.parametrize(("method", "val"), [("vectorize", 20), ("vmap", 300),
                                             ("naive", 15)])
def test_the_memory_model_bounds_the_measured_peak(method: str, val: int) -> None:
    """RSS growth of one call in a fresh interpreter, against the model."""
    out = subprocess.run([sys.executable, "-c", RSS_PROBE, method, str(val)],
                         capture_output=True, text=True, check=True).stdout
    grown = int(out.strip().splitlines()[-1])
    bound = (jac.fragmented_host_bytes(val, 4) if method == "naive"
             else jac.device_bytes(method, val, 4))
    assert grown <= bound, f"{method} at val={val} grew {grown} B, model {bound} B"


def test_ops_grow_with_the_backward_passes_only_for_the_naive_method() -> None:
    assert jac.ops_per_call("naive", 7) == jac.count_ops("naive", 7)
    assert jac.ops_per_call("vmap", 50) == jac.ops_per_call("vmap", 5)
    per_pass = (jac.ops_per_call("naive", 11) - jac.ops_per_call("naive", 10)) / OUT
    assert 5 <= per_pass <= 40  # a few tiny ops for each output element
    counters = workloads.get("jacobian").counters(_case("naive", 100))
    assert counters["backward_passes"] == 40_000 and counters["ops"] > 40_000


def test_as_written_replays_the_cell_once_with_its_first_call() -> None:
    m, _ = _run(_case("naive", 4, variant="as_written"))
    assert m.status is Status.OK, m.reason
    assert len(m.samples) == 1 and m.timer.startswith("%%time cell")
    assert m.first_call_s is None  # the cell's one call is its first: nothing apart
    assert "ops" not in m.counters  # counted in the measured twin, not in the replay's process


def test_correct_naive_times_single_calls() -> None:
    m, _ = _run(_case("naive", 3))
    assert m.status is Status.OK, m.reason
    assert m.loops == 1 and m.first_call_s is not None


@pytest.mark.parametrize(("variant", "method", "dtype", "exists"), [
    ("as_written", "naive", "float32", True),
    ("as_written", "vectorize", "float32", False),   # the post ran the default only
    ("as_written", "naive", "float64", False),
    ("correct", "vectorize", "float32", True),
    ("correct", "vmap", "float32", False),
    ("tuned", "vmap_jacfwd", "float64", True),
    ("tuned", "naive", "float32", False),
    ("correct", "naive", "float16", False),
])
def test_which_cells_exist(variant: str, method: str, dtype: str, exists: bool) -> None:
    case = Case("jacobian", variant, "torch", "cpu", dtype, 10, (("method", method),))
    assert workloads.get("jacobian").applies(case) is exists
    assert not workloads.get("jacobian").applies(
        Case("jacobian", "correct", "numpy", "cpu", "float32", 10, (("method", "naive"),)))


def _cuda() -> str:
    b = backends.get("torch")
    if (reason := b.unavailable_reason("cuda:0")) is not None:
        pytest.skip(reason)
    return "cuda:0"


@pytest.fixture(scope="module")
def on_the_gpu() -> dict[str, Measurement]:
    """Every method at val = 10 on the GPU, measured as a run measures them: timed in one
    worker, then profiled by it for their kernels."""
    return measured_and_observed((_case(method, 10, _cuda()) for method in METHODS),
                                 criterion="fixed")


@pytest.mark.gpu
@pytest.mark.parametrize("method", METHODS)
def test_each_method_is_right_on_the_gpu(method: str,
                                         on_the_gpu: dict[str, Measurement]) -> None:
    m = on_the_gpu[_case(method, 10, "cuda:0").key]
    assert m.status is Status.OK, m.reason
    assert m.counters["kernels"] > 0 and m.timer == "cuda_events"


@pytest.mark.gpu
def test_naive_launches_far_more_kernels_than_the_per_sample_methods(
        on_the_gpu: dict[str, Measurement]) -> None:
    kernels = {}
    for method in METHODS:
        m = on_the_gpu[_case(method, 10, "cuda:0").key]
        assert m.status is Status.OK, m.reason
        kernels[method] = m.counters["kernels"]
    assert kernels["naive"] >= 4 * OUT * 10  # several kernels for each backward pass
    assert kernels["naive"] > 100 * max(kernels["vmap"], kernels["vmap_jacfwd"])
    assert kernels["vectorize"] < kernels["naive"]


@pytest.mark.gpu
@pytest.mark.parametrize(("method", "val"), [("vectorize", 30), ("vectorize", 100),
                                             ("vmap", 1000), ("vmap_jacfwd", 100_000),
                                             ("naive", 30)])
def test_the_memory_model_bounds_the_gpu_peak(method: str, val: int) -> None:
    device = _cuda()
    net, t = jac.post_model_and_input(val)
    fn = jac.method_fn(method, net.to(device))
    x = t.reshape(val, 1).to(device)
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    out = fn(x)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del out
    assert peak <= jac.device_bytes(method, val, 4)
    assert np.isfinite(peak)


@pytest.mark.gpu
def test_vectorize_at_1000_is_skipped_on_the_gpu_too() -> None:
    m, _ = _run(_case("vectorize", 1000, _cuda()))
    assert m.status is Status.SKIPPED
    assert re.match(r"^needs [\d.]+ GiB, [\d.]+ GiB free on cuda:0", m.reason), m.reason


@pytest.mark.gpu
def test_the_naive_kernel_count_is_profiled_at_the_cases_own_val(
        on_the_gpu: dict[str, Measurement]) -> None:
    """Kernels a backward pass change with val (8 at val = 2, 9 at 30 on an H100), so
    the count is taken at the case's val — and read off the raw events, it matches the
    profiler's own event list."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    device, val = _cuda(), 10
    m = on_the_gpu[_case("naive", val, device).key]
    assert m.status is Status.OK, m.reason
    assert m.counters["kernels"] >= 8 * OUT * val  # at least one 8-kernel pass an output

    prepared, _ = _prepared_output(_case("naive", val, device))
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        prepared.call()
        torch.cuda.synchronize()
    listed = sum(1 for e in prof.events() if e.device_type == DeviceType.CUDA
                 and not e.name.startswith(("Memcpy", "Memset")))
    assert m.counters["kernels"] == listed
