"""`gpuvs run` and `gpuvs sweep`: measure, save each case, print the tables."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuvs.cli.app import app, usage_errors
from gpuvs.cli.options import (
    AxisOpt,
    BackendOpt,
    BudgetOpt,
    ColdOpt,
    CpuWattsOpt,
    CriterionOpt,
    DbOption,
    DeviceOpt,
    DryRunOpt,
    DtypeOpt,
    EnergyOpt,
    FormatOpt,
    JsonOpt,
    PassesOpt,
    PriceOpt,
    ResumeOpt,
    SizesOpt,
    TimeoutOpt,
    VariantOpt,
    WorkloadsOpt,
    build_config,
    check_format,
    open_store,
    split,
)
from gpuvs.cli.output import check_writable, finish, listening, narration
from gpuvs.cli.planning import energy_header, estimate_line, plan_estimate, print_plan
from gpuvs.errors import UsageError
from gpuvs.execute import plan
from gpuvs.store.output import HTML, JSON

if TYPE_CHECKING:
    from gpuvs.config import RunConfig
    from gpuvs.store.sql import SqlStore

ReportOpt = Annotated[Path | None, typer.Option(
    "--report", metavar="PATH",
    help="Also write the run's HTML report here (as `gpuvs report` does).")]
YesOpt = Annotated[bool, typer.Option(
    "--yes", help=f"Start a plan of more than {plan.CONFIRM_CASES} cases (without it, such a "
                  "plan is refused: --dry-run shows it first).")]


@app.command()
def run(
    workload: WorkloadsOpt = None,
    variant: VariantOpt = None, backend: BackendOpt = None, device: DeviceOpt = None,
    dtype: DtypeOpt = None, sizes: SizesOpt = None, budget: BudgetOpt = None,
    timeout: TimeoutOpt = None, criterion: CriterionOpt = None, db: DbOption = None,
    json_path: JsonOpt = None, resume: ResumeOpt = None, cold: ColdOpt = False,
    report_path: ReportOpt = None, passes: PassesOpt = None, axis: AxisOpt = None,
    dry_run: DryRunOpt = False, fmt: FormatOpt = "plain", energy: EnergyOpt = False,
    cpu_watts: CpuWattsOpt = None, price: PriceOpt = None, yes: YesOpt = False,
    full_suite: Annotated[bool, typer.Option(
        "--all", help="Every workload of the default suite at all its sizes and shapes "
                      "(minutes to an hour), instead of the first-answer suite: square "
                      "products and x *= 5 over sizes, about a minute on a 2-core CPU.")
    ] = False,
) -> None:
    """Run workloads on every backend and device, and print a table per workload.

    With no -w, --variant or -a it runs the first-answer suite (square matrix products
    and `x *= 5` over sizes); `--all` runs every workload, `-w NAME` one whole."""
    from gpuvs.jobs import suite as suites
    with usage_errors():
        check_format(fmt)
        check_writable(db, (json_path, JSON), (report_path, HTML))
        given = {"-w": workload, "--variant": variant, "-b": backend, "-d": device,
                 "--dtype": dtype, "-s": sizes, "--budget": budget, "--timeout": timeout,
                 "--criterion": criterion, "--cold": cold or None, "--passes": passes,
                 "-a": axis, "--all": full_suite or None, "--energy": energy or None,
                 "--cpu-watts": cpu_watts, "--price": price}
        clashing = [flag for flag, value in given.items() if value not in (None, [])]
        if resume is not None and not resume.strip():
            raise UsageError("--resume was given an empty value; give a run id or latest")
        if resume and clashing:
            raise UsageError(f"--resume finishes a run with the settings it was started with; "
                             f"drop {', '.join(clashing)} (or start a new run without "
                             "--resume)")
        store = None  # a dry run stores nothing: no database
        resumed = None
        if resume:
            store = open_store(db)
            resumed, config = suites.resumable(store, resume)
        else:
            config = build_config(split(workload, "-w/--workload", "the names `gpuvs list` "
                                        "shows"), variant, backend, device, dtype, sizes,
                                   budget, timeout, criterion, cold, passes, axis, full_suite,
                                   energy, cpu_watts, price)
        _dry_run_or_confirm(config, dry_run, yes or resumed is not None, store, db)
        if resumed is None:
            plan.check_gpu_here(config)
        store = store or open_store(db)
    raise typer.Exit(_execute(store, config, resumed, json_path, report_path, fmt=fmt))


@app.command()
def sweep(
    workload: Annotated[str, typer.Argument(help="The workload to sweep (`gpuvs list`).")],
    variant: VariantOpt = None, backend: BackendOpt = None, device: DeviceOpt = None,
    dtype: DtypeOpt = None, sizes: SizesOpt = None, budget: BudgetOpt = None,
    timeout: TimeoutOpt = None, criterion: CriterionOpt = None, db: DbOption = None,
    json_path: JsonOpt = None, cold: ColdOpt = False, report_path: ReportOpt = None,
    passes: PassesOpt = None, axis: AxisOpt = None, dry_run: DryRunOpt = False,
    fmt: FormatOpt = "plain", energy: EnergyOpt = False, cpu_watts: CpuWattsOpt = None,
    price: PriceOpt = None, yes: YesOpt = False,
    refine: Annotated[bool, typer.Option(
        "--refine/--no-refine",
        help="Add sizes around each crossover until it is bracketed within --factor.")] = False,
    factor: Annotated[float, typer.Option(
        "--factor",
        help="With --refine: the widest ratio of sizes allowed around a crossover.")] = 2.0,
) -> None:
    """Sweep one workload over sizes and report where the GPU starts to win."""
    with usage_errors():
        if refine and not (math.isfinite(factor) and factor > 1):
            raise UsageError(f"--factor must be a number above 1; got {factor}")
        check_format(fmt)
        check_writable(db, (json_path, JSON), (report_path, HTML))
        config = build_config((workload,), variant, backend, device, dtype, sizes, budget,
                               timeout, criterion, cold, passes, axis, False, energy,
                               cpu_watts, price)
        _dry_run_or_confirm(config, dry_run, yes, None, db)
        plan.check_gpu_here(config)
        store = open_store(db)
    raise typer.Exit(_execute(store, config, None, json_path, report_path,
                              factor if refine else None, fmt))


def _dry_run_or_confirm(config: RunConfig, dry_run: bool, yes: bool, store: SqlStore | None,
                        db: str | None) -> None:
    """--dry-run prints the plan, its calibration first, and its estimate (from `store`,
    or the one at `db` if it exists: a dry run creates none) and ends the command; a plan
    too large needs --yes (a resumed run was confirmed when it started)."""
    from gpuvs.jobs.suite import calibrated
    measured = calibrated(plan.expand(config))  # what the run measures: the count it says
    if dry_run:
        print_plan(measured, config, plan_estimate(measured, config, store, db))
        raise typer.Exit(0)
    plan.confirm(measured, yes)


def _execute(store: SqlStore, config: RunConfig, resumed: Any, json_path: Path | None,
             report_path: Path | None, refine_factor: float | None = None,
             fmt: str = "plain") -> int:
    """The suite measured (`jobs.suite`), said as it goes, then shown."""
    from gpuvs.jobs import suite as suites
    from gpuvs.machine import contention, env
    from gpuvs.report.layout import status_line

    began = contention.snapshot()  # what other processes do from here is named below
    with usage_errors():
        planned = suites.planned(config, resumed)
    environment = env.collect()  # once: the estimate's history and the run's record
    estimated = plan_estimate(planned.todo, config, store, environment=environment)

    def header(run_id: str) -> list[str]:
        busy = contention.busy_line(since=began)
        lines = [busy] if busy else []
        probes = sum(c.calibrates for c in planned.todo)
        first = f", the {probes} probes of its calibration first" if probes else ""
        recorded = sum(c.key in planned.skip and not c.calibrates for c in planned.cases)
        lines.append(f"run {run_id}: {len(planned.todo)} cases ({recorded} already "
                     f"recorded{first})" if planned.skip
                     else f"run {run_id}: {len(planned.cases)} cases{first}")
        if plan.first_answer(config):
            lines.append("the first-answer suite: square matrix products and x *= 5 over "
                         "sizes; `gpuvs run --all` runs every workload")
        lines += energy_header(config)
        if estimated.long:
            lines.append(f"this plan takes {estimate_line(estimated, config)}; `--dry-run` "
                         "lists it, and -w, -s or -a narrow it")
        return lines

    out = narration(fmt)
    with usage_errors():
        done = suites.measure(store, planned, environment=environment,
                              refine_factor=refine_factor, listener=listening(out, header),
                              expected=estimated.passes_s)
    return finish(done, "run", fmt, [
        f"run {done.run_id} finished: {status_line(dict(done.counts))}. Saved to "
        f"{store.path}; `gpuvs show {done.run_id}` prints it again."], json_path, report_path)
