"""`gpuvs.measure(fn)` for any callable, on the CPU and on CUDA."""

from __future__ import annotations

import pytest
from tests.fakes import spin

import gpuvs
from gpuvs.errors import BackendUnavailable, UsageError, WrongResult
from gpuvs.model import Status


def test_measure_times_any_callable_on_the_cpu() -> None:
    m = gpuvs.measure(lambda: spin(5e-4), budget_s=0.3)
    assert m.status is Status.OK
    assert m.summary is not None and m.summary.median == pytest.approx(5e-4, rel=0.05)
    assert m.first_call_s is not None


def test_a_measurement_prints_as_one_line_not_its_samples() -> None:
    """`print(gpuvs.measure(...))` reads like a timing, as torch users expect: what was
    timed, the median with its CI, how many samples, the first call."""
    m = gpuvs.measure(lambda: spin(5e-4), budget_s=0.2, name="spin")
    shown = repr(m)
    assert "\n" not in shown and str(m) == shown
    assert shown.startswith("Measurement(spin on cpu: median ")
    assert "(95 % CI)" in shown and f"{len(m.samples)} samples of" in shown
    assert "first call" in shown
    assert str(m.samples[0]) not in shown


def test_measure_runs_the_check_once_outside_timing() -> None:
    def check(out: object) -> None:
        if out != 4:
            raise WrongResult(f"expected 4, got {out}")

    assert gpuvs.measure(lambda: 2 + 2, check=check, budget_s=0.1).status is Status.OK
    assert gpuvs.measure(lambda: 2 + 3, check=check).status is Status.WRONG_RESULT


def test_bad_arguments_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="unknown device 'tpu'"):
        gpuvs.measure(lambda: None, device="tpu")
    with pytest.raises(UsageError, match="budget_s must be a positive number"):
        gpuvs.measure(lambda: None, budget_s=0)


def test_cuda_without_a_device_says_why() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    with pytest.raises(BackendUnavailable, match="no CUDA device"):
        gpuvs.measure(lambda: None, device="cuda")


@pytest.mark.gpu
def test_on_cuda_measure_reports_device_time_not_launch_time() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    x = torch.rand(8192, 8192, device="cuda")
    m = gpuvs.measure(lambda: x @ x, device="cuda", budget_s=0.5)
    assert m.timer == "cuda_events"
    assert m.summary is not None and m.wall_summary is not None
    # 1.1 TFLOP in float32 takes milliseconds on any GPU; a launch takes microseconds.
    assert m.summary.median > 1e-3
    assert m.wall_summary.median >= 0.95 * m.summary.median
