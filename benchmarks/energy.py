"""Energy per call on a GPU, checked against an independent reading (docs/energy.md).

For each case — an 8192³ bfloat16 product, a 4096³ float32 product, `x *= 5` on 10⁸
float32 elements — `gpuvs.measure(..., energy=True, energy_window_s=W)` measures energy
as every entry point does: NVML's energy counter read when the samples start and end,
the idle power measured first. The measurement says how long the window was, when it
ended (`energy_window_end_unix`) and how many calls ran in it. Meanwhile a thread of the
same process reads NVML's instantaneous power (`NVML_FI_DEV_POWER_INSTANT`, field 186)
every PERIOD_S; its readings, integrated over that same window (trapezoids, interpolated
at the window's edges) and divided by the same calls, are the independent check. Reading NVML is
a read, not work on the GPU. `nvmlDeviceGetPowerUsage` is no reference: on an H100 it is
a one-second average.

The same thread also dates each step of NVML's energy counter and each change of the
instantaneous field: both move about every 100 ms on an H100, which is why a figure needs
a window of 4 s (`gpuvs.machine.energy.ENERGY_WINDOW_S`), and why the check is only as
good as its own 100 ms steps over the window.

Each case is measured over windows of 4 s (the shortest gpuvs gives a figure for) and of
8 s. The table: gpuvs J/call, independent J/call, their difference, above-idle J/call, and
the idle power. About a minute on an H100; the results go to OUT/energy.json, the traces
with them.

    PYTHONPATH=src python3 benchmarks/energy.py [--out DIR] [--device cuda:0]
"""

from __future__ import annotations

import argparse
import bisect
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

POWER_INSTANT = 186  # NVML_FI_DEV_POWER_INSTANT: milliwatts, now
PERIOD_S = 0.005
WINDOWS_S = (4.0, 8.0)
VALUE_FIELDS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal",
                6: "usVal"}  # nvmlValueType_t → the member of c_nvmlValue_t that holds it


class PowerSampler(threading.Thread):
    """NVML's instantaneous power every PERIOD_S, stamped with the host's clock (Unix
    seconds, as gpuvs dates its energy window's end), and the energy counter's steps,
    dated within STEP_POLL_S."""

    def __init__(self, nvml: Any, handle: Any) -> None:
        super().__init__(daemon=True)
        self.nvml, self.handle = nvml, handle
        self.samples: list[tuple[float, float]] = []
        self.steps: list[tuple[float, int]] = []
        self.halt = threading.Event()

    def run(self) -> None:
        from gpuvs.machine.energy import STEP_POLL_S

        due = 0.0
        while not self.halt.is_set():
            mj = int(self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle))
            t = time.time()
            if not self.steps or mj != self.steps[-1][1]:
                self.steps.append((t, mj))
            if t >= due:
                value = self.nvml.nvmlDeviceGetFieldValues(self.handle, [POWER_INSTANT])[0]
                if value.nvmlReturn == 0:
                    raw = getattr(value.value, VALUE_FIELDS[int(value.valueType)])
                    self.samples.append((time.time(), float(raw) / 1e3))
                due = t + PERIOD_S
            self.halt.wait(STEP_POLL_S)

    def joules(self, t0: float, t1: float) -> float:
        """Power integrated over [t0, t1]: trapezoids between readings, the edges
        interpolated."""
        ts = [t for t, _ in self.samples]
        ws = [w for _, w in self.samples]

        def at(t: float) -> float:
            i = bisect.bisect_left(ts, t)
            if i == 0:
                return ws[0]
            if i == len(ts):
                return ws[-1]
            f = (t - ts[i - 1]) / (ts[i] - ts[i - 1])
            return ws[i - 1] + f * (ws[i] - ws[i - 1])

        inside = [(t, w) for t, w in self.samples if t0 < t < t1]
        points = [(t0, at(t0)), *inside, (t1, at(t1))]
        return sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(points, points[1:],
                                                                       strict=False))


def _periods(times: list[float]) -> list[float]:
    return [b - a for a, b in zip(times, times[1:], strict=False)]


def _median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2] if xs else float("nan")


def cases(device: str) -> list[tuple[str, Callable[[], object]]]:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False  # float32 means float32
    a16 = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    b16 = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    a32 = torch.randn(4096, 4096, device=device)
    b32 = torch.randn(4096, 4096, device=device)
    x = torch.ones(10**8, device=device)
    return [("8192³ bf16 product", lambda: a16 @ b16),
            ("4096³ float32 product", lambda: a32 @ b32),
            ("x *= 5, 1e8 float32", lambda: x.mul_(5))]


def measured(name: str, fn: Callable[[], object], device: str, window_s: float,
             sampler: PowerSampler) -> dict[str, Any]:
    """One case through `gpuvs.measure` with energy over at least `window_s`, beside the
    independent sampler's power integrated over the same window (gpuvs dates its end)."""
    import gpuvs
    from gpuvs.machine import energy

    m = gpuvs.measure(fn, device=device, budget_s=window_s, energy=True,
                      energy_window_s=window_s, name=f"energy {name}")
    figure = energy.of(m)
    c = m.counters
    if figure is None or energy.WINDOW_END not in c:
        return {"case": name, "window_s": None, "why_none": energy.why_none(m),
                "caveats": [cv.value for cv in m.caveats]}
    t1 = c[energy.WINDOW_END]
    t0, calls = t1 - c[energy.WINDOW_S], c[energy.CALLS]
    independent = sampler.joules(t0, t1) / calls
    return {"case": name, "window_s": t1 - t0, "calls": calls,
            "median_s": m.summary.median if m.summary else None,
            "gpuvs_j": figure.per_call_j, "independent_j": independent,
            "difference": figure.per_call_j / independent - 1,
            "above_idle_j": figure.above_idle_j, "idle_w": figure.idle_w,
            "why_none": None, "readings": sum(t0 <= t <= t1 for t, _ in sampler.samples),
            "caveats": [cv.value for cv in m.caveats]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--device", default="cuda:0")
    args = parser.parse_args()
    from gpuvs.machine import energy, telemetry

    found = telemetry.handle(args.device)
    if found is None:
        raise SystemExit(f"no NVML for {args.device}: this benchmark needs an NVIDIA GPU")
    nvml, handle = found
    work = cases(args.device)  # inputs made before the idle power is read
    idle_w = energy.idle_watts(args.device)  # gpuvs.measure measures its own as well
    sampler = PowerSampler(nvml, handle)
    sampler.start()
    started = time.perf_counter()
    rows = [measured(name, fn, args.device, w, sampler)
            for name, fn in work for w in WINDOWS_S]
    sampler.halt.set()
    sampler.join()
    periods = _periods([t for t, _ in sampler.steps])
    changes = _periods([t for (t, w), (_, before) in zip(sampler.samples[1:], sampler.samples,
                                                         strict=False) if w != before])
    print(f"energy counter: a step every {1e3 * _median(periods):.0f} ms (median of "
          f"{len(periods)}); instantaneous field: a new value every "
          f"{1e3 * _median(changes):.0f} ms (median of {len(changes)})")
    print(f"{'case':24} {'window':>7} {'gpuvs J/call':>13} {'independent':>12} "
          f"{'diff':>7} {'above idle':>11} {'idle W':>7}")
    for r in rows:
        if r["window_s"] is None:
            print(f"{r['case']:24} no energy figure: {r['why_none']}")
            continue
        ours = f"{r['gpuvs_j']:.4g}" if r["gpuvs_j"] is not None else r["why_none"]
        diff = f"{100 * r['difference']:+.2f}%" if r["difference"] is not None else "—"
        above = f"{r['above_idle_j']:.4g}" if r["above_idle_j"] is not None else "—"
        idle = f"{r['idle_w']:.1f}" if r["idle_w"] is not None else "—"
        print(f"{r['case']:24} {r['window_s']:6.2f}s {ours:>13} {r['independent_j']:12.4g} "
              f"{diff:>7} {above:>11} {idle:>7}")
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / "energy.json"
    out.write_text(json.dumps({"device": args.device, "period_s": PERIOD_S, "idle_w": idle_w,
                               "took_s": time.perf_counter() - started, "rows": rows,
                               "step_periods_s": periods, "field_periods_s": changes,
                               "steps": sampler.steps, "power": sampler.samples}) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
