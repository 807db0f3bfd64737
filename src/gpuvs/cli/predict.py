"""`gpuvs predict` and `gpuvs profiles`: the GPU's time for a machine that has none.

`gpuvs predict` takes `gpuvs run`'s selectors, measures the CPU cases here (or reads a
stored run's), and predicts each GPU case from its counted work and a device profile.
Every GPU number it prints is labelled predicted; the CPU numbers beside them are
measured.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from gpuvs.cli.app import (
    AxisOpt,
    BackendOpt,
    BudgetOpt,
    DbOption,
    DtypeOpt,
    FormatOpt,
    JsonOpt,
    PassesOpt,
    SizesOpt,
    VariantOpt,
    WorkloadsOpt,
    app,
    build_config,
    check_format,
    check_writable,
    console,
    emit_tables,
    narration,
    open_store,
    split,
    usage_errors,
    write_file,
)
from gpuvs.cli.recorded import executed
from gpuvs.errors import UsageError
from gpuvs.store.output import HTML, JSON

# The CPU side of a prediction: one short pass is enough next to the predicted interval,
# and `gpuvs predict -w matmul` answers in seconds.
BUDGET_S = 0.1
PASSES = 1

TargetOpt = Annotated[str | None, typer.Option(
    "--target", metavar="NAME",
    help="The GPU to predict for: a device profile's name (`gpuvs profiles` lists them).")]
ProfileOpt = Annotated[Path | None, typer.Option(
    "--profile", metavar="FILE",
    help="A device profile file (`gpuvs ceilings --save-profile NAME` writes one), "
         "instead of --target.")]
FromRunOpt = Annotated[str | None, typer.Option(
    "--from-run", metavar="RUN_ID|latest|FILE.json",
    help="Predict from a stored run's CPU cases (or a JSON export's) instead of "
         "measuring them now.")]
ReportOpt = Annotated[Path | None, typer.Option(
    "--report", metavar="PATH",
    help="Also write an HTML page: measured CPU series solid, predicted GPU series dashed.")]


@app.command()
def predict(
    workload: WorkloadsOpt = None, variant: VariantOpt = None, backend: BackendOpt = None,
    dtype: DtypeOpt = None, sizes: SizesOpt = None, axis: AxisOpt = None,
    target: TargetOpt = None, profile: ProfileOpt = None, from_run: FromRunOpt = None,
    budget: BudgetOpt = None, passes: PassesOpt = None, db: DbOption = None,
    fmt: FormatOpt = "plain", json_path: JsonOpt = None, report_path: ReportOpt = None,
    full_suite: Annotated[bool, typer.Option(
        "--all", help="Every workload of the default suite, as `gpuvs run --all`.")] = False,
    fresh: Annotated[bool, typer.Option(
        "--fresh", help="Measure every CPU case now, not reuse those this machine measured "
                        "before (same environment, same workload version).")] = False,
) -> None:
    """Predict the GPU's time per call, speedup and crossover on a machine without it.

    The CPU cases are measured here (a short pass) or read from --from-run; each GPU case
    of the same selectors is predicted from its counted work (FLOPs, bytes, launches,
    copies) and the target's measured ceilings. Intervals come from the target's
    validation run; without one, the prediction says it is not yet validated."""
    from gpuvs.machine.contention import snapshot
    from gpuvs.predicting import forecast
    began = snapshot()  # what other processes do from here is named, as `run` does
    with usage_errors():
        check_format(fmt)
        check_writable(db, (json_path, JSON), (report_path, HTML))
        t = forecast.target(_target(target, profile))
        exported = from_run is not None and _is_file(from_run)
        store = None if exported else open_store(db, reading=from_run is not None)
        if from_run is not None:
            said, cpu, config = _stored_cpu(store, from_run, workload, variant, backend,
                                            dtype, sizes, axis, full_suite)
        else:
            config = build_config(split(workload), variant, backend, ["cpu", "cuda"], dtype,
                                  sizes, budget or BUDGET_S, None, None, False,
                                  passes or PASSES, axis, full_suite)
    out = narration(fmt)
    for line in t.skipped:  # a bad file in the profile directory: said, not fatal
        console(stderr=True).print(f"warning: {line}", markup=False, highlight=False,
                                   soft_wrap=True)
    if from_run is None:
        cpu = _measure_cpu(store, config, out, fresh, began)
    else:
        for line in [*said, *_contended(cpu, "`gpuvs predict` without --from-run")]:
            out.print(line, markup=False, highlight=False)
    raise typer.Exit(_answer(t, cpu, config, fmt, (json_path, report_path), db))


def _target(name: str | None, profile: Path | None) -> str | Path:
    """The GPU named once: `--target NAME` a profile's name, `--profile FILE` always a
    file (once, a name without .json read a stored profile instead of the file)."""
    if (name is None) == (profile is None):
        raise UsageError("name the GPU once: --target NAME (`gpuvs profiles` lists them) "
                         "or --profile FILE")
    if profile is not None:
        return profile
    if str(name).endswith(".json") or "/" in str(name):
        raise UsageError(f"--target {name!r} names a profile, not a file: give a name "
                         "`gpuvs profiles` lists, or the file with --profile FILE")
    return str(name)


def _stored_cpu(store: Any, spec: str, workload: Any, variant: Any, backend: Any,
                dtype: Any, sizes: Any, axis: Any, full_suite: bool
                ) -> tuple[list[str], list[Any], Any]:
    """A stored run's finished CPU cases (`latest`: the newest run that has some, naming
    those it skipped), and the selectors of the GPU cases to predict: those given, else
    the run's own workloads, variants and sizes."""
    from gpuvs.cli.history import load
    said: list[str] = []
    if spec == "latest" and not _is_file(spec):
        run, cpu, skipped = _newest_usable(store)
        if skipped:
            said.append(f"--from-run latest: run {run.run_id}, the newest with CPU cases of "
                        f"gpuvs's workloads; skipped {'; '.join(skipped)}")
    else:
        run, ms = load(spec, store)
        cpu = _cpu_cases(ms)
        if why := _unusable(run, cpu):
            raise UsageError(f"--from-run {spec!r}: {why}")
    named = split(workload)
    variants = variant or sorted({m.case.variant for m in cpu} - {"as_written"}) or None
    config = build_config(named or tuple(sorted({m.case.workload for m in cpu})), variants,
                          backend, ["cpu", "cuda"], dtype,
                          sizes or [",".join(str(s) for s in sorted({m.case.size for m in cpu}))],
                          None, None, None, False, 1, axis, full_suite)
    return said, cpu, config


def _is_file(spec: str) -> bool:
    return spec.endswith(".json") or Path(spec).is_file()


def _cpu_cases(ms: Sequence[Any]) -> list[Any]:
    """The finished CPU cases of gpuvs's own workloads: what a prediction sets the GPU
    against (a dist run's collectives or your own function are no workload it counts)."""
    from gpuvs import workloads
    known = set(workloads.names())
    return [m for m in ms if m.case.device == "cpu" and m.summary is not None
            and m.case.workload in known]


def _unusable(run: Any, cpu: Sequence[Any]) -> str:
    """Why `run` cannot be predicted from, or ""."""
    from gpuvs.model import RunKind
    if run.kind in (RunKind.DIST, RunKind.CEILINGS, RunKind.YOURS, RunKind.PYTEST):
        return (f"run {run.run_id} is a {run.kind} run: it has no CPU case of a workload "
                "gpuvs predicts (`gpuvs run` measures some)")
    if not cpu:
        return f"run {run.run_id} has no finished CPU case to predict from"
    return ""


def _newest_usable(store: Any) -> tuple[Any, list[Any], list[str]]:
    """The newest recent run `--from-run latest` can predict from, and why each newer
    one was skipped."""
    skipped: list[str] = []
    for run in store.runs(RECENT_RUNS):
        cpu = _cpu_cases(store.measurements(run.run_id))
        why = _unusable(run, cpu)
        if not why:
            return run, cpu, skipped
        skipped.append(why)
    raise UsageError(f"--from-run latest: none of the {RECENT_RUNS} newest runs has a "
                     "finished CPU case of gpuvs's workloads"
                     + (f" ({skipped[0]}, …)" if skipped else "")
                     + "; `gpuvs run` measures some")


def _contended(measured: Sequence[Any], again: str) -> list[str]:
    """One line where CPU times the predictions are set against were contended."""
    from gpuvs.model import Caveat
    disturbed = sum(Caveat.CONTENDED in m.caveats for m in measured)
    if not disturbed:
        return []
    return [f"{disturbed} of the {len(measured)} CPU cases were measured while other "
            "processes took the CPU (contended, marked in the tables): those CPU times read "
            f"slow, so the speedups predicted against them read high; on a quiet machine, "
            f"{again} measures them again"]


def _measure_cpu(store: Any, config: Any, out: Any, fresh: bool, began: Any) -> list[Any]:
    """The plan's CPU cases: those this machine measured before (same environment, same
    workload versions, a quiet machine) unless `fresh`, the others measured now as a run
    of their own — after naming a busy machine, and followed by how many of them other
    processes disturbed: a slow CPU time makes every predicted speedup read high."""
    from dataclasses import replace

    from gpuvs import backends
    from gpuvs.execute import plan
    from gpuvs.machine import env
    from gpuvs.machine.contention import busy_line
    from gpuvs.model import RunKind, Status
    from gpuvs.store.runs import start_run
    cpu_config = replace(config, devices=("cpu",))
    with usage_errors():
        cases = plan.expand(cpu_config)
    here = env.collect()
    known = {} if fresh else _measured_before(store, cases, here.fingerprint)
    todo = [c for c in cases if c.key not in known
            and not backends.get(c.backend).absent(c.device)]  # not installed: no baseline
    if known:
        runs = ", ".join(sorted({r for r, _ in known.values()}))
        out.print(f"{len(known)} CPU cases measured before on this machine (run {runs}; "
                  "--fresh measures them again)", markup=False, highlight=False)
    if not todo:
        return [m for _, m in known.values()]
    if busy := busy_line(since=began):
        out.print(busy, markup=False, highlight=False)
    run = start_run(store, RunKind.SWEEP, cpu_config.to_dict(), here)
    out.print(f"run {run.run_id}: {len(todo)} CPU cases measured here; the GPU cases are "
              "predicted", markup=False, highlight=False)
    executed(run, lambda run, shown: _execute(run, todo, cpu_config, shown),
             "`gpuvs predict` measures them again.", out)
    measured = [m for m in run.measurements() if m.status is Status.OK]
    for line in _contended(measured, "`gpuvs predict`"):
        out.print(line, markup=False, highlight=False)
    return [m for _, m in known.values()] + measured


def _execute(run: Any, todo: Sequence[Any], config: Any, shown: Any) -> dict[str, int]:
    """The CPU cases measured into `run`, as `gpuvs run` measures them."""
    from gpuvs.execute import runner
    with shown(len(todo)) as advance:
        summary = runner.execute(run, todo, config, on_result=advance)
    return dict(summary.counts)


# How many recent runs are searched for this machine's CPU cases.
RECENT_RUNS = 50


def _measured_before(store: Any, cases: Sequence[Any], fingerprint: str) -> dict[str, Any]:
    """Case key → (run id, its latest finished measurement) among this environment's
    recent sweeps, of the workload's current version (a changed workload never mixes),
    measured on a quiet machine (a contended one is measured again)."""
    from gpuvs import workloads
    from gpuvs.model import Caveat, RunKind, Status
    wanted = {c.key for c in cases}
    found: dict[str, Any] = {}
    for record in store.runs(RECENT_RUNS):
        if record.kind is not RunKind.SWEEP or record.environment.fingerprint != fingerprint:
            continue
        for m in store.measurements(record.run_id):
            if (m.case.key in wanted and m.case.key not in found and m.status is Status.OK
                    and Caveat.CONTENDED not in m.caveats
                    and m.workload_version == workloads.get(m.case.workload).version):
                found[m.case.key] = (record.run_id, m)
    return found


def _answer(t: Any, cpu: list[Any], config: Any, fmt: str,
            outputs: tuple[Path | None, Path | None], db: str | None) -> int:
    from gpuvs.execute import plan
    from gpuvs.predicting import forecast
    from gpuvs.report import documents
    from gpuvs.report.predicted import forecast_tables, predicted_plots, render_forecast
    json_path, report_path = outputs
    with usage_errors():
        gpu_cases = [c for c in plan.expand(config) if c.device != "cpu"]
    predicted = forecast.predict_cases(t, gpu_cases)
    found = forecast.series(cpu, [p for p in predicted if p.prediction is not None])
    missing = [p for p in predicted if p.prediction is None]
    tables = forecast_tables(found, t, missing)
    emit_tables(tables, fmt, console(),
                lambda: documents.document("predict", **json.loads(forecast.document(t, found))))
    if not found:
        narration(fmt).print("no GPU case was predicted: no CPU case finished at its size "
                             "and sweep", markup=False)
    with usage_errors():
        if json_path:
            from gpuvs.predicting.forecast import document
            write_file(json_path, document(t, found), "predictions", db)
        if report_path:
            write_file(report_path, render_forecast(t, tables, predicted_plots(cpu, found)),
                       "report", db)
    for path in filter(None, (json_path, report_path)):
        narration(fmt).print(f"wrote {path}", markup=False, highlight=False)
    return 0


@app.command()
def profiles() -> None:
    """List the device profiles `gpuvs predict --target` can name: those shipped with
    gpuvs (measured on that GPU) and your own (`gpuvs ceilings --save-profile NAME`)."""
    from gpuvs.predicting.profile import ENV_VAR, scan, user_dir
    from gpuvs.predicting.residuals import beside
    from gpuvs.report.predicted import profiles_table
    with usage_errors():
        catalog = scan()
        found = [(f, beside(f)) for f in catalog.found]
        mine = str(user_dir() or f"none: set {ENV_VAR} to a directory")
    for line in catalog.skipped:
        console(stderr=True).print(f"warning: {line}", markup=False, highlight=False,
                                   soft_wrap=True)
    emit_tables([profiles_table(found, mine)], "plain", console(), dict)
