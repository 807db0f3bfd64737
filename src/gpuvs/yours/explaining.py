"""The numbers an explanation of your comparison needs, measured where they change
nothing that is timed: the per-op dispatch costs (the `dispatch` probe) and, in run-file's
worker once its last case is timed, the kernels one call launches (the profiler).

`gpuvs.compare` runs in your own process, which gpuvs never observes: a profiler session
made a launch-bound loop timed after it in the same process about twice as slow on an H100
(docs/accuracy.md, "Observation apart from timing"). So
`Comparison.explain()` measures the dispatch costs in a worker process of their own and
counts no kernels; `gpuvs run-file`'s worker, whose cases are all timed by then, measures
both in its own process (the probe first: it is timed too).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from gpuvs import backends
from gpuvs.analysis import ceilings as ceiling_probes
from gpuvs.analysis.explain import Explanation, explain
from gpuvs.analysis.speedup import RESIDENT, data_of
from gpuvs.config import RunConfig
from gpuvs.execute.take import take
from gpuvs.execute.wire import Sampling
from gpuvs.measuring.watch import observing
from gpuvs.model import Case, Ceiling, Measurement, Status
from gpuvs.workloads.base import prepared_case

DISPATCH_BUDGET_S = 0.2
# A call this long is not profiled again: its launches cannot decide its time.
PROFILE_MAX_S = 10.0

FreshCall = Callable[[Case], Callable[[], object]]


def dispatch_pairs(ms: Iterable[Measurement]) -> set[tuple[str, str]]:
    """(backend, device) of each finished GPU case, and of the CPU it is contrasted with."""
    pairs = set()
    for m in ms:
        if m.case.device != "cpu" and m.status is Status.OK:
            pairs.add((m.case.backend, m.case.device))
            pairs.add(("numpy" if m.case.backend == "cupy" else m.case.backend, "cpu"))
    return pairs


def explained_apart(ms: Sequence[Measurement]) -> Explanation:
    """For your own process: dispatch costs measured in worker processes, no kernels."""
    from gpuvs.execute.runner import Kept, execute

    kept = Kept()
    cases = ceiling_probes.dispatch_probes(dispatch_pairs(ms))
    if cases:
        execute(kept, cases, RunConfig(budget_s=DISPATCH_BUDGET_S, passes=1).validate())
    return explain(ms, ceiling_probes.read(kept.measurements), None)


def observed_here(ms: Sequence[Measurement], fresh_call: FreshCall
                  ) -> tuple[tuple[Ceiling, ...], dict[str, dict[str, float]]]:
    """For run-file's worker once every case is timed: what only the user's process can
    observe to explain the GPU cases — the dispatch probes timed here first, then each
    finished resident GPU case's call profiled (`fresh_call(case)`). The parent words
    the explanation (`explain`) over every process's samples."""
    found: list[Ceiling] = []
    for backend, device in sorted(dispatch_pairs(ms)):
        found += _dispatch_here(backend, device)
    kernels: dict[str, dict[str, float]] = {}
    for m in ms:
        if (m.case.device == "cpu" or m.status is not Status.OK or m.summary is None
                or data_of(m.case) != RESIDENT or m.summary.median > PROFILE_MAX_S):
            continue
        b = backends.get(m.case.backend)
        if not b.observes(m.case.device):
            continue
        try:
            call = fresh_call(m.case)
            with observing(f"the profile of {m.case.key}"):
                kernels[m.case.key] = b.profile(call, m.case.device)
        except Exception:  # the profiler is optional: the case is explained without it
            continue
    return tuple(found), kernels


def _dispatch_here(backend: str, device: str) -> list[Ceiling]:
    from gpuvs import workloads

    b = backends.get(backend)
    if b.unavailable_reason(device) is not None:
        return []
    case = ceiling_probes.dispatch_probes([(backend, device)])[0]
    taken = take(case, lambda: prepared_case(workloads.get("dispatch"), b, case),
                 Sampling(DISPATCH_BUDGET_S), backend=b, raising=True)
    return ceiling_probes.read([taken.measurement])
