"""A plan before it runs: what it would measure (`print_plan`, for `--dry-run`), how long
it takes (`plan_estimate`, `estimate_line`, from this set-up's stored cases), and what
a run measures besides time (`energy_header`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gpuvs.model import on_gpu
from gpuvs.report.console import console

if TYPE_CHECKING:
    from gpuvs.config import RunConfig
    from gpuvs.execute.estimate import Estimate
    from gpuvs.model import Environment
    from gpuvs.store.sql import SqlStore


def energy_header(config: RunConfig) -> list[str]:
    """What a run measures besides time, said before it starts: energy where asked for,
    and on which devices a counter can answer."""
    from gpuvs.backends.base import machine_has_gpu
    from gpuvs.machine import energy
    if not config.energy:
        return []
    gpus = [d for d in config.devices if on_gpu(d) and machine_has_gpu()]
    lines = [f"energy: each case sampled at least {energy.ENERGY_WINDOW_S:g} s where a counter "
             "can read it" + ("; each GPU's idle power measured before the first case"
                              if gpus else "")]
    for d in gpus:
        read = energy.gpu_millijoules(d)
        if isinstance(read, energy.NoEnergy):
            lines.append(f"GPU energy on {d}: {read.words}")
    if "cpu" in config.devices:
        found = energy.cpu_microjoules()
        if isinstance(found, energy.NoEnergy):
            declared = (f"; {config.cpu_watts:g} W declared (--cpu-watts), not measured"
                        if config.cpu_watts else "")
            lines.append(f"CPU energy: {found.words}{declared}")
        else:
            lines.append("CPU energy: RAPL's package and DRAM counters, the whole package's")
    return lines


def print_plan(cases: Sequence[Any], config: RunConfig, estimated: Estimate) -> None:
    """What a run would measure: the case count and its estimated time, then per
    workload its backends, devices, sizes and the values of each of its axes — for
    `--dry-run`, before committing an hour to a plan."""
    from collections import defaultdict

    from gpuvs import units
    out = console()
    by: dict[str, list[Any]] = defaultdict(list)
    for c in cases:
        by[c.workload].append(c)
    out.print(f"{len(cases)} cases, {estimate_line(estimated, config)}; nothing was run "
              "(--dry-run)", markup=False)
    for name, cs in by.items():
        targets = sorted({f"{c.backend} on {c.device}" for c in cs})
        sizes = sorted({c.size for c in cs})
        shown = ", ".join(units.size(n) for n in sizes[:8]) + (" …" if len(sizes) > 8 else "")
        axes: dict[str, set[str]] = defaultdict(set)
        for c in cs:
            for k, v in c.params:
                axes[k].add(v)
        named = "".join(f"; {k} {', '.join(sorted(v))}" for k, v in sorted(axes.items()))
        out.print(f"  {name}: {len(cs)} cases; {', '.join(targets)}; sizes {shown}{named}",
                  markup=False, highlight=False)


def plan_estimate(cases: Sequence[Any], config: RunConfig, store: SqlStore | None = None,
                  db: str | None = None, environment: Environment | None = None) -> Any:
    """How long the plan takes (`execute.estimate`): from this machine's stored cases of
    its workloads — in `store`, or at `db` if a store is there (a dry run creates none)
    — and whether the machine has been busy over the last 15 minutes and still is over
    the last one: the 15-minute load alone kept a machine whose test suite had just ended
    busy, and `make run` then said "about 6 min" of a run that took 32 s."""
    from gpuvs.execute.estimate import estimate
    from gpuvs.machine import contention, env
    fingerprint = (environment or env.collect()).fingerprint
    past = _past(store, db, fingerprint, sorted({c.workload for c in cases}))
    busy = contention.loaded(minutes=15) and contention.loaded(minutes=1)
    return estimate(tuple(cases), config, past, busy=busy)


def _past(store: SqlStore | None, db: str | None, fingerprint: str,
          workloads: list[str]) -> list[Any]:
    """This set-up's stored cases of these workloads, with their runs' budget and passes."""
    from gpuvs.config import RunConfig
    from gpuvs.errors import StoreError
    from gpuvs.execute.estimate import Past
    from gpuvs.store import open_store as open_any
    if store is not None:
        rows = store.history(fingerprint, workloads)
    else:
        try:
            opened = open_any(db, reading=True)
        except StoreError:  # no store yet, or none readable: nothing is known
            return []
        try:
            rows = opened.history(fingerprint, workloads)
        finally:
            opened.close()
    default = RunConfig()
    return [Past(m, float(cfg.get("budget_s", default.budget_s)),
                 int(cfg.get("passes", default.passes))) for cfg, m in rows]


def estimate_line(estimated: Estimate, config: RunConfig) -> str:
    """'about 4 min 50 s (from this machine's past runs for 40 of 54 cases; budget 0.4 s
    a case, 5 passes)': to 10 s below ten minutes, to the minute above."""
    seconds = estimated.seconds
    minutes, rest = divmod(round(seconds / 10) * 10, 60)
    about = (f"about {seconds / 60:.0f} min" if seconds >= 600 else
             f"about {minutes} min" + (f" {rest} s" if rest else "") if seconds >= 90 else
             f"about {max(seconds, 1):.0f} s")
    known, measured = estimated.from_history, estimated.measured
    source = ("no case can run here" if not measured else
              "from this machine's past runs" if known == measured else
              f"from this machine's past runs for {known} of {measured} cases" if known else
              "a model: no past run of these cases on this machine")
    passes = f"{config.passes} pass{'es' if config.passes > 1 else ''}"
    busy = "; the machine busy over the last 15 min" if estimated.busy else ""
    return f"{about} ({source}; budget {config.budget_s:g} s a case, {passes}{busy})"
