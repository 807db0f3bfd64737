"""`gpuvs seeds` as a function: the five posts' cases — each post's own timing method
replayed, and the correct measurement beside it — measured into one run."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING

from gpuvs import seeds
from gpuvs.config import RunConfig
from gpuvs.execute import runner
from gpuvs.jobs.recording import QUIET, Done, Job, Listener, Shown, record
from gpuvs.jobs.suite import calibrated
from gpuvs.model import Case, Environment, RunKind
from gpuvs.seeds.base import SeedOptions
from gpuvs.store.runs import RunHandle

if TYPE_CHECKING:
    from gpuvs.store.sql import SqlStore

# Sampling seconds a case: most cases meet their CI within it, and the run must fit in
# 8 minutes on a GPU machine (docs/seeds-h100.md says where the time goes). The command's
# default, through `config.build`'s defaults like every other.
DEFAULTS = {"budget_s": 0.1}


def chosen(names: Sequence[str]) -> tuple[str, ...]:
    """Seed names as registered ('000'); '2' and '002' alike; none named: all five.
    Unknown ones: a UsageError naming the known."""
    wanted = tuple(f"{int(n):03d}" if n.isdigit() else n for n in names) or seeds.names()
    for name in wanted:
        seeds.get(name)
    return wanted


def cases(names: Sequence[str], options: SeedOptions, devices: Sequence[str]) -> list[Case]:
    """Every chosen post's cases on the devices asked for (cuda means cuda:0), after the
    probes that calibrate them (`suite.calibrated`)."""
    kinds = {d.partition(":")[0] for d in devices}
    return list(calibrated([c for name in names for c in seeds.get(name).cases(options)
                            if c.device.partition(":")[0] in kinds]))


def again(names: Sequence[str], options: SeedOptions, config: RunConfig) -> str:
    """How to measure the posts of an interrupted run again: a command seeds accepts
    (it has no --resume), with the options that made the run, those left at their
    default left out. It once said `gpuvs seeds 000 002`, which seeds refuses."""
    import shlex
    words = ["gpuvs", "seeds", "--seed", ",".join(names)]
    words += ["--quick"] * options.quick + ["--compile"] * options.compile
    words += ["--data", options.cifar] if options.cifar else []
    words += ["--epochs", str(options.epochs)] if options.epochs else []
    default = RunConfig()
    given = {"-d": ",".join(config.devices) if config.devices != default.devices else None,
             "--budget": config.budget_s if config.budget_s != DEFAULTS["budget_s"] else None,
             "--timeout": config.timeout_s if config.timeout_s != default.timeout_s else None,
             "--energy": config.energy or None, "--cpu-watts": config.cpu_watts}
    for flag, value in given.items():
        words += ([flag] if value is True else [] if value is None else
                  [flag, f"{value:g}" if isinstance(value, float) else str(value)])
    return f"`{shlex.join(words)}` measures them again."


def replay(store: SqlStore, config: RunConfig, names: Sequence[str], options: SeedOptions, *,
           environment: Environment | None = None, listener: Listener = QUIET,
           expected: Mapping[str, Sequence[float]] | None = None) -> Done:
    """The chosen posts measured into a new run; `expected`, the plan's estimate of each
    case's passes, which the countdown follows (`runner.Pace`)."""
    todo = cases(names, options, config.devices)

    def execute(run: RunHandle, shown: Shown) -> Counter[str]:
        with shown(len(todo)) as advance:
            return runner.execute(run, todo, config, on_result=advance,
                                  expected=expected).counts

    return record(store, Job(
        RunKind.SEEDS,
        {"seeds": list(names), **asdict(options), "budget_s": config.budget_s,
         "timeout_s": config.timeout_s, "devices": list(config.devices),
         "energy": config.energy, "cpu_watts": config.cpu_watts, "passes": config.passes},
        execute, again(names, options, config),
        complete=lambda m: runner.complete(m, config.passes),
        environment=environment), listener)
