"""`--format json`: what a command prints, as data for a script or a CI step.

The tables (`layout`, `verdict`, each kind's view, `history`) are strings for
a person ("9.6 ms ±0.4%"); these documents hold the same answers as numbers, each with
its unit in its key (`median_s`, `bytes_moved`, `flops_per_s`, `speedup_low`), CIs as two
numbers, caveats as lists, statuses and verdicts as strings, and a key that has no value
for a case as null rather than missing. Every document starts with `schema` (`SCHEMA`,
versioned as `store/export.FORMAT_VERSION` versions the run export) and `command`;
`docs/json.md` describes each shape, and `output.schema.json` beside this module is its
JSON Schema. Pure: objects in, a dict out.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gpuvs.analysis.calibration import split
from gpuvs.analysis.ceilings import peak_for
from gpuvs.analysis.crossover import Crossover, crossovers, group_key
from gpuvs.analysis.regression import (
    ERROR,
    FAILED,
    FAMILY,
    Change,
    Gate,
    Mean,
    Unmatched,
    process_spread,
    unjudged,
)
from gpuvs.analysis.roofline import busy_seconds, findings
from gpuvs.analysis.speedup import best_cpu_by_size
from gpuvs.analysis.speedup import of as speedup_of
from gpuvs.machine.env import setup_changes
from gpuvs.model import Caveat, Ceiling, Measurement, Run, Status
from gpuvs.report import calibration, history, views
from gpuvs.report.layout import sweep_title
from gpuvs.report.verdict import verdict_table

SCHEMA = "gpuvs.output/1"
# One comparison of `compare`: B, the probes side by side, the cases, those not
# compared, the geometric means, and the SM clocks of A and B.
Compared = tuple[Run, Sequence[Change], Sequence[Change], Sequence[Unmatched],
                 Sequence[Mean], tuple[str, str]]


def schema() -> str:
    """The JSON Schema (draft 2020-12) of every document here at SCHEMA, as shipped in
    the package (`gpuvs schema output` prints it); docs/json.md says the same in words."""
    from importlib.resources import files

    return files("gpuvs.report").joinpath("output.schema.json").read_text(encoding="utf-8")


def document(command: str, **body: Any) -> dict[str, Any]:
    """The envelope every document shares: its schema, then the command that made it."""
    return {"schema": SCHEMA, "command": command, **body}


def dumps(doc: Mapping[str, Any]) -> str:
    """The document as JSON text. JSON has no infinity or NaN (a cost model whose time
    does not grow has an infinite throughput): such a number is written null."""
    def finite(value: Any) -> Any:
        if isinstance(value, float):
            return value if math.isfinite(value) else None
        if isinstance(value, Mapping):
            return {k: finite(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [finite(v) for v in value]
        return value

    return json.dumps(finite(doc), indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def run_record(run: Run) -> dict[str, Any]:
    """Which run, when, on what: enough to find it again and to group runs by machine."""
    return {"run_id": run.run_id, "kind": run.kind.value, "status": run.status,
            "started_at": run.started_at, "finished_at": run.finished_at,
            "machine": history.machine_of(run), "gpus": history.gpus_of(run),
            "git_commit": history.provenance(run).get("git_commit"),
            "git_dirty": history.provenance(run).get("git_dirty"),
            "fingerprint": run.environment.fingerprint}


def cases_document(command: str, measurements: Iterable[Measurement],
                   ceilings: Sequence[Ceiling] = (), run: Run | None = None
                   ) -> dict[str, Any]:
    """A run's cases (every command that makes a run, and `show`): its calibration's
    probes first, then each case's numbers, the crossovers of each sweep, the answer per
    sweep, and what the run's kind adds (`views.View.extras`)."""
    probes, ms = split(measurements)
    view = views.of(run.kind) if run is not None else views.SWEEPS
    body: dict[str, Any] = {
        "run": run_record(run) if run is not None else None,
        "calibration": calibration.records(probes),
        "cases": case_records(ms, ceilings, view),
        "crossovers": [crossover_record(c) for c in crossovers(ms)],
        "answers": [{"sweep": sweep, "answer": answer}
                    for sweep, answer in verdict_table(ms).rows],
        "ceilings_contended": any(c.contended for c in ceilings),
    }
    return document(command, **body, **view.extras(ms))


def case_records(ms: Sequence[Measurement], ceilings: Sequence[Ceiling] = (),
                 view: views.View = views.SWEEPS) -> list[dict[str, Any]]:
    found = findings(ms, ceilings)
    by_group: dict[Any, list[Measurement]] = {}
    for m in ms:
        by_group.setdefault(group_key(m.case), []).append(m)
    best = {key: best_cpu_by_size(group) for key, group in by_group.items()}
    spread = process_spread(ms)
    out = []
    for m in ms:
        record = case_record(m, ceilings)
        cpu = best[group_key(m.case)].get(m.case.size)
        if m.case.device != "cpu" and cpu is not None and m.samples:
            s = speedup_of(cpu, m, spread)
            record |= {"speedup": s.estimate, "speedup_low": s.low, "speedup_high": s.high,
                       "speedup_over": cpu.case.key}
        finding = found.get(m.case.key)
        if finding is not None:
            record |= {"bound": finding.bound.value, "bound_why": finding.why}
        out.append(record | view.case_numbers(m, ms))
    return out


def case_record(m: Measurement, ceilings: Sequence[Ceiling] = ()) -> dict[str, Any]:
    """One case: its axes, status, statistics (seconds), counters, rates and caveats."""
    c, s = m.case, m.summary
    median = s.median if s is not None and s.median > 0 else None
    flops, moved = m.counters.get("flops"), m.counters.get("bytes_moved")
    peaks = peak_for(c, ceilings, tf32=Caveat.TF32_ON in m.caveats,
                     working_set=m.counters.get("working_set_bytes")) if median else {}
    return {
        "key": c.key, "sweep": sweep_title(group_key(c)), "workload": c.workload,
        "variant": c.variant, "backend": c.backend, "device": c.device, "dtype": c.dtype,
        "size": c.size, "params": dict(c.params), "status": m.status.value,
        "reason": m.reason or None,
        "median_s": s.median if s else None, "ci_low_s": s.ci_low if s else None,
        "ci_high_s": s.ci_high if s else None, "mean_s": s.mean if s else None,
        "min_s": s.min if s else None, "samples": s.n if s else 0, "loops": m.loops,
        "first_call_s": m.first_call_s,
        "wall_median_s": m.wall_summary.median if m.wall_summary else None,
        "gpu_busy_s": busy_seconds(m) if s else None, "timer": m.timer or None,
        "threads": m.counters.get("threads"), "flops": flops, "bytes_moved": moved,
        "flops_per_s": flops / median if flops and median else None,
        "bytes_per_s": moved / median if moved and median else None,
        "of_peak_flops": (flops / median / peaks["flops"]
                          if flops and median and peaks.get("flops") else None),
        "of_peak_bytes": (moved / median / peaks["bytes"]
                          if moved and median and peaks.get("bytes") else None),
        "speedup": None, "speedup_low": None, "speedup_high": None, "speedup_over": None,
        "bound": None, "bound_why": None,
        "caveats": [cv.value for cv in m.caveats],
        "contended": Caveat.CONTENDED in m.caveats,
        "regimes": _regimes(m),
    }


def _regimes(m: Measurement) -> dict[str, Any] | None:
    """The two groups the case's processes fell in (seconds, how many processes each), or
    null where they made one."""
    r = m.regimes
    return None if r is None else {"fast_s": r.fast, "fast_processes": r.fast_count,
                                   "slow_s": r.slow, "slow_processes": r.slow_count}


def crossover_record(c: Crossover) -> dict[str, Any]:
    """Where one GPU series starts to win, the tie band, the cost model's crossover, and
    its speedup at the largest size."""
    last = c.points[-1]
    return {"sweep": sweep_title(c.group), "backend": c.gpu.backend, "device": c.gpu.device,
            "data": c.data, "faster_from_size": c.size,
            "tie_band": list(c.tie_band) if c.tie_band else None,
            "model_crossover_size": c.modelled_size, "extrapolated": c.extrapolated,
            "asymptotic_speedup": c.asymptotic_speedup, "largest_size": last.size,
            "speedup": last.estimate, "speedup_low": last.low, "speedup_high": last.high,
            "verdict": last.verdict}


def runs_document(found: Sequence[tuple[Run, Sequence[Measurement]]]) -> dict[str, Any]:
    """`gpuvs runs`: each run, newest first, with its cases counted by status."""
    runs = []
    for run, ms in found:
        counts = Counter(m.status.value for m in ms)
        failed = sum(counts[s.value] for s in FAILED)
        runs.append(run_record(run) | {"cases": len(ms), "ok": counts[Status.OK.value],
                                       "failed": failed, "statuses": dict(counts)})
    return document("runs", runs=runs)


def change_record(c: Change) -> dict[str, Any]:
    """One case in two runs: its ratio, its verdict and whose it is (`case_verdict`, its
    ratio's alone; `verdict` "machine" where its bound's probe explains it), and the probe
    it was set against, with the probe's ratio and the case's over it (null where either
    run has no calibration, or its bound none)."""
    m = c.machine
    return {"key": c.key, "workload": c.workload, "series": c.series, "size": c.size,
            "a_s": c.a, "b_s": c.b, "ratio": c.ratio, "ratio_low": c.low,
            "ratio_high": c.high, "p_value": c.p_value, "verdict": c.verdict,
            "case_verdict": c.case_verdict or c.verdict,
            "contended": c.contended, "code_changed": c.code_changed, "replay": c.replay,
            "grouped": c.grouped,
            "machine_probe": m.probe if m else None, "machine_key": m.key if m else None,
            "machine_ratio": m.ratio if m else None,
            "machine_ratio_low": m.low if m else None,
            "machine_ratio_high": m.high if m else None,
            "residual": m.residual if m else None,
            "residual_low": m.residual_low if m else None,
            "residual_high": m.residual_high if m else None}


def mean_record(m: Mean) -> dict[str, Any]:
    return {"workload": m.workload, "cases": m.cases, "ratio": m.ratio, "ratio_low": m.low,
            "ratio_high": m.high}


def unmatched_record(u: Unmatched) -> dict[str, Any]:
    return {"key": u.key, "why": u.why}


def environment_record(a: Run, b: Run, clocks: tuple[str, str] = ("", "")
                       ) -> dict[str, Any]:
    """What differs between two runs' environments: the changes that move timings (which
    make `check` refuse a baseline), then every field compared, A's value and B's."""
    changes = setup_changes(a.environment.facts, b.environment.facts)
    rows = history.environment_rows(a, b, clocks)
    return {"same_setup": not changes, "setup_changes": changes,
            "fingerprints": [a.environment.fingerprint, b.environment.fingerprint],
            "differences": [{"what": what, "a": va, "b": vb} for what, va, vb in rows
                            if va != vb],
            "same": [what for what, va, vb in rows if va == vb]}


def compare_document(base: Run, results: Sequence[Compared], threshold: float
                     ) -> dict[str, Any]:
    """`gpuvs compare`: each run (B) against the first (A): the two calibrations side by
    side, then case by case."""
    return document("compare", threshold=threshold, a=run_record(base), comparisons=[
        {"b": run_record(run), "environment": environment_record(base, run, clocks),
         "calibration": calibration.machine_records(probes),
         "counts": dict(Counter(c.verdict for c in changes)),
         "cases": [change_record(c) for c in changes],
         "geometric_means": [mean_record(m) for m in means],
         "unmatched": [unmatched_record(u) for u in unmatched]}
        for run, probes, changes, unmatched, means, clocks in results])


def check_document(base: Run, run: Run, gate: Gate, clocks: tuple[str, str] = ("", "")
                   ) -> dict[str, Any]:
    """`gpuvs check`: the verdict and why first, then what it was decided from (a verdict
    beside `same_setup: false` was judged across set-ups, as --allow-env-change asked)."""
    return document(
        "check", verdict=gate.verdict, exit_reason=gate.exit_reason,
        threshold=gate.threshold, a=run_record(base), b=run_record(run),
        environment=environment_record(base, run, clocks),
        calibration=calibration.machine_records(gate.machine),
        counts=dict(Counter(c.verdict for c in gate.changes)),
        cases=[change_record(c) for c in gate.changes],
        cannot_judge=[{"key": c.key, "why": unjudged(c, gate.threshold)}
                      for c in gate.unjudged],
        judged_together={"cases": len(gate.changes),
                         "each_confidence": 1 - (1 - FAMILY) / max(len(gate.changes), 1)},
        unresolved=[c.key for c in gate.unresolved],
        not_measured=[{"key": n.key, "status": n.status, "reason": n.reason or None,
                       "failing": n.failing} for n in gate.not_measured],
        unmatched=[unmatched_record(u) for u in gate.unmatched])


def error_document(command: str, reason: str) -> dict[str, Any]:
    """A gate that could not decide (bad usage, a refused baseline, nothing in common):
    the verdict is an error, and why."""
    return document(command, verdict=ERROR, exit_reason=reason)
