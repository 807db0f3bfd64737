"""One rank's view of a case: its process groups and device, and the clock every case uses.

Each sample is taken the same way on every rank: a barrier on the case's group, then
the timed calls — on CUDA between two events, read after synchronising the device, with
the synchronised host time beside them; on the CPU with the host clock, over Gloo calls
that return only once they are complete. Rank 0 then keeps, per sample, the slowest
rank's time: a collective (or a data-parallel step) is done when its last rank is.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gpuvs import caveats
from gpuvs.model import Case, Measurement, Status

# Calls per sample are calibrated so that one sample lasts at least this long: far above
# the CUDA events' resolution (about 0.5 µs) and the jitter of leaving a barrier.
MIN_SAMPLE_S = 5e-3
MAX_LOOPS = 1000
CALIBRATION_SAMPLES = 3


@dataclass(frozen=True)
class Ranks:
    """The ranks of one case: this rank's place among them, its device, the group the
    measured work runs on, and a Gloo group for control messages (agreement, samples)
    that stays off the measured device links."""

    rank: int
    size: int
    local_rank: int
    device: str  # "cpu" or "cuda:LOCAL_RANK"
    group: Any
    ctrl: Any
    threads: int  # torch CPU threads of this rank (0: left as it was, on GPUs)

    @property
    def cuda(self) -> bool:
        return self.device.startswith("cuda")


@dataclass(frozen=True)
class RankResult:
    """What one rank measured in one case; every rank of a case agrees on `status`."""

    status: Status = Status.OK
    reason: str = ""
    samples: tuple[float, ...] = ()
    wall_samples: tuple[float, ...] = ()
    local_samples: tuple[float, ...] = ()  # scaling: the same steps without the all-reduce
    first_call_s: float | None = None
    loops: int = 1
    warmups: int = 0


def barrier(r: Ranks) -> None:
    import torch.distributed as dist

    if r.cuda:
        dist.barrier(group=r.group, device_ids=[r.local_rank])
    else:
        dist.barrier(group=r.group)


def timed(r: Ranks, call: Callable[[], object], loops: int = 1) -> tuple[float, float | None]:
    """Seconds per call: (device seconds, synchronised wall seconds) on CUDA, where the
    calls are asynchronous; (host seconds, None) on the CPU."""
    if not r.cuda:
        start = time.perf_counter()
        for _ in range(loops):
            call()
        return (time.perf_counter() - start) / loops, None
    import torch

    torch.cuda.synchronize(r.device)
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    wall = time.perf_counter()
    begin.record()
    for _ in range(loops):
        call()
    end.record()
    torch.cuda.synchronize(r.device)
    wall = time.perf_counter() - wall
    return begin.elapsed_time(end) / 1e3 / loops, wall / loops


def sample(r: Ranks, call: Callable[[], object], loops: int = 1) -> tuple[float, float | None]:
    """One sample: every rank leaves the barrier together, then times its calls."""
    barrier(r)
    return timed(r, call, loops)


def agree(r: Ranks, problem: str) -> str:
    """The first problem any rank found ('' for none). Every rank must take the same
    branch after a check, or the next collective waits forever for the ranks that left."""
    import torch.distributed as dist

    found: list[Any] = [None] * r.size
    dist.all_gather_object(found, problem, group=r.ctrl)
    return next((p for p in found if p), "")


def slowest(r: Ranks, seconds: float) -> float:
    import torch.distributed as dist

    found: list[Any] = [None] * r.size
    dist.all_gather_object(found, seconds, group=r.ctrl)
    return float(max(found))


def calibrate(r: Ranks, call: Callable[[], object]) -> int:
    """Calls per sample, the same on every rank: enough for MIN_SAMPLE_S on the slowest
    rank, judged by its fastest of CALIBRATION_SAMPLES single calls (one call can stall)."""
    one = slowest(r, min(sample(r, call)[0] for _ in range(CALIBRATION_SAMPLES)))
    return min(MAX_LOOPS, max(1, math.ceil(MIN_SAMPLE_S / one))) if one > 0 else MAX_LOOPS


def cpu_threads(active_here: int) -> int:
    """Torch threads for one of `active_here` CPU ranks on this host: its share of the
    cores this process may use, at least one (torchrun's default is one for all)."""
    import torch

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)
    threads = max(1, cores // max(1, active_here))
    torch.set_num_threads(threads)
    return threads


def per_sample_max(rows: Sequence[Sequence[float]]) -> tuple[float, ...]:
    """Sample i of the case is the slowest rank's sample i."""
    return tuple(max(column) for column in zip(*rows, strict=True)) if rows else ()


def measurement(case: Case, results: Sequence[RankResult],
                counters: dict[str, float]) -> Measurement:
    """Rank 0's record of a case from every rank's result."""
    head = results[0]
    if head.status is not Status.OK:
        return Measurement(case, head.status, head.reason, first_call_s=head.first_call_s,
                           counters=counters)
    walls = [r.wall_samples for r in results]
    firsts = [r.first_call_s for r in results if r.first_call_s is not None]
    first = max(firsts) if firsts else None
    samples = per_sample_max([r.samples for r in results])
    return Measurement(
        case, Status.OK, samples=samples,
        wall_samples=per_sample_max(walls) if all(walls) else (), loops=head.loops,
        first_call_s=first, warmups=head.warmups,
        # A fixed number of samples: there is no stopping criterion to fall short of.
        caveats=caveats.detect(samples, first, criterion_met=True),
        timer=("cuda events" if case.device.startswith("cuda") else "host clock")
        + f", slowest of {len(results)} ranks", counters=counters)
