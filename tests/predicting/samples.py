"""A synthetic device profile with round ceilings, so that each test works its expected
times out by hand, and measurements made to order."""

from __future__ import annotations

from gpuvs.model import Case, Ceiling, Measurement, Status
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


def synthetic(name: str = "syn", scale: dict[str, float] | None = None) -> Profile:
    """The round profile; `scale` multiplies the ceilings whose name starts with a key
    (a second GPU with twice the bandwidth: {"memory": 2})."""
    def scaled(c: Ceiling) -> Ceiling:
        factor = next((f for k, f in (scale or {}).items() if c.name.startswith(k)), 1.0)
        return Ceiling(c.name, c.device, c.backend, c.value * factor, c.unit, c.source)

    return Profile(name, "Synthetic GPU", "2026-11-26T12:00:00+0000", "580.1 / CUDA 13.0",
                   {"torch": "2.11.0", "numpy": "2.5.2"}, "0123456789abcdef",
                   "20261126-120000-abcd", tuple(scaled(c) for c in CEILINGS))



def measured(case: Case, seconds: float) -> Measurement:
    """A finished case whose every sample took `seconds`."""
    return Measurement(case, Status.OK, samples=(seconds,) * 9)
