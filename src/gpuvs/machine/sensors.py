"""The machine's sensors as watches (`gpuvs.measuring.watch`): what every entry point enters
around a case — the GPU's telemetry, other processes' CPU time (contention), the case's
peak memory (`gpuvs.machine.memory`), its energy (`gpuvs.machine.energy`) and, in a
worker, NumPy's BLAS held to one thread while another framework is timed. `standard`
assembles them, so the worker, `gpuvs.measure` and `gpuvs.compare` name the same caveats
and counters from the same readings."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from gpuvs.backends.base import Backend
from gpuvs.machine import contention, energy, memory, telemetry
from gpuvs.machine.energy import NOT_ASKED, EnergyOptions
from gpuvs.measuring.watch import Seen, Watch, Watches
from gpuvs.model import Caveat, on_gpu


class Telemetry(Watch):
    """The GPU's clocks, power, temperature and throttle reasons (NVML) around the case:
    the warm-up waits for the clocks to settle, a power or heat limit makes the protocol
    sample over its whole budget, and a slow-down or another process on the GPU is said."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.readings: telemetry.Watch | None = None

    def case_started(self) -> None:
        readings = telemetry.Watch(self.device)
        self.readings = readings if readings.active else None

    def settled(self) -> bool | None:
        return None if self.readings is None else self.readings.settled()

    def governed(self) -> bool | None:
        return None if self.readings is None else self.readings.governed()

    def case_ended(self) -> Seen:
        r = self.readings
        if r is None:
            return Seen()
        r.finish()
        caveats = ((Caveat.THROTTLED,) if r.throttled() else ()) + (
            (Caveat.CONTENDED,) if r.other_processes else ())
        counters = r.counters() | ({"gpu_other_processes": float(len(r.other_processes))}
                                   if r.other_processes else {})
        return Seen(caveats, counters)


class Contention(Watch):
    """Other processes' CPU time while the case was sampled, against the cores it asked
    for (`demand`: its threads on the CPU, the one thread that launches work on a GPU).

    The window is the sampling's, not the case's: building inputs, the first call and
    the warm-up are not timed, and on the H100 host the thread pools of the case just
    measured in another worker (OpenBLAS's, XLA's) spun on for a moment after it, which
    took every core while the next case built its inputs. Over the whole case, torch's
    CPU products at 16 threads read contended in one case in three, each then paused 2 s
    and measured again, with others taking 0–1 % of the CPU on the second try. A
    sampling too short for the kernel's ticks to show anything (a steady call that met
    its criterion in 20 ms) is judged over the whole case instead."""

    def __init__(self, demand: float) -> None:
        self.demand = demand
        self.started: contention.Snapshot | None = None
        self.before: contention.Snapshot | None = None
        self.after: contention.Snapshot | None = None

    def case_started(self) -> None:
        self.started = self.before = contention.snapshot()
        self.after = None

    def sampling_started(self) -> None:
        self.before, self.after = contention.snapshot(), None

    def sampling_ended(self, calls: int) -> None:
        self.after = contention.snapshot()

    def case_ended(self) -> Seen:
        assert self.started is not None and self.before is not None
        before, after = self.before, self.after or contention.snapshot()
        if not contention.can_show(before, after):
            before, after = self.started, contention.snapshot()
        taken, asked, cores = contention.cpu_taken(before, after, self.demand)
        busy = contention.evidence(taken, asked, cores)
        return Seen((Caveat.CONTENDED,) if busy else (),
                    {"others_cpu_share": min(taken / asked, 1.0), "others_cpu_s": taken,
                     "asked_cpu_s": asked})


class Held(Watch):
    """A context held while the protocol times the case (not while its inputs are built):
    NumPy's OpenBLAS held to one thread while another framework computes."""

    def __init__(self, hold: Any) -> None:
        self._hold = hold

    def timing(self) -> AbstractContextManager[object]:
        hold: AbstractContextManager[object] = self._hold()
        return hold


def standard(device: str, cpu_threads: float | None = None, hold: Any = None,
             backend: Backend | None = None, power: EnergyOptions = NOT_ASKED
             ) -> Watches:
    """The watches every case is timed inside: telemetry on a GPU, contention against the
    cores the case asks for (`cpu_threads` on the CPU, one on a GPU), `hold` (a context
    factory, e.g. `Backend.quiet_numpy_blas`) around the timed calls, the case's peak
    memory (on its device too, through `backend`'s allocator) and its energy (`power`:
    asked for, the GPU's idle power, a declared CPU power)."""
    demand = float(cpu_threads or 1) if device == "cpu" else 1.0
    found: list[Watch] = [Contention(demand)]
    if on_gpu(device):
        found.insert(0, Telemetry(device))
    if hold is not None:
        found.append(Held(hold))
    found += [memory.PeakMemory(device, backend), energy.watch_for(device, power)]
    return Watches(found)
