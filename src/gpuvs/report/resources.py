"""What a call spends besides time — energy, memory, money — as the cells and notes the
result tables, the seeds' tables and the answer show beside the time. Pure, like
layout.py: figures come from `gpuvs.machine.energy`, the peaks from the case's counters
(`gpuvs.machine.memory`), costs from `gpuvs.analysis.cost`.

A cell is empty where nothing was measured, so a run that measured none of it shows no
such column; a figure that could not be had where it was asked for says so once, in a
note, never as a guessed number.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpuvs import units
from gpuvs.analysis.cost import NO_PRICES, Prices, missing, per_million_calls
from gpuvs.machine import energy
from gpuvs.machine.memory import PEAK_DEVICE, PEAK_HOST
from gpuvs.model import Measurement, Status

ENERGY_COLUMNS = ("energy/call", "above idle", "power")
MEMORY_COLUMNS = ("peak host", "peak device")
COST_COLUMN = "cost/1M calls"
COLUMNS = (*ENERGY_COLUMNS, *MEMORY_COLUMNS, COST_COLUMN)


def cells(m: Measurement, prices: Prices = NO_PRICES) -> tuple[str, ...]:
    """The case's COLUMNS: energy per call, above idle, average power, its peaks on the
    host and on its device, and a million calls' cost at the prices given."""
    return (*energy_cells(m), *memory_cells(m), cost_cell(m, prices))


def energy_cells(m: Measurement) -> tuple[str, str, str]:
    """'1.06 J', '0.98 J', '702 W'; a declared figure says so: '1.4 J declared'."""
    found = energy.of(m)
    if found is None:
        return "", "", ""
    if not found.measured:
        return f"{units.joules(found.per_call_j)} declared", "", f"{found.watts:.3g} W declared"
    above = units.joules(found.above_idle_j) if found.above_idle_j is not None else ""
    return units.joules(found.per_call_j), above, f"{found.watts:.3g} W"


def energy_cell(m: Measurement | None) -> str:
    """One cell for a table with no room for three (the seeds'): joules per call, the
    above-idle share, or why there are none where they were asked for."""
    if m is None or m.status is not Status.OK:
        return ""
    per_call, above, _ = energy_cells(m)
    if per_call:
        return per_call + (f" ({above} above idle)" if above else "")
    return energy.why_none(m) or ""


def memory_cells(m: Measurement) -> tuple[str, str]:
    """The case's peak on the host and on its device, where read."""
    host, device = (m.counters.get(k) for k in (PEAK_HOST, PEAK_DEVICE))
    return (units.nbytes(host) if host is not None else "",
            units.nbytes(device) if device is not None else "")


def cost_cell(m: Measurement, prices: Prices) -> str:
    if not prices:
        return ""
    cost = per_million_calls(m, prices)
    return units.money(cost) if cost is not None else ""


def notes(ms: Sequence[Measurement], prices: Prices = NO_PRICES) -> tuple[str, ...]:
    """What the energy, memory and cost columns hold, and what could not be had: one line
    each, only where the run measured or asked for it."""
    done = [m for m in ms if m.status is Status.OK]
    return (*_gpu_notes(done), *_cpu_notes(done), *_memory_notes(done),
            *_cost_notes(done, prices))


def _gpu_notes(done: Sequence[Measurement]) -> list[str]:
    gpu = [m for m in done if m.case.device != "cpu"]
    found = [(m, f) for m in gpu if (f := energy.of(m)) is not None]
    out = []
    if found:
        idle = sorted({(m.case.device, f.idle_w) for m, f in found if f.idle_w is not None})
        out.append("energy/call on the GPU: the board's, from NVML's energy counter over each "
                   f"case's samples (at least {energy.ENERGY_WINDOW_S:g} s; power: their "
                   "average); above idle: less the idle power measured before the first case"
                   + (f" ({', '.join(f'{d} {w:.3g} W' for d, w in idle)})" if idle else
                      ": none was measured here (gpuvs run --energy measures it)"))
    why = sorted({w for m in gpu if energy.of(m) is None and (w := energy.why_none(m))})
    out += [f"GPU energy: {w}" for w in why]
    return out


def _cpu_notes(done: Sequence[Measurement]) -> list[str]:
    cpu = [m for m in done if m.case.device == "cpu"]
    sources = sorted({f.source for m in cpu if (f := energy.of(m)) is not None})
    out = [f"energy/call on the CPU: {s}" + ("; the whole package's, every process on it"
                                             if "RAPL" in s else "") for s in sources]
    why = sorted({w for m in cpu if (w := energy.why_none(m))})
    out += [f"CPU energy: {w}" for w in why]
    return out


def _memory_notes(done: Sequence[Measurement]) -> list[str]:
    if not any(PEAK_HOST in m.counters or PEAK_DEVICE in m.counters for m in done):
        return []
    return ["peak host, peak device: what the case added at its peak over the memory in use "
            "when it started (its inputs, reference and calls); device: its framework's "
            "allocator"]


def _cost_notes(done: Sequence[Measurement], prices: Prices) -> list[str]:
    if not prices:
        return []
    lacking = sorted({w for m in done if (w := missing(m, prices))})
    return [f"cost/1M calls: at the prices given ({prices.words()}), in their currency",
            *(f"no cost where there is {w}" for w in lacking)]
