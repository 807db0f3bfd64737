"""What the GPU's own sensors say around a measurement: clocks, power, temperature and
throttle reasons, read through NVML (nvidia-ml-py, `pip install 'gpuvs[nvml]'`).

A number is only as good as the clock it ran at. The worker reads the device before the
warm-up and after the samples; a case whose SM clock fell, or that the driver throttled
for power or heat, carries `Caveat.THROTTLED`. The warm-up also waits (briefly) for the
SM clock to stop rising, so that samples do not start while a card climbs out of idle.
Without NVML, or on the CPU, every reading is None and nothing is claimed.
"""

from __future__ import annotations

import contextlib
import functools
import os
from dataclasses import dataclass
from typing import Any

from gpuvs.model import on_gpu

# NVML's throttle ("clocks event") reason bits that mean the card was slowed down. GPU
# idle (0x1), application clock settings (0x2), display (0x100) and sync boost (0x10)
# are not slow-downs of work in progress.
SLOWDOWNS = {0x4: "power cap", 0x8: "hardware slowdown", 0x20: "thermal (software)",
             0x40: "thermal (hardware)", 0x80: "power brake"}
# The reasons under which the driver, not the work, sets the clocks from moment to
# moment: a case run under one is sampled over its whole budget (protocol.Sensors).
GOVERNING = frozenset({"power cap", "thermal (software)", "thermal (hardware)",
                       "power brake"})
# An SM clock that falls by more than this between the readings is throttling too.
CLOCK_DROP = 0.05
# Clocks within this share of each other in two readings have settled.
SETTLED = 0.02


@dataclass(frozen=True)
class Reading:
    sm_mhz: float
    memory_mhz: float
    power_w: float
    temperature_c: float
    slowdowns: tuple[str, ...]


@functools.cache
def _nvml() -> Any:
    """The initialised pynvml module, or None (not installed, no driver)."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no NVML is a normal state: a CPU, a laptop, a container
        return None
    return pynvml


# NVML handles by (NVML module, device): looked up once per process.
_HANDLES: dict[tuple[int, str], tuple[Any, Any]] = {}


def _handle(nvml: Any, device: str) -> Any:
    """The NVML handle of `cuda:N`, looked up once: matched by the PCI bus id CUDA gives
    the device, since CUDA's numbering and NVML's differ when CUDA_DEVICE_ORDER is not
    PCI_BUS_ID (or CUDA_VISIBLE_DEVICES reorders them); NVML's index where the bus id
    cannot be had."""
    key = (id(nvml), device)
    if key in _HANDLES and _HANDLES[key][0] is nvml:
        return _HANDLES[key][1]
    index = int(device.partition(":")[2] or 0)
    handle = None
    if (bus_id := _pci_bus_id(index)) is not None:
        with contextlib.suppress(Exception):  # a format this NVML does not take
            handle = nvml.nvmlDeviceGetHandleByPciBusId(bus_id)
    if handle is None:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
    _HANDLES[key] = (nvml, handle)
    return handle


def handle(device: str, nvml: Any = None) -> tuple[Any, Any] | None:
    """(NVML, the handle of `device`) for readers of other sensors (the energy counter);
    None on the CPU, without NVML, or where the device cannot be found."""
    nvml = nvml if nvml is not None else (_nvml() if on_gpu(device) else None)
    if nvml is None:
        return None
    try:
        return nvml, _handle(nvml, device)
    except Exception:  # a device NVML does not list: say nothing
        return None


def _pci_bus_id(index: int) -> str | None:
    """CUDA's PCI bus id of device `index` ("0000:19:00.0"), from the CUDA driver itself:
    asking torch for it cost a CuPy or JAX worker torch's import, 3–4 s on the H100 host
    at its first case. None without the driver."""
    import ctypes

    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    dev, buf = ctypes.c_int(), ctypes.create_string_buffer(32)
    if (cuda.cuInit(0) or cuda.cuDeviceGet(ctypes.byref(dev), index)
            or cuda.cuDeviceGetPCIBusId(buf, len(buf), dev)):
        return None
    return buf.value.decode()


def read(device: str, nvml: Any = None) -> Reading | None:
    """The device's clocks, power, temperature and active slow-downs now; None on the CPU
    or without NVML."""
    nvml = nvml if nvml is not None else (_nvml() if on_gpu(device) else None)
    if nvml is None:
        return None
    try:
        h = _handle(nvml, device)
        reasons = _reasons(nvml, h)
        return Reading(
            float(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM)),
            float(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_MEM)),
            nvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
            float(nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU)),
            tuple(name for bit, name in SLOWDOWNS.items() if reasons & bit))
    except Exception:  # a sensor the driver does not expose: say nothing
        return None


def _reasons(nvml: Any, handle: Any) -> int:
    get = (getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
           or nvml.nvmlDeviceGetCurrentClocksThrottleReasons)
    return int(get(handle))


class Watch:
    """One case's readings: the warm-up asks `settled()` until the SM clock stops moving
    (each answer is a reading); `finish()` reads once more after the samples. The last
    warm-up reading is the baseline the end is compared with."""

    def __init__(self, device: str, nvml: Any = None) -> None:
        self.device, self.nvml = device, nvml
        first = read(device, nvml)
        self.readings: list[Reading] = [first] if first is not None else []
        self.after: Reading | None = None
        self.other_processes: tuple[int, ...] = ()  # other pids computing on this GPU

    @property
    def active(self) -> bool:
        return bool(self.readings)

    def settled(self) -> bool:
        now = read(self.device, self.nvml)
        if now is None:
            return True
        self.readings.append(now)
        a, b = self.readings[-2].sm_mhz, now.sm_mhz
        return abs(b - a) <= SETTLED * max(a, 1.0)

    def governed(self) -> bool:
        """Whether a power or heat limit sets the clocks now, as the driver reports it.
        A moving clock alone is not enough: after a power-capped case the next one's SM
        clock climbs for a while, and a memory-bound pass does not care."""
        now = read(self.device, self.nvml)
        return now is not None and bool(GOVERNING & set(now.slowdowns))

    def finish(self) -> None:
        self.after = read(self.device, self.nvml)
        if self.after is not None:
            self.other_processes = _others_on(self.device, self.nvml or _nvml())

    def counters(self) -> dict[str, float]:
        """The SM clock when sampling began and ended, and the memory clock, power and
        temperature at the end."""
        if not self.readings or self.after is None:
            return {}
        before, after = self.readings[-1], self.after
        return {"sm_clock_mhz_before": before.sm_mhz, "sm_clock_mhz": after.sm_mhz,
                "memory_clock_mhz": after.memory_mhz, "power_w": after.power_w,
                "temperature_c": after.temperature_c}

    def throttled(self) -> bool:
        """A slow-down reason at the end of the samples, or an SM clock that fell."""
        if not self.readings or self.after is None:
            return False
        return (bool(self.after.slowdowns)
                or self.after.sm_mhz < (1 - CLOCK_DROP) * self.readings[-1].sm_mhz)


def _others_on(device: str, nvml: Any) -> tuple[int, ...]:
    """Pids of other processes with compute work on the device (a shared GPU)."""
    try:
        procs = nvml.nvmlDeviceGetComputeRunningProcesses(_handle(nvml, device))
    except Exception:  # not exposed (some containers): say nothing
        return ()
    return tuple(sorted({int(p.pid) for p in procs} - _ours(os.getpid(), os.getppid())))


def _ours(pid: int, parent: int) -> set[int]:
    """This worker, the runner that started it, and the runner's other workers (another
    backend's, or a post's replay): they hold a context on the GPU but wait while this
    case runs, since the runner runs one case at a time — not contention."""
    import psutil

    found = {pid, parent}
    with contextlib.suppress(psutil.Error):  # the runner is gone: nothing more is ours
        found |= {c.pid for c in psutil.Process(parent).children(recursive=True)}
    return found
