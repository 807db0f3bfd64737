"""A plan's estimate, pinned on synthetic histories: what this machine's store holds of a
case (or its series at other sizes) decides its cost, the model covers what it never
saw, and a call longer than its budget share is counted as the protocol times it.

No timing targets: the rates are given or nominal, never measured; the same plan and
store give the same estimate, however loaded the machine running the test."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gpuvs.config import RunConfig
from gpuvs.execute import estimate as est
from gpuvs.execute import plan
from gpuvs.execute.runner import PASS_MAX_CASE_S
from gpuvs.measuring.protocol import CONTENDED_PAUSE_S
from gpuvs.model import Case, Environment, Measurement, Run, Status
from gpuvs.store import open_store

RATES = est.Rates(cpu_flops=1e11, cpu_bytes_per_s=1e10, cpu_call_floor_s=0.0, slowdown=1.0)
CONFIG = RunConfig(workloads=("matmul",), backends=("numpy",), devices=("cpu",),
                   axes=("shape=square",), budget_s=1.0, passes=2)


def square(size: int) -> Case:
    return Case("matmul", "correct", "numpy", "cpu", "float32", size, (("shape", "square"),))


def stored(case: Case, call_s: float, cost_s: float, *, start_s: float = 0.0,
           retries: float = 0.0, budget_s: float = 1.0, passes: int = 2) -> est.Past:
    counters = {"runner_s": cost_s + start_s, "start_s": start_s, "passes": float(passes)}
    if retries:
        counters["contended_retries"] = retries
    m = Measurement(case, Status.OK, samples=(call_s,) * 5, counters=counters)
    return est.Past(m, budget_s, passes)


def cases_s(cases: list[Case], config: RunConfig = CONFIG, past: tuple[est.Past, ...] = (),
            busy: bool = False) -> float:
    """The estimate less its workers' start-ups and the command's own work."""
    return est.estimate(cases, config, past, RATES, busy).cases_s


def test_a_case_stored_before_costs_what_it_cost_then() -> None:
    """Same case, same budget and passes: its stored cost, workers' start-ups taken out
    (they are counted once per run)."""
    case = square(1024)
    past = (stored(case, call_s=0.02, cost_s=2.5, start_s=4.0),)
    assert cases_s([case], past=past) == pytest.approx(2.5)
    e = est.estimate([case], CONFIG, past, RATES)
    assert (e.measured, e.from_history) == (1, 1)


def test_the_newest_few_runs_of_a_case_count_by_their_median() -> None:
    case = square(1024)
    past = tuple(stored(case, 0.02, c) for c in (2.0, 9.0, 2.2, 50.0))  # newest first
    assert cases_s([case], past=past) == pytest.approx(2.2)  # of 2.0, 9.0, 2.2


def test_a_larger_budget_adds_what_the_model_says_it_adds() -> None:
    case = square(256)
    past = (stored(case, call_s=1e-4, cost_s=1.5),)
    more = replace(CONFIG, budget_s=3.0)
    added = (est.case_model_s(case, 1e-4, more)
             - est.case_model_s(case, 1e-4, CONFIG))
    assert added > 1.0
    assert cases_s([case], more, past) == pytest.approx(1.5 + added)


def test_a_size_never_stored_follows_its_series_trend() -> None:
    """Stored at n = 1024 and 2048 (8× the time: n³), n = 4096 is read off the power law
    through them, and its cost is the nearest size's, moved by the model's difference."""
    past = (stored(square(1024), 0.05, 2.0), stored(square(2048), 0.4, 4.5))
    t = est._trend_call_s(square(4096), list(past), RATES)
    assert t == pytest.approx(3.2)
    then = 4.5 - est.case_model_s(square(2048), 0.4, CONFIG)
    expected = est.case_model_s(square(4096), 3.2, CONFIG) + then
    assert cases_s([square(4096)], past=past) == pytest.approx(expected)


def test_a_call_longer_than_its_budget_share_is_counted_as_the_protocol_times_it() -> None:
    """The miss that started this: 46 s said for `-w matmul -s 256:8192:2`, which took
    4 min 58 s. An 8192³ product at 100 GFLOP/s is 11 s a call; the protocol times the
    first call, keeps the warm-up call as a sample and takes one more, after building
    the inputs and a float64 reference, once (a first pass that long is not repeated)."""
    case = square(8192)
    call = est._call_s(case, RATES)
    assert call == pytest.approx(2 * 8192**3 / 1e11, rel=0.01)
    cost = est.case_model_s(case, call, CONFIG)
    assert cost > (3 + est.REFERENCE_CALLS) * call > PASS_MAX_CASE_S
    assert cost < (3 + est.REFERENCE_CALLS + 2) * call  # one pass, not two
    sweep = plan.expand(replace(CONFIG, sizes=(256, 512, 1024, 2048, 4096, 8192)))
    assert est.estimate(sweep, CONFIG, (), RATES).seconds > cost + 5 * CONFIG.budget_s


def test_a_short_case_never_stored_costs_its_budget_and_overheads() -> None:
    case = square(64)
    cost = est.case_model_s(case, est._call_s(case, RATES), CONFIG)
    assert CONFIG.budget_s * est.SAMPLING_SHARE < cost < CONFIG.budget_s + 1.0


def test_the_model_is_moved_by_how_far_it_missed_this_machines_other_cases() -> None:
    """A series never stored takes the model, times the median of the model's misses on
    what the store holds: a machine whose cases cost twice what was modelled, or more
    than MISSED_MAX times, which is taken as at most that."""
    seen = [square(n) for n in (64, 128, 256)]
    other = Case("matmul", "correct", "numpy", "cpu", "float32", 512,
                 (("shape", "seed000"),))
    model = est.case_model_s(other, est._call_s(other, RATES), CONFIG)
    for factor, moved in ((2.0, 2.0), (3 * est.MISSED_MAX, est.MISSED_MAX)):
        past = tuple(stored(c, 1e-5, factor * est.case_model_s(c, 1e-5, CONFIG))
                     for c in seen)
        assert cases_s([other], past=past) == pytest.approx(moved * model)
    e = est.estimate([other], CONFIG, past, RATES)
    assert (e.measured, e.from_history) == (1, 0)


def test_a_busy_machine_measures_each_pass_again_after_a_pause() -> None:
    """A stored case whose two passes were each measured again for contention paid them
    twice and two pauses: it is counted once, and measured again only where the machine
    is busy now."""
    case, short = square(256), replace(CONFIG, budget_s=0.2)
    twice = 2 * 0.5 + 2 * CONTENDED_PAUSE_S
    past = (stored(case, 0.001, cost_s=twice, retries=2.0, budget_s=0.2),)
    assert cases_s([case], short, past=past) == pytest.approx(0.5)
    # busy, its passes are also measured again with more budget, as about half are
    e = est.estimate([case], short, past, RATES, busy=True)
    quiet = est.estimate([case], short, past, RATES).passes_s[case.key]
    assert len(e.passes_s[case.key]) == 2
    for busy, alone in zip(e.passes_s[case.key], quiet, strict=True):
        assert busy > 2 * alone + CONTENDED_PAUSE_S


def test_on_a_busy_machine_a_first_pass_past_the_runners_limit_is_the_only_one() -> None:
    """Its retry takes its first pass past PASS_MAX_CASE_S: the runner measures it once (a
    2048² product on the 2-core box at a load of 4 took over 3 s, in one pass)."""
    case = square(1024)
    past = (stored(case, 0.02, cost_s=2.5),)
    [alone] = est.estimate([case], CONFIG, past, RATES, busy=True).passes_s[case.key]
    assert alone - CONTENDED_PAUSE_S > PASS_MAX_CASE_S


def test_a_stored_case_that_ran_once_is_modelled_as_one_pass() -> None:
    """A two-pass run's case that ran once (its first pass too long) cost one pass: the
    model of it then is its first pass, not two."""
    case = square(1024)
    once = stored(case, 0.02, cost_s=3.5)
    m = once.measurement
    ran_once = est.Past(replace(m, counters={**m.counters, "passes": 1.0}), 1.0, 2)
    first, _ = est._passes(case, 0.02, 1.0, 2)
    assert ran_once.model_s == pytest.approx(first)


def test_a_stored_case_measured_again_for_drift_is_read_as_such() -> None:
    """Its samples split, so it was measured again with three times the budget: that
    was its cost then, not what the case costs on a steady machine."""
    case = square(1024)
    plain = est.case_model_s(case, 0.02, CONFIG)
    again = est._at(case, 0.02, CONFIG.budget_s, CONFIG.passes, again=1.0)
    m = stored(case, 0.02, cost_s=again + 0.5).measurement
    past = (est.Past(replace(m, counters={**m.counters, "remeasured": 1.0}), 1.0, 2),)
    assert cases_s([case], past=past) == pytest.approx(plain + 0.5)


def test_a_case_that_ran_out_of_time_last_time_costs_the_timeout_again() -> None:
    """Its series' trend says nothing of a case that never answered; the run after it
    measured the rest, and a later one that did answer counts instead."""
    case = square(4096)
    hung = Measurement(case, Status.TIMEOUT, reason="no result within the 300 s timeout",
                       counters={"runner_s": 301.0})
    past = (est.Past(hung, 1.0, 2), stored(square(2048), 0.4, 4.5))
    assert cases_s([case], past=past) == pytest.approx(CONFIG.timeout_s)
    answered = (stored(case, 3.2, 20.0), *past)  # newer than the timeout
    assert cases_s([case], past=answered) == pytest.approx(20.0)


def test_cases_that_cannot_run_here_cost_nothing() -> None:
    from gpuvs.backends.base import machine_has_gpu
    if machine_has_gpu():
        pytest.skip("this machine has a CUDA device")
    gpu = Case("matmul", "correct", "torch", "cuda:0", "float32", 4096, (("shape", "square"),))
    huge = square(10**7)  # 10⁷ × 10⁷ floats: more than any host holds
    e = est.estimate([gpu, huge], CONFIG, (), RATES)
    assert e.measured == 0 and e.seconds == e.command_s == pytest.approx(est.COMMAND_S)


def test_workers_start_together_and_share_the_cores() -> None:
    cases = [square(64), replace(square(64), backend="torch")]
    one_core = est.start_s(cases, passes=2, rates=RATES)
    starts = 2 * (est.WORKER_START_S["numpy"] + est.WORKER_START_S["torch"])
    assert max(est.WORKER_START_S.values()) <= one_core <= starts


def test_workers_take_as_long_to_start_as_they_did_here_before() -> None:
    """On a loaded machine a run's pool took a minute to start: the stored waits, where
    longer than the model's start-ups, are what the next run's start costs."""
    case = square(64)
    model = est.start_s([case], CONFIG.passes, RATES)
    assert est.estimate([case], CONFIG, (), RATES).workers_s == pytest.approx(model)
    past = (stored(square(128), 1e-5, 1.0, start_s=model + 40.0),
            stored(square(256), 1e-5, 1.0, start_s=model + 60.0),
            stored(square(512), 1e-5, 1.0, start_s=0.0))  # waited for nothing
    slow = est.estimate([case], CONFIG, past, RATES)
    assert slow.workers_s == pytest.approx(model + 50.0)


def test_a_plan_past_three_minutes_is_long() -> None:
    assert est.Estimate(est.LONG_PLAN_S - 10, 8.0, 3.0, 10, 0).long
    assert not est.Estimate(est.LONG_PLAN_S - 20, 8.0, 3.0, 10, 0).long


def test_the_same_plan_on_an_empty_store_is_estimated_the_same_every_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a dry run says depends on the plan, the store and whether the machine has been
    busy, never on a probe's few ms: here the machine's load swings between the estimates
    (its 1-minute average from idle to eight per core), its 15-minute one stays put."""
    from gpuvs.cli.planning import plan_estimate
    cases = plan.expand(RunConfig(workloads=("matmul",), axes=("shape=square",),
                                  sizes=(256, 512, 1024, 2048, 4096)))
    db = str(tmp_path / "none.sqlite")  # no store there: nothing is known
    said = []
    for one_minute in (0.0, 16.0, 0.5):
        monkeypatch.setattr("os.getloadavg", lambda m=one_minute: (m, 1.0, 0.2))
        said.append(plan_estimate(cases, RunConfig(), db=db))
    assert len({(e.seconds, e.busy, tuple(e.passes_s.items())) for e in said}) == 1
    assert not said[0].busy and said[0].from_history == 0


def test_a_machine_busy_over_15_minutes_and_still_is_estimated_busy(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuvs.cli.planning import plan_estimate
    from gpuvs.machine.contention import BUSY_LOAD_SHARE
    cases = [square(1024)]
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    monkeypatch.setattr("os.getloadavg", lambda: (0.1, 0.1, 0.1))
    quiet = plan_estimate(cases, CONFIG, db="/nonexistent/r.sqlite")
    heavy = 2 * BUSY_LOAD_SHARE * 2
    monkeypatch.setattr("os.getloadavg", lambda: (heavy, heavy, heavy))
    busy = plan_estimate(cases, CONFIG, db="/nonexistent/r.sqlite")
    assert busy.busy and not quiet.busy
    assert busy.seconds > 2 * quiet.seconds  # each pass again, after a pause, at half rate


def test_nominal_rates_follow_the_cores_and_halve_on_a_busy_machine() -> None:
    two, eight = est.Rates.here(False, cores=2), est.Rates.here(False, cores=8)
    assert eight.cpu_flops == 4 * two.cpu_flops
    assert two.cpu_bytes_per_s < eight.cpu_bytes_per_s <= est.CPU_BYTES_PER_S_MAX
    busy = est.Rates.here(True, cores=2)
    assert busy.cpu_flops == two.cpu_flops * est.BUSY_SHARE
    assert (busy.cpu_call_floor_s, busy.slowdown) == (est.BUSY_CALL_FLOOR_S,
                                                      1 / est.BUSY_SHARE)


def test_each_case_is_costed_pass_by_pass_the_first_dearer() -> None:
    """The shape the countdown follows: a later pass only samples (no reference, no
    first call), a call too long to sample twice runs once, and the passes add up to the
    case's cost."""
    small, huge = square(256), square(8192)
    e = est.estimate([small, huge], CONFIG, (), RATES)
    first, later = e.passes_s[small.key]
    assert first > later > 0
    assert len(e.passes_s[huge.key]) == 1  # its first pass past PASS_MAX_CASE_S
    assert sum(map(sum, e.passes_s.values())) == pytest.approx(e.cases_s)
    stored_case = (stored(small, 0.001, cost_s=4.0),)
    from_past = est.estimate([small], CONFIG, stored_case, RATES).passes_s[small.key]
    assert sum(from_past) == pytest.approx(4.0)
    model = est._passes(small, 0.001, CONFIG.budget_s, CONFIG.passes)  # at its stored call
    assert from_past[0] / from_past[1] == pytest.approx(model[0] / model[1])


def test_the_store_gives_the_estimate_only_this_set_ups_finished_cases(tmp_path: Path
                                                                        ) -> None:
    """Another machine's pace, or a case decided at once, says nothing about this one's;
    a case that ran out of time does."""
    with open_store(str(tmp_path / "r.sqlite")) as store:
        for run_id, fingerprint in (("here", "f-here"), ("there", "f-there")):
            store.create_run(Run(run_id, "2026-11-26T00:00:00+00:00",
                                 {"budget_s": 0.5, "passes": 1},
                                 Environment(fingerprint, {})))
            store.save(run_id, stored(square(1024), 0.02, 2.0).measurement)
            store.save(run_id, Measurement(square(2048), Status.OOM, reason="out of memory"))
            store.save(run_id, Measurement(square(4096), Status.TIMEOUT, reason="300 s"))
        store.save("here", Measurement(
            Case("elementwise", "correct", "numpy", "cpu", "float32", 1000, (("op", "ones"),)),
            Status.OK, samples=(1e-6,) * 3))
        rows = store.history("f-here", ["matmul"])
    assert [(config["budget_s"], m.case) for config, m in rows] == [
        (0.5, square(4096)), (0.5, square(1024))]  # newest first


@pytest.mark.parametrize(("one", "fifteen", "busy"), [
    (4.0, 4.0, True),    # busy for a while, and still
    (0.1, 4.0, False),   # a heavy job that ended: the 15-minute load lags behind
    (4.0, 0.1, False),   # a load begun a moment ago: the steadiest average says quiet
])
def test_the_plan_counts_a_busy_machine_only_while_it_is_still_busy(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, one: float, fifteen: float,
        busy: bool) -> None:
    import psutil

    from gpuvs.cli.planning import plan_estimate
    from gpuvs.machine import contention
    loads = {1: one, 5: (one + fifteen) / 2, 15: fifteen}  # of two cores
    monkeypatch.setattr(contention, "load_average", lambda minutes=1: loads[minutes])
    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: 2)
    planned = plan_estimate(plan.expand(RunConfig(workloads=("matmul",), sizes=(64,))),
                            CONFIG, db=str(tmp_path / "none.sqlite"),
                            environment=Environment("fp", {}))
    assert planned.busy is busy
