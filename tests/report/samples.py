"""Synthetic runs whose answers are known: a CPU series and a GPU series (resident and
end-to-end) with exact cost models, so the crossovers fall at known sizes. Also what the
tests share about the real run of conftest.py."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpuvs import workloads
from gpuvs.analysis.ceilings import probe_cases
from gpuvs.model import Case, Ceiling, Environment, Measurement, Run, Status
from gpuvs.store.export import load_json

# Real runs' exports: a matmul sweep and `gpuvs seeds --quick` on a 2-core CPU, the
# collectives and DDP scaling of two H200s.
GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"

SIZES = (1_000, 10_000, 100_000, 1_000_000)
GPU = "cuda:0"
# seconds per call: t0 + n × per_element. The resident GPU series overtakes the CPU
# between 1e4 and 1e5, the end-to-end one between 1e5 and 1e6.
COSTS = {
    ("numpy", "cpu", "resident"): (1e-6, 1e-9),
    ("torch", GPU, "resident"): (2e-5, 1e-11),
    ("torch", GPU, "end_to_end"): (3e-5, 8e-10),
}
CEILINGS = (
    Ceiling("matmul float32 threads=all", "cpu", "numpy", 1e11, "FLOP/s", "probe"),
    Ceiling("memory bandwidth (triad)", "cpu", "numpy", 2e10, "B/s", "probe"),
    Ceiling("matmul float32 tf32=off", GPU, "torch", 5e13, "FLOP/s", "probe"),
    Ceiling("memory bandwidth (copy)", GPU, "torch", 2e12, "B/s", "probe"),
)


def measurement(backend: str, device: str, size: int, data: str = "resident",
                workload: str = "matmul", **kw: object) -> Measurement:
    params = (("shape", "square"),) + ((("data", data),) if device != "cpu" else ())
    t0, per = COSTS.get((backend, device, data), (1e-6, 1e-9))
    t = t0 + size * per
    samples = tuple(t * (1 + 0.001 * k) for k in range(-5, 6))
    counters = {"flops": 2.0 * size, "bytes_moved": 8.0 * size, "threads": 2.0}
    return Measurement(Case(workload, "correct", backend, device, "float32", size, params),
                       Status.OK, samples=samples, loops=10, first_call_s=3 * t, warmups=4,
                       timer="host", counters=counters, **kw)  # type: ignore[arg-type]


def gpu_sweep() -> list[Measurement]:
    """Every series at every size, plus an out-of-memory case and an unavailable backend."""
    ms = [measurement(b, d, n, data) for n in SIZES for (b, d, data) in COSTS]
    ms.append(Measurement(Case("matmul", "correct", "torch", GPU, "float32", 10_000_000,
                               (("shape", "square"), ("data", "resident"))), Status.OOM,
                          reason="needs 12 GiB, 8 GiB free"))
    ms.append(Measurement(Case("matmul", "correct", "cupy", GPU, "float32", 1_000,
                               (("shape", "square"), ("data", "resident"))),
                          Status.UNAVAILABLE, reason="cupy is not installed"))
    return ms


def run(kind: str | None = None, run_id: str = "20260101-000000-abcd") -> Run:
    config: dict[str, object] = {"workloads": ["matmul"], "budget_s": 0.5, "timeout_s": 60.0,
                                 "criterion": "median-ci", "cold": False}
    if kind:
        config["kind"] = kind
    facts = {"cpu_model": "Test CPU", "cores_physical": 2, "cores_logical": 4,
             "memory_total_gib": 16, "memory_available": 8 << 30, "python": "3.11.7",
             "implementation": "CPython", "os": "Linux 6", "machine": "x86_64",
             "libraries": {"numpy": "2.0", "torch": "2.5"},
             "gpus": [{"index": 0, "name": "Test GPU", "memory_total": 80 << 30}],
             "driver": "555.1", "cuda_driver": "12.5"}
    return Run(run_id, "2026-01-01T00:00:00+0000", config, Environment("f1ng3rpr1nt", facts),
               "finished", "2026-01-01T00:05:00+0000")


def golden(name: str) -> list[Measurement]:
    """The measurements of a real run's export in tests/data/golden."""
    _, ms, _ = load_json(GOLDEN / name)
    return ms


def ceilings_probes() -> list[Measurement]:
    """A ceilings run's probes on the CPU and a GPU, each with the counters its workload
    gives it and a time near a real machine's."""
    out = []
    for n, case in enumerate(probe_cases(["numpy", "torch"])):
        w = workloads.get(case.workload)
        counters = {"flops": w.flops(case.size, case.params) or 0.0,
                    "bytes_moved": w.bytes_moved(case.size, case.params, case.dtype) or 0.0}
        seconds = 1e-5 * (1 + n % 7) * (1 + case.size / 1e6)
        out.append(Measurement(case, Status.OK, samples=(seconds,) * 9,
                               counters={k: v for k, v in counters.items() if v}))
    return out


def calibration(factor: float = 1.0) -> list[Measurement]:
    """The calibration a run of numpy on the CPU and torch on cuda:0 carries, each probe
    with the counters its workload gives it and a time near a real machine's, `factor`
    times it."""
    from gpuvs.workloads.calibration import probe
    cases = [probe("launch", "numpy", "cpu"), probe("launch", "torch", GPU),
             probe("cpu", "numpy", "cpu", "1"), probe("cpu", "numpy", "cpu", "all"),
             probe("host_memory", "numpy", "cpu"), probe("device_compute", "torch", GPU),
             probe("device_memory", "torch", GPU), probe("transfer", "torch", GPU)]
    seconds = (1e-6, 1.5e-5, 5e-4, 3e-4, 1e-2, 3e-4, 9e-5, 3e-3)
    calibrating = workloads.get("calibration")
    return [Measurement(case, Status.OK, samples=tuple(factor * t * (1 + 0.001 * k)
                                                       for k in range(-5, 6)),
                        counters=calibrating.counters(case), workload_version="v1")
            for case, t in zip(cases, seconds, strict=True)]


def gpu_twins(cpu: list[Measurement]) -> list[Case]:
    """The GPU cases (torch on cuda:0, resident and end-to-end) of NumPy's CPU cases: what
    `gpuvs predict` predicts beside them."""
    return [Case(m.case.workload, m.case.variant, "torch", GPU, m.case.dtype, m.case.size,
                 tuple(sorted((*m.case.params, ("data", data)))))
            for m in cpu if m.case.backend == "numpy" for data in ("resident", "end_to_end")]


@dataclass(frozen=True)
class RealRun:
    db: str
    run_id: str
    report: Path     # written by `gpuvs run --report`
    json: Path       # written by `gpuvs run --json`
