"""Data-parallel training of seed 003's CNN on 1…N ranks, with DistributedDataParallel.

The network, its initialisation and Adam's settings are the `cnn` workload's
(`torch_twin`); each rank trains on its own synthetic batches, already on its device.
A step is timed twice over: as DDP runs it (the gradient all-reduce included) and under
`no_sync()`, the same forward, backward and Adam step without the all-reduce. Their
difference is the communication a step waits for — the part of the all-reduce that DDP
cannot hide behind the backward pass, not all the bytes it moved.
"""

from __future__ import annotations

import itertools
import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from gpuvs.distributed import tries
from gpuvs.distributed.rank import (
    RankResult,
    Ranks,
    agree,
    barrier,
    batch,
    every_rank,
    first_call,
    measurement,
    per_sample_max,
)
from gpuvs.distributed.spec import per_rank_batch
from gpuvs.machine.energy import ENERGY_WINDOW_S, NOT_ASKED, EnergyOptions
from gpuvs.measuring.watch import Watches
from gpuvs.model import Case, Measurement, Status

WARMUP_STEPS = 2  # of each kind, after the first step
# Steps of one kind timed back to back before switching kind: short enough that drift
# hits both kinds alike, long enough that the untimed step before each batch is cheap.
STEPS_PER_BATCH = 10
# After one synchronised step from the same weights every rank must hold rank 0's
# weights: without the all-reduce, Adam moves each weight by up to its learning rate
# (1e-3) in a direction of that rank's own data, far beyond this.
WEIGHT_TOLERANCE = 1e-6
# The energy window runs this much past ENERGY_WINDOW_S, in chunks of steps this long
# between a synchronisation and rank 0's word on the time: a window that fell short of
# ENERGY_WINDOW_S would give no figure.
ENERGY_MARGIN = 1.1
ENERGY_CHUNK_S = 0.5


def run_case(r: Ranks, case: Case, steps: int, threads: int,
             restart: Callable[[], None] = lambda: None, power: EnergyOptions = NOT_ASKED
             ) -> RankResult:
    """This rank's part of one rank count, inside the watches (`tries.measured`): taken
    again, on a fresh model, with REMEASURE_BUDGET_FACTOR times the steps when the steps
    split or drifted, or after a pause when another process contended."""
    return tries.measured(r, lambda watches, factor: _taken(
        r, case, round(steps * factor), watches, power.asked), threads, restart,
        power=power)


def _taken(r: Ranks, case: Case, steps: int, watches: Watches, energy: bool = False
           ) -> RankResult:
    """The first step, the check, then `steps` timed steps with the all-reduce and
    `steps` without, in alternating batches; the watches hear when the timed steps start
    and end — or, with `energy`, when the energy window's steps do (`_energy_window`)."""
    import torch
    from torch.nn.parallel import DistributedDataParallel

    from gpuvs.workloads.cnn import ADAM_EPSILON, DEVICE_BATCHES, LEARNING_RATE, SEED, torch_twin
    torch.manual_seed(SEED)  # DDP broadcasts rank 0's weights anyway; this makes them known
    model = torch_twin().to(r.device)
    ddp = DistributedDataParallel(model, device_ids=[r.local_rank] if r.cuda else None,
                                  process_group=r.group)
    opt = torch.optim.Adam(ddp.parameters(), lr=LEARNING_RATE, eps=ADAM_EPSILON)
    batches = itertools.cycle(_batches(r, per_rank_batch(case), DEVICE_BATCHES, SEED))

    def step() -> Any:
        x, y = next(batches)
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    def local_step() -> Any:
        with ddp.no_sync():
            return step()

    losses: list[Any] = []
    first = first_call(r, lambda: losses.append(step()))
    if wrong := agree(r, _check(r, model, float(losses[0].detach()))):
        return RankResult(Status.WRONG_RESULT, wrong, first_call_s=first)
    for _ in range(WARMUP_STEPS):
        step()
        local_step()
    synced: list[float] = []
    local: list[float] = []
    walls: list[float] = []
    window = watches if not energy else Watches()
    window.sampling_started()
    while len(synced) < steps:
        count = min(STEPS_PER_BATCH, steps - len(synced))
        taken, wall = batch(r, step, 1, count)
        synced += taken
        walls += [wall] if wall is not None else []
        local += batch(r, local_step, 1, count)[0]
    window.sampling_ended(2 * (len(synced) + math.ceil(steps / STEPS_PER_BATCH)))
    if energy:
        _energy_window(r, step, watches, statistics.median(synced))
    return RankResult(samples=tuple(synced), wall_samples=tuple(walls),
                      local_samples=tuple(local), first_call_s=first, warmups=WARMUP_STEPS)


def _energy_window(r: Ranks, step: Callable[[], Any], watches: Watches, step_s: float
                   ) -> None:
    """Steps with the all-reduce, untimed, while the watches read every GPU's energy
    counter, until rank 0's clock has seen ENERGY_MARGIN × ENERGY_WINDOW_S: the timed
    steps alternate with steps without the all-reduce, whose energy is not the step's.
    The steps go in chunks of about ENERGY_CHUNK_S at the slowest rank's median pace,
    each ended by a synchronisation and rank 0's word, so every rank takes as many (a
    count fixed from the timed steps' pace fell short: a CPU rank's later steps ran
    faster, and 4 s of them took 3.6)."""
    pace = max(every_rank(r, step_s))
    chunk = max(1, math.ceil(ENERGY_CHUNK_S / max(pace, 1e-9)))
    barrier(r)
    watches.sampling_started()
    started, steps = time.perf_counter(), 0
    while True:
        for _ in range(chunk):
            step()
        steps += chunk
        if r.cuda:
            import torch

            torch.cuda.synchronize(r.device)
        if every_rank(r, time.perf_counter() - started)[0] >= ENERGY_MARGIN * ENERGY_WINDOW_S:
            break
    watches.sampling_ended(steps)


def record(case: Case, results: Sequence[RankResult], threads: int) -> Measurement:
    """Rank 0's measurement: per step the slowest rank; throughput, compute and comm."""
    batch, n = per_rank_batch(case), case.size
    counters = {"nproc": float(n), "per_rank_batch": float(batch),
                "global_batch": float(batch * n)} | (
        {"threads": float(threads)} if threads else {})
    if results[0].status is Status.OK:
        step = statistics.median(per_sample_max([r.samples for r in results]))
        compute = statistics.median(per_sample_max([r.local_samples for r in results]))
        # Negative differences are noise around an all-reduce that is fully hidden.
        counters |= {"samples_per_s": batch * n / step, "compute_s": compute,
                     "comm_s": max(0.0, step - compute)}
    return measurement(case, results, counters)


def _batches(r: Ranks, batch: int, count: int, seed: int) -> list[tuple[Any, Any]]:
    """`count` batches on this rank's device, different on every rank, as in data
    parallelism (each rank its own shard of the data)."""
    import torch

    from gpuvs.workloads.cifar import scaled, synthetic
    images = synthetic(count * batch, seed=seed + r.rank)
    x = torch.from_numpy(scaled(images.x, "nchw")).to(r.device)
    y = torch.from_numpy(images.y).to(r.device)
    return [(x[i * batch:(i + 1) * batch], y[i * batch:(i + 1) * batch])
            for i in range(count)]


def _check(r: Ranks, model: Any, loss: float) -> str:
    """'' when the first step's loss is finite and every rank holds rank 0's weights."""
    import torch
    import torch.distributed as dist

    if not math.isfinite(loss):
        return f"rank {r.rank}: the first step's loss is {loss}"
    with torch.no_grad():
        mine = torch.cat([p.reshape(-1) for p in model.parameters()])
        theirs = mine.clone()
        dist.broadcast(theirs, src=0, group=r.group)
        off = float((mine - theirs).abs().max())
    if off > WEIGHT_TOLERANCE:
        return (f"rank {r.rank}: after one synchronised step its weights differ from rank "
                f"0's by up to {off:.3g}: the gradients were not averaged across ranks")
    return ""
