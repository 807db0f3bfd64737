"""`gpuvs predict` as a function: the CPU cases of a plan — those this machine measured
before, or measured now as a run of their own — and each GPU case of the same plan
predicted on a device profile beside them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from gpuvs import backends, workloads
from gpuvs.config import RunConfig
from gpuvs.execute import plan, runner
from gpuvs.jobs.recording import QUIET, Listener, Shown, executed
from gpuvs.machine import env
from gpuvs.machine.contention import Snapshot, busy_line
from gpuvs.model import Case, Caveat, Measurement, RunKind, Status
from gpuvs.store.runs import RunHandle, start_run

# The CPU side of a prediction: one short pass is enough next to the predicted interval,
# and `gpuvs predict -w matmul` answers in seconds. The command's defaults, through
# `config.build` like every other's.
DEFAULTS = {"budget_s": 0.1, "passes": 1}
# How many recent runs are searched for this machine's CPU cases.
RECENT_RUNS = 50


def cpu_cases(store: Any, config: RunConfig, *, fresh: bool = False,
              began: Snapshot | None = None, listener: Listener = QUIET
              ) -> list[Measurement]:
    """The plan's CPU cases: those this machine measured before (same environment, same
    workload versions, a quiet machine) unless `fresh`, the others measured now as a run
    of their own — after naming a busy machine (other processes since `began`), and
    followed by how many of them other processes disturbed: a slow CPU time makes every
    predicted speedup read high."""
    cpu_config = replace(config, devices=("cpu",))
    cases = plan.expand(cpu_config)
    here = env.collect()
    known = {} if fresh else _measured_before(store, cases, here.fingerprint)
    todo = [c for c in cases if c.key not in known
            and not backends.get(c.backend).absent(c.device)]  # not installed: no baseline
    if known:
        runs = ", ".join(sorted({r for r, _ in known.values()}))
        listener.said(f"{len(known)} CPU cases measured before on this machine (run {runs}; "
                      "--fresh measures them again)")
    if not todo:
        return [m for _, m in known.values()]
    if began is not None and (busy := busy_line(since=began)):
        listener.said(busy)
    run = start_run(store, RunKind.SWEEP, cpu_config.to_dict(), here)
    listener.said(f"run {run.run_id}: {len(todo)} CPU cases measured here; the GPU cases "
                  "are predicted")

    def execute(run: RunHandle, shown: Shown) -> dict[str, int]:
        with shown(len(todo)) as advance:
            return dict(runner.execute(run, todo, cpu_config, on_result=advance).counts)

    executed(run, execute, "`gpuvs predict` measures them again.", listener)
    measured = [m for m in run.measurements() if m.status is Status.OK]
    if disturbed := sum(Caveat.CONTENDED in m.caveats for m in measured):
        listener.said(f"{disturbed} of the {len(measured)} CPU cases were measured while "
                      "other processes took the CPU (contended): those CPU times read slow, "
                      "so the speedups predicted against them read high; on a quiet "
                      "machine, `gpuvs predict` measures them again")
    return [m for _, m in known.values()] + measured


def _measured_before(store: Any, cases: Sequence[Case], fingerprint: str
                     ) -> dict[str, tuple[str, Measurement]]:
    """Case key → (run id, its latest finished measurement) among this environment's
    recent sweeps, of the workload's current version (a changed workload never mixes),
    measured on a quiet machine (a contended one is measured again)."""
    wanted = {c.key for c in cases}
    found: dict[str, tuple[str, Measurement]] = {}
    for record in store.runs(RECENT_RUNS):
        if record.kind is not RunKind.SWEEP or record.environment.fingerprint != fingerprint:
            continue
        for m in store.measurements(record.run_id):
            if (m.case.key in wanted and m.case.key not in found and m.status is Status.OK
                    and Caveat.CONTENDED not in m.caveats
                    and m.workload_version == workloads.get(m.case.workload).version):
                found[m.case.key] = (record.run_id, m)
    return found


@dataclass(frozen=True)
class Forecast:
    """What `gpuvs predict` answers: the predicted series beside the measured CPU cases,
    and the GPU cases the profile could not predict."""

    found: list[Any]
    missing: list[Any]


def forecast(target: Any, cpu: Sequence[Measurement], config: RunConfig) -> Forecast:
    """Each GPU case of the plan predicted on `target`, set beside the CPU cases."""
    from gpuvs.predicting import forecast as fc
    gpu_cases = [c for c in plan.expand(config) if c.device != "cpu"]
    predicted = fc.predict_cases(target, gpu_cases)
    return Forecast(fc.series(list(cpu), [p for p in predicted if p.prediction is not None]),
                    [p for p in predicted if p.prediction is None])
