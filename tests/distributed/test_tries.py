"""A rank's case is timed inside the watches every entry point uses, and taken again
for the protocol's reasons — split or drifting samples, a contended machine — by the
same decision on every rank."""

from __future__ import annotations

import pytest

from gpuvs.distributed import collectives, rank
from gpuvs.distributed import tries as rank_tries
from gpuvs.distributed.rank import RankResult, Ranks
from gpuvs.measuring import protocol
from gpuvs.measuring.protocol import REMEASURE_BUDGET_FACTOR, Tries
from gpuvs.measuring.watch import Seen, Watch, Watches
from gpuvs.model import Case, Caveat, Status

STEADY = tuple(10e-6 * (1 + 0.001 * (i % 3)) for i in range(30))
DRIFTING = tuple(10e-6 * (1 + i / 10) for i in range(30))


def test_rank_0_merges_every_ranks_watches_by_the_rank_that_bounds_the_case() -> None:
    a = Seen((Caveat.THROTTLED,), {"sm_clock_mhz": 1980.0, "peak_device_bytes": 1e6,
                                   "others_cpu_share": 0.0})
    b = Seen((Caveat.CONTENDED, Caveat.THROTTLED), {"sm_clock_mhz": 1755.0,
                                                   "peak_device_bytes": 3e6,
                                                   "others_cpu_share": 0.2})
    both = rank.merged([a, b])
    assert both.caveats == (Caveat.THROTTLED, Caveat.CONTENDED)
    assert both.counters == {"sm_clock_mhz": 1755.0, "peak_device_bytes": 3e6,
                             "others_cpu_share": 0.2}


def test_the_gpus_energy_and_idle_power_add_up_over_the_ranks() -> None:
    """One rank, one GPU: a step's energy is every board's; a CPU's RAPL package is one
    counter that every rank on it reads."""
    from gpuvs.machine.energy import CPU_PACKAGE_J, GPU_IDLE_W, GPU_J, WINDOW_S

    a = Seen(counters={GPU_J: 900.0, GPU_IDLE_W: 130.0, WINDOW_S: 4.4, CPU_PACKAGE_J: 50.0})
    b = Seen(counters={GPU_J: 950.0, GPU_IDLE_W: 131.0, WINDOW_S: 4.5, CPU_PACKAGE_J: 51.0})
    both = rank.merged([a, b]).counters
    assert both[GPU_J] == 1850.0 and both[GPU_IDLE_W] == 261.0
    assert both[WINDOW_S] == 4.5 and both[CPU_PACKAGE_J] == 51.0


def test_drifting_samples_are_taken_again_once(one_rank: Ranks) -> None:
    drifting = RankResult(samples=DRIFTING)
    assert rank_tries.again(one_rank, drifting, Tries()) == rank_tries.REMEASURE
    assert rank_tries.again(one_rank, drifting, Tries(remeasured=True)) == ""
    assert rank_tries.again(one_rank, RankResult(samples=STEADY), Tries()) == ""


def test_a_contended_case_is_taken_again_after_a_pause(one_rank: Ranks) -> None:
    busy = RankResult(samples=STEADY, seen=Seen((Caveat.CONTENDED,)))
    assert rank_tries.again(one_rank, busy, Tries()) == rank_tries.CONTENDED
    paused: list[float] = []
    tries = rank_tries.next_try(Tries(), rank_tries.CONTENDED, paused.append)
    assert paused == [2.0] and tries.retries == 1
    assert rank_tries.again(one_rank, busy, tries) == ""  # at most once: then kept, caveat and all


def test_a_case_that_failed_is_not_taken_again(one_rank: Ranks) -> None:
    wrong = RankResult(Status.WRONG_RESULT, "rank 0: wrong", samples=DRIFTING)
    assert rank_tries.again(one_rank, wrong, Tries()) == ""


def test_measured_takes_drifting_steps_again_with_a_longer_budget(one_rank: Ranks) -> None:
    factors: list[float] = []
    heard: list[str] = []

    def take(watches: Watches, factor: float) -> RankResult:
        factors.append(factor)
        watches.sampling_started()
        watches.sampling_ended(30)
        return RankResult(samples=DRIFTING if len(factors) == 1 else STEADY)

    result = rank_tries.measured(one_rank, take, threads=1, restart=lambda: heard.append("again"))
    assert factors == [1.0, REMEASURE_BUDGET_FACTOR] and heard == ["again"]
    assert result.samples == STEADY and result.seen.counters["remeasured"] == 1.0
    assert "others_cpu_share" in result.seen.counters  # the real watches ran around it


class BusyOnce(Watch):
    """Says the first case it watches was contended (a real contention needs a busy
    machine; this pins the flow, the contention watch itself has its own tests)."""

    told = 0

    def case_ended(self) -> Seen:
        BusyOnce.told += 1
        return Seen((Caveat.CONTENDED,) if BusyOnce.told == 1 else ())


def test_a_collective_seen_contended_is_sampled_again(one_rank: Ranks,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    BusyOnce.told = 0
    monkeypatch.setattr(rank_tries, "case_watches", lambda r, threads: Watches([BusyOnce()]))
    monkeypatch.setattr(protocol, "CONTENDED_PAUSE_S", 0.0)
    case = Case("dist_collective", "correct", "gloo", "cpu", "float32", 4096,
                (("collective", "all_reduce"), ("nproc", "1")))
    ((_, result),) = collectives.run_cases(one_rank, [case], samples=3, budget_s=0)
    assert result.status is Status.OK and result.seen.counters["contended_retries"] == 1.0
    assert Caveat.CONTENDED not in result.seen.caveats  # the second try was quiet
