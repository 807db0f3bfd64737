"""Why a comparison came out as it did, from numbers measured on this machine.

For each finished GPU case of a comparison (`gpuvs.compare`'s measurements):

- the kernels and host↔device copies of one call, counted by the framework's profiler
  (torch on CUDA), where one call is short enough (PROFILE_MAX_S) to profile again;
- the per-op dispatch cost of the backend on the GPU and on the CPU, measured now with
  the `dispatch` ceiling probe (once per process);
- then `gpuvs.analysis.roofline.classify` names the bound: **launch-bound** when the time
  per call is near kernels × dispatch cost, **transfer-bound** when an end-to-end call
  spends most of its time copying. gpuvs cannot count the FLOPs or bytes of a user's
  code, so it does not call a case compute- or memory-bound; it says how far the case
  is from the launch floor instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gpuvs import backends, units
from gpuvs.analysis import speedup
from gpuvs.analysis.crossover import crossovers
from gpuvs.analysis.roofline import Bound, Finding, classify
from gpuvs.analysis.speedup import best_cpu_by_size, data_of
from gpuvs.measuring import criteria
from gpuvs.measuring.protocol import Budget
from gpuvs.measuring.protocol import measure as protocol_measure
from gpuvs.model import Case, Ceiling, Measurement, Status

PROFILE_MAX_S = 10.0
DISPATCH_BUDGET_S = 0.2
FIRST_CALL_FACTOR = 10.0
_DISPATCH: dict[tuple[str, str], float | None] = {}

Replay = Callable[[Case], Callable[[], object]]


@dataclass(frozen=True)
class Explanation:
    """Sentences, one per finding, and the findings themselves."""

    lines: tuple[str, ...]
    findings: tuple[Finding, ...] = ()

    def __str__(self) -> str:
        return "\n".join(self.lines)

    __repr__ = __str__

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))


def explain(ms: Sequence[Measurement], replay: Replay | None) -> Explanation:
    """Why each GPU case of `ms` came out as it did; `replay(case)` gives a fresh call of
    a case to profile (None: kernels are not counted)."""
    lines: list[str] = []
    found: list[Finding] = []
    sweep = len({m.case.size for m in ms}) > 1
    for device, reason in {m.case.device: m.reason for m in ms
                           if m.status is Status.UNAVAILABLE}.items():
        lines.append(f"{device}: skipped: {reason}; nothing to compare the CPU with there")
    speedups = {(s.device, s.data, s.size): s for s in speedup.speedups(ms)}
    resident = {(m.case.device, m.case.size): m for m in ms
                if m.case.device != "cpu" and data_of(m.case) == "resident"}
    cpu = best_cpu_by_size(ms)
    for m in ms:
        if m.case.device == "cpu" or m.status is not Status.OK:
            continue
        speed = speedups.get((m.case.device, data_of(m.case), m.case.size))
        head = f"{_where(sweep, m)}: {speed}" if speed else _where(sweep, m)
        finding, detail = _finding(m, resident.get((m.case.device, m.case.size)), replay)
        if finding is not None:
            found.append(finding)
            lines.append(f"{head}. {finding.bound}: {finding.why}")
        else:
            lines.append(f"{head}. {detail}")
        if finding is not None and finding.bound is Bound.LAUNCH and m.case.size in cpu:
            lines.append("  " + _cpu_contrast(m))
    lines += _first_calls(ms) + _crossovers(ms)
    if not any(m.status is Status.OK and m.case.device != "cpu" for m in ms):
        lines += [f"{_where(sweep, m)}: {units.seconds(m.summary.median)} per call, first call "
                  f"{units.seconds(m.first_call_s)}" for m in ms
                  if m.case.device == "cpu" and m.summary is not None]
    return Explanation(tuple(lines), tuple(found))


def _where(sweep: bool, m: Measurement) -> str:
    at = f"at size {units.size(m.case.size)}, " if sweep else ""
    data = f" {data_of(m.case)}" if m.case.device != "cpu" else ""
    return f"{at}{m.case.device}{data}"


def _finding(m: Measurement, resident: Measurement | None, replay: Replay | None
             ) -> tuple[Finding | None, str]:
    if data_of(m.case) == "end_to_end":
        found = classify(m, [], resident)
        if found is not None or resident is None or resident.summary is None:
            return found, ""
        share = 1 - resident.summary.median / m.summary.median  # type: ignore[union-attr]
        return None, (f"copies take {max(share, 0):.0%} of the call; the work on the device "
                      "takes the rest")
    counts, note = _profile(m, replay)
    dispatch = dispatch_cost(m.case.backend, m.case.device)
    if dispatch is None:
        return None, "the dispatch cost could not be measured here" + note
    ceiling = Ceiling("per-op dispatch cost", m.case.device, m.case.backend, dispatch, "s",
                      "measured by gpuvs.analysis.explain")
    counted = replace(m, counters={**m.counters, **counts,
                                   "launches": counts.get("kernels") or 1.0})
    found = classify(counted, [ceiling])
    if found is not None and found.bound is Bound.LAUNCH:
        return found, ""
    t = m.summary.median  # type: ignore[union-attr]
    if counts.get("kernels"):
        per = t / counts["kernels"]
        return None, (f"{counts['kernels']:.0f} kernels per call, {units.seconds(per)} each "
                      f"on average against {units.seconds(dispatch)} to launch one: the time "
                      "goes to the kernels' own work, not to launching them" + note)
    return None, (f"{units.seconds(t)} per call is {t / dispatch:.0f}× the cost of one op "
                  f"({units.seconds(dispatch)}): not launch-bound; gpuvs cannot count your "
                  "code's FLOPs or bytes, so it does not say compute- or memory-bound" + note)


def _profile(m: Measurement, replay: Replay | None) -> tuple[dict[str, float], str]:
    """Kernels and copies of one resident call, or why they were not counted."""
    if replay is None:
        return {}, ""
    if m.summary is not None and m.summary.median > PROFILE_MAX_S:
        return {}, f" (kernels not counted: one call takes over {PROFILE_MAX_S:.0f} s)"
    try:
        return backends.get(m.case.backend).profile(replay(m.case), m.case.device), ""
    except Exception as e:  # the profiler is optional: say why it is missing
        return {}, f" (kernels not counted: {type(e).__name__}: {e})"


def dispatch_cost(backend: str, device: str) -> float | None:
    """Seconds per one-element op of `backend` on `device`, queued back to back."""
    key = (backend, device)
    if key not in _DISPATCH:
        from gpuvs import workloads
        b = backends.get(backend)
        _DISPATCH[key] = None
        if b.unavailable_reason(device) is None:
            case = Case("dispatch", "correct", backend, device, "float32", 1,
                        (("mode", "loop"),))
            prepared = workloads.get("dispatch").prepare(b, case)
            m = protocol_measure(prepared, case, b.clock(device),
                                 criteria.parse("median-ci")(), Budget(DISPATCH_BUDGET_S))
            _DISPATCH[key] = m.summary.median if m.summary is not None else None
    return _DISPATCH[key]


def _cpu_contrast(m: Measurement) -> str:
    cpu_backend = "numpy" if m.case.backend == "cupy" else m.case.backend
    cpu, gpu = dispatch_cost(cpu_backend, "cpu"), dispatch_cost(m.case.backend, m.case.device)
    if cpu is None or gpu is None:
        return ""
    return (f"one op costs {units.seconds(cpu)} to dispatch on the CPU ({cpu_backend}) and "
            f"{units.seconds(gpu)} to launch on {m.case.device}: a call made of many small "
            "ops favours the CPU until each op carries more work")


def _first_calls(ms: Sequence[Measurement]) -> list[str]:
    out = []
    for m in ms:
        s = m.summary
        if s is None or m.first_call_s is None or m.first_call_s < FIRST_CALL_FACTOR * s.median:
            continue
        if m.case.device != "cpu" and data_of(m.case) == "resident":
            out.append(f"{m.case.device}: the first call took {units.seconds(m.first_call_s)} "
                       f"against {units.seconds(s.median)} per call after it (context, "
                       "library handles, kernel selection, compilation); it is kept apart, "
                       "never in the median")
    return out[:1]


def _crossovers(ms: Sequence[Measurement]) -> list[str]:
    out = []
    for x in crossovers(ms):
        if len(x.points) < 2 or x.modelled_size is None:
            continue
        where = "beyond the sizes measured" if x.extrapolated else "between the sizes measured"
        out.append(f"{x.gpu.device} {x.data}: the cost model t = t0 + work/throughput puts the "
                   f"crossover at ≈ {units.size(round(x.modelled_size))}, {where}")
    return out
