"""`gpuvs ceilings`: what this machine can do, measured once per environment."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from gpuvs.cli.app import (
    BackendOpt,
    BudgetOpt,
    DbOption,
    FormatOpt,
    app,
    check_format,
    console,
    emit_tables,
    open_store,
    split,
    usage_errors,
)
from gpuvs.cli.recorded import Recording, recorded
from gpuvs.errors import UsageError
from gpuvs.report.documents import cases_document


@app.command()
def ceilings(
    backend: BackendOpt = None, budget: BudgetOpt = None, db: DbOption = None,
    refresh: Annotated[bool, typer.Option(
        "--refresh/--no-refresh",
        help="Measure again even if this machine's ceilings are already stored.")] = False,
    fmt: FormatOpt = "plain",
    save_profile: Annotated[str | None, typer.Option(
        "--save-profile", metavar="NAME",
        help="Also keep them as device profile NAME, which `gpuvs predict --target NAME` "
             "predicts for (`gpuvs profiles` lists them).")] = None,
) -> None:
    """Measure what this machine can do: matmul peaks, bandwidths, transfer and launch costs.

    Cached per environment fingerprint and reused by every run on the same set-up. Ctrl-C
    keeps what was measured; the run is then interrupted and not used as the machine's
    ceilings (`--refresh` measures them again).
    """
    from gpuvs import backends as registry
    from gpuvs.analysis import ceilings as ceil
    from gpuvs.config import RunConfig
    from gpuvs.machine import env
    from gpuvs.machine.contention import busy_line, snapshot
    from gpuvs.store.runs import find_ceilings_run
    began = snapshot()  # what other processes do from here is named below, as `run` does
    with usage_errors():
        check_format(fmt)
        store = open_store(db)
        names = (split(backend, "-b/--backend", ", ".join(registry.names()))
                 or registry.names())
        for name in names:
            registry.get(name)
        if save_profile is not None:  # said before minutes of measuring, not after
            _check_saving(save_profile, names)
        config = RunConfig(budget_s=1.0 if budget is None else budget,
                           timeout_s=600.0).validate()
    facts = env.collect()
    record = None if refresh else find_ceilings_run(store, facts)
    if record is not None:
        ms = store.measurements(record.run_id)
        emit_tables([ceilings_table(ms, record.run_id, record.environment.fingerprint)], fmt,
                    console(), lambda: cases_document("ceilings", ms, run=record))
        code = 0
    else:
        code, run_id = _measured(store, config, ceil.probe_cases(names), facts, fmt,
                                 busy_line(since=began))
        record = store.get_run(run_id)
    if save_profile is not None and record.status == "finished":
        from gpuvs.predicting.profile import save_from_run
        with usage_errors():
            console().print(f"saved profile {save_from_run(save_profile, record, store)}",
                            markup=False, highlight=False)
    raise typer.Exit(code)


def _check_saving(name: str, backends: tuple[str, ...]) -> None:
    """A profile may be saved under `name` from these backends' probes here: a valid
    name, no shipped profile's, on a machine with a GPU and with a backend that runs on
    it (a profile without a GPU predicts nothing, which predict would only say later)."""
    from gpuvs import backends as registry
    from gpuvs.backends.base import machine_has_gpu
    from gpuvs.predicting.profile import check_saving
    check_saving(name)
    if not machine_has_gpu():
        raise UsageError(f"--save-profile {name}: this machine has no GPU, and a profile "
                         "of it would predict no GPU; run `gpuvs ceilings --save-profile "
                         f"{name}` on the GPU's machine")
    if not any("cuda" in registry.get(b).device_kinds for b in backends):
        raise UsageError(f"--save-profile {name}: -b {','.join(backends)} measures no GPU "
                         "ceiling, and a profile without one predicts no GPU; add torch, "
                         "cupy or jax")


def _measured(store: Any, config: Any, cases: list[Any], facts: Any, fmt: str,
              busy: str | None) -> tuple[int, str]:
    """The probes run on the command skeleton: its exit code, and the run's id."""
    from gpuvs.execute import runner
    from gpuvs.model import RunKind

    named: list[str] = []  # the run's id, once it has one

    def header(run_id: str) -> list[str]:
        named.append(run_id)
        return [*([busy] if busy else []),
                f"run {run_id}: {len(cases)} probes of this machine's ceilings"]

    def execute(run: Any, shown: Any) -> Any:
        with shown(len(cases)) as advance:
            return runner.execute(run, cases, config, on_result=advance).counts

    code = recorded(store, Recording(
        "ceilings", RunKind.CEILINGS, {"budget_s": config.budget_s}, header, execute,
        tables=lambda ms, _: [ceilings_table(ms, named[0], facts.fingerprint)],
        closing=lambda run_id, counts: [],
        again="`gpuvs ceilings --refresh` measures them again.", environment=facts,
        failed_statuses=frozenset()), fmt=fmt)
    return code, named[0]


def ceilings_table(measurements: list[Any], run_id: str, fingerprint: str) -> Any:
    """The ceilings read off the probes, and a note for each backend and device where
    they could not be measured."""
    from gpuvs.analysis.ceilings import contended_note, read
    from gpuvs.table import Table
    from gpuvs.units import rate, seconds

    rows = tuple((c.name, c.backend, c.device,
                  seconds(c.value) if c.unit == "s" else rate(c.value, c.unit))
                 for c in read(measurements))
    missing: dict[tuple[str, str], str] = {}
    for m in measurements:
        if m.summary is None:
            missing.setdefault((m.case.backend, m.case.device), f"{m.status.value}: {m.reason}")
    notes = tuple(f"not measured on {backend} {device}: {why}"
                  for (backend, device), why in sorted(missing.items()))
    if disturbed := contended_note(read(measurements)):
        notes += (disturbed,)
    return Table(f"ceilings · run {run_id} · environment {fingerprint}",
                 ("ceiling", "backend", "device", "measured"), rows, notes,
                 wrapping=frozenset({"ceiling"}))
