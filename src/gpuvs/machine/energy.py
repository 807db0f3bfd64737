"""Energy per call: the GPU's board energy from NVML's counter, the CPU's package and DRAM
energy from RAPL (`gpuvs.machine.rapl`), or a CPU power the user declared.

A counter is read when the samples start and when they end (`Watch.sampling_started`,
`sampling_ended`): both readings fall outside every timed batch, after a synchronisation,
so the window observes the calls and changes none of them. Joules per call are the
counter's difference over the calls run in between (lead-ins included, since they drew
power too), and the average power is that difference over the window's seconds.

NVML's counter (`nvmlDeviceGetTotalEnergyConsumption`, mJ since the driver loaded) moves
in steps, every 100 ms on an H100: a reading is the energy up to the last step, up to a
whole step before the moment it was read. So a window's figure is off by up to one step
over the window: ±10 % over 1 s, ±2.5 % over ENERGY_WINDOW_S (4 s). Measured on an H100
against NVML's instantaneous power (docs/energy.md), windows of 1.2 s were off by up to
4.6 %, of 2.2 s by up to 5.6 %, of 4.2 s by 0.33 % at most. Reading the counter on its
steps instead (wait for a step, start there) was tried and rejected: the wait leaves the
GPU idle just before the window, and the counter trails the card's power, so the idle
wait was counted as the window's and the figures read 6–7 % low. A figure needs a window
of ENERGY_WINDOW_S: a shorter one gives none, and says so. `--energy` asks the protocol to
sample that long (`Budget.min_sampling_s`); a case whose sampling spans it anyway reports
energy unasked. `nvmlDeviceGetPowerUsage` is no substitute: on an H100 it is a one-second
average, 22–28 % low over a 2 s window.

The GPU's idle power is measured by whoever starts a run — the runner, or `gpuvs.measure`
— before any case, with nothing running, between two dated steps of the same counter
IDLE_WINDOW_S or more apart, and handed to each case's watch, which stores it beside the
joules (`gpu_idle_w`): the energy above idle is the window's joules less the idle power
times the window, per call.

Every reading fails soft: a counter that cannot be read gives no figure and a reason
(`NoEnergy`), stored as a number in the case's counters and said in words by `why_none`.
No figure is ever guessed; a declared CPU power is labelled as declared.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Any

from gpuvs.machine import rapl, telemetry
from gpuvs.measuring.watch import Seen, Watch
from gpuvs.model import Measurement, on_gpu

# The shortest window a figure is given for: forty of the NVML counter's 100 ms steps, so
# that a step missed at either end is at most 2.5 % of it.
ENERGY_WINDOW_S = 4.0
# The window the idle power is measured over, once per GPU per run.
IDLE_WINDOW_S = 1.0
# How often a wait for the counter's next step reads it, and how long it waits at most.
STEP_POLL_S = 0.0005
STEP_WAIT_S = 0.5

GPU_J, GPU_IDLE_W, GPU_NONE = "gpu_energy_j", "gpu_idle_w", "gpu_energy_none"
CPU_PACKAGE_J, CPU_DRAM_J, CPU_NONE = "cpu_package_j", "cpu_dram_j", "cpu_energy_none"
CPU_DECLARED_W = "cpu_declared_w"
WINDOW_S, CALLS = "energy_window_s", "energy_calls"
# When the window ended, in seconds since the Unix epoch: where an energy figure was made,
# the window can be lined up with another power log (a wall meter, DCGM, a benchmark's own
# sampler), whose window is then [end - energy_window_s, end].
WINDOW_END = "energy_window_end_unix"


class NoEnergy(IntEnum):
    """Why a case has no energy figure; stored as its number (`gpu_energy_none`,
    `cpu_energy_none`), so a stored case says why wherever it is shown."""

    NO_NVML = 1
    NO_COUNTER = 2
    NO_RAPL = 3
    RAPL_ROOT = 4
    SHORT_WINDOW = 5

    @property
    def words(self) -> str:
        return _WORDS[self]


_WORDS = {
    NoEnergy.NO_NVML: "not read (no NVML here: an NVIDIA driver and pip install "
                      "'gpuvs[nvml]')",
    NoEnergy.NO_COUNTER: "not read (NVML gives this GPU no energy counter; Volta and later "
                         "have one)",
    NoEnergy.NO_RAPL: "not readable here (no RAPL: no /sys/class/powercap, as in most VMs)",
    NoEnergy.RAPL_ROOT: "not readable here (RAPL's energy_uj is root's alone on this kernel; "
                        "docs/energy.md)",
    NoEnergy.SHORT_WINDOW: f"not read (samples spanned under {ENERGY_WINDOW_S:g} s; "
                           "--energy samples that long)",
}


@dataclass(frozen=True)
class EnergyOptions:
    """What a case's energy watch is handed by whoever starts it: whether energy was
    asked for (`--energy`), the GPU's idle power measured at the run's start, and a CPU
    power the user declared (`--cpu-watts`)."""

    asked: bool = False
    idle_w: float | None = None
    declared_w: float | None = None


NOT_ASKED = EnergyOptions()  # energy only where the samples span its window anyway


def watch_for(device: str, options: EnergyOptions = NOT_ASKED) -> Watch:
    """The energy watch of a case on `device`: NVML's counter on a GPU, RAPL's on the CPU."""
    if on_gpu(device):
        return GpuEnergy(device, options.asked, options.idle_w)
    return CpuEnergy(options.asked, options.declared_w)


def gpu_millijoules(device: str, nvml: Any = None) -> int | NoEnergy:
    """The GPU's energy counter now, in mJ since the driver loaded, or why it cannot be
    read."""
    found = telemetry.handle(device, nvml)
    if found is None:
        return NoEnergy.NO_NVML
    lib, h = found
    try:
        return int(lib.nvmlDeviceGetTotalEnergyConsumption(h))
    except Exception:  # NVML_ERROR_NOT_SUPPORTED before Volta, or any refusal
        return NoEnergy.NO_COUNTER


def cpu_microjoules(root: Path = rapl.POWERCAP) -> tuple[tuple[rapl.Domain, ...],
                                                         tuple[int, ...]] | NoEnergy:
    """RAPL's package and DRAM domains and their counters now, or why they cannot be
    read."""
    try:
        found = rapl.domains(root)
        return found, rapl.read(found)
    except rapl.Unreadable as e:
        return NoEnergy.RAPL_ROOT if e.permission else NoEnergy.NO_RAPL


def readable(device: str) -> bool:
    """Whether this machine can give `device` an energy figure: what `--energy` needs to
    be worth a longer window."""
    found = (gpu_millijoules(device) if on_gpu(device) else cpu_microjoules())
    return not isinstance(found, NoEnergy)


def idle_watts(device: str, seconds: float = IDLE_WINDOW_S, nvml: Any = None,
               sleep: Callable[[float], None] = time.sleep,
               clock: Callable[[], float] = time.perf_counter) -> float | None:
    """The GPU's power with nothing running on it: the counter's energy between two of its
    steps `seconds` or more apart, over the time between them; None where the counter
    cannot be read or does not move (no wait then)."""
    def read() -> int | NoEnergy:
        return gpu_millijoules(device, nvml)

    first = next_step(read, clock, sleep)
    if first is None:
        return None
    sleep(seconds)
    last = next_step(read, clock, sleep)
    if last is None or last[0] <= first[0]:
        return None
    return (last[1] - first[1]) / 1e3 / (last[0] - first[0])


def idle_by_device(devices: Iterable[str]) -> dict[str, float]:
    """Idle power of each GPU named (once each), where its counter can be read."""
    found = {d: idle_watts(d) for d in dict.fromkeys(devices) if on_gpu(d)}
    return {d: w for d, w in found.items() if w is not None}


def next_step(read: Callable[[], int | NoEnergy], clock: Callable[[], float],
              sleep: Callable[[float], None]) -> tuple[float, int] | None:
    """(when, reading) at the counter's next step, read every STEP_POLL_S (a read of NVML,
    no work on the GPU), so the step is dated within that; None where the counter cannot
    be read or did not move within STEP_WAIT_S. The idle power is read between two such
    steps: on a card doing nothing, nothing trails and nothing is lost to the steps."""
    first = read()
    if isinstance(first, NoEnergy):
        return None
    until = clock() + STEP_WAIT_S
    while clock() < until:
        sleep(STEP_POLL_S)
        now = read()
        if isinstance(now, NoEnergy):
            return None
        if now != first:
            return clock(), now
    return None


class _Window(Watch, ABC):
    """A counter read when the samples start and end. Energy is on when it was asked
    for or when the window spans ENERGY_WINDOW_S anyway; then the case stores its
    figure's parts, or why it has none. Off, it stores nothing."""

    none: str = ""

    def __init__(self, asked: bool, clock: Callable[[], float]) -> None:
        self.asked, self.clock = asked, clock
        self.start: tuple[float, Any] | None = None
        self.window: tuple[float, int, Any, Any] | None = None
        self.ended_unix = 0.0

    @abstractmethod
    def read(self) -> Any:
        """The counter now, or the NoEnergy that says why it cannot be read."""

    @abstractmethod
    def parts(self, before: Any, after: Any) -> dict[str, float]:
        """The counters a figure is made from, between two readings."""

    def case_started(self) -> None:
        self.start, self.window = None, None

    def sampling_started(self) -> None:
        self.start = (self.clock(), self.read())

    def sampling_ended(self, calls: int) -> None:
        if self.start is None:
            return
        t0, before = self.start
        after = before if isinstance(before, NoEnergy) else self.read()
        self.window = (self.clock() - t0, calls, before, after)
        self.ended_unix = time.time()

    def case_ended(self) -> Seen:
        if self.window is None:
            return Seen()
        seconds, calls, before, after = self.window
        if not (self.asked or seconds >= ENERGY_WINDOW_S):
            return Seen()
        why = next((r for r in (before, after) if isinstance(r, NoEnergy)), None)
        if why is None and seconds < ENERGY_WINDOW_S:
            why = NoEnergy.SHORT_WINDOW
        if why is not None:
            return Seen(counters={self.none: float(why), WINDOW_S: seconds})
        return Seen(counters={**self.parts(before, after), WINDOW_S: seconds,
                              CALLS: float(calls), WINDOW_END: self.ended_unix})


class GpuEnergy(_Window):
    """The GPU board's energy over the samples (NVML), and the idle power handed in."""

    none = GPU_NONE

    def __init__(self, device: str, asked: bool = False, idle_w: float | None = None,
                 nvml: Any = None, clock: Callable[[], float] = time.perf_counter) -> None:
        super().__init__(asked, clock)
        self.device, self.idle_w, self.nvml = device, idle_w, nvml

    def read(self) -> int | NoEnergy:
        return gpu_millijoules(self.device, self.nvml)

    def parts(self, before: int, after: int) -> dict[str, float]:
        idle = {GPU_IDLE_W: self.idle_w} if self.idle_w is not None else {}
        return {GPU_J: (after - before) / 1e3, **idle}


class CpuEnergy(_Window):
    """The CPU packages' and DRAM's energy over the samples (RAPL), and a CPU power the
    user declared (`--cpu-watts`), stored apart: a declared figure is never a measured
    one."""

    none = CPU_NONE

    def __init__(self, asked: bool = False, declared_w: float | None = None,
                 root: Path = rapl.POWERCAP, clock: Callable[[], float] = time.perf_counter
                 ) -> None:
        super().__init__(asked, clock)
        self.declared_w, self.root = declared_w, root

    def read(self) -> tuple[tuple[rapl.Domain, ...], tuple[int, ...]] | NoEnergy:
        return cpu_microjoules(self.root)

    def parts(self, before: Any, after: Any) -> dict[str, float]:
        found, start = before
        _, end = after
        out: dict[str, float] = {}
        for d, a, b in zip(found, start, end, strict=True):
            key = CPU_PACKAGE_J if d.kind == rapl.PACKAGE else CPU_DRAM_J
            out[key] = out.get(key, 0.0) + rapl.joules(d, a, b)
        return out

    def case_ended(self) -> Seen:
        seen = super().case_ended()
        if self.declared_w is None:
            return seen
        return Seen(seen.caveats, {**seen.counters, CPU_DECLARED_W: self.declared_w})


@dataclass(frozen=True)
class Energy:
    """One case's energy per call, from its counters."""

    per_call_j: float
    watts: float                  # average power over the window (declared: as declared)
    above_idle_j: float | None    # per call, less the idle power; GPU only
    idle_w: float | None
    measured: bool                # False: a declared power times the median time
    source: str                   # what counted it, for the tables' notes


def of(m: Measurement) -> Energy | None:
    """The case's energy per call: measured where a counter covered its window, else from
    a declared CPU power; None where neither exists."""
    c = m.counters
    calls, window = c.get(CALLS), c.get(WINDOW_S)
    if GPU_J in c and calls and window:
        j, idle = c[GPU_J], c.get(GPU_IDLE_W)
        above = (j - idle * window) / calls if idle is not None else None
        return Energy(j / calls, j / window, above, idle, True,
                      "GPU board, NVML's energy counter")
    if CPU_PACKAGE_J in c and calls and window:
        j = c[CPU_PACKAGE_J] + c.get(CPU_DRAM_J, 0.0)
        parts = "package + DRAM" if CPU_DRAM_J in c else "package"
        return Energy(j / calls, j / window, None, None, True,
                      f"the {parts} from RAPL's counters over each case's samples")
    if CPU_DECLARED_W in c and m.summary is not None:
        w = c[CPU_DECLARED_W]
        return Energy(w * m.summary.median, w, None, None, False,
                      f"{w:g} W declared (--cpu-watts) × time per call, not measured")
    return None


def why_none(m: Measurement) -> str | None:
    """Why an energy figure is missing, in words, where the case was asked for one."""
    code = m.counters.get(GPU_NONE, m.counters.get(CPU_NONE))
    return NoEnergy(int(code)).words if code is not None else None
