"""All-reduce, all-gather, reduce-scatter and broadcast over a size sweep, on every rank.

Each case follows gpuvs' protocol on every rank at once: the first call timed alone,
its output checked (rank-filled inputs with known results, so a wrong reduction is
`wrong_result`), warm-up calls, then samples of calibrated loops in batches (`rank.batch`)
until the CI of the median is tight or the budget is spent (`rank.Sampler`). On CUDA the
same calls are also captured as one graph and its replays sampled (`replay_cases`) — after
the sweep's last eager sample: a graph capture and its replays slow a process's later
launches (a launch-bound loop ran 84 % slower after one, for 10 s and more, on an H100),
so no rank captures a graph before it has taken every eager sample it will take.

Small cases are sampled in turns (`run_cases`): a host's speed at issuing small calls
changes from one second to the next (on the two H200s a 4 KiB all-reduce cost 21 µs a
call for a while, then 35 µs), so samples taken within one second describe that second,
and a repeat a minute later fell outside their ±1 %. Taken in turns with the next cases
of the sweep (TURN_WINDOW at a time), a case's samples span many seconds and the regimes
met in them, and the CI, which covers the variation between stretches of a case, says
how far they move.

Sizes are nccl-tests' (float32 elements; all-gather counts its output, reduce-scatter
its input) and are rounded down to a whole number of elements per rank, as there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gpuvs.distributed import tries
from gpuvs.distributed.rank import (
    RankResult,
    Ranks,
    Sampler,
    agree,
    calibrate,
    captured,
    first_call,
    measurement,
)
from gpuvs.measuring.protocol import Tries
from gpuvs.measuring.watch import Seen
from gpuvs.model import Case, Measurement, Status
from gpuvs.units import nbytes

FLOAT32_BYTES = 4
WARMUP_CALLS = 3
# Room left besides the buffers: NCCL's own buffers and the CUDA context on a GPU, the
# interpreter and Gloo's buffers on the host.
HEADROOM_BYTES = {"cuda": 512 * 1024**2, "cpu": 64 * 1024**2}
SPLIT = ("all_gather", "reduce_scatter")  # one side of these is a 1/n piece
# Cases under this size are sampled in turns, in batches of --samples, at least TURNS
# of them; their buffers stay allocated meanwhile (at most TURN_WINDOW cases under
# 64 MiB: under 300 MiB a rank). From 16 MiB up the links set the time, and two
# runs agreed within their ±0.0–0.7 % on the H200s; larger cases are sampled at once.
TURNS_BELOW_BYTES = 64 * 1024**2
TURNS = 4
# Small cases take their turns in windows of this many (the plan's next ones): each
# case's samples still span many seconds (8 cases × 1 s of --budget, twice on CUDA), and
# cases keep ending, and being saved, as the sweep goes — a run stopped halfway keeps
# its finished windows, and the progress bar moves.
TURN_WINDOW = 8


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


def run_cases(r: Ranks, cases: Sequence[Case], samples: int, budget_s: float,
              visit: Callable[[Case], None] = lambda case: None
              ) -> Iterator[tuple[Case, RankResult]]:
    """This rank's part of every case, each yielded as it ends (every rank yields the same
    cases in the same order). `visit(case)` comes before each of a case's turns: the
    parent's clock follows it. Cases are started (checked, warmed up, calibrated, their
    first batch taken) in the order given; those under TURNS_BELOW_BYTES then take a
    batch each in turn, TURN_WINDOW of them at a time, until each has sampled enough; the
    others are sampled at once."""
    waiting: list[_Sampling] = []
    for case in cases:
        visit(case)
        in_turns = case.size < TURNS_BELOW_BYTES
        started = _start(r, case, samples, budget_s, TURNS if in_turns else 1)
        if isinstance(started, RankResult):
            yield case, started
            continue
        if not in_turns:
            while not started.step():
                pass
        if started.finished:
            yield case, started.result()
            continue
        waiting.append(started)
        if len(waiting) == TURN_WINDOW:
            yield from _turns(waiting, visit)
    yield from _turns(waiting, visit)


def _turns(waiting: list[_Sampling], visit: Callable[[Case], None]
           ) -> Iterator[tuple[Case, RankResult]]:
    """A batch of each waiting case in turn until every one has sampled enough."""
    while waiting:
        for turn in list(waiting):
            visit(turn.case)
            if turn.step():
                waiting.remove(turn)
                yield turn.case, turn.result()


class _Sampling:
    """A started case: its buffers, its watches and its eager calls' sampler, stepped a
    batch a turn until it is done — and started again, inside fresh watches, when
    `tries.again` says so (the same decision on every rank)."""

    def __init__(self, r: Ranks, case: Case, op: Op, first: float, loops: int,
                 plan: tuple[int, float, int], set_up: Seen) -> None:
        self.r, self.case, self.op, self.first, self.loops = r, case, op, first, loops
        self.plan, self.set_up = plan, set_up  # (least, budget_s, turns); peak memory
        self.tries = Tries()
        self.ended: RankResult | None = None
        self._begin()

    def _begin(self) -> None:
        least, budget_s, turns = self.plan
        self.watches = tries.split(tries.case_watches(self.r, self.r.threads))[1]
        self.watches.case_started()
        self.calls = Sampler(self.r, self.op.call, self.loops, least,
                             budget_s * self.tries.budget_factor, turns)
        self.watches.sampling_started()

    @property
    def finished(self) -> bool:
        return self.ended is not None

    def step(self) -> bool:
        """One batch; once the sampler is done, the case ends or starts again."""
        if self.finished:
            return True
        if self.calls.step():
            self.watches.sampling_ended(self.calls.calls)
            calls = self.calls.took
            result = tries.seen_with(RankResult(
                samples=tuple(calls.mine), wall_samples=tuple(calls.walls),
                first_call_s=self.first, loops=self.loops, warmups=WARMUP_CALLS,
                criterion_met=self.calls.met), self.set_up, self.watches.case_ended())
            if why := tries.again(self.r, result, self.tries):
                self.tries = tries.next_try(self.tries, why)
                self._begin()
            else:
                self.ended = tries.seen_with(result, tries=self.tries)
        return self.finished

    def result(self) -> RankResult:
        assert self.ended is not None
        return self.ended


def _start(r: Ranks, case: Case, samples: int, budget_s: float, turns: int
           ) -> RankResult | _Sampling:
    """Check, warm up and calibrate a case and take its first batch; a RankResult where
    the case ends before sampling (no room, a wrong result). Its peak memory is watched
    from before its buffers are made until its first batch is taken."""
    peak = tries.split(tries.case_watches(r, r.threads))[0]
    peak.case_started()
    made = _made(r, case)
    if isinstance(made, RankResult):
        return made
    op, first = made
    for _ in range(WARMUP_CALLS):
        op.call()
    loops = calibrate(r, op.call)
    started = _Sampling(r, case, op, first, loops, (samples, budget_s, turns),
                        peak.case_ended())
    started.step()
    return started


def _made(r: Ranks, case: Case) -> RankResult | tuple[Op, float]:
    """The case's buffers, its first call timed and checked: (op, first call's seconds),
    or the RankResult that ends the case there (no room, a wrong result)."""
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
    return op, first


def replay_cases(r: Ranks, finished: Sequence[tuple[Case, RankResult]], samples: int,
                 budget_s: float, visit: Callable[[Case], None] = lambda case: None
                 ) -> Iterator[tuple[Case, RankResult]]:
    """Once every eager sample is taken: each finished case's `loops` calls captured as
    one CUDA graph and its replays sampled, each yielded as its eager result with the
    replays' per-call seconds added — the device's side without the host's launches.
    Nothing on the CPU; a case no rank could capture keeps its eager result alone.
    `visit(case)` comes before each, as in `run_cases`."""
    if not r.cuda:
        return
    for case, eager in finished:
        if eager.status is not Status.OK:
            continue
        visit(case)
        made = _made(r, case)  # the eager buffers were freed as their cases ended
        if isinstance(made, RankResult):
            continue
        op, _ = made
        for _ in range(WARMUP_CALLS):  # as before the eager samples
            op.call()
        replay, _why = captured(r, op.call, eager.loops)
        if replay is None:
            continue
        replay()  # the graph's first launch uploads it: not a sample
        replays = Sampler(r, replay, 1, samples, budget_s)
        while not replays.step():
            pass
        yield case, replace(eager, graph_samples=tuple(t / eager.loops
                                                       for t in replays.took.mine))


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
        ranks_here, where = r.on_host, "the host"
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
