"""`gpuvs seeds`: the five posts, as their authors timed them and as gpuvs times them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuvs.cli.app import app, usage_errors
from gpuvs.cli.options import (
    DEVICES,
    CpuWattsOpt,
    DbOption,
    DeviceOpt,
    DryRunOpt,
    EnergyOpt,
    FormatOpt,
    JsonOpt,
    TimeoutOpt,
    check_format,
    open_store,
    split,
)
from gpuvs.cli.output import check_writable, finish, listening, narration
from gpuvs.cli.planning import energy_header, estimate_line, plan_estimate, print_plan
from gpuvs.errors import UsageError
from gpuvs.jobs.seeds import DEFAULTS
from gpuvs.store.output import JSON

if TYPE_CHECKING:
    from gpuvs.config import RunConfig
    from gpuvs.store.sql import SqlStore

BudgetOpt = Annotated[float | None, typer.Option(
    "--budget", metavar="SECONDS",
    help=f"Sampling seconds per case (default {DEFAULTS['budget_s']:g}). More budget, "
         "tighter intervals, a longer run.")]


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
    energy: EnergyOpt = False, cpu_watts: CpuWattsOpt = None,
) -> None:
    """Replay the five posts as written and measured right, side by side.

    For each post, one table: the post's claim (its numbers, its hardware), the
    as-written replay on this machine (its own timing method, mistakes included), the
    correct measurement here, their ratio, and why they differ. `--device cpu` keeps
    every case on the CPU (what the posts did with CUDA_VISIBLE_DEVICES="").
    """
    from gpuvs import config as cfg
    from gpuvs.jobs import seeds as posts
    from gpuvs.seeds.base import SeedOptions
    with usage_errors():
        check_format(fmt)
        check_writable(db, (json_path, JSON))
        chosen = posts.chosen(split(seed, "--seed", "0 to 4, or 000 to 004"))
        cfg.not_negative("--epochs", epochs, cfg.MAX_EPOCHS)
        if data is not None:  # the whole archive, read now: not a table over crashed cases
            from gpuvs.workloads.cifar import load_cifar100
            if not data.is_file():
                raise UsageError(f"--data {str(data)!r} is not a file; give the path of "
                                 "cifar-100-python.tar.gz")
            load_cifar100(str(data))
        options = SeedOptions(quick=quick, cifar=str(data) if data else None, epochs=epochs,
                              compile=compile_step)
        config = cfg.build({"devices": split(device, "-d/--device", DEVICES),
                            "timeout_s": timeout, "budget_s": budget, "energy": energy or None,
                            "cpu_watts": cpu_watts}, defaults=DEFAULTS)
        cases = posts.cases(chosen, options, config.devices)
        if dry_run:
            print_plan(cases, config, plan_estimate(cases, config, db=db))
            raise typer.Exit(0)
        from gpuvs.execute.plan import check_gpu_here
        check_gpu_here(config)
        store = open_store(db)
    raise typer.Exit(_run(store, config, cases, chosen, options, json_path, fmt))


def _run(store: SqlStore, config: RunConfig, cases: list[Any], chosen: tuple[str, ...],
         options: Any, json_path: Path | None, fmt: str = "plain") -> int:
    """The posts replayed (`jobs.seeds`), said as they go, then shown."""
    import time

    from gpuvs import units
    from gpuvs.jobs import seeds as posts
    from gpuvs.machine import env
    from gpuvs.report.layout import status_line
    environment = env.collect()  # once: the estimate's history and the run's record
    estimated = plan_estimate(cases, config, store, environment=environment)
    long_plan = ([f"this plan takes {estimate_line(estimated, config)}; `--dry-run` lists "
                  "it, and --seed or --quick narrow it"] if estimated.long else [])
    started = time.monotonic()

    def header(run_id: str) -> list[str]:
        return [f"run {run_id}: seeds {', '.join(chosen)}, {len(cases)} cases"
                + (" (--quick)" if options.quick else ""), *energy_header(config), *long_plan]

    with usage_errors():
        done = posts.replay(store, config, chosen, options, environment=environment,
                            listener=listening(narration(fmt), header),
                            expected=estimated.passes_s)
    return finish(done, "seeds", fmt, [
        f"run {done.run_id} finished in {units.seconds(time.monotonic() - started)}: "
        f"{status_line(dict(done.counts))}. `gpuvs show {done.run_id}` prints every case's "
        "table."], json_path)
