"""Measured ceilings: which probe cases to run, and what their measurements mean.

A ceiling is a rate (FLOP/s, bytes/s) or a fixed cost (seconds) read off a probe
measurement (see `gpuvs.workloads.ceilings`). They are cached per environment
fingerprint — a ceilings run is an ordinary run whose config says `kind = ceilings` — and
every analysis of the same machine reuses them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gpuvs.model import Case, Ceiling, Measurement, Status

GPU_DTYPES = ("float64", "float32", "bfloat16", "float16")
CPU_DTYPES = ("float32", "float64")
GPU_MATMUL_N = 8192
CPU_MATMUL_N = 2048
GPU_COPY_ELEMENTS = 1 << 28   # 1 GiB of float32: far beyond any L2
CPU_STREAM_ELEMENTS = 1 << 25
TRANSFER_ELEMENTS = 1 << 26


def probe_cases(backends: Iterable[str]) -> list[Case]:
    """The probes to run for the given backends."""
    names = set(backends)
    cases = _cpu_probes() if "numpy" in names else []
    if "torch" in names:
        # NumPy runs elementwise work on one thread; torch's CPU triad uses them all. Its
        # GEMM may also beat NumPy's BLAS: the CPU's peak is the larger of the two.
        cases.append(Case("triad", "correct", "torch", "cpu", "float64", CPU_STREAM_ELEMENTS))
        cases += [Case("peak_matmul", "correct", "torch", "cpu", dtype, CPU_MATMUL_N,
                       (("threads", "all"), ("tf32", "off"))) for dtype in CPU_DTYPES]
        cases += _gpu_probes()
    for backend in sorted(names):
        for device in _devices(backend):
            cases += [Case("dispatch", "correct", backend, device, "float32", 1, (("mode", m),))
                      for m in ("loop", "latency")]
    return cases


def _cpu_probes() -> list[Case]:
    cases = [Case("peak_matmul", "correct", "numpy", "cpu", dtype, CPU_MATMUL_N,
                  (("threads", threads), ("tf32", "off")))
             for dtype in CPU_DTYPES for threads in ("all", "1")]
    return [*cases, Case("triad", "correct", "numpy", "cpu", "float64", CPU_STREAM_ELEMENTS)]


def _gpu_probes() -> list[Case]:
    cases = [Case("peak_matmul", "correct", "torch", "cuda:0", dtype, GPU_MATMUL_N,
                  (("threads", "all"), ("tf32", tf32)))
             for dtype in GPU_DTYPES
             for tf32 in (("off", "on") if dtype == "float32" else ("off",))]
    cases.append(Case("copy", "correct", "torch", "cuda:0", "float32", GPU_COPY_ELEMENTS))
    cases += [Case("transfer", "correct", "torch", "cuda:0", "float32", TRANSFER_ELEMENTS,
                   (("direction", d), ("memory", m)))
              for d in ("h2d", "d2h") for m in ("pageable", "pinned")]
    return cases


def _devices(backend: str) -> tuple[str, ...]:
    return {"numpy": ("cpu",), "cupy": ("cuda:0",)}.get(backend, ("cpu", "cuda:0"))


def read(measurements: Iterable[Measurement]) -> list[Ceiling]:
    """Ceilings from the probe measurements that finished."""
    out = []
    for m in measurements:
        if m.status is not Status.OK or m.summary is None:
            continue
        ceiling = _ceiling(m)
        if ceiling is not None:
            out.append(ceiling)
    return out


def _ceiling(m: Measurement) -> Ceiling | None:
    c, median = m.case, m.summary.median  # type: ignore[union-attr]
    key = c.key
    if c.workload == "peak_matmul":
        label = f"matmul {c.dtype}" + (f" tf32={c.param('tf32')}" if c.dtype == "float32"
                                       and c.device != "cpu" else "")
        if c.device == "cpu":
            label += f" threads={c.param('threads')}"
        return Ceiling(label, c.device, c.backend, m.counters["flops"] / median, "FLOP/s", key)
    if c.workload in ("copy", "triad"):
        return Ceiling(f"memory bandwidth ({c.workload})", c.device, c.backend,
                       m.counters["bytes_moved"] / median, "B/s", key)
    if c.workload == "transfer":
        return Ceiling(f"{c.param('direction')} {c.param('memory')}", c.device, c.backend,
                       m.counters["bytes_moved"] / median, "B/s", key)
    if c.workload == "dispatch":
        if c.param("mode") == "latency":  # what a caller waits: launch + synchronise
            wall = m.wall_summary.median if m.wall_summary else median
            return Ceiling("launch + sync latency", c.device, c.backend, wall, "s", key)
        return Ceiling("per-op dispatch cost", c.device, c.backend, median, "s", key)
    return None


def peak_for(case: Case, ceilings: Iterable[Ceiling], tf32: bool) -> Mapping[str, float]:
    """The ceilings that bound `case`: its device's matmul peak at its dtype and its
    memory bandwidth (empty where none was measured)."""
    kind = "cpu" if case.device == "cpu" else "gpu"
    found: dict[str, float] = {}
    for c in ceilings:
        if ("cpu" if c.device == "cpu" else "gpu") != kind:
            continue
        if c.name.startswith(f"matmul {case.dtype}") and (
                kind == "cpu" and c.name.endswith("threads=all")
                or kind == "gpu" and (case.dtype != "float32"
                                      or c.name.endswith(f"tf32={'on' if tf32 else 'off'}"))):
            found["flops"] = max(found.get("flops", 0.0), c.value)
        elif c.name.startswith("memory bandwidth"):
            found["bytes"] = max(found.get("bytes", 0.0), c.value)
    return found
