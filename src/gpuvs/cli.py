"""The `gpuvs` command. The only module that prints or chooses exit codes.

Exit codes: 0 a run that finished (cases may still be skipped, unavailable, OOM or timed
out: those are results); 1 a run with a wrong result or a crashed case; 2 bad usage.
"""

from __future__ import annotations

import secrets
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from gpuvs.errors import GpuvsError, UsageError

app = typer.Typer(
    help="Is the GPU faster than the CPU for this work, by how much, from what size on, "
         "and why? gpuvs runs the same workload on NumPy, PyTorch (CPU and CUDA), CuPy and "
         "JAX, times each case correctly (synchronised, device events, warm-up, CIs) in "
         "isolated workers, and saves every result as it finishes.",
    no_args_is_help=True, add_completion=False, rich_markup_mode=None,
)

EXIT_FAILED_RUN, EXIT_USAGE = 1, 2
T = TypeVar("T")


def _console(stderr: bool = False) -> Any:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


@contextmanager
def _usage_errors() -> Iterator[None]:
    """Every deliberate gpuvs error becomes one red line and exit code 2."""
    try:
        yield
    except GpuvsError as e:
        from rich.markup import escape

        _console(stderr=True).print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True)
        raise typer.Exit(EXIT_USAGE) from None


def _split(values: list[str] | None) -> tuple[str, ...]:
    """Repeated options and comma lists alike: `-b numpy,torch -b jax`."""
    return tuple(v.strip() for item in values or () for v in item.split(",") if v.strip())


DbOption = Annotated[str | None, typer.Option(
    "--db", metavar="PATH",
    help="Results database (SQLite path). Default: $GPUVS_DB, else the user data directory.")]


def _open_store(db: str | None) -> Any:
    from gpuvs.store import open_store

    return open_store(db)


VariantOpt = Annotated[list[str] | None, typer.Option(
    metavar="VARIANT", help="as_written, correct or tuned; default: each workload's own.")]
BackendOpt = Annotated[list[str] | None, typer.Option(
    "--backend", "-b", metavar="BACKEND", help="numpy, torch, cupy, jax; default: all.")]
DeviceOpt = Annotated[list[str] | None, typer.Option(
    "--device", "-d", metavar="DEVICE", help="cpu, cuda or cuda:N; default: cpu and cuda.")]
DtypeOpt = Annotated[list[str] | None, typer.Option(
    metavar="DTYPE",
    help="float16, bfloat16, float32, float64; default: the workload's (float32).")]
SizesOpt = Annotated[list[str] | None, typer.Option(
    "--sizes", "-s", metavar="SIZES",
    help="Sizes: a list (1000,4096) or a range START:STOP[:FACTOR] (1e3:1e7 steps ×10; "
         "64:4096:2 doubles).")]
BudgetOpt = Annotated[float | None, typer.Option(
    metavar="SECONDS",
    help="Sampling seconds per case (default 1). More budget, tighter intervals.")]
TimeoutOpt = Annotated[float | None, typer.Option(
    metavar="SECONDS",
    help="Seconds before a case is killed and recorded as timeout (default 300).")]
CriterionOpt = Annotated[str | None, typer.Option(
    metavar="NAME[:K=V]",
    help="When to stop sampling: median-ci[:rel=0.01], stdrel[:max_noise=0.005], "
         "fixed[:n=7].")]
JsonOpt = Annotated[Path | None, typer.Option(
    "--json", metavar="PATH",
    help="Also write the run (config, environment, raw samples) here.")]
WorkloadsOpt = Annotated[list[str] | None, typer.Option(
    "--workload", "-w", metavar="WORKLOAD",
    help="Workload(s) to run; default: all. See `gpuvs list`.")]
ColdOpt = Annotated[bool, typer.Option(
    "--cold", help="Flush the caches before every timed call (GPU L2, CPU last-level "
                   "cache); one call per sample.")]
ResumeOpt = Annotated[str | None, typer.Option(
    metavar="RUN_ID", help="Finish an interrupted run: skip its recorded cases, run the rest.")]


def _build_config(workloads: tuple[str, ...], variant: list[str] | None,
                  backend: list[str] | None, device: list[str] | None,
                  dtype: list[str] | None, sizes: list[str] | None, budget: float | None,
                  timeout: float | None, criterion: str | None, cold: bool = False) -> Any:
    from gpuvs import config as cfg

    return cfg.build({
        "workloads": workloads, "variants": _split(variant), "backends": _split(backend),
        "devices": _split(device), "dtypes": _split(dtype),
        "sizes": cfg.parse_sizes(_split(sizes)), "budget_s": budget, "timeout_s": timeout,
        "criterion": criterion, "cold": cold or None,
    })


@app.command()
def run(
    workload: WorkloadsOpt = None,
    variant: VariantOpt = None, backend: BackendOpt = None, device: DeviceOpt = None,
    dtype: DtypeOpt = None, sizes: SizesOpt = None, budget: BudgetOpt = None,
    timeout: TimeoutOpt = None, criterion: CriterionOpt = None, db: DbOption = None,
    json_path: JsonOpt = None, resume: ResumeOpt = None, cold: ColdOpt = False,
) -> None:
    """Run workloads on every backend and device, and print a table per workload."""
    from gpuvs import config as cfg

    with _usage_errors():
        store = _open_store(db)
        run_record = store.get_run(resume) if resume else None
        if run_record is not None:
            if run_record.config.get("kind") is not None:
                raise UsageError(f"run {resume!r} is a {run_record.config['kind']} run, not a "
                                 f"sweep; `gpuvs {run_record.config['kind']} --refresh` "
                                 "measures it again")
            config = cfg.RunConfig(**_config_fields(run_record.config)).validate()
        else:
            config = _build_config(_split(workload), variant, backend, device, dtype, sizes,
                                   budget, timeout, criterion, cold)
    raise typer.Exit(_execute(store, config, run_record, json_path))


@app.command()
def sweep(
    workload: Annotated[str, typer.Argument(help="The workload to sweep (`gpuvs list`).")],
    variant: VariantOpt = None, backend: BackendOpt = None, device: DeviceOpt = None,
    dtype: DtypeOpt = None, sizes: SizesOpt = None, budget: BudgetOpt = None,
    timeout: TimeoutOpt = None, criterion: CriterionOpt = None, db: DbOption = None,
    json_path: JsonOpt = None, cold: ColdOpt = False,
    refine: Annotated[bool, typer.Option(
        help="Add sizes around each crossover until it is bracketed within --factor.")] = False,
    factor: Annotated[float, typer.Option(
        help="With --refine: the widest ratio of sizes allowed around a crossover.")] = 2.0,
) -> None:
    """Sweep one workload over sizes and report where the GPU starts to win."""
    with _usage_errors():
        if refine and not factor > 1:
            raise UsageError(f"--factor must be a number above 1; got {factor}")
        store = _open_store(db)
        config = _build_config((workload,), variant, backend, device, dtype, sizes, budget,
                               timeout, criterion, cold)
    raise typer.Exit(_execute(store, config, None, json_path, factor if refine else None))


def _config_fields(stored: Any) -> dict[str, Any]:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in dict(stored).items()}


def _execute(store: Any, config: Any, run_record: Any, json_path: Path | None,
             refine_factor: float | None = None) -> int:
    from collections import Counter

    from gpuvs import env, plan, runner
    from gpuvs.model import Run, Status
    from gpuvs.report import console as con
    from gpuvs.report.layout import result_tables, status_line

    cases = plan.expand(config)
    skip: frozenset[str] = frozenset()
    if run_record is None:
        run_record = Run(_new_run_id(), _now(), config.to_dict(), env.collect())
        store.create_run(run_record)
    else:
        skip = frozenset(store.finished_keys(run_record.run_id))
    run_id = run_record.run_id
    out = _console()
    out.print(f"run {run_id}: {len(cases) - len(skip)} cases ({len(skip)} already recorded)"
              if skip else f"run {run_id}: {len(cases)} cases")
    counts: Counter[str] = Counter()
    rounds = 0
    while cases:
        with _progress(len(cases)) as advance:
            counts += runner.execute(run_id, cases, config, store, on_result=advance,
                                     skip_keys=skip).counts
        cases = _refinement(store, run_id, refine_factor, rounds)
        rounds += 1
    store.finish_run(run_id, "finished", _now())
    measurements = store.measurements(run_id)
    con.print_tables(result_tables(measurements, _stored_ceilings(store, run_record)), out)
    out.print(f"run {run_id} finished: {status_line(counts)}. Saved to {store.path}; "
              f"`gpuvs show {run_id}` prints it again.")
    if json_path:
        from gpuvs.store.export import write_json

        write_json(json_path, store.get_run(run_id), measurements)
        out.print(f"wrote {json_path}")
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
        _console().print(f"refining: {len(cases)} cases at sizes "
                         f"{', '.join(sorted({str(c.size) for c in cases}))}")
    return cases


@contextmanager
def _progress(total: int) -> Iterator[Callable[[Any], None]]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=_console(stderr=True), transient=True) as bar:
        task = bar.add_task("measuring", total=total)

        def advance(m: Any) -> None:
            bar.update(task, advance=1, description=f"{m.case.key} → {m.status.value}")

        yield advance


def _new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


@app.command()
def ceilings(
    backend: BackendOpt = None, budget: BudgetOpt = None, db: DbOption = None,
    refresh: Annotated[bool, typer.Option(
        help="Measure again even if this machine's ceilings are already stored.")] = False,
) -> None:
    """Measure what this machine can do: matmul peaks, bandwidths, transfer and launch costs.

    Cached per environment fingerprint and reused by every run on the same set-up.
    """
    from gpuvs import backends as registry
    from gpuvs import env
    from gpuvs.analysis import ceilings as ceil
    from gpuvs.config import RunConfig

    with _usage_errors():
        store = _open_store(db)
        names = _split(backend) or registry.names()
        for name in names:
            registry.get(name)
        config = RunConfig(budget_s=budget or 1.0, timeout_s=600.0).validate()
    facts = env.collect()
    record = None if refresh else _cached_ceilings(store, facts.fingerprint)
    if record is None:
        from gpuvs import runner
        from gpuvs.model import Run

        record = Run(_new_run_id(), _now(), {"kind": ceil.KIND, "budget_s": config.budget_s},
                     facts)
        store.create_run(record)
        cases = ceil.probe_cases(names)
        with _progress(len(cases)) as advance:
            runner.execute(record.run_id, cases, config, store, on_result=advance)
        store.finish_run(record.run_id, "finished", _now())
    _print_ceilings(store, record)


def _stored_ceilings(store: Any, record: Any) -> list[Any]:
    """This machine's measured ceilings, if `gpuvs ceilings` has run on it."""
    from gpuvs.analysis.ceilings import read

    cached = _cached_ceilings(store, record.environment.fingerprint)
    return read(store.measurements(cached.run_id)) if cached else []


def _cached_ceilings(store: Any, fingerprint: str) -> Any:
    from gpuvs.analysis.ceilings import KIND

    for record in store.runs(200):
        if (record.config.get("kind") == KIND and record.status == "finished"
                and record.environment.fingerprint == fingerprint):
            return record
    return None


def _print_ceilings(store: Any, record: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    from gpuvs.analysis.ceilings import read
    from gpuvs.units import rate, seconds

    t = Table(title=f"ceilings · run {record.run_id} · environment "
                    f"{record.environment.fingerprint}", title_justify="left")
    for col in ("ceiling", "backend", "device", "measured"):
        t.add_column(col, justify="right" if col == "measured" else "left")
    measurements = store.measurements(record.run_id)
    for c in read(measurements):
        value = seconds(c.value) if c.unit == "s" else rate(c.value, c.unit)
        t.add_row(Text(c.name), c.backend, c.device, value)
    out = _console()
    out.print(t)
    missing: dict[tuple[str, str], str] = {}
    for m in measurements:
        if m.summary is None:
            missing.setdefault((m.case.backend, m.case.device), f"{m.status.value}: {m.reason}")
    for (backend, device), why in sorted(missing.items()):
        out.print(Text(f"not measured on {backend} {device}: {why}"))


@app.command()
def show(run_id: Annotated[str, typer.Argument(help="A run id, or 'latest'.")],
         db: DbOption = None) -> None:
    """Print a stored run's tables again."""
    from gpuvs.report import console as con
    from gpuvs.report.layout import result_tables

    with _usage_errors():
        store = _open_store(db)
        if run_id == "latest":
            run_id = store.latest_run_id() or run_id
        record = store.get_run(run_id)
        out = _console()
        out.print(f"run {record.run_id} · {record.status} · started {record.started_at} · "
                  f"environment {record.environment.fingerprint}")
        con.print_tables(result_tables(store.measurements(run_id),
                                       _stored_ceilings(store, record)), out)


@app.command()
def export(
    run_id: Annotated[str, typer.Argument(help="A run id, or 'latest'.")],
    format: Annotated[str, typer.Option(
        "--format", "-f", metavar="json|csv",
        help="json: everything needed to redraw the run elsewhere (config, environment, raw "
             "samples); csv: one tidy row per case.")] = "json",
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", metavar="PATH", help="Where to write; default RUN_ID.json/.csv.")
    ] = None,
    db: DbOption = None,
) -> None:
    """Write a stored run as JSON or CSV."""
    from gpuvs.store.export import write_csv, write_json

    with _usage_errors():
        if format not in ("json", "csv"):
            raise UsageError(f"unknown format {format!r}; accepted: json, csv")
        store = _open_store(db)
        if run_id == "latest":
            run_id = store.latest_run_id() or run_id
        record = store.get_run(run_id)
        path = output or Path(f"{record.run_id}.{format}")
        (write_json if format == "json" else write_csv)(path, record,
                                                        store.measurements(record.run_id))
    _console().print(f"wrote {path}")


@app.command(name="list")
def list_() -> None:
    """Workloads (variants, axes, default sizes), backends and stopping criteria."""
    from gpuvs import backends, criteria, workloads
    from gpuvs.units import size

    out = _console()
    out.print("[bold]workloads[/bold]")
    for w in workloads.REGISTRY.all():
        out.print(f"  {w.name:<12} {w.description}")
        out.print(f"  {'':<12} variants: {', '.join(w.variants)}; dtypes: {', '.join(w.dtypes)}")
        for params in w.param_sets():
            axes = " ".join(f"{k}={v}" for k, v in params) or "(no axes)"
            sizes = ", ".join(size(s) for s in w.default_sizes(params))
            out.print(f"  {'':<12} {axes}: sizes {sizes}")
    out.print("[bold]backends[/bold]")
    for b in backends.REGISTRY.all():
        installed = f"installed {b.version()}" if b.version() else "not installed"
        out.print(f"  {b.name:<12} devices: {', '.join(b.device_kinds)}; dtypes: "
                  f"{', '.join(b.dtypes)}; {installed}")
    out.print(f"[bold]criteria[/bold]\n  {', '.join(criteria.names())}")
    out.print("Which devices each backend can use here: `gpuvs env`.")


@app.command(name="env")
def env_() -> None:
    """This machine: CPU, BLAS and threads, GPUs, driver, and each backend's availability."""
    from rich.table import Table

    from gpuvs import backends, env

    out = _console()
    facts = env.collect()
    t = Table(title=f"environment {facts.fingerprint}", show_header=False, title_justify="left")
    for label, value in env.describe(facts):
        t.add_row(label, value)
    out.print(t)
    b = Table(title="backends", title_justify="left")
    for col in ("backend", "device", "available", "version / why not"):
        b.add_column(col)
    for row in env.backend_rows(backends.REGISTRY.all()):
        b.add_row(row["backend"], row["device"], "yes" if row["available"] else "no",
                  row["version"] if row["available"] else row["reason"])
    out.print(b)


def main() -> None:
    app()


if __name__ == "__main__":
    sys.exit(main())
