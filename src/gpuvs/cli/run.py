"""`gpuvs run` and `gpuvs sweep`: measure, save each case, print the tables."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from gpuvs.cli.app import (
    AxisOpt,
    BackendOpt,
    BudgetOpt,
    ColdOpt,
    CriterionOpt,
    DbOption,
    DeviceOpt,
    DryRunOpt,
    DtypeOpt,
    FormatOpt,
    JsonOpt,
    PassesOpt,
    ResumeOpt,
    SizesOpt,
    TimeoutOpt,
    VariantOpt,
    WorkloadsOpt,
    app,
    build_config,
    check_format,
    check_writable,
    console,
    emit_tables,
    estimate_line,
    narration,
    open_store,
    plan_estimate,
    print_plan,
    split,
    stored_ceilings,
    usage_errors,
    wrap_up,
)
from gpuvs.errors import UsageError
from gpuvs.execute import plan
from gpuvs.model import RunKind
from gpuvs.report.progress import progress

ReportOpt = Annotated[Path | None, typer.Option(
    "--report", metavar="PATH",
    help="Also write the run's HTML report here (as `gpuvs report` does).")]


@app.command()
def run(
    workload: WorkloadsOpt = None,
    variant: VariantOpt = None, backend: BackendOpt = None, device: DeviceOpt = None,
    dtype: DtypeOpt = None, sizes: SizesOpt = None, budget: BudgetOpt = None,
    timeout: TimeoutOpt = None, criterion: CriterionOpt = None, db: DbOption = None,
    json_path: JsonOpt = None, resume: ResumeOpt = None, cold: ColdOpt = False,
    report_path: ReportOpt = None, passes: PassesOpt = None, axis: AxisOpt = None,
    dry_run: DryRunOpt = False, fmt: FormatOpt = "plain",
    full_suite: Annotated[bool, typer.Option(
        "--all", help="Every workload of the default suite at all its sizes and shapes "
                      "(minutes to an hour), instead of the first-answer suite: square "
                      "products and x *= 5 over sizes, about a minute on a 2-core CPU.")
    ] = False,
) -> None:
    """Run workloads on every backend and device, and print a table per workload.

    With no -w, --variant or -a it runs the first-answer suite (square matrix products
    and `x *= 5` over sizes); `--all` runs every workload, `-w NAME` one whole."""
    from gpuvs import config as cfg
    with usage_errors():
        check_format(fmt)
        check_writable(json_path, report_path)
        given = {"-w": workload, "--variant": variant, "-b": backend, "-d": device,
                 "--dtype": dtype, "-s": sizes, "--budget": budget, "--timeout": timeout,
                 "--criterion": criterion, "--cold": cold or None, "--passes": passes,
                 "-a": axis, "--all": full_suite or None}
        clashing = [flag for flag, value in given.items() if value not in (None, [])]
        if resume and clashing:
            raise UsageError(f"--resume finishes a run with the settings it was started with; "
                             f"drop {', '.join(clashing)} (or start a new run without "
                             "--resume)")
        store = open_store(db) if resume else None  # a dry run stores nothing: no database
        run_record = _resumed(store, resume) if resume else None
        if run_record is not None:
            if run_record.kind is not RunKind.SWEEP:
                raise UsageError(f"run {resume!r} is a {run_record.kind} run, not a sweep; "
                                 f"`gpuvs {run_record.kind} --refresh` measures it again")
            config = cfg.RunConfig(**_config_fields(run_record.config)).validate()
        else:
            config = build_config(split(workload), variant, backend, device, dtype, sizes,
                                   budget, timeout, criterion, cold, passes, axis, full_suite)
        if dry_run:
            cases = plan.expand(config)
            print_plan(cases, config, plan_estimate(cases, config, store, db))
            raise typer.Exit(0)
        if run_record is None:
            plan.check_gpu_here(config)
        store = store or open_store(db)
    raise typer.Exit(_execute(store, config, run_record, json_path, report_path, fmt=fmt))


@app.command()
def sweep(
    workload: Annotated[str, typer.Argument(help="The workload to sweep (`gpuvs list`).")],
    variant: VariantOpt = None, backend: BackendOpt = None, device: DeviceOpt = None,
    dtype: DtypeOpt = None, sizes: SizesOpt = None, budget: BudgetOpt = None,
    timeout: TimeoutOpt = None, criterion: CriterionOpt = None, db: DbOption = None,
    json_path: JsonOpt = None, cold: ColdOpt = False, report_path: ReportOpt = None,
    passes: PassesOpt = None, axis: AxisOpt = None, dry_run: DryRunOpt = False,
    fmt: FormatOpt = "plain",
    refine: Annotated[bool, typer.Option(
        "--refine/--no-refine",
        help="Add sizes around each crossover until it is bracketed within --factor.")] = False,
    factor: Annotated[float, typer.Option(
        "--factor",
        help="With --refine: the widest ratio of sizes allowed around a crossover.")] = 2.0,
) -> None:
    """Sweep one workload over sizes and report where the GPU starts to win."""
    with usage_errors():
        if refine and not factor > 1:
            raise UsageError(f"--factor must be a number above 1; got {factor}")
        check_format(fmt)
        check_writable(json_path, report_path)
        config = build_config((workload,), variant, backend, device, dtype, sizes, budget,
                               timeout, criterion, cold, passes, axis)
        if dry_run:
            cases = plan.expand(config)
            print_plan(cases, config, plan_estimate(cases, config, db=db))
            raise typer.Exit(0)
        plan.check_gpu_here(config)
        store = open_store(db)
    raise typer.Exit(_execute(store, config, None, json_path, report_path,
                              factor if refine else None, fmt))


def _resumed(store: Any, resume: str) -> Any:
    """The run `--resume` names; `latest` is the most recent sweep that did not finish."""
    from gpuvs.store.runs import latest_unfinished
    if resume != "latest":
        return store.get_run(resume)
    found = latest_unfinished(store, RunKind.SWEEP)
    if found is None:
        raise UsageError("--resume latest: no interrupted run in this database; "
                         "`gpuvs runs` lists them")
    return found


def _config_fields(stored: Any) -> dict[str, Any]:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in dict(stored).items()}


def _execute(store: Any, config: Any, run_record: Any, json_path: Path | None,
             report_path: Path | None, refine_factor: float | None = None,
             fmt: str = "plain") -> int:
    from collections import Counter

    from gpuvs.execute import runner
    from gpuvs.machine import contention, env
    began = contention.snapshot()  # what other processes do from here is named below
    from gpuvs.report.layout import result_tables, status_line
    from gpuvs.report.verdict import answer_table
    from gpuvs.store.runs import RunHandle, guarded, start_run
    with usage_errors():
        cases = plan.expand(config)
    environment = env.collect()  # once: the estimate's history and the run's record
    if run_record is None:
        run = start_run(store, RunKind.SWEEP, config.to_dict(), environment)
        skip: frozenset[str] = frozenset()
    else:
        run = RunHandle(store, run_record)
        skip = frozenset(m.case.key for m in run.measurements()
                         if runner.complete(m, config.passes))
    out = narration(fmt)
    busy = contention.busy_line(since=began)
    if busy:
        out.print(busy, markup=False, highlight=False)
    todo = [c for c in cases if c.key not in skip]
    out.print(f"run {run.run_id}: {len(todo)} cases ({len(skip)} already recorded)" if skip
              else f"run {run.run_id}: {len(cases)} cases", markup=False, highlight=False)
    if plan.first_answer(config):
        out.print("the first-answer suite: square matrix products and x *= 5 over sizes; "
                  "`gpuvs run --all` runs every workload", markup=False, highlight=False)
    estimated = plan_estimate(todo, config, store, environment=environment)
    if estimated.long:
        out.print(f"this plan takes {estimate_line(estimated, config)}; `--dry-run` lists "
                  "it, and -w, -s or -a narrow it", markup=False, highlight=False)
    counts: Counter[str] = Counter()
    rounds = 0
    def finished() -> int:
        return sum(runner.complete(m, config.passes) for m in run.measurements())

    with usage_errors(), guarded(run, "`gpuvs run --resume latest` finishes it.", finished):
        while cases:
            with progress(sum(c.key not in skip for c in cases), out.stderr) as advance:
                counts += runner.execute(run, cases, config, on_result=advance,
                                         skip_keys=skip).counts
            cases = _refinement(store, run.run_id, refine_factor, rounds)
            rounds += 1
    run.finish()
    measurements = run.measurements()
    ceilings = stored_ceilings(store, run.started)
    emit_tables([*result_tables(measurements, ceilings), answer_table(measurements)], fmt,
                console())
    out.print(f"run {run.run_id} finished: {status_line(counts)}. Saved to {store.path}; "
              f"`gpuvs show {run.run_id}` prints it again.")
    return wrap_up(out, run, measurements, counts, json_path, report_path, ceilings)


MAX_REFINE_ROUNDS = 6


def _refinement(store: Any, run_id: str, factor: float | None, rounds: int) -> list[Any]:
    """The next round of sizes around the crossovers, or [] when done."""
    if factor is None or rounds >= MAX_REFINE_ROUNDS:
        return []
    from gpuvs.analysis.refine import refined_cases
    cases = refined_cases(store.measurements(run_id), factor)
    if cases:
        console().print(f"refining: {len(cases)} cases at sizes "
                         f"{', '.join(sorted({str(c.size) for c in cases}))}")
    return cases


