"""A synthetic device profile with round ceilings, so that each test works its expected
times out by hand, and measurements made to order."""

from __future__ import annotations

from gpuvs.model import FLOP_CLASSES, OP_CLASSES, Case, Ceiling, Measurement, OpCost, Status
from gpuvs.predicting.profile import Profile

GPU = "cuda:0"
CEILINGS = (
    Ceiling("matmul float32 tf32=off", GPU, "torch", 50e12, "FLOP/s", ""),
    Ceiling("matmul float32 tf32=on", GPU, "torch", 400e12, "FLOP/s", ""),
    Ceiling("matmul float64", GPU, "torch", 50e12, "FLOP/s", ""),
    Ceiling("matmul bfloat16", GPU, "torch", 800e12, "FLOP/s", ""),
    Ceiling("matmul float16", GPU, "torch", 800e12, "FLOP/s", ""),
    Ceiling("memory bandwidth (copy)", GPU, "torch", 2e12, "B/s", ""),
    Ceiling("h2d pageable", GPU, "torch", 10e9, "B/s", ""),
    Ceiling("d2h pageable", GPU, "torch", 5e9, "B/s", ""),
    Ceiling("h2d pinned", GPU, "torch", 50e9, "B/s", ""),
    Ceiling("per-op dispatch cost", GPU, "torch", 10e-6, "s", ""),
    Ceiling("launch + sync latency", GPU, "torch", 20e-6, "s", ""),
    Ceiling("per-op dispatch cost", GPU, "cupy", 10e-6, "s", ""),
    Ceiling("launch + sync latency", GPU, "cupy", 20e-6, "s", ""),
    Ceiling("per-op dispatch cost", GPU, "jax", 100e-6, "s", ""),
    Ceiling("launch + sync latency", GPU, "jax", 100e-6, "s", ""),
    Ceiling("matmul float32 threads=all", "cpu", "numpy", 1e12, "FLOP/s", ""),
    Ceiling("per-op dispatch cost", "cpu", "torch", 3e-6, "s", ""),
)


def synthetic(name: str = "syn", scale: dict[str, float] | None = None,
              classes: bool = False) -> Profile:
    """The round profile; `scale` multiplies the ceilings whose name starts with a key
    (a second GPU with twice the bandwidth: {"memory": 2}); with `classes`, each op
    class timed over sizes (`op_costs`), as a profile of format 2 holds them."""
    def scaled(c: Ceiling) -> Ceiling:
        factor = next((f for k, f in (scale or {}).items() if c.name.startswith(k)), 1.0)
        return Ceiling(c.name, c.device, c.backend, c.value * factor, c.unit, c.source)

    return Profile(name, "Synthetic GPU", "2026-11-26T12:00:00+0000", "580.1 / CUDA 13.0",
                   {"torch": "2.11.0", "numpy": "2.5.2"}, "0123456789abcdef",
                   "20261126-120000-abcd", tuple(scaled(c) for c in CEILINGS),
                   op_costs() if classes else ())


# Round costs per op class: a launch of 10 µs (20 µs for a sort and a unique), then the
# device's time, passes over the bytes at 2 TB/s (FLOPs at 50 TFLOP/s). A copy to the
# device takes 20 µs + bytes at 10 GB/s, to the host 20 µs + bytes at 5 GB/s.
PASSES = {"sort": 4.0, "unique": 5.0, "scan": 2.0, "topk": 1.5, "gather": 3.0,
          "scatter": 3.0, "select": 2.0, "fft": 2.5}
LAUNCH = {"sort": 20e-6, "unique": 20e-6}


def op_costs(leave_out: tuple[str, ...] = ()) -> tuple[OpCost, ...]:
    """Four points per class, the smallest launch-bound, the two largest device-bound."""
    out = []
    for c in OP_CLASSES:
        if c in leave_out:
            continue
        for amount in (1e3, 1e6, 1e8, 1e9) if c not in FLOP_CLASSES else (1e6, 1e9, 1e11,
                                                                          1e12):
            if c == "to_device":
                seconds = 20e-6 + amount / 10e9
            elif c == "to_host":
                seconds = 20e-6 + amount / 5e9
            elif c in FLOP_CLASSES:
                seconds = max(10e-6, amount / 50e12)
            else:
                seconds = max(LAUNCH.get(c, 10e-6), PASSES.get(c, 1.0) * amount / 2e12)
            out.append(OpCost(c, GPU, "torch", amount, seconds, f"op_class/{c}/{amount:g}"))
    return tuple(out)



def measured(case: Case, seconds: float) -> Measurement:
    """A finished case whose every sample took `seconds`."""
    return Measurement(case, Status.OK, samples=(seconds,) * 9)
