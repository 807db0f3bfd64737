"""`gpuvs run` and `gpuvs sweep`: measure, save each case, print the tables."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from gpuvs.cli.app import (
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
    app,
    build_config,
    check_format,
    check_writable,
    energy_header,
    estimate_line,
    open_store,
    plan_estimate,
    print_plan,
    split,
    stored_ceilings,
    usage_errors,
)
from gpuvs.cli.recorded import Recording, recorded
from gpuvs.errors import UsageError
from gpuvs.execute import plan
from gpuvs.model import RunKind
from gpuvs.report.console import console

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
    from gpuvs import config as cfg
    with usage_errors():
        check_format(fmt)
        check_writable(json_path, report_path)
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
        store = open_store(db) if resume else None  # a dry run stores nothing: no database
        run_record = _resumed(store, resume) if resume else None
        if run_record is not None:
            if run_record.kind is not RunKind.SWEEP:
                raise UsageError(f"run {resume!r} is a {run_record.kind} run, not a sweep; "
                                 f"`gpuvs {run_record.kind} --refresh` measures it again")
            config = cfg.RunConfig(**_config_fields(run_record.config)).validate()
        else:
            config = build_config(split(workload, "-w/--workload", "the names `gpuvs list` "
                                        "shows"), variant, backend, device, dtype, sizes,
                                   budget, timeout, criterion, cold, passes, axis, full_suite,
                                   energy, cpu_watts, price)
        _dry_run_or_confirm(config, dry_run, yes or run_record is not None, store, db)
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
        check_writable(json_path, report_path)
        config = build_config((workload,), variant, backend, device, dtype, sizes, budget,
                               timeout, criterion, cold, passes, axis, False, energy,
                               cpu_watts, price)
        _dry_run_or_confirm(config, dry_run, yes, None, db)
        plan.check_gpu_here(config)
        store = open_store(db)
    raise typer.Exit(_execute(store, config, None, json_path, report_path,
                              factor if refine else None, fmt))


def _dry_run_or_confirm(config: Any, dry_run: bool, yes: bool, store: Any,
                        db: str | None) -> None:
    """--dry-run prints the plan and its estimate (from `store`, or the one at `db` if it
    exists: a dry run creates none) and ends the command; a plan too large needs --yes (a
    resumed run was confirmed when it started)."""
    cases = plan.expand(config)
    if dry_run:
        print_plan(cases, config, plan_estimate(cases, config, store, db))
        raise typer.Exit(0)
    plan.confirm(cases, yes)


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

    from gpuvs.analysis.cost import Prices
    from gpuvs.execute import runner
    from gpuvs.machine import contention, env

    began = contention.snapshot()  # what other processes do from here is named below
    from gpuvs.report.layout import result_tables, status_line
    from gpuvs.report.verdict import answer_table
    from gpuvs.store.runs import RunHandle

    with usage_errors():
        cases = plan.expand(config)
    environment = env.collect()  # once: the estimate's history and the run's record
    resumed = RunHandle(store, run_record) if run_record is not None else None
    skip = frozenset(m.case.key for m in resumed.measurements()
                     if runner.complete(m, config.passes)) if resumed else frozenset()
    todo = [c for c in cases if c.key not in skip]
    prices = Prices.of(config.prices)
    estimated = plan_estimate(todo, config, store, environment=environment)

    def header(run_id: str) -> list[str]:
        busy = contention.busy_line(since=began)
        lines = [busy] if busy else []
        lines.append(f"run {run_id}: {len(todo)} cases ({len(skip)} already recorded)"
                     if skip else f"run {run_id}: {len(cases)} cases")
        if plan.first_answer(config):
            lines.append("the first-answer suite: square matrix products and x *= 5 over "
                         "sizes; `gpuvs run --all` runs every workload")
        lines += energy_header(config)
        if estimated.long:
            lines.append(f"this plan takes {estimate_line(estimated, config)}; `--dry-run` "
                         "lists it, and -w, -s or -a narrow it")
        return lines

    def execute(run: Any, shown: Any) -> Counter[str]:
        counts: Counter[str] = Counter()
        now: list[Any] = list(cases)
        rounds = 0
        while now:
            with shown(sum(c.key not in skip for c in now)) as advance:
                # a refinement's sizes are new: the plan's estimate costed none of them
                counts += runner.execute(run, now, config, on_result=advance, skip_keys=skip,
                                         expected=None if rounds else estimated.passes_s
                                         ).counts
            now = _refinement(store, run.run_id, refine_factor, rounds)
            rounds += 1
        return counts

    return recorded(store, Recording(
        "run", RunKind.SWEEP, config.to_dict(), header, execute,
        tables=lambda ms, ceilings: [*result_tables(ms, ceilings, prices),
                                     answer_table(ms, prices)],
        closing=lambda run_id, counts: [
            f"run {run_id} finished: {status_line(dict(counts))}. Saved to {store.path}; "
            f"`gpuvs show {run_id}` prints it again."],
        again="`gpuvs run --resume latest` finishes it.",
        complete=lambda m: runner.complete(m, config.passes),
        ceilings=lambda run: stored_ceilings(store, run.started), environment=environment),
        fmt=fmt, json_path=json_path, report_path=report_path, resumed=resumed)


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


