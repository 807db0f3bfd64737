"""Run against run: the verdict reads the CI against the threshold, never two numbers."""

from __future__ import annotations

import numpy as np
import pytest

from gpuvs import stats
from gpuvs.analysis.regression import (
    ERROR,
    FAIL,
    PASS,
    Change,
    borrowed,
    change,
    compare,
    family_widening,
    gate,
    geometric_means,
    process_spread,
    unjudged,
    verdict,
)
from gpuvs.model import Case, Caveat, Measurement, Status

RNG = np.random.default_rng(11)


def _m(median: float, size: int = 1, version: str = "v1", noise: float = 0.005,
       caveats: tuple[Caveat, ...] = ()) -> Measurement:
    case = Case("w", "correct", "numpy", "cpu", "float32", size)
    samples = tuple(median * (1 + RNG.normal(0, noise, 60)))
    return Measurement(case, Status.OK, samples=samples, workload_version=version,
                       caveats=caveats)


@pytest.mark.parametrize(("low", "high", "word"), [
    (1.06, 1.20, "slower"), (0.80, 0.94, "faster"), (0.97, 1.04, "same"),
    (1.02, 1.08, "ambiguous"), (0.93, 0.99, "ambiguous"), (0.90, 1.10, "ambiguous"),
])
def test_the_verdict_reads_the_whole_interval(low: float, high: float, word: str) -> None:
    assert verdict(low, high, 0.05) == word


def test_a_clear_slowdown_is_slower_and_a_rerun_is_the_same() -> None:
    base = _m(1e-3)
    assert change(base, _m(1.3e-3)).verdict == "slower"
    assert change(base, _m(1e-3)).verdict == "same"
    assert change(base, _m(0.7e-3)).verdict == "faster"


def test_a_busy_machine_cannot_prove_a_regression() -> None:
    c = change(_m(1e-3), _m(1.3e-3, caveats=(Caveat.CONTENDED,)))
    assert c.verdict == "ambiguous" and c.contended


def test_cases_at_other_workload_versions_are_refused_unless_forced() -> None:
    changes, unmatched = compare([_m(1e-3)], [_m(1e-3, version="v2")])
    assert changes == [] and unmatched[0].why == "workload version v1 in A, v2 in B"
    forced, _ = compare([_m(1e-3)], [_m(1e-3, version="v2")], force=True)
    assert len(forced) == 1


def test_the_geometric_mean_of_a_workload_has_an_interval_over_its_cases() -> None:
    base = [_m(1e-3, size=s) for s in (1, 2, 3, 4)]
    later = [_m(1e-3 * r, size=s) for s, r in zip((1, 2, 3, 4), (1.1, 1.2, 1.1, 1.2),
                                                    strict=True)]
    changes, _ = compare(base, later)
    (mean,) = geometric_means(changes)
    assert mean.cases == 4 and mean.ratio == pytest.approx((1.1 * 1.2) ** 0.5, rel=0.02)
    assert mean.low <= mean.ratio <= mean.high


def test_the_rank_test_matches_a_known_example() -> None:
    """R's wilcox.test on these (its documentation's depression data): W = 58,
    p = 0.1329 by the normal approximation with continuity correction."""
    x = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30]
    y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29]
    u, p = stats.mann_whitney_u(x, y)
    assert u == 58 and p == pytest.approx(0.1329, abs=5e-4)
    assert stats.mann_whitney_u(x, x)[1] == pytest.approx(1.0, abs=0.05)


def _failed(size: int, status: Status, reason: str = "") -> Measurement:
    return Measurement(Case("w", "correct", "numpy", "cpu", "float32", size), status,
                       reason=reason)


def test_the_gate_fails_closed_on_a_case_that_did_not_end_ok() -> None:
    """Issue 30: a crashed case dropped out of the comparison and the gate passed."""
    a = [_m(1e-3, 1), _m(2e-3, 2), _m(3e-3, 3)]
    b = [_m(1e-3, 1), _failed(2, Status.CRASHED, "signal 6"), _failed(3, Status.UNAVAILABLE)]
    judged = gate(a, b)
    assert judged.verdict == FAIL
    assert [(n.key.rsplit("/", 1)[1], n.status, n.failing) for n in judged.not_measured] == [
        ("2", "crashed", True), ("3", "unavailable", True)]  # A measured 3: B no longer does
    assert judged.exit_reason == ("2 case(s) did not end ok: w/correct/numpy/cpu/float32/2 "
                                  "(crashed), w/correct/numpy/cpu/float32/3 (unavailable)")
    allowed = gate(a, b, allow_failed=True)
    assert allowed.verdict == PASS and "allowed (--allow-failed)" in allowed.exit_reason


def test_a_case_neither_run_could_measure_does_not_fail_the_gate() -> None:
    a = [_m(1e-3, 1), _failed(2, Status.UNAVAILABLE, "no CUDA device")]
    b = [_m(1e-3, 1), _failed(2, Status.UNAVAILABLE, "no CUDA device")]
    judged = gate(a, b)
    assert judged.verdict == PASS and not judged.failing
    assert judged.not_measured[0].status == "unavailable"


def test_no_case_in_common_is_an_error_and_a_run_that_stopped_early_fails() -> None:
    other = [Measurement(Case("v", "correct", "numpy", "cpu", "float32", 1), Status.OK,
                         samples=(1e-3,) * 5)]
    nothing = gate([_m(1e-3, 1)], other)
    assert nothing.verdict == ERROR
    assert nothing.exit_reason.startswith("no case in common: A measured w; B measured v")
    stopped = gate([_m(1e-3, 1)], [_m(1e-3, 1)], unfinished="run R is interrupted")
    assert stopped.verdict == FAIL and stopped.exit_reason == "run R is interrupted"
    assert gate([_m(1e-3, 1)], [_m(1e-3, 1)], allow_failed=True,
                unfinished="run R is interrupted").verdict == PASS


def test_a_clear_slowdown_fails_the_gate_with_its_ratio() -> None:
    judged = gate([_m(1e-3, 1)], [_m(1.5e-3, 1)], threshold=0.1)
    assert judged.verdict == FAIL and [c.key for c in judged.slower] == [
        "w/correct/numpy/cpu/float32/1"]
    assert judged.exit_reason.startswith("1 case(s) slower by more than 10 % with the whole "
                                         "CI above it: w/correct/numpy/cpu/float32/1 (1.5")


def _gpu(median: float, busy: float | None) -> Measurement:
    case = Case("w", "correct", "torch", "cuda:0", "float32", 1)
    samples = tuple(median * (1 + RNG.normal(0, 0.002, 60)))
    counters = {"busy_graph_s": busy} if busy is not None else {}
    return Measurement(case, Status.OK, samples=samples, counters=counters)


def test_a_host_bound_gpu_case_is_judged_against_the_spread_runs_of_its_kind_show() -> None:
    """A launch-bound case moved 15 % between runs at the median on H100s, whatever one
    run's interval said: 10 % slower is within that; 40 % slower is not."""
    base = _gpu(10e-6, busy=2e-6)
    assert change(base, _gpu(11e-6, busy=2e-6)).verdict == "ambiguous"
    assert change(base, _gpu(14e-6, busy=2e-6)).verdict == "slower"
    assert change(base, _gpu(11e-6, busy=None)).verdict == "ambiguous"  # busy not known


def test_a_device_bound_gpu_case_keeps_its_own_narrow_interval() -> None:
    """A kernel that keeps the GPU busy was 0.1 % apart between runs: 10 % is slower."""
    base = _gpu(2.66e-3, busy=2.65e-3)
    assert change(base, _gpu(2.93e-3, busy=2.92e-3)).verdict == "slower"
    assert change(base, _gpu(2.66e-3, busy=2.65e-3)).verdict == "same"


def _yours(median: float, version: str, caveats: tuple[Caveat, ...] = ()) -> Measurement:
    case = Case("yours:work", "correct", "numpy", "cpu", "float64", 1000)
    samples = tuple(median * (1 + RNG.normal(0, 0.005, 60)))
    return Measurement(case, Status.OK, samples=samples, workload_version=version,
                       caveats=caveats)


def test_your_own_code_at_a_new_version_is_judged_and_said_to_have_changed() -> None:
    """Issue 42: an edited run-file function was "no case in common" unless --force."""
    slower = gate([_yours(1e-3, "source-a")], [_yours(2e-3, "source-b")])
    assert slower.verdict == FAIL and slower.unmatched == ()
    (c,) = slower.changes
    assert c.code_changed and c.verdict == "slower" and c.ratio == pytest.approx(2, rel=0.02)
    unchanged = gate([_yours(1e-3, "source-a")], [_yours(1e-3, "source-b")])
    assert unchanged.verdict == PASS and unchanged.changes[0].code_changed
    same_code = gate([_yours(1e-3, "source-a")], [_yours(1e-3, "source-a")])
    assert not same_code.changes[0].code_changed


def test_gpuvs_own_workloads_at_another_version_are_still_refused() -> None:
    refused = gate([_m(1e-3, version="v1")], [_m(2e-3, version="v2")])
    assert refused.verdict == ERROR and refused.changes == ()
    assert refused.unmatched[0].why == "workload version v1 in A, v2 in B"


@pytest.mark.parametrize("side", ["a", "b"])
def test_a_case_measured_under_contention_in_either_run_cannot_pass(side: str) -> None:
    """Issue 43: a case unchanged by its ratio still cannot pass when other processes
    took the CPU in either run: the ratio may be theirs."""
    busy = (Caveat.CONTENDED,)
    a = [_m(1e-3, 1, caveats=busy if side == "a" else ()), _m(2e-3, 2)]
    b = [_m(1e-3, 1, caveats=busy if side == "b" else ()), _m(2e-3, 2)]
    judged = gate(a, b)
    assert judged.verdict == FAIL
    assert [c.key for c in judged.unjudged] == ["w/correct/numpy/cpu/float32/1"]
    assert judged.exit_reason.startswith(
        "cannot judge: 1 case(s) measured under contention (other processes took the CPU "
        "in A or B; measure again on a quiet machine): w/correct/numpy/cpu/float32/1 (1.0")


def test_a_nine_fold_slowdown_measured_under_contention_is_never_a_pass() -> None:
    """Issue 43: 8.94 [8.91, 8.97] "ambiguous", then "passed", exit 0."""
    judged = gate([_m(1e-3)], [_m(8.94e-3, caveats=(Caveat.CONTENDED,))])
    (c,) = judged.changes
    assert c.verdict == "ambiguous" and c.low > 8  # contention demotes the word …
    assert judged.verdict == FAIL  # … never the gate to a pass
    assert "cannot judge: 1 case(s) measured under contention" in judged.exit_reason
    assert unjudged(c, judged.threshold) == "measured under contention"


def test_a_case_surely_slower_by_an_amount_the_runs_cannot_pin_cannot_pass() -> None:
    """Slower by 6 % by its ratio, its interval above 1 but reaching below 1.05: the runs
    show a slowdown and cannot show it is within the threshold. Not a pass."""
    def around(median: float) -> Measurement:
        samples = tuple(median * np.linspace(0.99, 1.01, 61))
        return Measurement(Case("w", "correct", "numpy", "cpu", "float32", 1), Status.OK,
                           samples=samples)

    judged = gate([around(1e-3)], [around(1.055e-3)])
    (c,) = judged.changes
    assert c.verdict == "ambiguous" and c.ratio > 1.05 and 1 < c.low < 1.05
    assert judged.verdict == FAIL and judged.unjudged == (c,)
    assert "cannot judge: 1 case(s) slower beyond the threshold by their ratio" in \
        judged.exit_reason
    assert "its CI above 1 but reaching below 1.05" in judged.exit_reason


def test_a_case_whose_processes_spread_wider_than_the_threshold_passes_as_not_resolved(
        ) -> None:
    """Five processes pin a launch-bound figure on an H100 VM to ±27 % at the median:
    a ratio of 1.09 with an interval reaching below 1 is no change the runs can see. It
    passes, named as not resolved; failing it failed every rerun of unchanged code."""
    def spread(median: float) -> Measurement:  # the same wide samples, scaled
        samples = tuple(median * np.linspace(0.6, 1.4, 61))
        return Measurement(Case("w", "correct", "numpy", "cpu", "float32", 1), Status.OK,
                           samples=samples)

    wide = gate([spread(1e-3)], [spread(1.09e-3)])
    (c,) = wide.changes
    assert c.verdict == "ambiguous" and c.ratio > 1.05 and c.low < 1
    assert wide.verdict == PASS and wide.unresolved == (c,) and not wide.unjudged


def test_the_unresolved_line_names_a_few_and_caps_a_spread_wider_than_the_figure() -> None:
    """96 keys in one line, and '±12925304 %' for one process 600× slower than the rest,
    were what a check on an H100 default run printed."""
    from gpuvs.cli.history import UNRESOLVED_NAMED, unresolved_line

    def spread(median: float, wide: float, size: int) -> Measurement:
        samples = tuple(median * np.linspace(1 - wide, 1 + wide, 61))
        return Measurement(Case("w", "correct", "numpy", "cpu", "float32", size), Status.OK,
                           samples=samples)

    sizes = range(1, UNRESOLVED_NAMED + 3)
    judged = gate([spread(1e-3, 0.4, n) for n in sizes],
                  [spread(1.01e-3, 0.4 if n > 1 else 0.999, n) for n in sizes])
    assert len(judged.unresolved) == len(sizes)
    line = unresolved_line(judged)
    assert line.startswith(f"{len(sizes)} case(s) not resolved at ±5 %")
    assert "up to ±>100 %" in line
    assert line.endswith("and 2 more (the JSON's `unresolved` lists them)")
    assert line.count("w/correct/numpy") == UNRESOLVED_NAMED


def test_cases_judged_together_have_intervals_widened_for_their_number() -> None:
    """At 95 % each, a hundred cases of unchanged code would put about five intervals
    beside 1 by chance; judged together, all hold at 95 %."""
    assert family_widening(1) == pytest.approx(1.0)
    assert family_widening(100) == pytest.approx(1.78, abs=0.01)
    a = [_m(1e-3, size) for size in range(1, 101)]
    b = [_m(1e-3, size) for size in range(1, 101)]
    judged = gate(a, b).changes[0]
    alone = change(a[0], b[0])
    assert judged.high / judged.ratio == pytest.approx(
        (alone.high / alone.ratio) ** family_widening(100))
    assert gate(a[:1], b[:1]).changes[0] == alone

def _processes(median: float, medians: tuple[float, ...], size: int = 1,
               backend: str = "numpy", variant: str = "correct") -> Measurement:
    """A case sampled in one process per entry of `medians` (each a factor of `median`),
    twenty samples in each, 0.5 % apart within a process."""
    case = Case("w", variant, backend, "cpu", "float32", size)
    samples = tuple(median * f * (1 + RNG.normal(0, 0.005, 20)) for f in medians)
    return Measurement(case, Status.OK, samples=tuple(np.concatenate(samples)),
                       passes=(20,) * len(medians))


def test_a_case_timed_in_one_process_borrows_the_spread_its_run_s_processes_show() -> None:
    """On one H100, two seeds runs back to back put NumPy's 10⁹-element passes (each timed
    in one process, its two samples 1 % apart) up to 31 % apart, where the run's NumPy
    cases sampled in five processes spread ±29–33 %. The long call borrows that spread:
    30 % slower is no change the runs can see; twice as slow still is."""
    wide = (0.75, 0.9, 1.0, 1.1, 1.3)  # five processes of one case: the run's spread
    a = [_processes(1e-3, wide, size=2), _processes(0.8, (1.0,), size=9)]
    spread = process_spread(a)
    assert 0.2 < spread["numpy", "cpu"] < 0.6
    assert borrowed(a[1], spread) == spread["numpy", "cpu"] and borrowed(a[0], spread) == 0
    rerun = [_processes(1e-3, wide, size=2), _processes(0.8 * 1.3, (1.0,), size=9)]
    assert gate(a, rerun).verdict == PASS
    twice = [_processes(1e-3, wide, size=2), _processes(0.8 * 2, (1.0,), size=9)]
    judged = gate(a, twice)
    assert judged.verdict == FAIL and [c.size for c in judged.slower] == [9]
    # alone, with no case of its kind in several processes to borrow from, it keeps its own
    assert change(a[1], rerun[1]).verdict == "slower"


def test_a_post_s_replay_as_written_is_set_side_by_side_and_never_gated() -> None:
    """A replay is one call timed as the post timed it: 18 % slower in a second seeds run
    of the same code failed `check`. It is shown, named, and passes nothing and fails
    nothing; the same slowdown in a case gpuvs measures still fails."""
    replay_a = _processes(1.0, (1.0,), variant="as_written")
    replay_b = _processes(1.18, (1.0,), variant="as_written")
    judged = gate([replay_a, _m(1e-3, 2)], [replay_b, _m(1e-3, 2)])
    assert judged.verdict == PASS and [c.replay for c in judged.changes] == [True, False]
    assert judged.replays == (judged.changes[0],) and judged.slower == ()
    assert judged.exit_reason.endswith("1 post replay(s) as written set side by side, "
                                       "not judged")
    assert gate([_m(1e-3, 2)], [_m(1.3e-3, 2)]).verdict == FAIL


def test_a_case_in_many_processes_is_judged_by_them_not_by_the_floor_of_two_process_runs(
        ) -> None:
    """A launch-bound function in twenty processes a side, slowed 20 %: the 15 % floor
    measured on two-process runs hid it (1.18× [1.009, 1.39], 'cannot judge'); the rank
    interval over twenty processes' medians holds what a repeat gives, and calls it slower."""
    def launch_bound(median: float) -> Measurement:
        groups = tuple(1.0 if i % 5 else 1.08 for i in range(20))
        case = Case("w", "correct", "torch", "cuda:0", "float32", 1)
        samples = np.concatenate([median * g * (1 + RNG.normal(0, 0.01, 20)) for g in groups])
        return Measurement(case, Status.OK, samples=tuple(samples), passes=(20,) * 20,
                           counters={"busy_graph_s": median / 5})

    c = change(launch_bound(10e-6), launch_bound(12e-6))
    assert c.verdict == "slower" and c.low > 1.1
    assert change(launch_bound(10e-6), launch_bound(10e-6)).verdict == "same"


def test_the_verdict_column_says_a_case_the_gate_cannot_pass_is_slower_by_its_ratio() -> None:
    """'ambiguous' alone, beside a gate that failed on the case, read as if nothing had
    been found; the cell says what the gate says."""
    from gpuvs.report.history import verdict_cell

    def around(median: float) -> Measurement:
        samples = tuple(median * np.linspace(0.99, 1.01, 61))
        return Measurement(Case("w", "correct", "numpy", "cpu", "float32", 1), Status.OK,
                           samples=samples)

    (c,) = gate([around(1e-3)], [around(1.055e-3)]).changes
    assert verdict_cell(c, 0.05) == "ambiguous: slower by its ratio, CI above 1"
    (same,) = gate([around(1e-3)], [around(1e-3)]).changes
    assert verdict_cell(same, 0.05) == "same"


def test_a_replay_is_marked_not_gated_beside_its_probe_too() -> None:
    """Seed 001's sequential GRU replayed as written read 'slower (1.777× over device
    arithmetic …)' on a second H200 VM, without the mark that it is not gated: a reader
    took the gate to have passed a slower case."""
    from dataclasses import replace

    from gpuvs.analysis.calibration import Machine
    from gpuvs.report.history import verdict_cell

    probe = Machine("device arithmetic (torch cuda:0)", "probe", 0.998, 0.978, 1.018,
                    1.777, 1.07, 2.93)
    c = Change("gru", "gru", "gru", 20, 0.116, 0.205, 1.773, 1.071, 2.934, 1.0, "slower",
               False, machine=probe, replay=True)
    assert verdict_cell(c, 0.05) == ("slower (1.777× over device arithmetic (torch cuda:0) "
                                     "at 0.998×) (replay as written: not gated)")
    explained = replace(c, verdict="machine")
    assert verdict_cell(explained, 0.05).endswith("(replay as written: not gated)")


def _grouped(median: float, slow: int, factor: float = 1.0, device: str = "cuda:0",
             data: str = "resident") -> Measurement:
    """A launch-bound case on an H200 VM: twenty processes, `slow` of them in the group
    1.5× slower (79 and 119 µs), each process's samples 1 % apart, all scaled by `factor`."""
    params = (("data", data),) if data != "resident" else ()
    groups = [1.5 if i < slow else 1.0 for i in range(20)]
    samples = np.concatenate([median * factor * g * (1 + RNG.normal(0, 0.01, 20))
                              for g in groups])
    return Measurement(Case("w", "correct", "torch", device, "float32", 1, params), Status.OK,
                       samples=tuple(samples), passes=(20,) * 20)


def test_a_case_in_two_groups_of_processes_fails_on_its_interval_not_its_ratio() -> None:
    """Unchanged code on a second H200 VM, its groups 3 % slower: 6 of 20 processes in
    the slow group, then 13. The median jumps from one group to the other (1.5× by the
    ratio), the interval above 1 but reaching below the threshold: not resolved, not
    failing. Slowed by 20 %, the whole interval lies above the threshold: slower, as on
    both VMs."""
    a = [_grouped(79e-6, slow=6)]
    rerun = gate(a, [_grouped(79e-6, slow=13, factor=1.03)])
    (c,) = rerun.changes
    assert c.grouped and c.ratio > 1.3 and c.verdict == "ambiguous" and 1 < c.low <= 1.05
    assert rerun.verdict == PASS and rerun.unresolved == (c,)
    from gpuvs.cli.history import unresolved_line
    assert "1 slower by their ratio, but with processes in two groups" in \
        unresolved_line(rerun)
    slowed = gate(a, [_grouped(79e-6, slow=13, factor=1.2)])
    assert slowed.verdict == FAIL and slowed.changes[0].verdict == "slower"
    # one group, the same ratio by its interval: still failing, as before
    plain = gate([_processes(1e-3, (1.0,) * 20)], [_processes(1.055e-3, (1.0,) * 20)])
    assert not plain.changes[0].grouped


def test_an_end_to_end_case_is_grouped_where_its_resident_twin_is() -> None:
    """The two run in the same processes, one after the other: the process's group is
    its copies' too, though their noise may hide it in the end-to-end figure alone."""
    noisy = [1.0, 1.02, 0.99, 1.01] * 3 + [1.35, 1.4, 1.45, 1.5, 1.38, 1.42, 1.44, 1.9]
    def e2e(median: float) -> Measurement:
        samples = np.concatenate([median * f * (1 + RNG.normal(0, 0.01, 20)) for f in noisy])
        return Measurement(Case("w", "correct", "torch", "cuda:0", "float32", 1,
                                (("data", "end_to_end"),)), Status.OK,
                           samples=tuple(samples), passes=(20,) * 20)

    alone, _ = compare([e2e(140e-6)], [e2e(140e-6)])
    assert not alone[0].grouped  # its slow group spreads wider than the gap
    changes, _ = compare([_grouped(79e-6, 6), e2e(140e-6)], [_grouped(79e-6, 13), e2e(140e-6)])
    assert [c.grouped for c in changes] == [True, True]
