"""`gpuvs ceilings`: what this machine can do, measured once per environment."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from gpuvs.cli.app import (
    BackendOpt,
    BudgetOpt,
    DbOption,
    app,
    console,
    open_store,
    split,
    usage_errors,
)
from gpuvs.report.progress import progress


@app.command()
def ceilings(
    backend: BackendOpt = None, budget: BudgetOpt = None, db: DbOption = None,
    refresh: Annotated[bool, typer.Option(
        "--refresh/--no-refresh",
        help="Measure again even if this machine's ceilings are already stored.")] = False,
) -> None:
    """Measure what this machine can do: matmul peaks, bandwidths, transfer and launch costs.

    Cached per environment fingerprint and reused by every run on the same set-up.
    """
    from gpuvs import backends as registry
    from gpuvs.analysis import ceilings as ceil
    from gpuvs.config import RunConfig
    from gpuvs.machine import env
    from gpuvs.store.runs import find_ceilings_run
    with usage_errors():
        store = open_store(db)
        names = (split(backend, "-b/--backend", ", ".join(registry.names()))
                 or registry.names())
        for name in names:
            registry.get(name)
        config = RunConfig(budget_s=budget or 1.0, timeout_s=600.0).validate()
    facts = env.collect()
    record = None if refresh else find_ceilings_run(store, facts.fingerprint)
    if record is None:
        from gpuvs.execute import runner
        from gpuvs.model import RunKind
        from gpuvs.store.runs import start_run
        run = start_run(store, RunKind.CEILINGS, {"budget_s": config.budget_s}, facts)
        cases = ceil.probe_cases(names)
        with progress(len(cases)) as advance:
            runner.execute(run, cases, config, on_result=advance)
        run.finish()
        record = run.stored()
    _print_ceilings(store, record)


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
    out = console()
    out.print(t)
    missing: dict[tuple[str, str], str] = {}
    for m in measurements:
        if m.summary is None:
            missing.setdefault((m.case.backend, m.case.device), f"{m.status.value}: {m.reason}")
    for (backend, device), why in sorted(missing.items()):
        out.print(Text(f"not measured on {backend} {device}: {why}"))


