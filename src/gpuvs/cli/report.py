"""`gpuvs report` and `gpuvs plot`: a run as one self-contained HTML page, or its plots
as PNG files — from the results database, or from a JSON export made on another machine."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from gpuvs.cli.app import app, usage_errors
from gpuvs.cli.options import DbOption, open_store
from gpuvs.cli.output import file_stem, warn_thinned, write_file, write_report
from gpuvs.errors import UsageError
from gpuvs.jobs.recording import machine_ceilings
from gpuvs.report.console import console

RunIdArg = Annotated[str | None, typer.Argument(
    help="A run id, or 'latest'. Leave it out with --from.", show_default=False)]
FromOpt = Annotated[Path | None, typer.Option(
    "--from", metavar="RUN.json",
    help="Rebuild from a run exported with `gpuvs export RUN_ID -f json` (or --json), e.g. "
         "on a machine other than the one that ran it.")]


@app.command()
def report(
    run_id: RunIdArg = None, from_json: FromOpt = None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", metavar="PATH", help="Where to write; default RUN_ID.html.")] = None,
    history: Annotated[bool, typer.Option(
        "--history", help="Instead of one run: every case's time across the stored runs, "
                          "with its CI, step changes marked (default gpuvs-history.html).")
    ] = False,
    workload: Annotated[str | None, typer.Option(
        "--workload", "-w", metavar="WORKLOAD", help="With --history: one workload only.")
    ] = None,
    by: Annotated[str, typer.Option(
        "--by", metavar="date|commit", help="With --history: runs along x by date or by commit.")
    ] = "date",
    db: DbOption = None,
) -> None:
    """Write a run's report: one HTML file with the verdict, plots, tables, method and
    environment; it makes no network request, so it opens anywhere and prints. With
    --history, the store's runs over time instead."""
    if history:
        _history(run_id, from_json, output, workload, by, db)
        return
    with usage_errors():
        record, measurements, ceilings = load_run(run_id, from_json, db)
        path = output or Path(f"{file_stem(record.run_id)}.html")
        write_report(path, record, measurements, ceilings, db)
    console().print(f"wrote {path}")


@app.command()
def plot(
    run_id: RunIdArg = None, from_json: FromOpt = None,
    png: Annotated[Path | None, typer.Option(
        "--png", metavar="DIR",
        help="Folder for the PNG files (one per plot of the report); default RUN_ID-plots.")
    ] = None,
    db: DbOption = None,
) -> None:
    """Write the report's plots as PNG files, for slides."""
    from gpuvs.report.draw import to_png
    from gpuvs.report.plots import all_plots
    with usage_errors():
        record, measurements, ceilings = load_run(run_id, from_json, db)
        folder = png or Path(f"{file_stem(record.run_id)}-plots")
        plots = all_plots(measurements, ceilings)
        for p in plots:
            write_file(folder / f"{p.name}.png", to_png(p), "plot", db)
    out = console()
    if not plots:
        out.print(f"no plot: no case of run {record.run_id} finished")
    for p in plots:
        out.print(f"wrote {folder / p.name}.png")


def load_run(run_id: str | None, from_json: Path | None, db: str | None
             ) -> tuple[Any, list[Any], list[Any]]:
    """(run, measurements, ceilings) from the database or from a JSON export."""
    if (run_id is None) == (from_json is None):
        raise UsageError("give a RUN_ID or --from RUN.json (one of the two)")
    if from_json is not None:
        from gpuvs.store.export import load_json
        record, measurements, ceilings = load_json(from_json)
    else:
        store = open_store(db, reading=True)
        wanted = str(run_id)  # given: the check above refused neither
        if wanted == "latest":
            wanted = store.latest_run_id() or wanted
        record = store.get_run(wanted)
        measurements = store.measurements(record.run_id)
        ceilings = machine_ceilings(store, record)
    warn_thinned(str(from_json or record.run_id), measurements)
    return record, measurements, ceilings


HISTORY_RUNS = 200


def _history(run_id: str | None, from_json: Path | None, output: Path | None,
             workload: str | None, by: str, db: str | None) -> None:
    from gpuvs.report.pages import render_history
    with usage_errors():
        if run_id is not None or from_json is not None:
            raise UsageError("--history draws the whole store: give no RUN_ID or --from")
        if by not in ("date", "commit"):
            raise UsageError(f"--by {by!r}: accepted: date, commit")
        store = open_store(db, reading=True)
        found = [(run, ms) for run in store.runs(HISTORY_RUNS)
                 if (ms := store.measurements(run.run_id))
                 and (workload is None or any(m.case.workload == workload for m in ms))]
        if not found:
            raise UsageError("no stored run to draw" + (f" with workload {workload!r}"
                                                        if workload else ""))
        path = output or Path("gpuvs-history.html")
        write_file(path, render_history(found, by, workload), "history", db)
    console().print(f"wrote {path}")
