"""How a rank samples: batches that start with a barrier and an untimed loop, and
sampling that goes on while the CI of the slowest rank's median is wide.

The numbers are the two-H200 collectives of 2026-11-23: small all-reduces with a steady
median of about 24 µs whose ten samples gave ±100–160 %, because some samples held a
stall several times the call."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from gpuvs.distributed import collectives, rank
from gpuvs.distributed.rank import Ranks
from gpuvs.model import Case, Status
from gpuvs.stats import summarize

MEDIAN_S = 24.3e-6


def stalled_samples(seed: int = 7) -> Iterator[float]:
    """Per-call seconds as the H200s gave them: most within 2 % of the median, three in
    ten carrying a stall of 1.5–4× the call."""
    rng = np.random.default_rng(seed)
    while True:
        stalled = rng.random() < 0.3
        yield float(MEDIAN_S * (rng.uniform(1.5, 4.0) if stalled else rng.normal(1, 0.01)))


def test_ten_such_samples_give_the_ci_that_meant_nothing() -> None:
    ten = [s for s, _ in zip(stalled_samples(), range(10), strict=False)]
    assert summarize(ten).ci_halfwidth_rel > 0.3


def test_sampling_goes_on_until_the_median_ci_is_tight(one_rank: Ranks, monkeypatch) -> None:
    stream = stalled_samples()
    calls: list[int] = []

    def fake_batch(r: Ranks, call: object, loops: int, count: int
                   ) -> tuple[list[float], None]:
        calls.append(count)
        return [next(stream) for _ in range(count)], None

    monkeypatch.setattr(rank, "batch", fake_batch)
    sampler = rank.Sampler(one_rank, lambda: None, loops=1, least=10, budget_s=30)
    while not sampler.step():
        pass
    assert sampler.met and calls[0] == 10 and calls[1] == 20  # batches double
    s = summarize(sampler.took.mine)
    assert s.ci_halfwidth_rel <= 0.02
    assert s.ci_low <= MEDIAN_S * 1.02 and s.ci_high >= MEDIAN_S * 0.98


def test_a_spent_budget_stops_sampling_and_says_so(one_rank: Ranks, monkeypatch) -> None:
    stream = stalled_samples()
    monkeypatch.setattr(rank, "batch", lambda r, call, loops, count: (
        [next(stream) for _ in range(count)], None))
    sampler = rank.Sampler(one_rank, lambda: None, loops=1, least=10, budget_s=0)
    assert sampler.step()  # done after the first batch
    assert not sampler.met and len(sampler.took.mine) == 10


def test_a_batch_lines_the_ranks_up_with_one_untimed_loop(one_rank: Ranks) -> None:
    calls: list[int] = []
    samples, wall = rank.batch(one_rank, lambda: calls.append(1), loops=3, count=4)
    assert len(samples) == 4 and wall is None  # the CPU: no separate wall time
    assert len(calls) == 3 * (4 + 1)  # the first loop is not timed


def test_the_cpu_has_no_graph_to_replay_so_no_graph_samples(one_rank: Ranks) -> None:
    replay, why = rank.captured(one_rank, lambda: None, loops=3)
    assert replay is None and why == "the CPU has no graphs"


def test_a_case_s_graph_replay_time_is_the_slowest_rank_s_per_sample() -> None:
    case = Case("dist_collective", "correct", "nccl", "cuda", "float32", 4096,
                (("collective", "all_reduce"), ("nproc", "2")))
    results = [rank.RankResult(samples=(25e-6, 26e-6), graph_samples=(9e-6, 11e-6)),
               rank.RankResult(samples=(24e-6, 27e-6), graph_samples=(10e-6, 10e-6))]
    m = rank.measurement(case, results, {})
    assert m.status is Status.OK
    assert m.samples == (25e-6, 27e-6) and m.graph_samples == (10e-6, 11e-6)
    # One rank without replays (it could not capture): no busy time for the case.
    partial = [results[0], rank.RankResult(samples=(24e-6, 27e-6))]
    assert rank.measurement(case, partial, {}).graph_samples == ()


def _all_reduce(size: int) -> Case:
    return Case("dist_collective", "correct", "gloo", "cpu", "float32", size,
                (("collective", "all_reduce"), ("nproc", "1")))


def test_small_cases_are_sampled_in_turns_so_each_spans_the_sweep(one_rank: Ranks) -> None:
    visits: list[int] = []
    ended = [(case.size, result) for case, result in collectives.run_cases(
        one_rank, [_all_reduce(4096), _all_reduce(65536)], samples=3, budget_s=0.5,
        visit=lambda case: visits.append(case.size))]
    # Both start in the plan's order, then take their batches in turn, each at least
    # TURNS batches (a CI met in the first second is not yet a CI of the sweep), and
    # each batch at most as many samples as the first (the last one as many as the
    # budget's remainder holds): no batch outweighs the others.
    assert visits[:4] == [4096, 65536, 4096, 65536]
    for size, result in ended:
        turns = visits.count(size)
        assert turns >= collectives.TURNS and result.status is Status.OK
        assert 3 * collectives.TURNS <= len(result.samples) <= 3 * turns
        assert result.graph_samples == ()  # the CPU has no graphs to replay


def test_a_large_case_is_sampled_at_once_while_small_ones_wait_their_turn(
        one_rank: Ranks, monkeypatch) -> None:
    monkeypatch.setattr(collectives, "TURNS_BELOW_BYTES", 8192)
    visits: list[int] = []
    ended = [case.size for case, _ in collectives.run_cases(
        one_rank, [_all_reduce(4096), _all_reduce(65536)], samples=3, budget_s=0.5,
        visit=lambda case: visits.append(case.size))]
    assert ended == [65536, 4096]
    assert visits[:2] == [4096, 65536] and set(visits[2:]) == {4096}


def test_small_cases_take_turns_a_window_at_a_time_so_cases_keep_ending(
        one_rank: Ranks, monkeypatch) -> None:
    monkeypatch.setattr(collectives, "TURN_WINDOW", 2)
    events: list[tuple[str, int]] = []
    for case, _ in collectives.run_cases(
            one_rank, [_all_reduce(1024), _all_reduce(4096), _all_reduce(16384)], samples=3,
            budget_s=0.3, visit=lambda case: events.append(("visit", case.size))):
        events.append(("ended", case.size))
    # The first window (1 KiB, 4 KiB) ends, and is saved, before the third case starts.
    third = events.index(("visit", 16384))
    assert {("ended", 1024), ("ended", 4096)} <= set(events[:third])
    assert events[-1] == ("ended", 16384)


def test_no_graph_is_captured_before_the_sweep_s_last_eager_sample(one_rank: Ranks,
                                                                   monkeypatch) -> None:
    """A graph capture slows a process's later launches, so the eager sweep captures
    nothing (`replay_cases` captures after it; on the CPU, where there are no graphs, it
    adds nothing). `test_dist_gpu` holds the replays on two GPUs."""
    asked: list[int] = []
    monkeypatch.setattr(collectives, "captured",
                        lambda r, call, loops: asked.append(loops) or (None, "asked"))
    finished = list(collectives.run_cases(one_rank, [_all_reduce(4096), _all_reduce(65536)],
                                          samples=3, budget_s=0.2))
    assert asked == [] and all(r.status is Status.OK for _, r in finished)
    assert list(collectives.replay_cases(one_rank, finished, samples=3, budget_s=0.1)) == []
