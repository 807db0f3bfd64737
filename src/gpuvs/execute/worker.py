"""The child process: one backend, many cases, one event out per case.

Started by the runner as `python -m gpuvs.execute.worker BACKEND DEVICE` in a fresh
interpreter (never forked after CUDA init). It first loads its framework and starts DEVICE
(`Backend.preload`), reads one line naming the kinds of case it will run and imports
what they need (`Workload.preload`), starts NVML, then says it is `Ready`: the
runner measures nothing while a worker starts, so a worker started ahead of its pass
never disturbs a case. Requests arrive on stdin and events go out on the protocol
channel, a private copy of stdout, one `execute.wire` message a line, while file
descriptor 1 is pointed at stderr so that anything a framework prints cannot corrupt
the protocol.

A worker has two phases. First it **times** cases (`Take`), each through the one
measuring path (`execute.take`) inside the machine's watches. Then, once the
runner has no more cases for it to time, it **observes** them (`Observe`): each
case's parts timed alone, then the profiler's kernel counts and a CUDA graph's busy time.
A profiler session made a launch-bound loop timed after it in the same process about
twice as slow on an H100 (docs/accuracy.md, "Observation apart from timing"), so nothing
that observes runs before the last timed sample; once it has observed, the worker refuses
to time (`measuring.watch.ensure_unobserved`).

Out-of-memory becomes data (`OOM`); an error that poisons the device (sticky CUDA
errors) is reported and the worker exits so the runner starts a fresh one.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TextIO

from gpuvs import backends, workloads
from gpuvs.backends.base import Backend, host_memory_free
from gpuvs.execute import policy
from gpuvs.execute.observe import observe
from gpuvs.execute.take import take
from gpuvs.execute.wire import (
    Again,
    Measured,
    Observe,
    Observed,
    Preload,
    Ready,
    Take,
    decode,
    encode,
)
from gpuvs.machine import contention, memory, telemetry
from gpuvs.measuring.protocol import Prepared, measure_as_written
from gpuvs.model import Case, Caveat, Measurement, Status
from gpuvs.units import nbytes
from gpuvs.workloads.base import Workload, prepared_case, threads_limited

EXIT_FATAL = 3
# Leave this share of free memory unused: allocators round up, and the OS needs some.
MEMORY_HEADROOM = 0.9


def run_case(backend: Backend, request: Take,
             again: Callable[[], None] = lambda: None) -> tuple[Measurement, bool]:
    """Time one case; returns the measurement and whether the worker must be replaced.
    `again()` is told when a contended case is measured again (the parent's clock on the
    case starts again)."""
    case = request.case
    skip = _why_not(backend, case, request.peaks)
    if skip is not None:
        return Measurement(case, *skip), False
    t0 = time.perf_counter()
    with threads_limited(backend, case):
        m, fatal = _measured(backend, request, again)
    # What the case cost in all (inputs, reference, check), without a pause for
    # contention: for planning runs, and whether a second pass can afford it.
    took = time.perf_counter() - t0 - m.counters.get("paused_s", 0.0)
    return replace(m, counters={**m.counters, "case_s": took}), fatal


def _measured(backend: Backend, request: Take, again: Callable[[], None]
              ) -> tuple[Measurement, bool]:
    case = request.case
    workload = workloads.get(case.workload)
    modules = len(sys.modules)
    prepared: Prepared | None = None
    try:
        if case.variant == "as_written":
            prepared = prepared_case(workload, backend, case)
            m = measure_as_written(prepared, case, backend.clock(case.device))
        else:
            checked = not request.samples_only  # a later pass was checked before
            taken = take(case, lambda: prepared_case(workload, backend, case, checked),
                         request.sampling, backend=backend,
                         threads=backend.threads() if case.device == "cpu" else None,
                         hold=backend.quiet_numpy_blas, again=again)
            if taken.prepared is None:  # it raised: recorded by the case policy
                return taken.measurement, taken.fatal
            m, prepared = taken.measurement, taken.prepared
        extra = dict(prepared.counters)  # filled while the calls ran
    except Exception as e:  # an as_written replay's failure, by the same case policy
        return policy.failure(backend, case, e)
    finally:
        prepared = None
        gc.collect()
        if len(sys.modules) > modules:  # see `main`: what a case imported stays too
            gc.freeze()
        backend.empty_cache(case.device)
    return _annotated(backend, workload, m, extra), False


def _annotated(backend: Backend, workload: Workload, m: Measurement,
               extra: dict[str, float]) -> Measurement:
    """Counters (the workload's, counted kernels, parts, threads) and fairness caveats."""
    case = m.case
    counters = dict(m.counters) | workload.counters(case) | extra
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


def _why_not(backend: Backend, case: Case, peaks: Sequence[tuple[int, float]] = ()
             ) -> tuple[Status, str] | None:
    """A status and reason when the case cannot run here, checked before allocating:
    against the workload's estimate and, where the series' smaller sizes were measured,
    against the slope of their peaks (`memory.guarded_need`), which the refusal names."""
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
    checked, how = memory.guarded_need(need, [(int(s), p) for s, p in peaks], case.size)
    if checked > MEMORY_HEADROOM * free:
        return Status.SKIPPED, (f"needs {nbytes(checked)}, {nbytes(free)} free on "
                                f"{case.device}{how}")
    return None


def _preload(backend: Backend, line: str) -> None:
    """The runner's first line: one case of each kind this worker will run, whose
    workloads import what their preparation needs now (`Workload.preload`)."""
    with contextlib.suppress(ValueError):  # no preload: the cases import as they come
        first = decode(line)
        for case in first.cases if isinstance(first, Preload) else ():
            with contextlib.suppress(Exception):  # the case meets it again and records it
                workloads.get(case.workload).preload(backend, case)


def serve(backend: Backend, requests: TextIO, channel: TextIO) -> int:
    def say(event: Ready | Again | Measured | Observed) -> None:
        channel.write(encode(event) + "\n")
        channel.flush()

    for line in requests:
        request = decode(line)
        if isinstance(request, Observe):
            say(Observed(observe(backend, request)))
        elif isinstance(request, Take):
            m, fatal = run_case(backend, request, lambda: say(Again()))
            if not fatal:  # the next case, in another process, starts on a quiet machine
                contention.quiet()
            say(Measured(m, fatal))
            if fatal:
                return EXIT_FATAL
        else:
            raise ValueError(f"a worker takes cases and observations, not {request.kind}")
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
    channel.write(encode(Ready()) + "\n")
    channel.flush()
    return serve(backend, sys.stdin, channel)


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stderr.flush()
    # Every answer is on the channel: skip the interpreter's teardown (a torch worker with
    # a CUDA context took about 0.7 s to wind down, which the runner waits for before it
    # measures again and before the command ends).
    os._exit(code)
