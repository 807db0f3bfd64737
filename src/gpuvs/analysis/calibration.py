"""A run's calibration, read: its probes (`workloads.calibration`) apart from its cases,
what each probe's figure is, and which probe's bound sets each case's time.

A case's bound is decided by roofline's rules (`analysis.roofline`), read against the
run's own calibration rather than `gpuvs ceilings`' peaks, so that every calibrated run
can be judged without one: the host issuing the work where the GPU's busy time says so,
or where the call is within LAUNCH_FACTOR of its ops at the launch probe's cost (the
launch probe of the case's own backend and device); the copies, for an end-to-end call
that spends over TRANSFER_SHARE of its time copying (the round-trip probe, or the launch
probe where the copies are latency-sized: `latency_sized`); for one that spends less,
its resident twin's bound; else its arithmetic intensity
against the calibration's ridge point (the product probe's FLOP/s over the copy probe's
bytes/s, on the case's device): the device's or the CPU's arithmetic (on one thread for a
case that computes on one, else on all), or its memory. A case that counts neither FLOPs
nor bytes, and is not launch-bound, has no bound here: it is judged on its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gpuvs.analysis.roofline import (
    TRANSFER_SHARE,
    busy_says_launch,
    copy_share,
    on_dispatch_floor,
    resident_key,
    resident_of,
)
from gpuvs.model import Case, Caveat, Measurement, Status, on_gpu

# Under this many bytes copied a call (in and out), an end-to-end call's copies take the
# driver's fixed cost, not the link's bandwidth: 1 MiB crosses a 10–25 GB/s link in
# 40–100 µs, where a pageable copy's fixed cost is about 10 µs.
LATENCY_BYTES = float(1 << 20)
# How each bound is named for a person, and what its figure is a rate of (none: its time
# per call is the figure, as the launch probe's seconds per op).
NAMES = {"launch": "launch", "cpu": "CPU arithmetic", "host_memory": "host memory",
         "device_compute": "device arithmetic", "device_memory": "device memory",
         "transfer": "host↔device round trip"}
RATES = {"cpu": ("flops", "FLOP/s"), "device_compute": ("flops", "FLOP/s"),
         "host_memory": ("bytes_moved", "B/s"), "device_memory": ("bytes_moved", "B/s"),
         "transfer": ("bytes_moved", "B/s")}


@dataclass(frozen=True)
class Machine:
    """What two runs' calibrations say of a case: the probe of its bound (`probe` as a
    person reads it, `key` its case), the probe's B ÷ A with its CI, and the case's ratio
    over the probe's (`residual`), its CI worst to worst."""

    probe: str
    key: str
    ratio: float
    low: float
    high: float
    residual: float
    residual_low: float
    residual_high: float

    @classmethod
    def against(cls, probe: str, key: str, machine: tuple[float, float, float],
                case: tuple[float, float, float]) -> Machine:
        """The case's (ratio, low, high) over the probe's `machine` (ratio, low, high)."""
        (m, m_low, m_high), (c, c_low, c_high) = machine, case
        return cls(probe, key, m, m_low, m_high, c / m, c_low / m_high, c_high / m_low)


def split(ms: Iterable[Measurement]) -> tuple[list[Measurement], list[Measurement]]:
    """(the calibration's probes, the run's cases): the probes describe the machine and
    are shown and judged apart; every sweep, answer and crossover is the cases'."""
    probes: list[Measurement] = []
    cases: list[Measurement] = []
    for m in ms:
        (probes if m.case.calibrates else cases).append(m)
    return probes, cases


def cases_of(ms: Iterable[Measurement]) -> list[Measurement]:
    """The run's cases, without its calibration."""
    return split(ms)[1]


def label(case: Case) -> str:
    """A probe as a person reads it: 'launch (numpy cpu)', 'CPU arithmetic, 1 thread
    (numpy cpu)'."""
    bound = case.param("bound")
    threads = case.param("threads")
    on = (f", {'1 thread' if threads == '1' else 'all threads'}" if threads else "")
    return f"{NAMES.get(bound, bound)}{on} ({case.backend_device})"


def rate(m: Measurement) -> tuple[float, str] | None:
    """A probe's figure as a rate (FLOP/s, B/s) where it is one; None for the launch
    probe (its time per op is the figure) or a probe with no time."""
    counted = RATES.get(m.case.param("bound"))
    if counted is None or m.summary is None or not m.counters.get(counted[0]):
        return None
    return m.counters[counted[0]] / m.summary.median, counted[1]


def usable(m: Measurement) -> bool:
    """Whether a probe can explain anything: it finished, with samples, on a machine no
    other process held (a contended probe reads the other processes, not the machine)."""
    return (m.status is Status.OK and m.summary is not None
            and Caveat.CONTENDED not in m.caveats)


def bounds(ms: Sequence[Measurement], probes: Sequence[Measurement]
           ) -> dict[str, Measurement]:
    """For each finished case of `ms` whose bound the calibration can tell, the probe of
    `probes` whose bound sets its time, by case key."""
    by = {_slot(p.case): p for p in probes if usable(p)}
    resident = resident_of(ms)
    out = {}
    for m in ms:
        if m.status is not Status.OK or m.summary is None or m.case.calibrates:
            continue
        found = _bound(m, resident.get(resident_key(m.case)), by)
        if found is not None:
            out[m.case.key] = found
    return out


def _slot(case: Case) -> tuple[str, str, str, str]:
    """Where a probe answers: its bound, device and threads, and for the launch probe its
    backend (a device's arithmetic and memory are the device's, whichever backend ran
    them)."""
    bound = case.param("bound")
    return (bound, case.device, case.param("threads"),
            case.backend if bound == "launch" else "")


def _bound(m: Measurement, resident: Measurement | None,
           by: Mapping[tuple[str, str, str, str], Measurement]) -> Measurement | None:
    c = m.case
    launch = by.get(("launch", c.device, "", c.backend))
    issued = busy_says_launch(m)
    if issued or (issued is None and launch is not None and launch.summary is not None
                  and on_dispatch_floor(m, launch.summary.median)):
        return launch
    gpu = on_gpu(c.device)
    share = copy_share(m, resident)
    if gpu and share is not None and share > TRANSFER_SHARE:
        return launch if latency_sized(m) else by.get(("transfer", c.device, "", ""))
    if gpu and share is not None and resident is not None:
        return _bound(resident, None, by)  # the copies are the lesser part: the work's
    if gpu:
        compute = by.get(("device_compute", c.device, "", ""))
        memory = by.get(("device_memory", c.device, "", ""))
    else:
        one = m.counters.get("threads") == 1.0 or c.param("threads") == "1"
        compute = by.get(("cpu", "cpu", "1" if one else "all", ""))
        memory = by.get(("host_memory", "cpu", "", ""))
    return _by_intensity(m, compute, memory)


def latency_sized(m: Measurement) -> bool:
    """Whether an end-to-end call's copies are too small for their bytes to set their
    time: under LATENCY_BYTES a call, in and out together, each copy is the host asking
    the driver and waiting, as a launch is (the host's pace: the launch probe's), not bytes
    crossing the link (the round-trip probe's 64 MiB). A call whose copies were not
    counted (a run stored before "copied_bytes") is taken as bandwidth-sized."""
    copied = m.counters.get("copied_bytes")
    return copied is not None and copied < LATENCY_BYTES


def _by_intensity(m: Measurement, compute: Measurement | None,
                  memory: Measurement | None) -> Measurement | None:
    """The arithmetic probe or the memory probe, by the case's FLOPs per byte against
    the ridge point the two probes make; the one the case counts alone if it counts one."""
    flops, moved = m.counters.get("flops", 0.0), m.counters.get("bytes_moved", 0.0)
    if not flops or not moved:
        return compute if flops else memory if moved else None
    peak = rate(compute) if compute is not None else None
    bandwidth = rate(memory) if memory is not None else None
    if peak is None or bandwidth is None:
        return None
    return compute if flops / moved >= peak[0] / bandwidth[0] else memory
