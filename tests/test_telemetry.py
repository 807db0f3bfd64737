"""The GPU's sensors around a case. NVML does not exist on a machine without an NVIDIA
driver, so the CPU tests hand `telemetry` a stand-in for the NVML module that reports
clocks as a card does; the `gpu` test reads a real card."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from gpuvs.machine import telemetry


def fake_nvml(sm_mhz: list[float], reasons: int = 0) -> SimpleNamespace:
    """An NVML whose SM clock reads the given values in turn (then stays at the last)."""
    clocks = iter(sm_mhz)
    last = [sm_mhz[0]]

    def clock(handle: object, which: int) -> float:
        if which == 0:
            last[0] = next(clocks, last[0])
            return last[0]
        return 2619.0

    return SimpleNamespace(
        NVML_CLOCK_SM=0, NVML_CLOCK_MEM=1, NVML_TEMPERATURE_GPU=0,
        nvmlDeviceGetHandleByPciBusId=lambda bus: "h", nvmlDeviceGetHandleByIndex=lambda i: "h",
        nvmlDeviceGetClockInfo=clock, nvmlDeviceGetPowerUsage=lambda h: 350_000,
        nvmlDeviceGetTemperature=lambda h, kind: 61,
        nvmlDeviceGetCurrentClocksEventReasons=lambda h: reasons)


def test_the_warm_up_waits_until_the_sm_clock_stops_rising() -> None:
    watch = telemetry.Watch("cuda:0", fake_nvml([345, 1200, 1755, 1980, 1980]))
    answers = [watch.settled() for _ in range(4)]
    assert answers == [False, False, False, True]
    watch.finish()
    assert watch.counters() == {"sm_clock_mhz_before": 1980, "sm_clock_mhz": 1980,
                                "memory_clock_mhz": 2619, "power_w": 350.0,
                                "temperature_c": 61}
    assert not watch.throttled()


def test_a_clock_that_falls_during_the_samples_is_throttling() -> None:
    watch = telemetry.Watch("cuda:0", fake_nvml([1980, 1980, 1600]))
    while not watch.settled():
        pass
    watch.finish()
    assert watch.throttled()


def test_a_power_cap_reason_is_throttling_and_an_idle_reason_is_not() -> None:
    capped = telemetry.Watch("cuda:0", fake_nvml([1980], reasons=0x4 | 0x1))
    capped.finish()
    assert capped.throttled() and capped.after is not None
    assert capped.after.slowdowns == ("power cap",)
    idle = telemetry.Watch("cuda:0", fake_nvml([1980], reasons=0x1))
    idle.finish()
    assert not idle.throttled()


def test_without_nvml_or_on_the_cpu_nothing_is_read_or_claimed() -> None:
    watch = telemetry.Watch("cpu")
    assert not watch.active and watch.settled()
    watch.finish()
    assert watch.counters() == {} and not watch.throttled()


@pytest.mark.gpu
def test_a_real_gpu_reports_its_clocks() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("pynvml")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    reading = telemetry.read("cuda:0")
    assert reading is not None and reading.sm_mhz > 0 and reading.memory_mhz > 0
    assert 0 < reading.power_w < 2000 and 0 < reading.temperature_c < 120


def test_the_runners_other_workers_on_the_gpu_are_not_other_processes() -> None:
    import os
    import subprocess

    workers = [subprocess.Popen(["sleep", "30"]) for _ in range(2)]  # this test: the runner
    try:
        ours = telemetry._ours(workers[0].pid, os.getpid())
        assert {workers[0].pid, workers[1].pid, os.getpid()} <= ours
        assert 1 not in ours  # a process of someone else's stays "other"
    finally:
        for w in workers:
            w.kill()
            w.wait()


@pytest.mark.gpu
def test_a_worker_of_another_framework_reads_the_gpu_without_importing_torch() -> None:
    """Finding the device's NVML handle by its PCI bus id used to ask torch for the id: a
    CuPy or JAX worker paid torch's import, 3–4 s, at its first case."""
    import shutil
    import subprocess
    import sys

    pytest.importorskip("pynvml")
    if shutil.which("nvidia-smi") is None:
        pytest.skip("no NVIDIA driver")
    probe = ("import sys; from gpuvs.machine import telemetry; r = telemetry.read('cuda:0'); "
             "print(r is not None and r.sm_mhz > 0, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["True", "False"]


def test_the_devices_nvml_handle_is_looked_up_once_per_process() -> None:
    """Each case reads the sensors two or more times; the lookup behind the handle (the
    device's PCI bus id, then NVML's search) is done at the first read only."""
    nvml = fake_nvml([1980])
    lookups: list[object] = []
    nvml.nvmlDeviceGetHandleByIndex = lambda i: lookups.append(i) or "h"
    nvml.nvmlDeviceGetHandleByPciBusId = lambda bus: lookups.append(bus) or "h"
    for _ in range(3):
        watch = telemetry.Watch("cuda:0", nvml)
        watch.settled()
        watch.finish()
    assert len(lookups) == 1 and watch.counters()["sm_clock_mhz"] == 1980


@pytest.mark.parametrize(("reasons", "governed"), [(0x0, False), (0x4, True), (0x20, True),
                                                   (0x1, False)])
def test_a_power_or_heat_limit_governs_the_clocks_and_an_idle_card_does_not(
        reasons: int, governed: bool) -> None:
    watch = telemetry.Watch("cuda:0", fake_nvml([1980], reasons=reasons))
    assert watch.governed() is governed
