"""`gpuvs dist scaling` and `gpuvs dist collectives`: several ranks, one per device.

gpuvs starts the ranks itself through torchrun, keeps the clock on every case and saves
each case as it finishes; or, with --launched, it runs inside the user's own `torchrun`,
where rank 0 saves and prints and the other ranks only measure.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuvs.cli.app import app, usage_errors
from gpuvs.cli.options import DbOption, FormatOpt, JsonOpt, check_format, open_store, split
from gpuvs.cli.output import check_writable, finish, listening, narration
from gpuvs.store.output import JSON

if TYPE_CHECKING:
    from gpuvs.distributed.spec import Spec

dist_app = typer.Typer(
    help="Several processes, one per device: data-parallel scaling of seed 003's CNN and "
         "collective bandwidth, through torch.distributed (NCCL on GPUs, Gloo on CPUs).",
    no_args_is_help=True, add_completion=False, rich_markup_mode=None)
app.add_typer(dist_app, name="dist")

BackendOpt = Annotated[str | None, typer.Option(
    "--backend", metavar="nccl|gloo",
    help="Communication backend: nccl (one rank per GPU) or gloo (CPU processes). "
         "Default: nccl where CUDA is, else gloo.")]
NprocOpt = Annotated[int | None, typer.Option(
    "--nproc", metavar="N",
    help="Ranks: the largest N (scaling runs 1…N). Default: every GPU with nccl, 2 with "
         "gloo; with --launched, torchrun's WORLD_SIZE.")]
TimeoutOpt = Annotated[float, typer.Option(
    "--timeout", metavar="SECONDS",
    help="Seconds a case may take before every rank is killed and it is recorded as "
         "timeout.")]
SetupTimeoutOpt = Annotated[float, typer.Option(
    "--setup-timeout", metavar="SECONDS",
    help="Seconds the ranks may take to start (import torch, meet, build their process "
         "groups) before every rank is killed and the cases left are recorded as timeout.")]
LaunchedOpt = Annotated[bool, typer.Option(
    "--launched",
    help="Run inside the user's `torchrun --nproc-per-node N -m gpuvs dist …` (RANK, "
         "WORLD_SIZE, LOCAL_RANK from the environment) instead of starting the ranks.")]


@dist_app.command()
def collectives(
    backend: BackendOpt = None, nproc: NprocOpt = None,
    sizes: Annotated[list[str] | None, typer.Option(
        "--sizes", "-s", metavar="SIZES",
        help="Bytes: a list (4096,64KiB) or a range START:STOP[:FACTOR] (1KiB:1GiB steps ×4). "
             "Default: 1KiB:1GiB:4 on GPUs, 1KiB:64MiB:4 on CPUs.")] = None,
    collective: Annotated[list[str] | None, typer.Option(
        "--collective", "-c", metavar="NAME",
        help="all_reduce, all_gather, reduce_scatter, broadcast; default: all.")] = None,
    samples: Annotated[int, typer.Option(
        "--samples", metavar="N",
        help="Timed samples per case at least; more are taken while the 95 % "
             "CI of the median is wider than ±1 % and --budget lasts.")] = 10,
    budget: Annotated[float, typer.Option(
        "--budget", metavar="SECONDS",
        help="Sampling seconds per case at most, after the first --samples (0: exactly "
             "--samples); on CUDA as much again for the case's graph replays.")] = 1.0,
    timeout: TimeoutOpt = 120.0, setup_timeout: SetupTimeoutOpt = 120.0, db: DbOption = None,
    json_path: JsonOpt = None, launched: LaunchedOpt = False, fmt: FormatOpt = "plain",
) -> None:
    """Time all-reduce, all-gather, reduce-scatter and broadcast over a size sweep, check
    every result, and report algorithm and bus bandwidth (nccl-tests' conventions)."""
    from gpuvs import config as cfg
    from gpuvs.distributed import spec as dist_spec
    from gpuvs.distributed.bandwidth import COLLECTIVES

    with usage_errors():
        check_format(fmt)
        check_writable(db, (json_path, JSON))
        cfg.positive("--samples", samples)
        cfg.not_negative("--budget", budget)
        cfg.positive("--timeout", timeout, most=cfg.MAX_SECONDS)
        cfg.positive("--setup-timeout", setup_timeout, most=cfg.MAX_SECONDS)
        setup = dist_spec.resolve(backend, nproc, launched)
        cases = dist_spec.collective_cases(
            setup, split(sizes, "-s/--sizes", dist_spec.SIZES),
            split(collective, "-c/--collective", ", ".join(COLLECTIVES)))
        spec = dist_spec.Spec("collectives", setup, cases, samples=samples, budget_s=budget,
                         timeout_s=timeout, setup_timeout_s=setup_timeout, launched=launched,
                         extra={"sizes": sorted({c.size for c in cases}),
                                "collectives": split(collective)})
    raise typer.Exit(_execute(spec, db, json_path, fmt))


@dist_app.command()
def scaling(
    backend: BackendOpt = None, nproc: NprocOpt = None,
    steps: Annotated[int, typer.Option(
        "--steps", metavar="N", help="Timed steps per rank count in each round, with the "
                                     "all-reduce and as many without.")] = 10,
    rounds: Annotated[int, typer.Option(
        "--rounds", metavar="R",
        help="Rounds of every rank count, interleaved (1, 2, 1, 2, …): each N is paired "
             "with the N = 1 measured just before it, and the efficiency's interval is "
             "taken over the rounds.")] = 10,
    batch: Annotated[int, typer.Option(
        "--batch", metavar="B", help="Images per rank per step (weak scaling), or per step in all "
                                     "(--strong); the default is seed 003's batch.")] = 32,
    strong: Annotated[bool, typer.Option(
        "--strong", help="Strong scaling: the global batch stays --batch and is split over "
                         "the ranks. Default: weak scaling, --batch per rank.")] = False,
    energy: Annotated[bool, typer.Option(
        "--energy", help="Energy per image beside the time: after its timed steps each rank "
                         "count trains on for at least 4 s while every GPU's energy counter "
                         "is read (NVML), and each GPU's idle power is measured first; "
                         "faster and cheaper, or only faster?")] = False,
    timeout: TimeoutOpt = 120.0, setup_timeout: SetupTimeoutOpt = 120.0, db: DbOption = None,
    json_path: JsonOpt = None, launched: LaunchedOpt = False, fmt: FormatOpt = "plain",
) -> None:
    """Train seed 003's CNN data-parallel (DistributedDataParallel) on 1…N ranks: samples/s,
    step time, scaling efficiency, and each step split into compute and communication."""
    from gpuvs import config as cfg
    from gpuvs.distributed import spec as dist_spec

    with usage_errors():
        check_format(fmt)
        check_writable(db, (json_path, JSON))
        cfg.positive("--steps", steps)
        cfg.positive("--rounds", rounds)
        cfg.positive("--timeout", timeout, most=cfg.MAX_SECONDS)
        cfg.positive("--setup-timeout", setup_timeout, most=cfg.MAX_SECONDS)
        setup = dist_spec.resolve(backend, nproc, launched)
        cases = dist_spec.scaling_cases(setup, batch, strong, rounds)
        left_out = sorted(set(range(1, setup.nproc + 1)) - {c.size for c in cases})
        spec = dist_spec.Spec("scaling", setup, cases, steps=steps, rounds=rounds,
                              energy=energy,
                              timeout_s=timeout, setup_timeout_s=setup_timeout,
                              launched=launched, extra={"batch": batch, "strong": strong})
    said = (f"--strong: {batch} images do not split evenly over "
            f"{', '.join(map(str, left_out))} ranks; those counts are left out"
            if left_out else "")
    raise typer.Exit(_execute(spec, db, json_path, fmt, said))


def _execute(spec: Spec, db: str | None, json_path: Any, fmt: str = "plain",
             said: str = "") -> int:
    """Measure (`jobs.dist`; on a rank other than 0 under --launched, only take part),
    then show. A case whose ranks the watchdog had to kill (`timeout`) fails the command,
    as a crash does: the ranks did not finish it."""
    from gpuvs.jobs import dist
    from gpuvs.machine import contention
    from gpuvs.report.layout import status_line
    if spec.launched and os.environ.get("RANK") != "0":
        with usage_errors():
            took = dist.take_part(spec)
        _took_part(took, fmt)
        return 1 if took.get("lost") else 0
    began = contention.snapshot()
    with usage_errors():
        store = open_store(db)

    def header(run_id: str) -> list[str]:
        s = spec.setup
        busy = contention.busy_line(since=began)
        return [*([busy] if busy else []),
                f"run {run_id}: {len(spec.cases)} cases on up to {s.nproc} ranks"
                + (f" ({s.nodes} nodes × {s.per_node})" if s.nodes > 1 else "")
                + f" × {s.device} ({s.backend})", *([said] if said else []),
                *_energy_header(spec)]

    with usage_errors():
        done = dist.measure(store, spec, listener=listening(narration(fmt), header))
    return finish(done, "dist", fmt, [
        f"run {done.run_id} finished: {status_line(dict(done.counts))}. Saved to "
        f"{store.path}; `gpuvs show {done.run_id}` prints it again."], json_path,
        failed_statuses=dist.FAILED)


def _took_part(info: dict[str, Any], fmt: str) -> None:
    """On each node but rank 0's, its first rank says where the results went: rank 0
    alone saves and prints, maybe on another machine."""
    node, local = os.environ.get("GROUP_RANK", "0"), os.environ.get("LOCAL_RANK", "0")
    if node == "0" or local != "0" or not info.get("run_id"):
        return
    first = int(os.environ["RANK"])
    last = first + int(os.environ.get("LOCAL_WORLD_SIZE", "1")) - 1
    said = f"; it ended early: {info['lost']}" if info.get("lost") else ""
    narration(fmt).print(
        f"node {node} (ranks {first}–{last}) took part in run {info['run_id']}, which rank 0 "
        f"on {info['host']} saved to {info['db']} and printed{said}", markup=False,
        highlight=False)


def _energy_header(spec: Spec) -> list[str]:
    """What --energy does, said before the ranks start, and why a device cannot answer."""
    from gpuvs.machine import energy

    if not spec.energy:
        return []
    gpu = spec.setup.device != "cpu"
    line = (f"energy: after its timed steps each rank count trains at least "
            f"{energy.ENERGY_WINDOW_S:g} s more while every "
            + ("GPU's energy counter is read; each GPU's idle power is measured before the "
               "first case" if gpu else "rank reads the CPU's energy counters"))
    found = energy.gpu_millijoules("cuda:0") if gpu else energy.cpu_microjoules()
    return [line] + ([f"{'GPU' if gpu else 'CPU'} energy: {found.words}"]
                     if isinstance(found, energy.NoEnergy) else [])
