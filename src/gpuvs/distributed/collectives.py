"""All-reduce, all-gather, reduce-scatter and broadcast over a size sweep, on every rank.

Each case follows gpuvs' protocol on every rank at once: the first call timed alone,
its output checked (rank-filled inputs with known results, so a wrong reduction is
`wrong_result`), warm-up calls, then samples of calibrated loops in batches (`rank.batch`)
until the CI of the median is tight or the budget is spent (`rank.sample_until`).
Sizes are nccl-tests' (float32 elements; all-gather counts its output, reduce-scatter
its input) and are rounded down to a whole number of elements per rank, as there.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gpuvs.distributed.rank import (
    RankResult,
    Ranks,
    agree,
    calibrate,
    captured,
    first_call,
    measurement,
    sample_until,
)
from gpuvs.model import Case, Measurement, Status
from gpuvs.units import nbytes

FLOAT32_BYTES = 4
WARMUP_CALLS = 3
# Room left besides the buffers: NCCL's own buffers and the CUDA context on a GPU, the
# interpreter and Gloo's buffers on the host.
HEADROOM_BYTES = {"cuda": 512 * 1024**2, "cpu": 64 * 1024**2}
SPLIT = ("all_gather", "reduce_scatter")  # one side of these is a 1/n piece


@dataclass(frozen=True)
class Op:
    """One collective on its buffers: `check` after the first call ('' or what is wrong),
    then `clear` leaves values that repeated timed calls cannot overflow."""

    call: Callable[[], object]
    check: Callable[[], str]
    clear: Callable[[], object] = lambda: None


def elements(collective: str, size: int, nranks: int) -> int:
    """float32 elements of the collective's size, a multiple of the ranks where split."""
    count = size // FLOAT32_BYTES
    return count - count % nranks if collective in SPLIT else count


def bytes_needed(collective: str, count: int, nranks: int) -> int:
    """Per rank: the buffers, and the boolean mask the check compares with."""
    buffers = count * FLOAT32_BYTES
    if collective in SPLIT:
        buffers += count // nranks * FLOAT32_BYTES
    return buffers + count


def run_case(r: Ranks, case: Case, samples: int, budget_s: float) -> RankResult:
    """This rank's part of one collective case; every rank returns the same status. At
    least `samples` samples; more while the CI is wide and `budget_s` lasts."""
    name = case.param("collective")
    count = elements(name, case.size, r.size)
    problem = (_no_room(r, bytes_needed(name, count, r.size)) if count else
               f"{nbytes(case.size)} holds less than one float32 element per rank")
    if why := agree(r, problem):
        return RankResult(Status.SKIPPED, why)
    op = OPS[name](r, count)
    first = first_call(r, op.call)
    if wrong := agree(r, op.check()):
        return RankResult(Status.WRONG_RESULT, wrong, first_call_s=first)
    op.clear()
    for _ in range(WARMUP_CALLS):
        op.call()
    loops = calibrate(r, op.call)
    taken, met = sample_until(r, op.call, loops, samples, budget_s)
    return RankResult(samples=tuple(taken.mine), wall_samples=tuple(taken.walls),
                      busy_samples=_busy(r, op, loops, samples, budget_s),
                      first_call_s=first, loops=loops, warmups=WARMUP_CALLS,
                      criterion_met=met)


def _busy(r: Ranks, op: Op, loops: int, samples: int, budget_s: float
          ) -> tuple[float, ...]:
    """Per call, the GPU's own time: the same `loops` calls captured as one graph, each
    sample one replay, sampled as the eager calls were (() where no graph could be made).
    An eager call pays the host's launch too; at 4 KiB that launch is most of a call."""
    replay, _ = captured(r, op.call, loops)
    if replay is None:
        return ()
    replay()  # the graph's first launch uploads it: not a sample
    taken, _ = sample_until(r, replay, 1, samples, budget_s)
    return tuple(t / loops for t in taken.mine)


def record(case: Case, results: Sequence[RankResult], threads: int) -> Measurement:
    """Rank 0's measurement: the slowest rank per sample, and the bytes actually moved."""
    n = len(results)
    counters = {"bytes": float(elements(case.param("collective"), case.size, n)
                               * FLOAT32_BYTES), "nproc": float(n)}
    return measurement(case, results, counters | ({"threads": float(threads)} if threads
                                                  else {}))


def _no_room(r: Ranks, need: int) -> str:
    """Why the buffers cannot fit on this rank's device ('' when they can)."""
    if r.cuda:
        import torch

        free, ranks_here, where = torch.cuda.mem_get_info(r.device)[0], 1, r.device
    else:
        import psutil

        free = psutil.virtual_memory().available
        ranks_here, where = int(os.environ.get("LOCAL_WORLD_SIZE", r.size)), "the host"
    headroom = HEADROOM_BYTES["cuda" if r.cuda else "cpu"]
    if need * ranks_here + headroom <= free:
        return ""
    return (f"needs {nbytes(need)} per rank × {ranks_here} on {where} + {nbytes(headroom)} "
            f"headroom; {nbytes(free)} free (rank {r.rank})")


def _differs(r: Ranks, t: Any, want: float, what: str) -> str:
    bad = t != want
    if not bool(bad.any()):
        return ""
    return (f"rank {r.rank}: {what} holds {t[bad][0].item():g} where {want:g} was expected "
            f"({int(bad.sum())} of {t.numel()} elements wrong)")


def _all_reduce(r: Ranks, count: int) -> Op:
    import torch
    import torch.distributed as dist

    t = torch.full((count,), float(r.rank + 1), device=r.device)
    want = r.size * (r.size + 1) / 2
    return Op(lambda: dist.all_reduce(t, group=r.group),
              lambda: _differs(r, t, want, f"the all_reduce sum of 1…{r.size}"),
              t.zero_)  # in place: repeated sums of zeros stay zeros


def _all_gather(r: Ranks, count: int) -> Op:
    import torch
    import torch.distributed as dist

    piece = count // r.size
    inp = torch.full((piece,), float(r.rank + 1), device=r.device)
    out = torch.empty(count, device=r.device)
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor

    def check() -> str:
        return next((w for i in range(r.size) if (w := _differs(
            r, out[i * piece:(i + 1) * piece], i + 1, f"all_gather piece {i}"))), "")

    return Op(lambda: gather(out, inp, group=r.group), check)


def _reduce_scatter(r: Ranks, count: int) -> Op:
    import torch
    import torch.distributed as dist

    piece = count // r.size
    # Piece j of rank q holds (q + 1)(j + 1): rank j must receive (j + 1) · n(n + 1)/2.
    inp = torch.arange(1, r.size + 1, dtype=torch.float32, device=r.device)
    inp = inp.repeat_interleave(piece).mul_(r.rank + 1)
    out = torch.empty(piece, device=r.device)
    scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    want = (r.rank + 1) * r.size * (r.size + 1) / 2
    return Op(lambda: scatter(out, inp, group=r.group),
              lambda: _differs(r, out, want, f"reduce_scatter piece {r.rank}"))


def _broadcast(r: Ranks, count: int) -> Op:
    import torch
    import torch.distributed as dist

    t = torch.full((count,), float(r.rank + 1), device=r.device)
    return Op(lambda: dist.broadcast(t, src=0, group=r.group),
              lambda: _differs(r, t, 1.0, "the broadcast of rank 0's ones"))


OPS: dict[str, Callable[[Ranks, int], Op]] = {
    "all_reduce": _all_reduce, "all_gather": _all_gather,
    "reduce_scatter": _reduce_scatter, "broadcast": _broadcast,
}
