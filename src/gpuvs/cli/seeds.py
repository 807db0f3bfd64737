"""`gpuvs seeds`: the five posts, as their authors timed them and as gpuvs times them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from gpuvs.cli.app import (
    DbOption,
    DeviceOpt,
    DryRunOpt,
    FormatOpt,
    JsonOpt,
    TimeoutOpt,
    app,
    check_format,
    console,
    emit_tables,
    narration,
    open_store,
    print_plan,
    split,
    usage_errors,
    wrap_up,
)
from gpuvs.errors import UsageError
from gpuvs.report.progress import progress

# Sampling seconds a case: most cases meet their CI within it, and the run must fit in
# 8 minutes on a GPU machine (docs/seeds-h100.md says where the time goes).
BUDGET_S = 0.1
BudgetOpt = Annotated[float | None, typer.Option(
    "--budget", metavar="SECONDS",
    help=f"Sampling seconds per case (default {BUDGET_S:g}). More budget, tighter intervals, "
         "a longer run.")]


@app.command()
def seeds(
    seed: Annotated[list[str] | None, typer.Option(
        "--seed", metavar="NNN",
        help="Which posts, by number: 000 … 004 (see docs/seeds.md); repeat the "
             "option or give a list (0,2). Default: all five.")] = None,
    quick: Annotated[bool, typer.Option(
        "--quick/--no-quick",
        help="A short run: smaller sizes and fewer steps; the posts' own shapes are kept "
             "where they are cheap. Tables say which rows ran below the post's size.")
    ] = False,
    device: DeviceOpt = None,
    data: Annotated[Path | None, typer.Option(
        "--data", metavar="PATH",
        help="Seed 003: a local cifar-100-python.tar.gz (the python pickle version). "
             "Default: synthetic data of the same shape, labelled as such.")] = None,
    epochs: Annotated[int, typer.Option(
        "--epochs", metavar="N",
        help="Seed 003: also train N epochs for real and report accuracy per epoch (time to "
             "accuracy). Default 0: time steps only.")] = 0,
    compile_step: Annotated[bool, typer.Option(
        "--compile", help="Seed 003: also time the tuned step under torch.compile (its "
                          "first step compiles for 10 to 20 s).")] = False,
    budget: BudgetOpt = None, timeout: TimeoutOpt = None, db: DbOption = None,
    json_path: JsonOpt = None, dry_run: DryRunOpt = False, fmt: FormatOpt = "plain",
) -> None:
    """Replay the five posts as written and measured right, side by side.

    For each post, one table: the post's claim (its numbers, its hardware), the
    as-written replay on this machine (its own timing method, mistakes included), the
    correct measurement here, their ratio, and why they differ. `--device cpu` keeps
    every case on the CPU (what the posts did with CUDA_VISIBLE_DEVICES="").
    """
    from gpuvs import config as cfg
    from gpuvs.seeds.base import SeedOptions
    with usage_errors():
        check_format(fmt)
        chosen = _chosen(split(seed))
        if epochs < 0:
            raise UsageError(f"--epochs must be 0 or more; got {epochs}")
        if data is not None:  # the whole archive, read now: not a table over crashed cases
            from gpuvs.workloads.cifar import load_cifar100
            if not data.is_file():
                raise UsageError(f"--data {str(data)!r} is not a file; give the path of "
                                 "cifar-100-python.tar.gz")
            load_cifar100(str(data))
        options = SeedOptions(quick=quick, cifar=str(data) if data else None, epochs=epochs,
                              compile=compile_step)
        config = cfg.build({"devices": split(device), "timeout_s": timeout,
                            "budget_s": budget}, defaults={"budget_s": BUDGET_S})
        cases = _cases(chosen, options, config.devices)
        if dry_run:
            print_plan(cases, config)
            raise typer.Exit(0)
        store = open_store(db)
    raise typer.Exit(_run(store, config, cases, chosen, options, json_path, fmt))


def _chosen(names: tuple[str, ...]) -> tuple[str, ...]:
    """Seed names as registered ('000'); '2' and '002' alike. Unknown ones: UsageError."""
    from gpuvs import seeds
    wanted = tuple(f"{int(n):03d}" if n.isdigit() else n for n in names) or seeds.names()
    for name in wanted:
        seeds.get(name)
    return wanted


def _cases(chosen: tuple[str, ...], options: Any, devices: tuple[str, ...]) -> list[Any]:
    """Every seed's cases on the devices asked for (cuda means cuda:0)."""
    from gpuvs import seeds
    kinds = {d.partition(":")[0] for d in devices}
    return [c for name in chosen for c in seeds.get(name).cases(options)
            if c.device.partition(":")[0] in kinds]


def _run(store: Any, config: Any, cases: list[Any], chosen: tuple[str, ...], options: Any,
         json_path: Path | None, fmt: str = "plain") -> int:
    import time
    from dataclasses import asdict

    from gpuvs import units
    from gpuvs.execute import runner
    from gpuvs.model import RunKind
    from gpuvs.report.layout import status_line
    from gpuvs.report.seed_tables import seed_answers, seed_tables
    from gpuvs.store.runs import guarded, start_run
    run = start_run(store, RunKind.SEEDS, {
        "seeds": list(chosen), **asdict(options), "budget_s": config.budget_s,
        "timeout_s": config.timeout_s, "devices": list(config.devices)})
    out = narration(fmt)
    out.print(f"run {run.run_id}: seeds {', '.join(chosen)}, {len(cases)} cases"
              + (" (--quick)" if options.quick else ""))
    started = time.monotonic()
    again = f"`gpuvs seeds {' '.join(chosen)}` measures them again."
    with usage_errors(), guarded(run, again), progress(len(cases), out.stderr) as advance:
        counts = runner.execute(run, cases, config, on_result=advance).counts
    took = units.seconds(time.monotonic() - started)
    run.finish()
    measurements = run.measurements()
    emit_tables([*seed_tables(measurements), seed_answers(measurements)], fmt, console())
    out.print(f"run {run.run_id} finished in {took}: {status_line(counts)}. `gpuvs show "
              f"{run.run_id}` prints every case's table.")
    return wrap_up(out, run, measurements, counts, json_path)
