"""`gpuvs ceilings`: what this machine can do, measured once per environment."""

from __future__ import annotations

from typing import Annotated

import typer

from gpuvs.cli.app import app, usage_errors
from gpuvs.cli.options import (
    BackendOpt,
    BudgetOpt,
    DbOption,
    FormatOpt,
    check_format,
    open_store,
    split,
)
from gpuvs.cli.output import finish, listening, narration
from gpuvs.errors import UsageError
from gpuvs.report.console import console


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
    from gpuvs import config as cfg
    from gpuvs.analysis.ceilings import probe_cases
    from gpuvs.jobs import ceilings as machine
    from gpuvs.machine.contention import busy_line, snapshot
    began = snapshot()  # what other processes do from here is named below, as `run` does
    with usage_errors():
        check_format(fmt)
        config = cfg.build({"budget_s": budget}, defaults=machine.DEFAULTS)
        names = (split(backend, "-b/--backend", ", ".join(registry.names()))
                 or registry.names())
        for name in names:
            registry.get(name)
        if save_profile is not None:  # said before minutes of measuring, not after
            _check_saving(save_profile, names)
        store = open_store(db)

    probes = len(probe_cases(names))

    def header(run_id: str) -> list[str]:
        busy = busy_line(since=began)
        return [*([busy] if busy else []),
                f"run {run_id}: {probes} probes of this machine's ceilings"]

    with usage_errors():
        done = machine.probe(store, config, names, refresh=refresh,
                             listener=listening(narration(fmt), header))
    code = finish(done, "ceilings", fmt, failed_statuses=frozenset())
    if save_profile is not None and done.record.status == "finished":
        from gpuvs.predicting.profile import save_from_run
        with usage_errors():
            console().print(f"saved profile {save_from_run(save_profile, done.record, store)}",
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
