"""Commands over stored runs and this machine: show, export, schema, list, env."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpuvs.cli.app import app, usage_errors
from gpuvs.cli.options import DbOption, FormatOpt, check_format, is_export, open_store
from gpuvs.cli.output import (
    check_writable,
    emit_tables,
    file_stem,
    said,
    warn_thinned,
    write_file,
)
from gpuvs.errors import UsageError
from gpuvs.jobs.recording import machine_ceilings
from gpuvs.report.console import console
from gpuvs.store.output import CSV, JSON


@app.command()
def show(run_id: Annotated[str, typer.Argument(
        help="A run id, 'latest', or a run's JSON export (gzipped or not: docs/runs keeps "
             "them so), e.g. one carried off another machine.")],
         db: DbOption = None, fmt: FormatOpt = "plain") -> None:
    """Print a stored run's tables again, as its command printed them (for a `gpuvs seeds`
    run, the posts' tables and the posts answered)."""
    from gpuvs.report import views
    from gpuvs.report.documents import cases_document
    from gpuvs.report.history import commit_of, machine_of
    with usage_errors():
        check_format(fmt)
        if is_export(run_id):  # its ceilings travel with it; no store is opened
            from gpuvs.store.export import load_json
            record, measurements, ceilings = load_json(Path(run_id))
        else:
            store = open_store(db, reading=True)
            if run_id == "latest":
                run_id = store.latest_run_id() or run_id
            record = store.get_run(run_id)
            measurements = store.measurements(run_id)
            ceilings = machine_ceilings(store, record)
        warn_thinned(f"run {record.run_id}", measurements)
        shown = views.of(record.kind)
        tables = [*shown.tables(record, measurements, ceilings),
                  *(shown.more(record, measurements, ceilings) if shown.more else [])]
    out = console()
    if fmt != "json":
        out.print(said(f"run {record.run_id} · {record.kind} · {record.status} · started "
                       f"{record.started_at} · machine {machine_of(record)} · commit "
                       f"{commit_of(record)} · environment "
                       f"{record.environment.fingerprint}", fmt),
                  markup=False, highlight=False)
    emit_tables(tables, fmt, out, lambda: cases_document("show", measurements, ceilings,
                                                         record))


@app.command()
def export(
    run_id: Annotated[str, typer.Argument(help="A run id, or 'latest'.")],
    format: Annotated[str, typer.Option(
        "--format", "-f", metavar="json|csv",
        help="json: everything needed to redraw the run elsewhere (config, environment, raw "
             "samples); csv: one tidy row per case.")] = "json",
    output: Annotated[str | None, typer.Option(
        "--output", "-o", metavar="PATH|-",
        help="Where to write; - for standard output; default RUN_ID.json/.csv.")] = None,
    db: DbOption = None,
) -> None:
    """Write a stored run as JSON or CSV (the CSV carries the run's machine, GPU, driver,
    library versions and git commit on every row, for grouping runs in pandas)."""
    import sys

    from gpuvs.store.export import csv_text, json_text
    with usage_errors():
        if format not in ("json", "csv"):
            raise UsageError(f"unknown format {format!r}; accepted: json, csv")
        if output not in (None, "-"):
            check_writable(db, (Path(output), JSON if format == "json" else CSV))
        store = open_store(db, reading=True)
        if run_id == "latest":
            run_id = store.latest_run_id() or run_id
        record = store.get_run(run_id)
        measurements = store.measurements(record.run_id)
        text = (json_text(record, measurements, machine_ceilings(store, record))
                if format == "json" else csv_text(record, measurements))
        if output == "-":
            sys.stdout.write(text)
            sys.stdout.flush()
            return
        path = Path(output) if output else Path(f"{file_stem(record.run_id)}.{format}")
        write_file(path, text, "export", db)
    console(stderr=True).print(f"wrote {path}", markup=False, highlight=False)


@app.command()
def schema(name: Annotated[str, typer.Argument(
        metavar="run|output",
        help="run: a run export (`gpuvs export -f json`, `--json`); output: what a command "
             "prints with --format json.")]) -> None:
    """Print a JSON Schema (draft 2020-12) that gpuvs's machine-read output keeps to, for
    a program to validate what it reads (docs/json.md)."""
    import sys

    from gpuvs.report.documents import schema as output_schema
    from gpuvs.store.export import schema as run_schema
    with usage_errors():
        schemas = {"run": run_schema, "output": output_schema}
        if name not in schemas:
            raise UsageError(f"unknown schema {name!r}; accepted: {', '.join(schemas)}")
    sys.stdout.write(schemas[name]())


@app.command(name="list")
def list_() -> None:
    """Workloads (variants, axes, default sizes), backends, stopping criteria and seeds."""
    from gpuvs import backends, seeds, workloads
    from gpuvs.measuring import criteria
    from gpuvs.units import size
    out = console()
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
    out.print("[bold]seeds[/bold] (gpuvs seeds --seed NNN)")
    for seed in seeds.REGISTRY.all():
        out.print(f"  {seed.name:<12} {seed.title}")
    out.print("Which devices each backend can use here: `gpuvs env`.")


@app.command(name="env")
def env_() -> None:
    """This machine: CPU, BLAS and threads, GPUs, driver, and each backend's availability."""
    from rich.table import Table
    from rich.text import Text

    from gpuvs import backends
    from gpuvs.machine import env
    out = console()
    facts = env.collect()
    t = Table(title=f"environment {facts.fingerprint}", show_header=False, title_justify="left")
    # Cells are text, not markup: a reason such as "pip install 'gpuvs[jax]'" keeps its
    # brackets, which rich would read as a style tag and drop.
    for label, value in env.describe(facts):
        t.add_row(Text(label), Text(str(value)))
    out.print(t)
    b = Table(title="backends", title_justify="left")
    for col in ("backend", "device", "available", "version / why not"):
        b.add_column(col)
    for row in env.backend_rows(backends.REGISTRY.all()):
        b.add_row(*(Text(str(cell)) for cell in (
            row["backend"], row["device"], "yes" if row["available"] else "no",
            row["version"] if row["available"] else row["reason"])))
    out.print(b)


