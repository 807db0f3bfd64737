"""`gpuvs.Timer`: synchronised wall time of a block or of every call of a function."""

from __future__ import annotations

import pytest
from tests.fakes import spin

import gpuvs
from gpuvs import units
from gpuvs.yours.timer import devices_in_use


def test_a_block_is_timed() -> None:
    """The block's time is at least the 2 ms it spins (a busy machine can only add to it:
    on a 2-core box running two test suites it read 5.5 ms), and the repr says it."""
    with gpuvs.Timer("block") as t:
        spin(2e-3)
    assert 2e-3 <= t.elapsed_s < 1.0
    assert t.first_call_s == t.elapsed_s and t.samples == ()
    assert repr(t).startswith("Timer('block': ")
    assert units.seconds(t.elapsed_s) in repr(t)


def test_a_decorated_function_keeps_its_first_call_apart() -> None:
    calls = []

    @gpuvs.Timer("step")
    def step(seconds: float) -> str:
        calls.append(seconds)
        spin(seconds)
        return "done"

    assert step(5e-3) == "done"
    for _ in range(5):
        step(1e-3)
    timer = step.timer
    assert len(timer.intervals) == 6 and timer.first_call_s >= 5e-3
    assert timer.summary is not None and timer.summary.median == pytest.approx(1e-3, abs=5e-4)
    assert "median of 5 calls" in repr(timer) and "first call" in repr(timer)


def test_a_function_that_raises_is_still_timed_and_the_error_passes() -> None:
    @gpuvs.Timer()
    def broken() -> None:
        raise KeyError("x")

    with pytest.raises(KeyError):
        broken()
    assert len(broken.timer.intervals) == 1


def test_without_cuda_work_nothing_needs_synchronising() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    torch.ones(3) * 2
    assert devices_in_use() == {}
    with gpuvs.Timer() as t:
        torch.ones(3) * 2
    assert t.devices == () and "host only" in repr(t)


@pytest.mark.gpu
def test_on_cuda_the_timer_waits_for_the_work_not_the_launch() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    x = torch.rand(8192, 8192, device="cuda")
    x @ x  # handles and kernel selection happen here, not below
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with gpuvs.Timer() as t:
        start.record()
        x @ x
        end.record()
    device_s = start.elapsed_time(end) / 1e3
    assert t.devices == ("cuda:0",)
    # 1.1 TFLOP takes milliseconds on any GPU; the launch alone takes microseconds.
    assert t.elapsed_s >= 0.95 * device_s > 1e-3
