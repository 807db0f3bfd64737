"""The child process: one backend, many cases, one JSON line out per case.

Started by the runner as `python -m gpuvs.execute.worker BACKEND DEVICE` in a fresh interpreter
(never forked after CUDA init). It first loads its framework and starts DEVICE
(`Backend.preload`), reads one line naming the kinds of case it will run and imports
what they need (`Workload.preload`), starts NVML, then says `{"ready": true}`: the
runner measures nothing while a worker starts, so a worker started ahead of its pass
never disturbs a case. Requests arrive as JSON lines on stdin; each answer is one JSON
line on the protocol channel, a private copy of stdout, while file descriptor 1 is
pointed at stderr so that anything a framework prints cannot corrupt the protocol.

Out-of-memory becomes data (`OOM`); an error that poisons the device (sticky CUDA
errors) is reported and the worker exits so the runner starts a fresh one.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from typing import Any, TextIO

from gpuvs import backends, workloads
from gpuvs.backends.base import Backend, host_memory_free
from gpuvs.errors import BackendUnavailable
from gpuvs.execute import policy
from gpuvs.machine import contention, telemetry
from gpuvs.measuring import criteria
from gpuvs.measuring.protocol import (
    Budget,
    Clock,
    Prepared,
    measure,
    measure_again_if_split,
    replay,
)
from gpuvs.model import Case, Caveat, Measurement, Status
from gpuvs.units import nbytes
from gpuvs.workloads.base import Workload, references

EXIT_FATAL = 3
# Calls up to this long are profiled (kernels, copies, kernel time) unless their
# workload's tables cite counted kernels: starting CUPTI costs seconds, and a longer call
# is not decided by its launches (its busy time comes from a graph replay).
PROFILE_MAX_S = 1e-3
# Calls up to this long are replayed as a CUDA graph to measure the GPU's busy time.
BUSY_GRAPH_MAX_S = 0.01
# Leave this share of free memory unused: allocators round up, and the OS needs some.
MEMORY_HEADROOM = 0.9


def run_case(backend: Backend, request: dict[str, Any]) -> tuple[Measurement, bool]:
    """Measure one case; returns the measurement and whether the worker must be replaced."""
    case = Case.from_dict(request["case"])
    skip = _why_not(backend, case)
    if skip is not None:
        return Measurement(case, *skip), False
    threads = case.param("threads", "all")  # a number limits the CPU threads
    t0 = time.perf_counter()
    with backend.limit_threads(int(threads)) if threads.isdigit() else nullcontext():
        m, fatal = _measured(backend, case, request)
    # What the case cost in all (inputs, reference, check, profile): for planning runs.
    return replace(m, counters={**m.counters, "case_s": time.perf_counter() - t0}), fatal


def _measured(backend: Backend, case: Case, request: dict[str, Any]
              ) -> tuple[Measurement, bool]:
    workload = workloads.get(case.workload)
    extra: dict[str, float] = {}
    modules = len(sys.modules)
    try:
        clock = backend.clock(case.device)
        if case.variant == "as_written":
            prepared = _prepare(workload, backend, case)
            m = replay(prepared, case, clock)
        else:
            checked = not request.get("samples_only")  # a later pass was checked before
            m, extra, prepared = _watched(lambda: _prepare(workload, backend, case, checked),
                                          backend, case, clock, request)
        extra = dict(prepared.counters) | extra  # filled while the calls ran
        # More calls, after the record was taken; a replay's counts are its correct twin's,
        # and a later pass's are its first pass's (`samples_only`).
        if (m.status is Status.OK and case.variant != "as_written"
                and not request.get("samples_only")):
            extra |= _parts_s(prepared, backend, case, clock, request)
            if workload.counts_kernels or _short(m, PROFILE_MAX_S):
                extra |= backend.profile(prepared.call, case.device)
            if _graph_worth_it(m, prepared):
                extra |= backend.busy_time(prepared.call, case.device)
    except BackendUnavailable as e:  # e.g. no way to flush this device's caches
        return Measurement(case, Status.SKIPPED, reason=str(e)), False
    except Exception as e:  # every failure becomes a recorded status, with its reason
        return policy.failure(backend, case, e)
    finally:
        prepared = None
        gc.collect()
        if len(sys.modules) > modules:  # see `main`: what a case imported stays too
            gc.freeze()
        backend.empty_cache(case.device)
    return _annotated(backend, workload, m, extra), False


def _parts_s(prepared: Prepared, backend: Backend, case: Case, clock: Clock,
             request: dict[str, Any]) -> dict[str, float]:
    """Each part of the call timed alone by the same protocol: `<name>_s`, its median."""
    out: dict[str, float] = {}
    budget = Budget(**request["budget"])
    for name, part in prepared.parts:
        with backend.quiet_numpy_blas():
            m = measure(Prepared(call=part, check=_unchecked), case, clock,
                        criteria.parse(request["criterion"])(),
                        replace(budget, seconds=budget.seconds / 2))
        if m.summary is not None:
            out[f"{name}_s"] = m.summary.median
    return out


def _prepare(workload: Workload, backend: Backend, case: Case,
             checked: bool = True) -> Prepared:
    """Fresh inputs for the case (in-place work such as `x *= 5` changes them), and its
    float64 reference unless the case was `checked` already (a later pass)."""
    with references(checked):
        prepared = workload.prepare(backend, case)
    if case.param("cache") == "cold":
        prepared = replace(prepared, flush=backend.cache_flusher(case.device),
                           single_call=True)
    return prepared


def _watched(make: Callable[[], Prepared], backend: Backend, case: Case, clock: Clock,
             request: dict[str, Any]) -> tuple[Measurement, dict[str, float], Prepared]:
    """The protocol (measured again with more budget if its samples split), with the
    machine watched while it runs: the GPU's clocks and throttling (telemetry, whose
    sensors also end the warm-up and say when a power limit governs the clocks), and
    other processes' CPU time and GPU use (contention). The prepared case measured last
    is returned with the measurement."""
    watch = telemetry.Watch(case.device)
    before = contention.snapshot()
    m, prepared = measure_again_if_split(
        make, case, clock, criteria.parse(request["criterion"]), Budget(**request["budget"]),
        watch if watch.active else None, backend.quiet_numpy_blas)
    after = contention.snapshot()
    demand = (backend.threads() or 1) if case.device == "cpu" else 1  # cores it asked for
    share = contention.others_share(before, after, demand)
    watch.finish()
    found = list(m.caveats)
    if watch.throttled():
        found.append(Caveat.THROTTLED)
    if contention.contended(before, after, demand) or watch.other_processes:
        found.append(Caveat.CONTENDED)
    extra = watch.counters() | {"others_cpu_share": share} | (
        {"gpu_other_processes": float(len(watch.other_processes))}
        if watch.other_processes else {})
    return replace(m, caveats=tuple(found)), extra, prepared


def _graph_worth_it(m: Measurement, prepared: Prepared) -> bool:
    """A graph replay tells launch cost from work for short calls; a call this long is
    busy nearly all of it, and capturing it would cost another call. Cold cases flush
    between calls, which a replay would not."""
    return _short(m, BUSY_GRAPH_MAX_S) and prepared.flush is None


def _short(m: Measurement, limit_s: float) -> bool:
    return m.summary is not None and m.summary.median <= limit_s


def _unchecked(out: object) -> None:
    """Parts are pieces of a call whose whole output was checked."""


def _annotated(backend: Backend, workload: Workload, m: Measurement,
               extra: dict[str, float]) -> Measurement:
    """Counters (the workload's, counted kernels, parts, threads) and fairness caveats."""
    case = m.case
    counters = dict(m.counters) | workload.counters(case) | extra
    if extra.get("kernels"):  # counted beats assumed
        counters["launches"] = extra["kernels"]
    if case.device == "cpu" and (threads := backend.threads()) is not None:
        counters["threads"] = float(threads)
    if case.device == "cpu":  # which cache, if any, holds the case's data
        counters["working_set_bytes"] = float(
            workload.memory_needed(case.size, case.params, case.dtype))
    caveats = m.caveats
    if workload.matrix_units and case.dtype == "float32" and backend.uses_tf32(case.device):
        caveats += (Caveat.TF32_ON,)
    return replace(m, counters=counters, caveats=caveats,
                   workload_version=workload.version)


def _why_not(backend: Backend, case: Case) -> tuple[Status, str] | None:
    """A status and reason when the case cannot run here, checked before allocating."""
    reason = backend.unavailable_reason(case.device)
    if reason is not None:
        return Status.UNAVAILABLE, reason
    workload = workloads.get(case.workload)
    need = workload.memory_needed(case.size, case.params, case.dtype)
    host_need = workload.host_memory_needed(case.size, case.params, case.dtype)
    host_free = host_memory_free()
    if case.device == "cpu":
        need, free = need + host_need, host_free
    else:
        free = backend.memory_free(case.device)
        if host_need > MEMORY_HEADROOM * host_free:
            return Status.SKIPPED, (f"needs {nbytes(host_need)} of host memory, "
                                    f"{nbytes(host_free)} free")
    if need > MEMORY_HEADROOM * free:
        return Status.SKIPPED, f"needs {nbytes(need)}, {nbytes(free)} free on {case.device}"
    return None


def _preload(backend: Backend, line: str) -> None:
    """The runner's first line: one case of each kind this worker will run, whose
    workloads import what their preparation needs now (`Workload.preload`)."""
    for d in json.loads(line or "{}").get("preload", []):
        with contextlib.suppress(Exception):  # the case meets it again and records it
            case = Case.from_dict(d)
            workloads.get(case.workload).preload(backend, case)


def serve(backend: Backend, requests: TextIO, channel: TextIO) -> int:
    for line in requests:
        m, fatal = run_case(backend, json.loads(line))
        channel.write(json.dumps({"measurement": m.to_dict(), "fatal": fatal}) + "\n")
        channel.flush()
        if fatal:
            return EXIT_FATAL
    return 0


def main(argv: list[str]) -> int:
    # Ctrl-C is the runner's to handle: it records the run as interrupted and ends us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    channel = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # framework chatter on stdout must not reach the protocol channel
    sys.stdout = sys.stderr
    backend = backends.get(argv[0])
    backend.prepare_worker()
    with contextlib.suppress(Exception):  # the first case meets it again and records it
        backend.preload(argv[1])
    _preload(backend, sys.stdin.readline())
    telemetry.read(argv[1])  # NVML started and the device's handle found: seconds, once
    # The framework's own objects (about 166 000 for torch) live as long as the process:
    # frozen, they are left out of every collection. The collection after each case then
    # walks only what the cases made (0.1 ms, not 110 ms, for torch on a 2-core CPU), and
    # one that falls inside a timed loop is as short. A case that imports (seed 000's
    # inputs come from torch's generator, in a NumPy worker too) freezes what it imported.
    gc.freeze()
    channel.write(json.dumps({"ready": True}) + "\n")
    channel.flush()
    return serve(backend, sys.stdin, channel)


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stderr.flush()
    # Every answer is on the channel: skip the interpreter's teardown (a torch worker with
    # a CUDA context took about 0.7 s to wind down, which the runner waits for before it
    # measures again and before the command ends).
    os._exit(code)
