"""Samples from several processes: the figure and its interval are over processes, where the
processes fall in two groups the tables say so in words, and a case takes more than two
processes only where the processes may set its speed."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from gpuvs import stats
from gpuvs.config import PASSES, RunConfig
from gpuvs.execute.runner import MORE_PROCESSES_BELOW_S, _again
from gpuvs.model import Case, Measurement, Status
from gpuvs.report.layout import regimes_words

CASE = Case("elementwise", "correct", "torch", "cuda:0", "float32", 10_000, (("op", "scale"),))


def _processes(*medians: float, n: int = 40, jitter: float = 0.002) -> tuple[float, ...]:
    """`n` samples from each process, each scattered tightly about its own median."""
    rng = np.random.default_rng(7)
    return tuple(float(x) for m in medians for x in m * (1 + jitter * rng.standard_normal(n)))


def test_the_figure_is_the_median_of_the_processes_medians_each_one_vote() -> None:
    # One process took many more samples than the others: pooled, its 9.8 µs would win.
    samples = _processes(7.0e-6, n=30) + _processes(7.1e-6, n=30) + _processes(9.8e-6, n=300)
    s = stats.summarize(samples, (30, 30, 300))
    assert s.median == pytest.approx(7.1e-6, rel=0.01)
    assert s.ci_low <= 7.0e-6 * 1.01 and s.ci_high >= 9.8e-6 * 0.99  # covers every process


def test_processes_that_agree_keep_the_interval_tight() -> None:
    s = stats.summarize(_processes(5e-3, 5.01e-3, 4.99e-3, 5e-3, 5e-3), (40,) * 5)
    assert s.ci_halfwidth_rel < 0.01


def test_two_groups_of_processes_are_named_in_words() -> None:
    samples = _processes(7.06e-6, 7.1e-6, 9.84e-6, 7.0e-6, 9.9e-6)
    m = Measurement(CASE, Status.OK, samples=samples, passes=(40,) * 5)
    assert m.regimes is not None
    assert (m.regimes.fast_count, m.regimes.slow_count) == (3, 2)
    assert regimes_words(m) == "bimodal across processes: 7.05 µs in 3 of 5, 9.87 µs in 2"


def test_one_group_or_two_processes_say_nothing_of_regimes() -> None:
    close = Measurement(CASE, Status.OK, samples=_processes(7.0e-6, 7.2e-6, 7.4e-6),
                        passes=(40,) * 3)
    assert close.regimes is None and regimes_words(close) == ""
    two = Measurement(CASE, Status.OK, samples=_processes(7.0e-6, 9.8e-6), passes=(40, 40))
    assert two.regimes is None  # two processes cannot tell two groups from noise


def _measured(median_s: float, apart: float, processes: int = 2) -> Measurement:
    samples = _processes(*([median_s] * processes))
    return Measurement(CASE, Status.OK, samples=samples, passes=(40,) * processes,
                       counters={"case_s": 0.1, "passes_apart": apart})


def test_every_case_takes_two_processes_and_more_only_where_processes_may_decide() -> None:
    assert _again(Measurement(CASE, Status.OK, samples=_processes(1e-3), counters={
        "case_s": 0.1}))  # one process so far: always a second
    assert _again(_measured(10e-6, apart=0.0))  # launch-bound: the host's pace per process
    assert not _again(_measured(5e-3, apart=0.005))  # long, and the two agree
    assert _again(_measured(5e-3, apart=0.10))  # long, but the two disagree
    assert MORE_PROCESSES_BELOW_S < 5e-3


@pytest.mark.parametrize("case", [
    replace(CASE, device="cpu", backend="numpy"),  # the CPU's pace is the host's own
    replace(CASE, params=(("data", "end_to_end"), ("op", "scale"))),  # copies: the host's
    Case("calibration", "correct", "torch", "cuda:0", "float32", 1 << 22,
         (("bound", "transfer"),)),  # the calibration's round trip: copies too
])
def test_a_long_call_the_host_paces_takes_every_process_though_two_agree(case: Case) -> None:
    m = replace(_measured(5e-3, apart=0.005), case=case)
    assert _again(m)


def test_a_case_in_three_processes_or_more_has_an_interval_that_holds_a_repeats_figure(
        ) -> None:
    """Processes whose medians scatter (5 % between processes, two groups 35 % apart, the
    slower holding two processes in five, as on the H100 VMs): another run of five
    processes lands its figure inside the first's interval at least 90 % of the time;
    the range of the five alone does not."""
    rng = np.random.default_rng(11)
    repeats = 4000

    def medians() -> list[float]:
        return [float(np.exp(rng.normal(0, 0.05))) * (1.35 if rng.random() < 0.4 else 1)
                for _ in range(5)]

    inside = ranged = 0
    for _ in range(repeats):
        a, b = medians(), medians()
        figure, repeat = float(np.median(a)), float(np.median(b))
        low, high = stats.repeat_interval(a, figure)
        inside += min(low, *a) <= repeat <= max(high, *a)
        ranged += min(a) <= repeat <= max(a)
    assert inside / repeats >= 0.92 and ranged / repeats < 0.85


def test_summaries_of_three_processes_or_more_reach_where_a_repeat_may_land() -> None:
    samples = _processes(7.0e-6, 7.1e-6, 9.8e-6, 7.05e-6, 9.9e-6)
    s = stats.summarize(samples, (40,) * 5)
    low, high = stats.repeat_interval([7.0e-6, 7.1e-6, 9.8e-6, 7.05e-6, 9.9e-6], s.median)
    assert s.ci_low <= low * 1.01 and s.ci_high >= high * 0.99
    assert s.ci_high > 9.9e-6  # past the slowest process: a repeat may land beyond it
    two = stats.summarize(_processes(7.0e-6, 9.8e-6), (40, 40))
    assert two.ci_high == pytest.approx(9.8e-6, rel=0.01)  # two processes: their range


def test_a_failed_case_or_one_too_long_to_sample_twice_runs_once() -> None:
    assert not _again(Measurement(CASE, Status.CRASHED, "boom"))
    slow = Measurement(CASE, Status.OK, samples=(4.0, 4.1), counters={"case_s": 9.0})
    assert not _again(slow)


def test_every_machine_samples_a_case_in_five_processes_by_default(monkeypatch) -> None:
    """A CPU-only box has regimes per process too: two processes are no gate's evidence."""
    from gpuvs.backends import base

    for has_gpu in (True, False):
        monkeypatch.setattr(base, "machine_has_gpu", lambda has=has_gpu: has)
        assert RunConfig().passes == PASSES == 5


def test_two_runs_of_the_same_code_compare_over_their_processes_without_a_false_verdict(
        ) -> None:
    """The one-thread CPU probe of two runs on one H100: A's five processes in both
    groups, B's all in the fast one. Welch's t alone read B "faster" (0.69 [0.50, 0.95]);
    over processes worst to worst, the ratio's interval holds 1."""
    a = _processes(349e-6, 244e-6, 381e-6, 362e-6, 250e-6)
    b = _processes(241e-6, 231e-6, 238e-6, 245e-6, 236e-6)
    found = stats.ratio_over_processes(b, (40,) * 5, a, (40,) * 5)
    assert found is not None
    ratio, low, high = found
    assert ratio == pytest.approx(238e-6 / 349e-6, rel=0.02) and low < 1 < high


def test_processes_that_agree_in_both_runs_give_a_tight_ratio() -> None:
    a = _processes(*[56.25e-6 * (1 + d) for d in (0, 1e-3, -1e-3, 5e-4, 0)])
    b = _processes(*[55.96e-6 * (1 + d) for d in (0, 1e-3, -1e-3, 5e-4, 0)])
    ratio, low, high = stats.ratio_over_processes(b, (40,) * 5, a, (40,) * 5) or (0, 0, 0)
    assert high - low < 0.01 and low <= ratio <= high
    assert stats.ratio_over_processes(b, (100, 100), a, (40,) * 5) is None  # two: no t


# The group medians of ten launch-bound ops a call in twenty processes on an H100 VM
# (benchmarks/regression_caught.sh, PASSES=20), microseconds: two in a fast group, three
# slow ones, the rest about 126.
TWENTY = (122, 127, 124, 126, 127, 85, 122, 126, 130, 126, 124, 122, 127, 158, 142, 87, 126,
          128, 127, 148)


def test_many_processes_narrow_the_interval_instead_of_covering_their_range() -> None:
    samples = _processes(*(m * 1e-6 for m in TWENTY))
    s = stats.summarize(samples, (40,) * len(TWENTY))
    assert s.median == pytest.approx(126e-6, rel=0.01)
    assert s.ci_low > 85e-6 and s.ci_high < 158e-6  # not every process's median
    assert s.ci_halfwidth_rel < 0.15
    five = stats.summarize(_processes(*(m * 1e-6 for m in TWENTY[:5 + 1])), (40,) * 6)
    assert five.ci_low <= 85e-6 * 1.01  # a few processes still cover them all


def test_a_twenty_percent_slowdown_over_twenty_processes_lies_wholly_above_one() -> None:
    """Worst to worst (158 / 85) the ratio could not tell 1.2 from 1; over twenty
    processes a side, the rank interval on their medians does."""
    before = _processes(*(m * 1e-6 for m in TWENTY))
    after = _processes(*(1.2 * m * 1e-6 for m in reversed(TWENTY)))
    ratio, low, high = stats.ratio_over_processes(after, (40,) * 20, before, (40,) * 20) \
        or (0, 0, 0)
    assert ratio == pytest.approx(1.2, rel=0.02) and 1.05 < low < ratio < high < 1.4
    same, low, high = stats.ratio_over_processes(
        _processes(*(m * 1e-6 for m in reversed(TWENTY))), (40,) * 20, before, (40,) * 20) \
        or (0, 0, 0)
    assert low < 1 < high


# The same function's process medians on two H100 VMs (µs, `regression_caught.sh`, twenty
# processes each): the first VM's run, then the second VM's with two small ops a call
# added (1.2× the work). Both fall in two groups; one of the second's processes stalled.
FIRST_VM = (88, 88, 90, 90, 91, 94, 119, 121, 126, 127, 127, 128, 128, 130, 132, 134, 135,
            135, 135, 138)
SECOND_VM_SLOWED = (97, 102, 102, 110, 111, 138, 141, 148, 148, 148, 150, 152, 156, 161, 161,
                    163, 163, 166, 169, 558)


def test_one_stalled_process_does_not_hide_a_slowdown_across_two_machines() -> None:
    """Welch's t on the logarithms read the one stalled process as spread: 1.18×
    [0.935, 1.48], and the gate let the slowdown pass. The rank interval does not."""
    before = _processes(*(m * 1e-6 for m in FIRST_VM))
    after = _processes(*(m * 1e-6 for m in SECOND_VM_SLOWED))
    ratio, low, high = stats.ratio_over_processes(after, (40,) * 20, before, (40,) * 20) \
        or (0, 0, 0)
    assert ratio == pytest.approx(150 / 127.5, rel=0.01)
    assert 1.05 < low < ratio < high < 1.4


def test_the_rank_interval_covers_no_shift_as_often_as_it_says() -> None:
    """Both sides drawn alike — two groups, 90 and 128, and one process in twenty stalled
    four times over — the interval holds a ratio of 1 in 95 % of pairs (Moses' interval
    is exact for any shape)."""
    rng = np.random.default_rng(0)

    def draw(k: int) -> np.ndarray:
        v = np.where(rng.random(k) < 0.3, 90.0, 128.0) * np.exp(rng.normal(0, 0.03, k))
        return np.log(np.where(rng.random(k) < 0.05, 4 * v, v))

    for m, n in ((5, 5), (10, 10), (20, 20), (7, 12)):
        held = [low <= 0 <= high for low, high in
                (stats.shift_interval(draw(m), draw(n)) for _ in range(2000))]
        assert 0.94 <= sum(held) / len(held) <= 0.98, (m, n)
