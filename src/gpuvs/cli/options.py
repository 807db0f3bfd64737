"""The flags the commands share, and their parsing: each option once (its metavar and its
help), repeated and comma-separated lists alike (`split`), a run's settings built through
the one path (`build_config` → `config.build`: defaults < `[tool.gpuvs]` < flags)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuvs.errors import UsageError

if TYPE_CHECKING:
    from gpuvs.store.sql import SqlStore


def split(values: list[str] | None, flag: str = "", accepted: str = "") -> tuple[str, ...]:
    """Repeated options and comma lists alike: `-b numpy,torch -b jax`. A `flag` given
    with nothing in it (`-b ''`) is refused, naming `accepted`: read as not given, it
    would have run every backend."""
    if flag and any(not item.strip(" ,") for item in values or ()):
        raise UsageError(f"{flag} was given an empty value; accepted: {accepted}")
    return tuple(v.strip() for item in values or () for v in item.split(",") if v.strip())


DEVICES = "cpu, cuda, cuda:N"
SIZES = "a list (1000,4096) or a range START:STOP[:FACTOR] (1e3:1e7, 64:4096:2)"


def _not_empty(value: str | None) -> str | None:
    """An option given as '' is refused where it is read, whatever the command does next
    (a dry run opens no store, and would have let `--db ''` pass)."""
    if value is not None and not value.strip():
        raise typer.BadParameter("an empty value; give a SQLite path or a "
                                 "postgresql://USER@HOST/DB URL")
    return value


DbOption = Annotated[str | None, typer.Option(
    "--db", metavar="PATH", callback=_not_empty,
    help="Results database (SQLite path). Default: $GPUVS_DB, else the user data directory.")]


def is_export(spec: str) -> bool:
    """Whether a run named on the command line is a JSON export's path (gzipped or not),
    not a run id of a store: files carried off another machine need no store."""
    return spec.endswith((".json", ".json.gz")) or Path(spec).is_file()


def open_store(db: str | None, reading: bool = False) -> SqlStore:
    """The results store (`--db`); a command that only reads it never creates one."""
    from gpuvs.store import open_store
    return open_store(db, reading)


VariantOpt = Annotated[list[str] | None, typer.Option(
    "--variant", metavar="VARIANT",
    help="correct (the default), as_written (the post's own timing method, replayed) or "
         "tuned (the fix a performance engineer would apply), where the workload has it.")]
BackendOpt = Annotated[list[str] | None, typer.Option(
    "--backend", "-b", metavar="BACKEND", help="numpy, torch, cupy, jax; default: all.")]
DeviceOpt = Annotated[list[str] | None, typer.Option(
    "--device", "-d", metavar="DEVICE", help="cpu, cuda or cuda:N; default: cpu and cuda.")]
DtypeOpt = Annotated[list[str] | None, typer.Option(
    "--dtype", metavar="DTYPE",
    help="float16, bfloat16, float32, float64; default: the workload's (float32).")]
SizesOpt = Annotated[list[str] | None, typer.Option(
    "--sizes", "-s", metavar="SIZES",
    help="Sizes: a list (1000,4096) or a range START:STOP[:FACTOR] (1e3:1e7 steps ×10; "
         "64:4096:2 doubles).")]
BudgetOpt = Annotated[float | None, typer.Option(
    "--budget", metavar="SECONDS",
    help="Sampling seconds per case, shared over its processes (default 0.4). More "
         "budget, tighter intervals where one process's samples set them.")]
TimeoutOpt = Annotated[float | None, typer.Option(
    "--timeout", metavar="SECONDS",
    help="Seconds before a case is killed and recorded as timeout (default 300).")]
CriterionOpt = Annotated[str | None, typer.Option(
    "--criterion", metavar="NAME[:K=V]",
    help="When to stop sampling: median-ci[:rel=0.01], stdrel[:max_noise=0.005], "
         "fixed[:n=7].")]
FORMATS = ("plain", "md", "json")
FormatOpt = Annotated[str, typer.Option(
    "--format", metavar="plain|md|json",
    help="How tables print: plain text (the terminal's), md (GitHub-flavoured markdown, "
         "also appended to $GITHUB_STEP_SUMMARY when it is set) or json.")]
JsonOpt = Annotated[Path | None, typer.Option(
    "--json", metavar="PATH",
    help="Also write the run (config, environment, raw samples) here.")]
WorkloadsOpt = Annotated[list[str] | None, typer.Option(
    "--workload", "-w", metavar="WORKLOAD",
    help="Workload(s) to run, each whole; default: the first-answer suite (square products "
         "and x *= 5 over sizes; --all for every workload). See `gpuvs list`.")]
ColdOpt = Annotated[bool, typer.Option(
    "--cold", help="Flush the caches before every timed call (GPU L2, CPU last-level "
                   "cache); one call per sample.")]
PassesOpt = Annotated[int | None, typer.Option(
    "--passes", metavar="N",
    help="Sample each case in N processes, in turns, each a fresh worker with 1/N of the "
         "budget, and summarise over them (the median of the processes' medians; from 3 "
         "processes the CI reaches where a repeat's figure may land; from 10 it narrows "
         "as processes are added: 20 catch a 20 % launch-bound change that 5 cannot). "
         "Default: 5; a GPU call of 200 µs or more with its data resident, whose first "
         "two processes agree, takes two. 1 for one process.")]
ResumeOpt = Annotated[str | None, typer.Option(
    "--resume", metavar="RUN_ID|latest",
    help="Finish an interrupted run: skip its recorded cases, run the rest. `latest`: the "
         "most recent run that did not finish.")]
DryRunOpt = Annotated[bool, typer.Option(
    "--dry-run", help="Check the options and print the plan (how many cases, of what), "
                      "then stop: nothing is measured or stored.")]
EnergyOpt = Annotated[bool, typer.Option(
    "--energy", help="Energy per call: sample each case at least 4 s where an energy counter "
                     "can be read (NVML on a GPU, RAPL on the CPU; NVML's counter moves in "
                     "100 ms steps), and measure each GPU's idle power first (1 s), for the "
                     "energy above idle. On without the flag wherever a case's samples span "
                     "4 s anyway.")]
CpuWattsOpt = Annotated[float | None, typer.Option(
    "--cpu-watts", metavar="WATTS",
    help="Declare the CPU's power where RAPL cannot be read (a VM): CPU energy per call is "
         "then WATTS × time per call, labelled declared, not measured.")]
PriceOpt = Annotated[list[str] | None, typer.Option(
    "--price", metavar="NAME=PRICE",
    help="Prices for cost per call: cpu=, gpu= (an hour of each machine), kwh= (energy), "
         "e.g. --price cpu=0.40,gpu=2.50. No defaults: without prices, no cost.")]
AxisOpt = Annotated[list[str] | None, typer.Option(
    "--axis", "-a", metavar="NAME=VALUE",
    help="Only the cases whose parameter NAME is VALUE (repeatable), e.g. -a shape=square "
         "-a data=resident for one case per size; `gpuvs list` names the parameters.")]


def build_config(workloads: tuple[str, ...], variant: list[str] | None,
                  backend: list[str] | None, device: list[str] | None,
                  dtype: list[str] | None, sizes: list[str] | None, budget: float | None,
                  timeout: float | None, criterion: str | None, cold: bool = False,
                  passes: int | None = None, axis: list[str] | None = None,
                  full_suite: bool = False, energy: bool = False,
                  cpu_watts: float | None = None, price: list[str] | None = None,
                  defaults: Mapping[str, Any] | None = None) -> Any:
    """A run's settings from a command's flags, through the one path every command and
    face takes (`config.build`): RunConfig's defaults < the command's own (`defaults`) <
    `[tool.gpuvs]` < the flags given, then validated — so a 0 given for a budget is
    refused, never read as "not given"."""
    from gpuvs import backends
    from gpuvs import config as cfg
    from gpuvs.workloads.base import ITEMSIZE
    return cfg.build({
        "workloads": workloads, "variants": split(variant, "--variant", ", ".join(
            cfg.VARIANTS)),
        "backends": split(backend, "-b/--backend", ", ".join(backends.names())),
        "devices": split(device, "-d/--device", DEVICES),
        "dtypes": split(dtype, "--dtype", ", ".join(ITEMSIZE)),
        "sizes": cfg.parse_sizes(split(sizes, "-s/--sizes", SIZES)),
        "budget_s": budget, "timeout_s": timeout,
        "criterion": criterion, "cold": cold or None, "passes": passes,
        "axes": tuple(axis or ()), "full_suite": full_suite or None,
        "energy": energy or None, "cpu_watts": cpu_watts,
        "prices": cfg.parse_prices(price or ()),
    }, defaults=defaults)


def check_format(fmt: str) -> str:
    """One of FORMATS, or a UsageError naming what would be accepted."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}; accepted: {', '.join(FORMATS)}")
    return fmt
