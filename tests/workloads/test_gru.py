"""The gru workload (seed 001) on real torch: every way of running the pair gives the two
GRUs' results, a wrong output is caught, replays take one sample, parts are recorded."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tests.helpers import measured_and_observed

from gpuvs import backends, workloads
from gpuvs.errors import WrongResult
from gpuvs.execute.wire import Observe, Sampling, Take
from gpuvs.measuring.criteria import FixedCount
from gpuvs.measuring.protocol import Budget, measure
from gpuvs.model import Case, Measurement, Status
from gpuvs.workloads.gru import (
    POST,
    block_diagonal,
    dims,
    gru_reference,
    overlap_fraction,
    overlap_of,
)

torch = pytest.importorskip("torch")

GPU = "cuda:0"
SAMPLING = Sampling(0.02, "fixed:n=3")


def _case(how: str, device: str = "cpu", size: int = 20, axis: str = "hidden",
          variant: str = "correct", *extra: tuple[str, str]) -> Case:
    return Case("gru", variant, "torch", device, "float32", size,
                tuple(sorted((("axis", axis), ("how", how), *extra))))


def _run(case: Case) -> Measurement:
    from gpuvs.execute.worker import run_case
    m, _ = run_case(backends.get("torch"), Take(case, SAMPLING))
    return m


def _needs_gpu() -> None:
    reason = backends.get("torch").unavailable_reason(GPU)
    if reason:
        pytest.skip(reason)


def test_the_numpy_reference_is_torchs_gru() -> None:
    gru = torch.nn.GRU(3, 4, batch_first=True).double()
    x = torch.randn(2, 6, 3, dtype=torch.float64)
    out, h = gru(x)
    w = [getattr(gru, f"{n}_l0").detach().numpy()
         for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    ref_out, ref_h = gru_reference(x.numpy(), *w)
    np.testing.assert_allclose(out.detach().numpy(), ref_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h.detach().numpy(), ref_h, rtol=1e-12, atol=1e-12)


def test_the_block_diagonal_gru_is_the_two_grus() -> None:
    grus = [torch.nn.GRU(10, 7, batch_first=True).double() for _ in range(2)]
    xs = [torch.randn(3, 4, 10, dtype=torch.float64) for _ in range(2)]
    out, h = block_diagonal(grus)(torch.cat(xs, dim=-1))
    for k, (gru, x) in enumerate(zip(grus, xs, strict=True)):
        o_k, h_k = gru(x)
        torch.testing.assert_close(out[..., 7 * k:7 * (k + 1)], o_k, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(h[..., 7 * k:7 * (k + 1)], h_k, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("how", ["autograd", "sequential", "streams", "batched"])
def test_every_way_of_running_the_pair_passes_its_check_on_the_cpu(how: str) -> None:
    case = _case(how, size=3, axis="seq")
    b = backends.get("torch")
    m = measure(workloads.get("gru").prepare(b, case), case, b.clock("cpu"), FixedCount(n=3),
                Budget(seconds=0.02))
    assert m.status is Status.OK, m.reason


def _corrupt(out: Any, how: str) -> Any:
    """The second GRU's last output step off by 0.1: wrong, but the first GRU right."""
    if how == "batched":  # one block output; gru2 owns its upper half of the hidden units
        o, h = out[0].clone(), out[1]
        o[:, -1, 20:] += 0.1
        return o, h
    tensors = list(out)
    tensors[2] = tensors[2].clone()
    tensors[2][:, -1] += 0.1
    return tuple(tensors)


@pytest.mark.parametrize("how", ["sequential", "streams", "batched", "post_parallel"])
def test_a_corrupted_output_of_the_second_gru_is_a_wrong_result(how: str) -> None:
    variant = "as_written" if how.startswith("post") else "correct"
    prepared = workloads.get("gru").prepare(backends.get("torch"), _case(how, variant=variant))
    out = prepared.call()
    prepared.check(out)
    with pytest.raises(WrongResult, match="gru2 output"):
        prepared.check(_corrupt(out, how))


@pytest.mark.parametrize(("makespan", "alone", "overlap"), [
    (2.0, (1.0, 1.0), 0.0),     # one after the other: nothing hidden
    (1.5, (1.0, 1.0), 0.5),
    (1.0, (1.0, 1.0), 1.0),     # the shorter entirely hidden
    (1.2, (1.0, 0.4), 0.5),     # share of the *shorter* one: 0.2 of 0.4
    (0.5, (1.0, 1.0), 1.0),     # faster than either alone: clamped
    (3.0, (1.0, 1.0), 0.0),     # slower than both together: clamped
    (1.0, (0.0, 1.0), 0.0),
])
def test_overlap_is_the_hidden_share_of_the_shorter_gru(makespan, alone, overlap) -> None:
    assert overlap_fraction(makespan, alone) == pytest.approx(overlap)


def test_overlap_of_a_measurement_reads_its_median_and_parts() -> None:
    case = _case("streams", GPU)
    m = Measurement(case, Status.OK, samples=(1.5e-3, 1.4e-3, 1.6e-3),
                    counters={"gru1_s": 1e-3, "gru2_s": 1e-3})
    assert overlap_of(m) == pytest.approx(0.5)
    assert overlap_of(Measurement(case, Status.OK, samples=(1e-3,))) is None  # no parts
    assert overlap_of(Measurement(case, Status.UNAVAILABLE, reason="no CUDA device")) is None


@pytest.mark.parametrize("how", ["post_sequential", "post_parallel"])
def test_as_written_replays_one_unsynchronised_timing(how: str) -> None:
    m = _run(_case(how, variant="as_written"))
    assert m.status is Status.OK, m.reason
    assert len(m.samples) == 1 and m.timer.startswith("time.time() once, no sync")
    assert "gru1_s" not in m.counters  # a replay times only what the post timed


def test_the_sequential_case_records_each_gru_alone() -> None:
    """Each GRU is timed alone apart from the case's samples, after them (the runner asks
    the worker for the case's `parts` observation once its timed cases are done)."""
    from gpuvs.execute.observe import observations, observe
    case = _case("sequential")
    m = _run(case)
    assert m.status is Status.OK, m.reason
    assert "gru1_s" not in m.counters and "parts" in observations(
        backends.get("torch"), case, m.summary.median)
    parts = observe(backends.get("torch"),
                    Observe(case, "parts", SAMPLING))
    assert parts["gru1_s"] > 0 and parts["gru2_s"] > 0
    assert m.counters["flops"] == 2 * 2 * 3 * 20 * (10 + 20) * 32 * 5


@pytest.mark.parametrize("how", ["streams", "batched"])
def test_concurrent_cases_leave_the_parts_to_the_sequential_case(how: str) -> None:
    prepared = workloads.get("gru").prepare(backends.get("torch"), _case(how))
    assert prepared.parts == ()


def test_two_threads_run_with_a_thread_limit() -> None:
    m = _run(_case("streams", "cpu", 20, "hidden", "correct", ("threads", "1")))
    assert m.status is Status.OK, m.reason
    assert m.counters["threads"] == 1


def test_the_two_threads_are_joined_when_the_call_is_dropped() -> None:
    import gc
    import threading

    prepared = workloads.get("gru").prepare(backends.get("torch"), _case("streams"))
    prepared.check(prepared.call())
    assert any(t.name.startswith("gpuvs-gru") for t in threading.enumerate())
    del prepared
    gc.collect()
    assert not any(t.name.startswith("gpuvs-gru") for t in threading.enumerate())


def test_a_size_too_big_for_memory_is_skipped_before_allocating() -> None:
    m = _run(_case("sequential", size=10**7))
    assert m.status is Status.SKIPPED and m.reason.startswith("needs ")


def test_size_sets_one_axis_and_leaves_the_posts_other_dimensions() -> None:
    assert dims(20, (("axis", "hidden"),)) == (20, 32, 5)
    assert dims(4096, (("axis", "batch"),)) == (20, 4096, 5)
    assert dims(512, (("axis", "seq"),)) == (20, 32, 512)
    w = workloads.get("gru")
    for axis, post in POST.items():  # the post's value is on every axis
        assert post in w.default_sizes((("axis", axis),))
    batched = (("axis", "hidden"), ("how", "batched"))
    assert w.flops(20, batched) == 2 * w.flops(20, (("axis", "hidden"), ("how", "streams")))


@pytest.mark.parametrize(("variant", "how", "device", "backend", "exists"), [
    ("as_written", "post_sequential", "cpu", "torch", True),   # the post falls back to CPU
    ("as_written", "post_parallel", GPU, "torch", True),
    ("as_written", "sequential", GPU, "torch", False),          # a replay is the post's
    ("correct", "post_parallel", GPU, "torch", False),
    ("correct", "graph", "cpu", "torch", False),                # CUDA graphs need CUDA
    ("correct", "graph", GPU, "torch", True),
    ("correct", "streams", "cpu", "torch", True),               # two threads
    ("correct", "sequential", "cpu", "numpy", False),           # torch's nn.GRU only
])
def test_which_cases_exist(variant, how, device, backend, exists) -> None:
    case = Case("gru", variant, backend, device, "float32", 20, (("axis", "hidden"),
                                                                   ("how", how)))
    assert workloads.get("gru").applies(case) is exists


GPU_WAYS = ("autograd", "sequential", "streams", "batched", "graph")
GPU_SIZES = (("hidden", 20), ("hidden", 1024), ("seq", 512), ("batch", 4096))


@pytest.fixture(scope="module")
def on_the_gpu() -> dict[str, Measurement]:
    """Every way at every size on the GPU, measured as a run measures them: timed in one
    worker, then observed (kernels profiled, each GRU timed alone) by it."""
    _needs_gpu()
    return measured_and_observed(_case(how, GPU, size, axis) for how in GPU_WAYS
                                 for axis, size in GPU_SIZES)


@pytest.mark.gpu
@pytest.mark.parametrize("how", GPU_WAYS)
@pytest.mark.parametrize(("axis", "size"), GPU_SIZES)
def test_every_way_is_right_on_the_gpu(how: str, axis: str, size: int,
                                       on_the_gpu: dict[str, Measurement]) -> None:
    m = on_the_gpu[_case(how, GPU, size, axis).key]
    assert m.status is Status.OK, m.reason
    assert m.timer == "cuda_events" and m.counters["kernels"] > 0
    if how in ("sequential", "graph"):
        assert m.counters["gru1_s"] > 0 and m.counters["gru2_s"] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("how", ["streams", "graph"])
def test_a_corrupted_output_is_caught_on_the_gpu(how: str) -> None:
    _needs_gpu()
    prepared = workloads.get("gru").prepare(backends.get("torch"), _case(how, GPU))
    out = prepared.call()
    torch.cuda.synchronize()
    prepared.check(out)
    with pytest.raises(WrongResult, match="gru2 output"):
        prepared.check(_corrupt(out, how))


@pytest.mark.gpu
@pytest.mark.parametrize("how", ["post_sequential", "post_parallel"])
def test_as_written_replays_on_the_gpu(how: str) -> None:
    _needs_gpu()
    m = _run(_case(how, GPU, variant="as_written"))
    assert m.status is Status.OK, m.reason
    assert len(m.samples) == 1
