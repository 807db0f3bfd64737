"""Why a comparison came out as it did, from numbers measured on this machine.

For each finished GPU case of a comparison (`gpuvs.compare`'s measurements), from what
was measured and handed in — never measured here:

- the kernels and host↔device copies of one call (`kernels`, by case key), counted by the
  framework's profiler in a process that had finished timing (run-file's worker counts
  them at the end; `gpuvs.compare` in your own process counts none: gpuvs never profiles
  the process it times in);
- the per-op dispatch cost of the backend on the GPU and on the CPU (`ceilings`: the
  `dispatch` probe, measured by `gpuvs ceilings` or in a worker for the comparison);
- then `gpuvs.analysis.roofline.classify` names the bound: **launch-bound** when the time
  per call is near kernels × dispatch cost, **transfer-bound** when an end-to-end call
  spends most of its time copying. gpuvs cannot count the FLOPs or bytes of a user's
  code, so it does not call a case compute- or memory-bound; it says how far the case
  is from the launch floor instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gpuvs import units
from gpuvs.analysis import speedup
from gpuvs.analysis.crossover import crossovers
from gpuvs.analysis.roofline import Bound, Finding, classify, dispatch_cost
from gpuvs.analysis.speedup import best_cpu_by_size, data_of
from gpuvs.model import YOURS_PREFIX, Ceiling, Measurement, Status

FIRST_CALL_FACTOR = 10.0
NOT_COUNTED = (" (kernels not counted: gpuvs never profiles the process that times; "
               "`gpuvs run-file` counts them in a worker)")

Kernels = Mapping[str, Mapping[str, float]]


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


def explain(ms: Sequence[Measurement], ceilings: Sequence[Ceiling],
            kernels: Kernels | None = None) -> Explanation:
    """Why each GPU case of `ms` came out as it did, against the measured `ceilings`
    (dispatch costs) and the `kernels` counted for each case key (None: not counted).
    Several implementations are explained one at a time, each line named by its own."""
    lines = [f"{device}: skipped: {reason}; nothing to compare the CPU with there"
             for device, reason in {m.case.device: m.reason for m in ms
                                    if m.status is Status.UNAVAILABLE}.items()]
    workloads = tuple(dict.fromkeys(m.case.workload for m in ms))
    if len(workloads) == 1:
        alone = _explained(ms, ceilings, kernels)
        return Explanation((*lines, *alone.lines), alone.findings)
    found: list[Finding] = []
    for w in workloads:
        one = _explained([m for m in ms if m.case.workload == w], ceilings, kernels)
        lines += [f"{w.removeprefix(YOURS_PREFIX)}: {line}" for line in one.lines]
        found += one.findings
    return Explanation(tuple(lines), tuple(found))


def _explained(ms: Sequence[Measurement], ceilings: Sequence[Ceiling],
               kernels: Kernels | None) -> Explanation:
    lines: list[str] = []
    found: list[Finding] = []
    sweep = len({m.case.size for m in ms}) > 1
    speedups = {(s.device, s.data, s.size): s for s in speedup.speedups(ms)}
    resident = {(m.case.device, m.case.size): m for m in ms
                if m.case.device != "cpu" and data_of(m.case) == "resident"}
    cpu = best_cpu_by_size(ms)
    for m in ms:
        if m.case.device == "cpu" or m.status is not Status.OK:
            continue
        speed = speedups.get((m.case.device, data_of(m.case), m.case.size))
        head = f"{_where(sweep, m)}: {speed}" if speed else _where(sweep, m)
        finding, detail = _finding(m, resident.get((m.case.device, m.case.size)), ceilings,
                                   kernels)
        if finding is not None:
            found.append(finding)
            lines.append(f"{head}. {finding.bound}: {finding.why}")
        else:
            lines.append(f"{head}. {detail}")
        if finding is not None and finding.bound is Bound.LAUNCH and m.case.size in cpu:
            lines.append("  " + _cpu_contrast(m, ceilings))
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


def _finding(m: Measurement, resident: Measurement | None, ceilings: Sequence[Ceiling],
             kernels: Kernels | None) -> tuple[Finding | None, str]:
    if data_of(m.case) == "end_to_end":
        found = classify(m, [], resident)
        if found is not None or resident is None or resident.summary is None:
            return found, ""
        share = 1 - resident.summary.median / m.summary.median  # type: ignore[union-attr]
        return None, (f"copies take {max(share, 0):.0%} of the call; the work on the device "
                      "takes the rest")
    counts = dict((kernels or {}).get(m.case.key, {}))
    note = NOT_COUNTED if kernels is None else ""
    dispatch = dispatch_cost(m.case.backend, m.case.device, ceilings)
    if dispatch is None:
        return None, "the dispatch cost could not be measured here" + note
    counted = replace(m, counters={**m.counters, **counts,
                                   "launches": counts.get("kernels") or 1.0})
    found = classify(counted, ceilings)
    if found is not None and found.bound is Bound.LAUNCH:
        return found, ""
    t = m.summary.median  # type: ignore[union-attr]
    if counts.get("kernels"):
        per = t / counts["kernels"]
        return None, (f"{counts['kernels']:.0f} kernels per call, {units.seconds(per)} each "
                      f"on average against {units.seconds(dispatch)} to launch one: the time "
                      "goes to the kernels' own work, not to launching them")
    return None, (f"{units.seconds(t)} per call is {t / dispatch:.0f}× the cost of one op "
                  f"({units.seconds(dispatch)}): not launch-bound; gpuvs cannot count your "
                  "code's FLOPs or bytes, so it does not say compute- or memory-bound" + note)


def _cpu_contrast(m: Measurement, ceilings: Sequence[Ceiling]) -> str:
    cpu_backend = "numpy" if m.case.backend == "cupy" else m.case.backend
    cpu = dispatch_cost(cpu_backend, "cpu", ceilings)
    gpu = dispatch_cost(m.case.backend, m.case.device, ceilings)
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
