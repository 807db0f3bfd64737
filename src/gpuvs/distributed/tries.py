"""A rank's tries at a case: inside the watches every other entry point times in
(`machine.sensors.standard`) — the GPU's sensors, other processes' CPU time, peak memory —
and taken again when the protocol's policy says so, agreed on every rank.

The ranks cannot call `protocol.measure_watched` itself: every rank must take the same
number of samples and decide from the same numbers (the slowest rank's, gathered after
each batch), where the protocol decides alone. So a rank keeps its own sampling loop
(`rank.Sampler`, `rank.batch`) and enters the same hooks around it, at the same moments:

    case_started → (inputs built, first call, warm-up) → sampling_started → batches
                 → sampling_ended → case_ended

and makes the protocol's two decisions after it, agreed across ranks (`again`):
samples in two groups, or drifting, are taken again with REMEASURE_BUDGET_FACTOR times
the budget (counter `remeasured`); a case another process contended on any rank is
taken again after CONTENDED_PAUSE_S, at most CONTENDED_RETRIES times (counters
`contended_retries`, `paused_s`). Rank 0 merges every rank's caveats and counters
(`rank.measurement`).

Energy is asked only by `gpuvs dist scaling --energy` (`energy_options`): each rank's
GPU's idle power is measured before the first case, and a rank count's energy window is
steps of its own after the timed ones (`scaling`). A small collective sampled in turns
shares its seconds with the other cases of its turn, so collectives read none.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from gpuvs.distributed.rank import RankResult, Ranks, every_rank, per_sample_max
from gpuvs.machine import energy
from gpuvs.machine.energy import NOT_ASKED, EnergyOptions
from gpuvs.machine.memory import PeakMemory
from gpuvs.machine.sensors import standard
from gpuvs.measuring import caveats
from gpuvs.measuring.protocol import Tries
from gpuvs.measuring.watch import Seen, Watches
from gpuvs.model import Caveat, Status

REMEASURE, CONTENDED = "remeasure", "contended"
FIRST_TRY = Tries()


def case_watches(r: Ranks, threads: int, power: EnergyOptions = NOT_ASKED) -> Watches:
    """The watches of one case on this rank, as a worker's: telemetry on a GPU,
    contention against the cores the rank asks for (its torch threads on the CPU, one
    on a GPU: the sibling ranks on the other cores are then not contention), peak
    memory, on the device through torch's allocator, and energy where `power` asks."""
    from gpuvs import backends

    return standard(r.device, cpu_threads=threads or None, backend=backends.get("torch"),
                    power=power)


def energy_options(r: Ranks) -> EnergyOptions:
    """Energy asked for on this rank, with its GPU's idle power, measured now: every
    rank measures at once, before any case, so no GPU is busy with another's work."""
    return EnergyOptions(asked=True, idle_w=energy.idle_watts(r.device) if r.cuda else None)


def split(watches: Watches) -> tuple[Watches, Watches]:
    """(peak memory, the rest): a collective sampled in turns has its memory watched while
    it is set up — its buffers and NCCL's are made by then — and the rest over its
    samples, which share their seconds with the other cases of its turn."""
    peak = [w for w in watches.watches if isinstance(w, PeakMemory)]
    return Watches(peak), Watches([w for w in watches.watches if w not in peak])


def again(r: Ranks, result: RankResult, tries: Tries) -> str:
    """Why every rank takes this case again ('' for not, REMEASURE, CONTENDED), by the
    protocol's policy (`protocol.Tries`) on every rank's readings: the slowest rank's
    samples split or drifted, or a rank's watches saw another process contend. A case
    that did not end `ok` ended the same way on every rank (`rank.agree`), and is not
    taken again."""
    if result.status is not Status.OK:
        return ""
    every = every_rank(r, (result.samples, result.first_call_s,
                           Caveat.CONTENDED in result.seen.caveats))
    worst = per_sample_max([e[0] for e in every])
    firsts = [e[1] for e in every if e[1] is not None]
    found = (*caveats.detect(worst, max(firsts) if firsts else None, result.criterion_met),
             *((Caveat.CONTENDED,) if any(e[2] for e in every) else ()))
    if tries.remeasure(found):
        return REMEASURE
    return CONTENDED if tries.retry(found) else ""


def next_try(tries: Tries, why: str, pause: Callable[[float], None] = time.sleep) -> Tries:
    """The tries after taking the case again for `why` (pausing first when contended)."""
    return tries.remeasuring() if why == REMEASURE else tries.paused(pause)


def seen_with(result: RankResult, *seen: Seen, tries: Tries = FIRST_TRY) -> RankResult:
    """The result with what its watches saw, and how often it was taken, added."""
    found: dict[Caveat, None] = dict.fromkeys(result.seen.caveats)
    counters = dict(result.seen.counters)
    for s in seen:
        found.update(dict.fromkeys(s.caveats))
        counters.update(s.counters)
    return replace(result, seen=Seen(tuple(found), counters | tries.counters()))


def measured(r: Ranks, take: Callable[[Watches, float], RankResult], threads: int,
             restart: Callable[[], None] = lambda: None,
             pause: Callable[[float], None] = time.sleep,
             power: EnergyOptions = NOT_ASKED) -> RankResult:
    """One case taken inside its watches, again while `again` says so. `take(watches,
    budget_factor)` builds the case's inputs, then tells the watches when its samples
    start and end; `restart()` is told before each new try (rank 0 tells the parent,
    whose clock on the case starts again)."""
    tries = Tries()
    while True:
        watches = case_watches(r, threads, power)
        watches.case_started()
        result = seen_with(take(watches, tries.budget_factor), watches.case_ended())
        why = again(r, result, tries)
        if not why:
            return seen_with(result, tries=tries)
        restart()
        tries = next_try(tries, why, pause)
