"""`take`: one case turned into a measurement, wherever it runs — a run's worker, an
observation's part timed alone, run-file's worker, or the caller's own process
(`gpuvs.measure`, `gpuvs.compare`, the magic, the fixture, explain's dispatch probe).

Each of those once built the same five arguments by hand — the clock, the case, the
parsed criterion, the budget, the standard watches — and each could drift from the
others. Here they are chosen once: the device's clock (`backends.clock_for`), the
criterion and the budget from the case's `Sampling` (the wire's; a workload that fixes
its own seconds, the calibration's, keeps them: `own_sampling`), the watches every case
is timed inside (`machine.sensors.standard`), the protocol's retry policy
(`measuring.protocol.measure_watched`), and what a case that raised is recorded as
(`execute.policy.failure`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace

from gpuvs import backends, workloads
from gpuvs.backends.base import Backend
from gpuvs.execute import policy
from gpuvs.execute.wire import Sampling
from gpuvs.machine import sensors
from gpuvs.measuring import criteria
from gpuvs.measuring.protocol import Clock, Prepared, measure_watched
from gpuvs.measuring.watch import Watch, Watches
from gpuvs.model import Case, Measurement

Hold = Callable[[], AbstractContextManager[object] | Iterator[None]]


@dataclass(frozen=True)
class Taken:
    """A case's measurement; the prepared case it measured (its `counters` and `parts`
    are the caller's to read), None when it raised; and whether the process that ran it
    must be replaced (a sticky device error)."""

    measurement: Measurement
    prepared: Prepared | None = None
    fatal: bool = False


def _nothing() -> None:
    return None


def take(case: Case, make: Callable[[], Prepared], sampling: Sampling, *,
         backend: Backend | None = None, clock: Clock | None = None,
         threads: float | None = None, hold: Hold | None = None,
         again: Callable[[], None] = _nothing,
         crashed: Callable[[BaseException], str] | None = None,
         raising: bool = False, also: Sequence[Watch] = ()) -> Taken:
    """Time `case` by the protocol, on inputs `make()` builds, inside the standard watches.

    `backend` runs the case: it times the device (unless `clock` is handed in, for a
    user's call whose data chose it), reads its peak device memory, and judges a failure.
    `threads` are the CPU threads the case asks for (contention is judged against them),
    `hold` a context around the timed calls (NumPy's BLAS held still), `again()` is told
    when a contended case is measured again, and `also` are watches beyond the standard
    ones (a benchmark's own reading of the sampling window). A case that raises is
    recorded by the case policy (`crashed(e)` words a crash, else the error's tail),
    unless `raising`: then the exception is the caller's (`gpuvs.measure`: the user's
    function raised)."""
    sampling = own_sampling(case, sampling)
    standard = sensors.standard(case.device, threads, hold, backend, sampling.power)
    try:
        chosen = clock or backends.clock_for(case.device, backend)
        m, prepared = measure_watched(
            make, case, chosen, criteria.parse(sampling.criterion), sampling.budget(),
            Watches([*standard.watches, *also]), again=again)
    except Exception as e:
        if raising or backend is None:
            raise
        failed, fatal = policy.failure(backend, case, e,
                                       crashed=crashed(e) if crashed else None)
        return Taken(failed, None, fatal)
    return Taken(m, prepared)


def own_sampling(case: Case, sampling: Sampling) -> Sampling:
    """`sampling`, with the seconds a workload samples whatever the run's budget where it
    fixes them (`Workload.sampling_s`: the calibration's probes, the same in every run,
    and never stretched to an energy counter's window: a probe's energy is no answer)."""
    if case.users_code:
        return sampling
    found = workloads.find(case.workload)
    fixed = found.sampling_s if found is not None else None
    return sampling if fixed is None else replace(sampling, budget_s=fixed,
                                                        min_sampling_s=0.0)
