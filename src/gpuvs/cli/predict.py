"""`gpuvs predict` and `gpuvs profiles`: the GPU's time for a machine that has none.

`gpuvs predict` takes `gpuvs run`'s selectors, measures the CPU cases here (or reads a
stored run's), and predicts each GPU case from its counted work and a device profile.
Every GPU number it prints is labelled predicted; the CPU numbers beside them are
measured.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuvs.cli.app import app, usage_errors
from gpuvs.cli.options import (
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
    build_config,
    check_format,
    open_store,
    split,
)
from gpuvs.cli.output import check_writable, emit_tables, listening, narration, write_file
from gpuvs.errors import UsageError
from gpuvs.report.console import console
from gpuvs.store.output import HTML, JSON

if TYPE_CHECKING:
    from gpuvs.config import RunConfig
    from gpuvs.store.sql import SqlStore

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
    from gpuvs.jobs import predict as cpu_side
    from gpuvs.machine.contention import snapshot
    from gpuvs.predicting import forecast
    began = snapshot()  # what other processes do from here is named, as `run` does
    with usage_errors():
        check_format(fmt)
        check_writable(db, (json_path, JSON), (report_path, HTML))
        t = forecast.target(_target(target, profile))
        exported = from_run is not None and (from_run.endswith(".json")
                                             or Path(from_run).is_file())
        if from_run is None:  # the settings first: a bad one leaves no store behind
            config = build_config(split(workload), variant, backend, ["cpu", "cuda"], dtype,
                                  sizes, budget, None, None, False, passes, axis, full_suite,
                                  defaults=cpu_side.DEFAULTS)
        store = None if exported else open_store(db, reading=from_run is not None)
        if from_run is not None:
            said, cpu, config = _stored_cpu(store, from_run, workload, variant, backend,
                                            dtype, sizes, axis, full_suite)
    for line in t.skipped:  # a bad file in the profile directory: said, not fatal
        console(stderr=True).print(f"warning: {line}", markup=False, highlight=False,
                                   soft_wrap=True)
    if from_run is None:
        assert store is not None  # opened above: only an export is read without one
        with usage_errors():
            cpu = cpu_side.cpu_cases(store, config, fresh=fresh, began=began,
                                     listener=listening(narration(fmt)))
    else:
        for line in [*said, *cpu_side.contended(cpu, "`gpuvs predict` without --from-run")]:
            narration(fmt).print(line, markup=False, highlight=False)
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


def _stored_cpu(store: SqlStore | None, spec: str, workload: Any, variant: Any, backend: Any,
                dtype: Any, sizes: Any, axis: Any, full_suite: bool
                ) -> tuple[list[str], list[Any], Any]:
    """A stored run's finished CPU cases (`jobs.predict.stored_cpu`: `latest`, the newest
    run that has some) with the lines that say which, and the selectors of the GPU cases
    to predict: those given, else the run's own workloads, variants and sizes."""
    from gpuvs.cli.history import load
    from gpuvs.jobs import predict as cpu_side
    said, cpu = cpu_side.stored_cpu(store, spec, load)
    named = split(workload)
    variants = variant or sorted({m.case.variant for m in cpu} - {"as_written"}) or None
    config = build_config(named or tuple(sorted({m.case.workload for m in cpu})), variants,
                          backend, ["cpu", "cuda"], dtype,
                          sizes or [",".join(str(s) for s in sorted({m.case.size for m in cpu}))],
                          None, None, None, False, 1, axis, full_suite)
    return said, cpu, config


def _answer(t: Any, cpu: list[Any], config: RunConfig, fmt: str,
            outputs: tuple[Path | None, Path | None], db: str | None) -> int:
    from gpuvs.jobs import predict as cpu_side
    from gpuvs.predicting import forecast
    from gpuvs.report import documents
    from gpuvs.report.predicted import forecast_tables, predicted_plots, render_forecast
    json_path, report_path = outputs
    with usage_errors():
        answered = cpu_side.forecast(t, cpu, config)
    found = answered.found
    tables = forecast_tables(found, t, answered.missing)
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
