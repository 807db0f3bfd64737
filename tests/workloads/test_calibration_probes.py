"""A run's calibration: which probes calibrate a plan, each probe timed and checked for
real on the CPU (the GPU's on a lent GPU), and the same short sampling in every run."""

from __future__ import annotations

import pytest

from gpuvs import backends, workloads
from gpuvs.execute.take import own_sampling
from gpuvs.execute.wire import Sampling
from gpuvs.measuring.criteria import FixedCount
from gpuvs.measuring.protocol import measure
from gpuvs.model import Case, Status
from gpuvs.workloads.base import prepared_case
from gpuvs.workloads.calibration import SAMPLING_S, probe, probe_cases, what


def _plan(*pairs: tuple[str, str]) -> list[Case]:
    return [Case("matmul", "correct", b, d, "float32", 64, (("shape", "square"),))
            for b, d in pairs]


def test_a_cpu_plan_is_calibrated_by_each_backends_launch_and_the_cpus_own_probes() -> None:
    pytest.importorskip("torch")
    keys = [c.key for c in probe_cases(_plan(("torch", "cpu"), ("numpy", "cpu")))]
    assert keys == [
        "calibration/correct/numpy/cpu/float32/1,bound=launch",
        "calibration/correct/torch/cpu/float32/1,bound=launch",
        "calibration/correct/numpy/cpu/float32/256,bound=cpu,threads=1",
        "calibration/correct/numpy/cpu/float32/256,bound=cpu,threads=all",
        "calibration/correct/numpy/cpu/float32/16777216,bound=host_memory",
    ]


def test_the_cpus_probes_run_on_a_backend_the_run_starts_anyway() -> None:
    pytest.importorskip("torch")
    bounds = {(c.param("bound"), c.backend) for c in probe_cases(_plan(("torch", "cpu")))}
    assert bounds == {("launch", "torch"), ("cpu", "torch"), ("host_memory", "torch")}


def test_a_gpu_the_machine_lacks_gets_no_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gpuvs.backends.base.machine_has_gpu", lambda: False)
    cases = probe_cases(_plan(("numpy", "cpu"), ("torch", "cuda:0")))
    assert {c.device for c in cases} == {"cpu"}


def test_a_gpu_plan_is_calibrated_by_the_devices_probes_on_its_first_backend(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Planned only (no GPU here): the launch on each GPU backend, and the device's
    product, copy and round trip on torch, the first of its backends."""
    monkeypatch.setattr("gpuvs.backends.base.machine_has_gpu", lambda: True)
    monkeypatch.setattr(type(backends.get("cupy")), "absent", lambda self, device: False)
    cases = probe_cases(_plan(("cupy", "cuda:0"), ("torch", "cuda:0")))
    assert [(c.param("bound"), c.backend, what(c)) for c in cases] == [
        ("launch", "cupy", "x * 1 on one element, per op"),
        ("launch", "torch", "x * 1 on one element, per op"),
        ("device_compute", "torch", "a 2048² float32 product, no TF32"),
        ("device_memory", "torch", "a copy of 128 MiB"),
        ("transfer", "torch", "64 MiB to the device and back"),
    ]


@pytest.mark.parametrize("bound,threads", [("launch", ""), ("cpu", "1"), ("cpu", "all"),
                                           ("host_memory", "")])
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_each_cpu_probe_times_its_call_and_checks_it(backend: str, bound: str,
                                                     threads: str) -> None:
    pytest.importorskip(backend)
    case, b = probe(bound, backend, "cpu", threads), backends.get(backend)
    calibration = workloads.get("calibration")
    assert calibration.applies(case)
    m = measure(prepared_case(calibration, b, case), case, b.clock("cpu"), FixedCount(n=3))
    assert m.status is Status.OK, m.reason
    counted = calibration.counters(case)
    assert ("flops" in counted) == (bound == "cpu")
    assert ("bytes_moved" in counted) == (bound != "launch")


def test_a_probe_checks_what_it_copied() -> None:
    """A copy that left the destination as it was is a wrong result, not a bandwidth."""
    from gpuvs.errors import WrongResult
    case = probe("host_memory", "numpy", "cpu")
    prepared = prepared_case(workloads.get("calibration"), backends.get("numpy"), case)
    with pytest.raises(WrongResult, match="the copy did not give 2"):
        prepared.check(backends.get("numpy").ones((case.size,), "float32", "cpu"))


def test_the_devices_probes_apply_to_a_gpu_alone() -> None:
    calibration = workloads.get("calibration")
    assert not calibration.applies(probe("device_compute", "torch", "cpu"))
    assert not calibration.applies(probe("host_memory", "torch", "cuda:0"))
    assert calibration.applies(probe("transfer", "torch", "cuda:0"))


def test_a_probe_samples_the_same_short_time_whatever_the_runs_budget() -> None:
    """`--budget 3` or seeds' 0.1 s alike: each process samples SAMPLING_S of a probe,
    never an energy counter's window; every other case keeps the run's sampling."""
    given = Sampling(budget_s=1.5, min_sampling_s=4.0)
    fixed = own_sampling(probe("launch", "numpy", "cpu"), given)
    assert (fixed.budget_s, fixed.min_sampling_s) == (SAMPLING_S, 0.0)
    assert own_sampling(_plan(("numpy", "cpu"))[0], given) == given


@pytest.mark.gpu
@pytest.mark.parametrize("bound", ["launch", "device_compute", "device_memory", "transfer"])
@pytest.mark.parametrize("backend", ["torch", "cupy", "jax"])
def test_each_gpu_probe_times_its_call_and_checks_it(backend: str, bound: str) -> None:
    pytest.importorskip(backend)
    case, b = probe(bound, backend, "cuda:0"), backends.get(backend)
    m = measure(prepared_case(workloads.get("calibration"), b, case), case,
                b.clock("cuda:0"), FixedCount(n=3))
    assert m.status is Status.OK, m.reason
