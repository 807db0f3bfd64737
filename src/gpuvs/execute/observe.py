"""Observations of timed cases, made apart from timing.

A profiler session, a CUDA graph's capture and replay, and the pieces of a call timed
alone all run the work again under something else's eye, and the first two change the
speed of the calls timed after them in the same process: on an H100 a launch-bound loop
ran about twice as slow after one profiler session (docs/accuracy.md, "Observation apart
from timing"). So a worker observes only after its last timed case (the runner's
`_observe`), parts first — they are timed themselves — then profiles and graph replays;
from then on it refuses to time (`measuring.watch.ensure_unobserved`).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Mapping
from dataclasses import replace

from gpuvs import workloads
from gpuvs.backends.base import Backend
from gpuvs.execute.take import take
from gpuvs.execute.wire import Observe
from gpuvs.measuring.protocol import Prepared
from gpuvs.measuring.watch import observing
from gpuvs.model import Case
from gpuvs.workloads.base import prepared_case, threads_limited

# Calls up to this long are profiled (kernels, copies, kernel time) unless their
# workload's tables cite counted kernels: starting CUPTI costs seconds, and a longer call
# is not decided by its launches (its busy time comes from a graph replay).
PROFILE_MAX_S = 1e-3
# Calls up to this long are replayed as a CUDA graph to measure the GPU's busy time.
BUSY_GRAPH_MAX_S = 0.01

def observations(backend: Backend, case: Case, median_s: float) -> tuple[str, ...]:
    """What is worth observing of a timed case (`parts`, `profile`, `graph`): its parts
    timed alone where the workload has them; on a device whose profiler gpuvs reads,
    kernel counts for a short call (or any call of a workload whose tables cite them),
    and a graph replay's busy time for a call short enough that launches may decide it."""
    workload = workloads.get(case.workload)
    found: tuple[str, ...] = ("parts",) if workload.has_parts(case) else ()
    if case.variant == "as_written" or not backend.observes(case.device):
        return found
    if workload.counts_kernels or median_s <= PROFILE_MAX_S:
        found += ("profile",)
    if median_s <= BUSY_GRAPH_MAX_S and case.param("cache") != "cold":
        found += ("graph",)
    return found


def observe(backend: Backend, request: Observe) -> dict[str, float]:
    """One observation of one timed case (its case, and which observation), after every
    timed sample this worker will take: the parts first (they are timed, so they come
    before anything that marks the process observed), then the profile and the graph
    replay. A failed observation gives no counters, never a status: the case's own
    measurement stands."""
    case, what = request.case, request.what
    workload = workloads.get(case.workload)
    prepared: Prepared | None = None
    try:
        with threads_limited(backend, case):
            prepared = prepared_case(workload, backend, case, checked=False)
            if what == "parts":
                return _parts_s(prepared, backend, case, request)
            with observing(f"the {what} of {case.key}"):
                if what == "profile":
                    return backend.profile(prepared.call, case.device)
                return backend.busy_time(prepared.call, case.device)
    except Exception:  # an observation is optional: the case keeps its measurement
        return {}
    finally:
        prepared = None
        gc.collect()
        backend.empty_cache(case.device)


def _parts_s(prepared: Prepared, backend: Backend, case: Case, request: Observe
             ) -> dict[str, float]:
    """Each part of the call timed alone by the same path, with half the case's budget:
    `<name>_s`, its median."""
    out: dict[str, float] = {}
    half = replace(request.sampling, budget_s=request.sampling.budget_s / 2)
    for name, part in prepared.parts:
        taken = take(case, _constant(Prepared(call=part, check=_unchecked)), half,
                     backend=backend, hold=backend.quiet_numpy_blas, raising=True)
        if taken.measurement.summary is not None:
            out[f"{name}_s"] = taken.measurement.summary.median
    return out


def _constant(prepared: Prepared) -> Callable[[], Prepared]:
    return lambda: prepared


def _unchecked(out: object) -> None:
    """Parts are pieces of a call whose whole output was checked."""


def as_counters(seen: Mapping[str, float]) -> dict[str, float]:
    """What an observation saw of a case (its kernels, copies, the GPU's busy time, its
    parts), as the counters joined to its record: the kernels counted are its launches
    (counted beats assumed), so that the roofline and `check` can tell a call whose
    launches set its time from one whose device work does (`analysis.calibration`)."""
    out = dict(seen)
    if out.get("kernels"):
        out["launches"] = out["kernels"]
    return out
