"""The calibration every measuring run carries: one short probe per bound a case's time can
follow, measured first, in the run's own workers, so that each probe runs in the same warm
processes as the cases it calibrates (a launch-bound loop's speed is decided per process:
docs/accuracy.md).

The bounds are `model.CALIBRATION_BOUNDS`: the host issuing one op (`launch`: a
one-element `x * 1`, on every backend and device of the run), the CPU's arithmetic (`cpu`:
a 256² float32 product, on one thread and on all), the host's memory (`host_memory`: a
copy of 64 MiB, past most caches), the device's arithmetic and memory (`device_compute`:
a 2048² float32 product without TF32; `device_memory`: a copy of 128 MiB, past any L2),
and the host↔device copies (`transfer`: 64 MiB to the device and back, through the
backend's own copy path, as an end-to-end call copies, into fresh host pages every call:
see TRANSFER_ELEMENTS). The launch and the products run
a ceiling probe's code (`workloads.probes`) at a small fixed size, the copies the
`copy` probe's call on inputs made and checked in milliseconds; each samples SAMPLING_S
in each process, whatever the run's budget: the same probe in every run, a few seconds in
all.
`analysis.calibration` reads them; `gpuvs compare` and `gpuvs check` set each case against
its bound's probe in the two runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuvs import backends
from gpuvs.backends.base import Backend
from gpuvs.measuring.protocol import Prepared
from gpuvs.model import CALIBRATION, CALIBRATION_BOUNDS, Case, Params, on_gpu
from gpuvs.units import nbytes
from gpuvs.workloads import get, register
from gpuvs.workloads.base import ITEMSIZE, Workload

# Seconds each probe samples in each process it runs in: thousands of one-element ops,
# hundreds of small products, a few copies of 10 ms; a run's dozen probes, each in two to
# five processes, then cost a few seconds (docs/across-machines.md measures them).
SAMPLING_S = 0.05
DTYPE = "float32"
# Which backend runs a device's arithmetic, memory and copy probes: the first of these
# among the backends the run measures on that device.
PREFERRED = ("numpy", "torch", "cupy", "jax")
CPU_BOUNDS = ("cpu", "host_memory")
DEVICE_BOUNDS = ("device_compute", "device_memory", "transfer")
# 64 MiB: over glibc's largest threshold for serving a block from its heap (32 MiB), so
# the copy back lands in fresh pages every call, in every process. At 16 MiB whether it
# did depended on what the process had freed before: on two H200 VMs (2026-11-28) the
# probe's processes fell in two groups 4× apart (2.4–4.8 ms and 11–17 ms) and its B ÷ A
# explained nothing (docs/accuracy.md).
TRANSFER_ELEMENTS = 1 << 24
COPY_VALUE = 2.0


@dataclass(frozen=True)
class _Ran:
    """The ceiling probe a bound runs: its workload, at this size and these params."""

    workload: str
    size: int
    params: Params


_RUNS = {
    "launch": _Ran("dispatch", 1, (("mode", "loop"),)),
    "cpu": _Ran("peak_matmul", 256, (("tf32", "off"),)),
    "device_compute": _Ran("peak_matmul", 2048, (("threads", "all"), ("tf32", "off"))),
}
# The copies' elements. The ceiling probe `copy` fills its source at random and checks
# in float64, which took 1.5 s for 2^24 elements on the 2-core box: here the source is
# one value, which a check reads in milliseconds.
COPY_ELEMENTS = {"host_memory": 1 << 24, "device_memory": 1 << 25,
                 "transfer": TRANSFER_ELEMENTS}


def size_of(bound: str) -> int:
    """The fixed size of `bound`'s probe: elements, or a product's n."""
    return _RUNS[bound].size if bound in _RUNS else COPY_ELEMENTS[bound]


def params_of(bound: str, threads: str = "") -> Params:
    """A probe's params: its bound, and for the `cpu` bound its threads ("1" or "all")."""
    return (("bound", bound), *((("threads", threads),) if threads else ()))


def probe(bound: str, backend: str, device: str, threads: str = "") -> Case:
    """The calibration case of `bound` on `backend` and `device`."""
    return Case(CALIBRATION, "correct", backend, device, DTYPE, size_of(bound),
                params_of(bound, threads))


def probe_cases(plan: Iterable[Case]) -> list[Case]:
    """The probes that calibrate `plan`: the launch probe on each backend and device it
    measures on; where it measures on the CPU, the CPU's product on one thread and on all
    and the host's copy; on each GPU it measures on, the device's product, copy and round
    trip. A device's probes run on the first of PREFERRED among its backends, so that no
    worker starts for the calibration alone. A backend that surely cannot run here (not
    installed, no GPU) has none: its cases say so already; nor has a plug-in's, whose
    clock and arrays the probes were never tried on: its cases are judged on their own."""
    return probes_for((c.backend, c.device) for c in plan if not c.calibrates)


def probes_for(on: Iterable[tuple[str, str]]) -> list[Case]:
    """The probes that calibrate cases on these (backend, device) pairs (`probe_cases`):
    run-file's, whose cases are named only once the user's file has loaded."""
    pairs = sorted({(b, d) for b, d in on
                    if b in PREFERRED and not backends.get(b).absent(d)})
    cases = [probe("launch", b, d) for b, d in pairs]
    for device in sorted({d for _, d in pairs}, key=lambda d: (on_gpu(d), d)):
        backend = next(b for b in PREFERRED if (b, device) in pairs)
        if device == "cpu":
            cases += [probe("cpu", backend, device, t) for t in ("1", "all")]
            cases.append(probe("host_memory", backend, device))
        else:
            cases += [probe(b, backend, device) for b in DEVICE_BOUNDS]
    return cases


def what(case: Case) -> str:
    """What a probe runs, in words: "x * 1 on one element", "a 256² float32 product",
    "a copy of 64 MiB", "64 MiB to the device and back"."""
    bound, data = case.param("bound"), nbytes(case.size * ITEMSIZE[case.dtype])
    if bound == "launch":
        return "x * 1 on one element, per op"
    if bound in ("cpu", "device_compute"):
        tf32 = ", no TF32" if bound == "device_compute" else ""
        return f"a {case.size}² {case.dtype} product{tf32}"
    return f"{data} to the device and back" if bound == "transfer" else f"a copy of {data}"


@register
class Calibration(Workload):
    name = CALIBRATION
    description = "the run's calibration: one short fixed probe per bound, measured first"
    in_default_suite = False
    sampling_s = SAMPLING_S

    def param_sets(self) -> tuple[Params, ...]:
        return tuple(params_of(b, t) for b in CALIBRATION_BOUNDS
                     for t in (("1", "all") if b == "cpu" else ("",)))

    def default_sizes(self, params: Params) -> tuple[int, ...]:
        return (size_of(dict(params)["bound"]),)

    def data_modes(self, params: Params) -> tuple[str, ...]:
        return ("resident",)

    def applies(self, case: Case) -> bool:
        bound = case.param("bound")
        return (bound == "launch" or (bound in CPU_BOUNDS) == (case.device == "cpu")
                ) and case.size == size_of(bound)

    def flops(self, size: int, params: Params) -> float | None:
        ran = _ran(dict(params)["bound"], params)
        return get(ran.workload).flops(ran.size, ran.params) if ran else None

    def bytes_moved(self, size: int, params: Params, dtype: str) -> float | None:
        """A copy's bytes read and written (the round trip's: in, and back)."""
        ran = _ran(dict(params)["bound"], params)
        if ran is None:
            return 2.0 * size * ITEMSIZE[dtype]
        return get(ran.workload).bytes_moved(ran.size, ran.params, dtype)

    def memory_needed(self, size: int, params: Params, dtype: str) -> int:
        ran = _ran(dict(params)["bound"], params)
        if ran is None:
            return 2 * size * ITEMSIZE[dtype]
        return get(ran.workload).memory_needed(ran.size, ran.params, dtype)

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        bound = case.param("bound")
        ran = _ran(bound, case.params)
        if ran is not None:
            return get(ran.workload).prepare(backend, Case(
                ran.workload, "correct", case.backend, case.device, case.dtype, ran.size,
                ran.params))
        return _round_trip(backend, case) if bound == "transfer" else _copy(backend, case)

    @property
    def version(self) -> str:
        """Its own source's hash and that of each probe it runs: a probe changed is
        another calibration, which `compare` does not set against this one."""
        ran = sorted({r.workload for r in _RUNS.values()})
        parts = [super().version, *(get(w).version for w in ran)]
        return hashlib.sha256(" ".join(parts).encode()).hexdigest()[:12]


def _ran(bound: str, params: Params) -> _Ran | None:
    """The ceiling probe `bound` runs, with the case's threads; None for the round trip."""
    ran = _RUNS.get(bound)
    threads = dict(params).get("threads")
    if ran is None or bound != "cpu" or threads is None:
        return ran
    return _Ran(ran.workload, ran.size, (("threads", threads), *ran.params))


def _copy(backend: Backend, case: Case) -> Prepared:
    """`dst[...] = src` on the case's device, as the ceiling probe `copy` does, from a
    source of one value (see COPY_ELEMENTS). JAX's arrays cannot be written into: there
    the copy is a new array (`src.copy()`), which reads and writes the same bytes."""
    src = backend.from_numpy(np.full(case.size, COPY_VALUE, dtype=case.dtype), case.device,
                             case.dtype)
    dst = backend.ones((case.size,), case.dtype, case.device)

    def copy() -> Any:
        if backend.name == "jax":
            return src.copy()
        dst[...] = src
        return dst

    def check(out: object) -> None:
        if not np.all(backend.to_numpy(out) == COPY_VALUE):
            from gpuvs.errors import WrongResult
            raise WrongResult(f"the copy did not give {COPY_VALUE:g} everywhere")

    return Prepared(call=copy, check=check)


def _round_trip(backend: Backend, case: Case) -> Prepared:
    """The array to the device and back through the backend's own copy path: a fresh
    device array each call, so that no backend hands back a host copy it kept."""
    host = np.arange(case.size, dtype=case.dtype)

    def round_trip() -> Any:
        return backend.to_numpy(backend.from_numpy(host, case.device, case.dtype))

    def check(out: object) -> None:
        if not np.array_equal(np.asarray(out), host):
            from gpuvs.errors import WrongResult
            raise WrongResult("the round trip through the device changed the array")

    return Prepared(call=round_trip, check=check)
