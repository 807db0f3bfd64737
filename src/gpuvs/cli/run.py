"""`gpuvs run` and `gpuvs sweep`: measure, save each case, print the tables."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from gpuvs.cli.app import (
    EXIT_FAILED_RUN,
    BackendOpt,
    BudgetOpt,
    ColdOpt,
    CriterionOpt,
    DbOption,
    DeviceOpt,
    DtypeOpt,
    JsonOpt,
    ResumeOpt,
    SizesOpt,
    TimeoutOpt,
    VariantOpt,
    WorkloadsOpt,
    app,
    build_config,
    console,
    new_run_id,
    now,
    open_store,
    progress,
    split,
    usage_errors,
)
from gpuvs.cli.ceilings import stored_ceilings
from gpuvs.errors import UsageError

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
    report_path: ReportOpt = None,
) -> None:
    """Run workloads on every backend and device, and print a table per workload."""
    from gpuvs import config as cfg

    with usage_errors():
        store = open_store(db)
        run_record = store.get_run(resume) if resume else None
        if run_record is not None:
            if run_record.config.get("kind") is not None:
                raise UsageError(f"run {resume!r} is a {run_record.config['kind']} run, not a "
                                 f"sweep; `gpuvs {run_record.config['kind']} --refresh` "
                                 "measures it again")
            config = cfg.RunConfig(**_config_fields(run_record.config)).validate()
        else:
            config = build_config(split(workload), variant, backend, device, dtype, sizes,
                                   budget, timeout, criterion, cold)
    raise typer.Exit(_execute(store, config, run_record, json_path, report_path))


@app.command()
def sweep(
    workload: Annotated[str, typer.Argument(help="The workload to sweep (`gpuvs list`).")],
    variant: VariantOpt = None, backend: BackendOpt = None, device: DeviceOpt = None,
    dtype: DtypeOpt = None, sizes: SizesOpt = None, budget: BudgetOpt = None,
    timeout: TimeoutOpt = None, criterion: CriterionOpt = None, db: DbOption = None,
    json_path: JsonOpt = None, cold: ColdOpt = False, report_path: ReportOpt = None,
    refine: Annotated[bool, typer.Option(
        help="Add sizes around each crossover until it is bracketed within --factor.")] = False,
    factor: Annotated[float, typer.Option(
        help="With --refine: the widest ratio of sizes allowed around a crossover.")] = 2.0,
) -> None:
    """Sweep one workload over sizes and report where the GPU starts to win."""
    with usage_errors():
        if refine and not factor > 1:
            raise UsageError(f"--factor must be a number above 1; got {factor}")
        store = open_store(db)
        config = build_config((workload,), variant, backend, device, dtype, sizes, budget,
                               timeout, criterion, cold)
    raise typer.Exit(_execute(store, config, None, json_path, report_path,
                              factor if refine else None))


def _config_fields(stored: Any) -> dict[str, Any]:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in dict(stored).items()}


def _execute(store: Any, config: Any, run_record: Any, json_path: Path | None,
             report_path: Path | None, refine_factor: float | None = None) -> int:
    from collections import Counter

    from gpuvs import env, plan, runner
    from gpuvs.model import Run, Status
    from gpuvs.report import console as con
    from gpuvs.report.layout import result_tables, status_line

    cases = plan.expand(config)
    skip: frozenset[str] = frozenset()
    if run_record is None:
        run_record = Run(new_run_id(), now(), config.to_dict(), env.collect())
        store.create_run(run_record)
    else:
        skip = frozenset(store.finished_keys(run_record.run_id))
    run_id = run_record.run_id
    out = console()
    out.print(f"run {run_id}: {len(cases) - len(skip)} cases ({len(skip)} already recorded)"
              if skip else f"run {run_id}: {len(cases)} cases")
    counts: Counter[str] = Counter()
    rounds = 0
    while cases:
        with progress(len(cases)) as advance:
            counts += runner.execute(run_id, cases, config, store, on_result=advance,
                                     skip_keys=skip).counts
        cases = _refinement(store, run_id, refine_factor, rounds)
        rounds += 1
    store.finish_run(run_id, "finished", now())
    measurements = store.measurements(run_id)
    ceilings = stored_ceilings(store, run_record)
    con.print_tables(result_tables(measurements, ceilings), out)
    out.print(f"run {run_id} finished: {status_line(counts)}. Saved to {store.path}; "
              f"`gpuvs show {run_id}` prints it again.")
    if json_path:
        from gpuvs.store.export import write_json

        write_json(json_path, store.get_run(run_id), measurements, ceilings)
        out.print(f"wrote {json_path}")
    if report_path:
        from gpuvs.cli.report import write_report

        with usage_errors():
            try:
                write_report(report_path, store.get_run(run_id), measurements, ceilings)
            except UsageError as e:  # the measurements are safe: say how to get the page
                raise UsageError(f"{e}; the run is saved: `gpuvs report {run_id} -o PATH` "
                                 "writes its report") from None
        out.print(f"wrote {report_path}")
    failed = counts[Status.WRONG_RESULT.value] + counts[Status.CRASHED.value]
    return EXIT_FAILED_RUN if failed else 0


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


