"""One rank's view of a case: its process groups and device, and the clock every case uses.

Samples are taken in batches, the same way on every rank: a barrier on the case's
group, one untimed loop that lines the ranks up, then the timed samples — on CUDA
between events recorded back to back and read after one synchronisation, with the
synchronised host time of the batch beside them; on the CPU with the host clock, over
Gloo calls that return only once they are complete. Rank 0 then keeps, per sample, the
slowest rank's time: a collective (or a data-parallel step) is done when its last rank is.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpuvs.errors import first_line
from gpuvs.machine.energy import GPU_IDLE_W, GPU_J
from gpuvs.measuring import caveats
from gpuvs.measuring.criteria import MedianCI
from gpuvs.measuring.watch import Seen, observing
from gpuvs.model import Case, Caveat, Measurement, Status, on_gpu

# Calls per sample are calibrated so that one sample lasts at least this long: far above
# the CUDA events' resolution (about 0.5 µs) and the jitter of leaving a barrier.
MIN_SAMPLE_S = 5e-3
MAX_LOOPS = 1000
CALIBRATION_SAMPLES = 3
# The CI of the median a case samples towards, as `gpuvs run` does by default.
REL_CI = 0.01
# Counters every rank's GPU adds to: its board's energy over the window, its idle power.
SUMMED = frozenset({GPU_J, GPU_IDLE_W})


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
    # Ranks of this group on this rank's machine, whichever torchrun node they belong to:
    # they share its cores and its memory.
    on_host: int = 1

    @property
    def cuda(self) -> bool:
        return on_gpu(self.device)


@dataclass(frozen=True)
class RankResult:
    """What one rank measured in one case; every rank of a case agrees on `status`."""

    status: Status = Status.OK
    reason: str = ""
    samples: tuple[float, ...] = ()
    wall_samples: tuple[float, ...] = ()
    local_samples: tuple[float, ...] = ()  # scaling: the same steps without the all-reduce
    graph_samples: tuple[float, ...] = ()  # CUDA: the calls replayed as one graph, per call
    first_call_s: float | None = None
    loops: int = 1
    warmups: int = 0
    criterion_met: bool = True  # False: the budget ended before the CI reached REL_CI
    seen: Seen = Seen()  # what this rank's watches saw (`tries`)


def barrier(r: Ranks) -> None:
    import torch.distributed as dist

    if r.cuda:
        dist.barrier(group=r.group, device_ids=[r.local_rank])
    else:
        dist.barrier(group=r.group)


def first_call(r: Ranks, call: Callable[[], object]) -> float:
    """The first call, timed alone after a barrier: set-up costs land here (NCCL's
    communicator, DDP's buckets), never in the samples."""
    barrier(r)
    if not r.cuda:
        start = time.perf_counter()
        call()
        return time.perf_counter() - start
    import torch

    torch.cuda.synchronize(r.device)
    start = time.perf_counter()
    call()
    torch.cuda.synchronize(r.device)
    return time.perf_counter() - start


def batch(r: Ranks, call: Callable[[], object], loops: int, count: int
          ) -> tuple[list[float], float | None]:
    """`count` samples of `loops` calls each: (per-call seconds of every sample, the
    synchronised wall seconds per call over the batch — None on the CPU).

    One barrier starts the batch and one untimed loop follows it: ranks leave a barrier
    up to tens of µs apart, and the first rank out waits for the last inside its first
    collective; that wait lands in the untimed loop, not in a sample. On CUDA the samples
    are then timed between events recorded back to back, with one synchronisation at the
    end: the device never idles between samples (a sync per sample let it idle, and a
    host stall on either rank then landed in the sample that followed it). On the CPU the
    host clock times each sample: Gloo calls return only once they are complete."""
    barrier(r)
    if not r.cuda:
        for _ in range(loops):
            call()
        out = []
        for _ in range(count):
            start = time.perf_counter()
            for _ in range(loops):
                call()
            out.append((time.perf_counter() - start) / loops)
        return out, None
    import torch

    torch.cuda.synchronize(r.device)
    wall = time.perf_counter()
    for _ in range(loops):
        call()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(count + 1)]
    events[0].record()
    for event in events[1:]:
        for _ in range(loops):
            call()
        event.record()
    torch.cuda.synchronize(r.device)
    wall = (time.perf_counter() - wall) / ((count + 1) * loops)
    spans = zip(events, events[1:], strict=False)
    return [a.elapsed_time(b) / 1e3 / loops for a, b in spans], wall


def captured(r: Ranks, call: Callable[[], object], loops: int
             ) -> tuple[Callable[[], object] | None, str]:
    """`loops` calls captured as one CUDA graph on every rank, and its replay: (replay,
    '') — or (None, why) on every rank when any rank could not capture (the CPU, or a
    torch whose NCCL refuses capture). A replay launches the calls' kernels without the
    host: ProcessGroupNCCL spends 15–30 µs of Python and C++ a call, more than a small
    collective takes on NVLink, so an eager loop of small calls times the host.

    The capture runs on a side stream after the calls' communicator exists (the first
    call made it) and in thread-local mode: NCCL's watchdog thread polls earlier calls'
    events meanwhile, which a global capture would refuse. A graph that captured nothing
    (one rank's in-place all-reduce, which NCCL returns at once) times nothing: none."""
    if not r.cuda:
        return None, "the CPU has no graphs"
    import warnings

    import torch

    graph: Any = None
    problem = ""
    try:
        torch.cuda.synchronize(r.device)
        graph = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream(r.device)
        side.wait_stream(torch.cuda.current_stream(r.device))
        with (warnings.catch_warnings(record=True) as seen,
              observing("a CUDA graph capture")):
            warnings.simplefilter("always")
            with torch.cuda.graph(graph, stream=side, capture_error_mode="thread_local"):
                for _ in range(loops):
                    call()
        torch.cuda.synchronize(r.device)
        if any("empty" in str(w.message) for w in seen):
            problem = f"rank {r.rank}: the captured graph is empty (the calls launch no work)"
    except Exception as e:  # capture is optional: the eager samples stand alone
        problem = (f"rank {r.rank} could not capture the calls as a CUDA graph: "
                   f"{first_line(e)[:200]}")
        torch.cuda.synchronize(r.device)
    if why := agree(r, problem):
        return None, why
    return graph.replay, ""


def agree(r: Ranks, problem: str) -> str:
    """The first problem any rank found ('' for none). Every rank must take the same
    branch after a check, or the next collective waits forever for the ranks that left."""
    import torch.distributed as dist

    found: list[Any] = [None] * r.size
    dist.all_gather_object(found, problem, group=r.ctrl)
    return next((p for p in found if p), "")


def every_rank(r: Ranks, mine: Any) -> list[Any]:
    """`mine` from every rank, in rank order, on every rank (over the control group)."""
    import torch.distributed as dist

    found: list[Any] = [None] * r.size
    dist.all_gather_object(found, mine, group=r.ctrl)
    return found


def calibrate(r: Ranks, call: Callable[[], object]) -> int:
    """Calls per sample, the same on every rank: enough for MIN_SAMPLE_S on the slowest
    rank, judged by its fastest of CALIBRATION_SAMPLES single calls (one call can stall)."""
    one = max(every_rank(r, min(batch(r, call, 1, CALIBRATION_SAMPLES)[0])))
    return min(MAX_LOOPS, max(1, math.ceil(MIN_SAMPLE_S / one))) if one > 0 else MAX_LOOPS


@dataclass
class Sampled:
    """This rank's samples (per-call seconds) and its batches' wall seconds per call."""

    mine: list[float] = field(default_factory=list)
    walls: list[float] = field(default_factory=list)


class Sampler:
    """One call's samples on every rank, a batch at a time (`step`), so that a caller can
    take batches of several cases in turn (`collectives.run_cases`).

    At least `least` samples; then more until the 95 % CI of the slowest rank's median is
    within ±REL_CI of it or `budget_s` of this call's own sampling is spent. Every rank
    sees every rank's samples after each batch and decides from the same numbers; the
    time spent and the pace are rank 0's, sent with them, so every rank takes the same
    number of samples. Batches double, as far as the budget's remainder holds at the pace
    so far — except for a call sampled in `turns` (more than one) with others: its
    batches stay `least` samples, so that they come from as many moments as the budget
    allows, and it takes at least `turns` of them. The CI's stretches then each hold
    batches from several moments; batches that doubled put half the samples in one."""

    def __init__(self, r: Ranks, call: Callable[[], object], loops: int, least: int,
                 budget_s: float, turns: int = 1) -> None:
        self.r, self.call, self.loops = r, call, loops
        self.budget_s, self.turns = budget_s, turns
        self.took = Sampled()
        self.criterion = MedianCI(rel=REL_CI, min_samples=least)
        self.size, self.batches, self.spent_s = least, 0, 0.0
        self.calls = 0  # every call run, the untimed loop before each batch included
        self.done = self.met = False

    def step(self) -> bool:
        """One batch; True once this call has sampled enough (`met`: the CI got there)."""
        started = time.monotonic()
        mine, wall = batch(self.r, self.call, self.loops, self.size)
        took_s = time.monotonic() - started
        self.calls += self.loops * (len(mine) + 1)
        every = every_rank(self.r, (mine, took_s, took_s / self.size))
        for worst in per_sample_max([e[0] for e in every]):
            self.criterion.add(worst)
        self.took.mine += mine
        if wall is not None:
            self.took.walls.append(wall)
        self.batches += 1
        _, took_s, pace = every[0]
        self.spent_s += took_s
        left = self.budget_s - self.spent_s
        self.met = self.criterion.done()
        self.done = (self.met and self.batches >= self.turns) or left <= 0
        grown = 2 * self.size if self.turns == 1 else self.size
        self.size = max(1, min(grown, int(left / max(pace, 1e-9))))
        return self.done


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


def merged(seen: Sequence[Seen]) -> Seen:
    """Every rank's caveats (once each, in order), and each counter as the rank that
    bounds the case read it: the lowest clock (`…_mhz…`), the highest of anything else
    (peak memory, power, temperature, other processes' share) — but the GPUs' energy
    and idle power, which are every GPU's together (one rank, one GPU). A CPU's RAPL
    counter is the whole package's, which every rank on it reads: the highest."""
    found: dict[Caveat, None] = {}
    values: dict[str, list[float]] = {}
    for s in seen:
        found.update(dict.fromkeys(s.caveats))
        for key, value in s.counters.items():
            values.setdefault(key, []).append(value)
    return Seen(tuple(found), {k: (sum if k in SUMMED else min if "_mhz" in k else max)(v)
                               for k, v in values.items()})


def measurement(case: Case, results: Sequence[RankResult],
                counters: dict[str, float]) -> Measurement:
    """Rank 0's record of a case from every rank's result: the slowest rank's samples,
    every rank's watches merged (`merged`), timed by the clock a single-device case on
    the same device uses."""
    head = results[0]
    if head.status is not Status.OK:
        return Measurement(case, head.status, head.reason, first_call_s=head.first_call_s,
                           counters=counters)
    seen = merged([r.seen for r in results])
    walls = [r.wall_samples for r in results]
    firsts = [r.first_call_s for r in results if r.first_call_s is not None]
    first = max(firsts) if firsts else None
    samples = per_sample_max([r.samples for r in results])
    replayed = [r.graph_samples for r in results]
    return Measurement(
        case, Status.OK, samples=samples,
        wall_samples=per_sample_max(walls) if all(walls) else (), loops=head.loops,
        first_call_s=first, warmups=head.warmups,
        caveats=tuple(dict.fromkeys((*caveats.detect(samples, first,
                                                     criterion_met=head.criterion_met),
                                     *seen.caveats))),
        timer="cuda_events" if on_gpu(case.device) else "host",
        counters={**seen.counters, **counters},
        graph_samples=per_sample_max(replayed) if all(replayed) else ())
