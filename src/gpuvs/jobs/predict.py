"""`gpuvs predict` as a function: the CPU cases of a plan — those this machine measured
before, or measured now as a run of their own — and each GPU case of the same plan
predicted on a device profile beside them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from gpuvs import backends, workloads
from gpuvs.config import RunConfig
from gpuvs.errors import UsageError
from gpuvs.execute import plan, runner
from gpuvs.jobs.recording import QUIET, Listener, Shown, executed
from gpuvs.machine import env
from gpuvs.machine.contention import Snapshot, busy_line
from gpuvs.model import Case, Caveat, Measurement, RunKind, Status
from gpuvs.store.runs import RunHandle, start_run

if TYPE_CHECKING:
    from gpuvs.store.sql import SqlStore

# The CPU side of a prediction: one short pass is enough next to the predicted interval,
# and `gpuvs predict -w matmul` answers in seconds. The command's defaults, through
# `config.build` like every other's.
DEFAULTS = {"budget_s": 0.1, "passes": 1}
# How many recent runs are searched for this machine's CPU cases.
RECENT_RUNS = 50


def cpu_cases(store: SqlStore, config: RunConfig, *, fresh: bool = False,
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
    for line in contended(measured, "`gpuvs predict`"):
        listener.said(line)
    return [m for _, m in known.values()] + measured


def contended(measured: Sequence[Measurement], again: str) -> list[str]:
    """One line where CPU times the predictions are set against were measured while
    other processes took the CPU (marked in the tables too): they read slow, and the
    speedups predicted against them high. `again` names what measures them again."""
    disturbed = sum(Caveat.CONTENDED in m.caveats for m in measured)
    if not disturbed:
        return []
    return [f"{disturbed} of the {len(measured)} CPU cases were measured while other "
            "processes took the CPU (contended, marked in the tables): those CPU times read "
            "slow, so the speedups predicted against them read high; on a quiet machine, "
            f"{again} measures them again"]


def stored_cpu(store: SqlStore | None, spec: str, load: Any) -> tuple[list[str], list[Measurement]]:
    """A stored run's finished CPU cases of gpuvs's workloads, to predict from (`load`
    reads a run id or an export); `latest` is the newest run that has some, and the
    first lines name the newer ones skipped (a dist run as the latest once gave "unknown
    workload 'dist_collective'")."""
    if spec != "latest" or store is None:
        run, ms = load(spec, store)
        cpu = _cpu_cases(ms)
        if why := _unusable(run, cpu):
            raise UsageError(f"--from-run {spec!r}: {why}")
        return [], cpu
    skipped: list[str] = []
    for run in store.runs(RECENT_RUNS):
        cpu = _cpu_cases(store.measurements(run.run_id))
        why = _unusable(run, cpu)
        if not why:
            said = ([f"--from-run latest: run {run.run_id}, the newest with CPU cases of "
                     f"gpuvs's workloads; skipped {'; '.join(skipped)}"] if skipped else [])
            return said, cpu
        skipped.append(why)
    raise UsageError(f"--from-run latest: none of the {RECENT_RUNS} newest runs has a "
                     "finished CPU case of gpuvs's workloads"
                     + (f" ({skipped[0]}, …)" if skipped else "")
                     + "; `gpuvs run` measures some")


def _cpu_cases(ms: Sequence[Measurement]) -> list[Measurement]:
    """The finished CPU cases of gpuvs's own workloads: what a prediction sets the GPU
    against (a dist run's collectives, your own function or a run's calibration are no
    workload it counts)."""
    known = set(workloads.names())
    return [m for m in ms if m.case.device == "cpu" and m.summary is not None
            and m.case.workload in known and not m.case.calibrates]


def _unusable(run: Any, cpu: Sequence[Measurement]) -> str:
    """Why `run` cannot be predicted from, or ""."""
    if run.kind in (RunKind.DIST, RunKind.CEILINGS, RunKind.YOURS, RunKind.PYTEST):
        return (f"run {run.run_id} is a {run.kind} run: it has no CPU case of a workload "
                "gpuvs predicts (`gpuvs run` measures some)")
    if not cpu:
        return f"run {run.run_id} has no finished CPU case to predict from"
    return ""


def _measured_before(store: SqlStore, cases: Sequence[Case], fingerprint: str
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
