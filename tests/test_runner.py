"""Isolation, for real: each failure happens in a child process and the run carries on."""

from __future__ import annotations

import time
from dataclasses import replace
from types import SimpleNamespace

import pytest

from gpuvs.config import RunConfig
from gpuvs.execute.runner import PACE_PRIOR_SHARE, Pace, execute
from gpuvs.execute.wire import Measured, Sampling, Take
from gpuvs.model import Case, Caveat, Measurement, Status


class Collected:
    """Keeps what the runner records, in order: a run as the runner sees it (the store
    behind a real run is tested on its own)."""

    def __init__(self) -> None:
        self.saved: list[Measurement] = []

    def record(self, m: Measurement) -> None:
        """As the store does: a case recorded again replaces itself, in its place."""
        keys = [x.case.key for x in self.saved]
        if m.case.key in keys:
            self.saved[keys.index(m.case.key)] = m
        else:
            self.saved.append(m)


def case(workload: str, size: int = 1000, backend: str = "numpy") -> Case:
    device = "cuda:0" if backend == "sim" else "cpu"
    return Case(workload, "correct", backend, device, "float32", size)


CONFIG = RunConfig(budget_s=0.2, timeout_s=3.0)


@pytest.mark.usefixtures("worker_env")
def test_every_failure_is_recorded_and_the_run_carries_on() -> None:
    cases = [case("test_spin"), case("test_abort"), case("test_spin", 2000),
             case("test_hang"), case("test_spin", 3000), case("test_hog"),
             case("test_killed"), case("test_wrong"), case("test_spin", 4000)]
    sink = Collected()
    summary = execute(sink, cases, CONFIG)
    by_workload = {(m.case.workload, m.case.size): m for m in sink.saved}
    assert [m.case for m in sink.saved] == cases  # all saved, in order
    abort = by_workload["test_abort", 1000]
    assert abort.status is Status.CRASHED and "SIGABRT" in abort.reason
    hang = by_workload["test_hang", 1000]
    assert hang.status is Status.TIMEOUT and "3 s timeout" in hang.reason
    hog = by_workload["test_hog", 1000]
    assert hog.status is Status.OOM and "MemoryError" in hog.reason
    killed = by_workload["test_killed", 1000]  # a kill is not an out-of-memory
    assert killed.status is Status.CRASHED and "killed by SIGKILL" in killed.reason
    assert by_workload["test_wrong", 1000].status is Status.WRONG_RESULT
    for size in (1000, 2000, 3000, 4000):  # a fresh worker took over after each failure
        spin = by_workload["test_spin", size]
        assert spin.status is Status.OK
        assert spin.summary is not None
        assert spin.summary.median == pytest.approx(size * 1e-6, rel=0.1)
    assert summary.counts == {"ok": 4, "crashed": 2, "timeout": 1, "oom": 1, "wrong_result": 1}


@pytest.mark.usefixtures("worker_env")
def test_an_out_of_memory_stops_its_series_growing() -> None:
    sink = Collected()
    execute(sink, [case("test_hog", 1), case("test_hog", 2), case("test_spin", 100)],
            CONFIG)
    assert [m.status for m in sink.saved] == [Status.OOM, Status.SKIPPED, Status.OK]
    assert "size 1 already ran out of memory" in sink.saved[1].reason


@pytest.mark.usefixtures("worker_env")
def test_resume_skips_recorded_cases() -> None:
    sink = Collected()
    done = case("test_spin", 100)
    execute(sink, [done, case("test_spin", 200)], CONFIG, skip_keys=frozenset({done.key}))
    assert [m.case.size for m in sink.saved] == [200]


@pytest.mark.usefixtures("worker_env")
def test_a_dtype_the_backend_lacks_is_skipped_with_the_reason() -> None:
    sink = Collected()
    bf16 = Case("matmul", "correct", "numpy", "cpu", "bfloat16", 64, (("shape", "square"),))
    execute(sink, [bf16], CONFIG)
    assert sink.saved[0].status is Status.SKIPPED
    assert sink.saved[0].reason == "numpy has no bfloat16; it supports float16, float32, float64"


@pytest.mark.usefixtures("worker_env")
def test_the_simulated_device_runs_through_a_real_worker() -> None:
    sink = Collected()
    execute(sink, [case("test_sim_kernel", 250, backend="sim")], CONFIG)
    m = sink.saved[0]
    assert m.status is Status.OK and m.timer == "sim_events"
    assert m.summary is not None and m.summary.median == pytest.approx(250e-6, rel=0.01)


@pytest.mark.usefixtures("worker_env")
def test_replays_run_apart_from_measurements_which_share_one_process() -> None:
    from dataclasses import replace

    plain = case("test_pid")
    cases = [plain, replace(plain, variant="as_written"), replace(plain, size=2000),
             replace(plain, variant="as_written", size=2000), replace(plain, size=3000)]
    sink = Collected()
    execute(sink, cases, CONFIG)
    pid = {(m.case.variant, m.case.size): m.counters["pid"] for m in sink.saved}
    measured = {pid["correct", size] for size in (1000, 2000, 3000)}
    replays = {pid["as_written", size] for size in (1000, 2000)}
    assert len(measured) == 1  # imports, device and profiler set up once
    assert not measured & replays  # a replay never sees a measurement's warm state
    assert len(replays) == 1  # two cells of one post on one device: one process, as in the post


def test_a_worker_that_replayed_one_post_takes_no_other_posts_or_devices_replay() -> None:
    from gpuvs.execute.runner import Worker
    worker = Worker("numpy")
    try:
        gru = Case("gru", "as_written", "torch", "cpu", "float32", 20)
        assert worker.replays_as_in_one_process(gru)  # nothing has run yet
        worker.ran.add(("gru", "cpu"))
        assert worker.replays_as_in_one_process(gru)
        assert not worker.replays_as_in_one_process(replace_device(gru, "cuda:0"))
        assert not worker.replays_as_in_one_process(
            Case("jacobian", "as_written", "torch", "cpu", "float32", 100))
    finally:
        worker.close()


def replace_device(c: Case, device: str) -> Case:
    from dataclasses import replace

    return replace(c, device=device)


@pytest.mark.usefixtures("worker_env")
def test_a_busy_worker_killed_from_outside_crashed_and_the_next_size_runs() -> None:
    """SIGKILL is not evidence of running out of memory: the case is `crashed`, the
    signal is named, and its series carries on."""
    import threading

    import psutil

    sink = Collected()
    cases = [case("test_spin", 200_000), case("test_spin", 300)]  # 0.2 s a call, then 0.3 ms
    one_worker = RunConfig(budget_s=5, timeout_s=60, passes=1)  # no next pass's worker
    done = threading.Thread(target=execute, args=(sink, cases, one_worker))
    done.start()
    victim = None
    while victim is None and done.is_alive():
        victim = next((p for p in psutil.Process().children(recursive=True)
                       if "gpuvs.execute.worker" in " ".join(p.cmdline())), None)
    assert victim is not None
    time.sleep(1.0)  # busy inside the first case
    victim.kill()
    done.join(timeout=120)
    killed, after = sink.saved
    assert killed.status is Status.CRASHED and "killed by SIGKILL, not by gpuvs" in killed.reason
    assert after.status is Status.OK and after.case.size == 300


def test_an_out_of_memory_kill_needs_evidence(tmp_path) -> None:
    from gpuvs.execute import policy
    (tmp_path / "memory" / "job").mkdir(parents=True)
    (tmp_path / "memory" / "job" / "memory.oom_control").write_text(
        "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    membership = tmp_path / "cgroup"
    membership.write_text("4:memory:/job\n0::/\n")
    assert policy.oom_kills(tmp_path, membership) == 3
    (tmp_path / "v2" / "job").mkdir(parents=True)
    (tmp_path / "v2" / "job" / "memory.events").write_text("low 0\noom 1\noom_kill 1\n")
    membership.write_text("0::/job\n")
    assert policy.oom_kills(tmp_path / "v2", membership) == 1
    log = "[ 91.2] Out of memory: Killed process 4242 (python) total-vm:99kB\n"
    assert policy.oom_evidence(4242, None, log).startswith("the kernel log says: [ 91.2] Out")
    assert policy.oom_evidence(4243, None, log) == ""


@pytest.mark.usefixtures("worker_env")
def test_two_groups_of_samples_in_one_process_are_measured_again_longer_and_named() -> None:
    sink = Collected()
    # a CI target no sampling meets: each look samples its whole budget (a met target
    # stopped the second look early, at a count the first could have taken)
    whole_budget = "median-ci:rel=1e-9"
    execute(sink, [case("test_bimodal", 3000)], RunConfig(budget_s=0.2, timeout_s=60,
                                                          passes=1, criterion=whole_budget))
    (m,) = sink.saved
    assert m.status is Status.OK and m.counters["remeasured"] == 1
    assert Caveat.MULTIMODAL in m.caveats
    assert sum(m.samples) * m.loops > 2 * 0.2  # the second look had 3× the budget


@pytest.mark.usefixtures("worker_env")
def test_two_groups_in_a_case_sampled_by_three_processes_are_left_to_the_processes() -> None:
    """Three times the budget in each of five processes was most of a GPU run's time;
    where other processes sample the case, they are where a repeat looks."""
    sink = Collected()
    execute(sink, [case("test_bimodal", 3000)], RunConfig(budget_s=0.6, timeout_s=60,
                                                          passes=3))
    (m,) = sink.saved
    assert m.status is Status.OK and "remeasured" not in m.counters
    assert len(m.passes) == 3


@pytest.mark.usefixtures("worker_env")
def test_a_second_pass_in_fresh_processes_merges_its_samples_and_replays_run_once() -> None:
    """A CI from one process covers only that process; two passes, each in its own
    workers, put both in the samples. A post's replay is its single timing: run once."""
    sink = Collected()
    cases = [case("test_spin", 300), Case("test_pid", "correct", "numpy", "cpu", "float32", 1),
             Case("test_pid", "as_written", "numpy", "cpu", "float32", 1)]
    twenty = "fixed:n=20"  # a fixed count per pass: the CI target would stop each early
    execute(sink, cases, RunConfig(budget_s=1, timeout_s=60, passes=2, criterion=twenty))
    spin, pid, replay = sink.saved
    assert spin.counters["passes"] == 2 and pid.counters["passes"] == 2
    assert "passes" not in replay.counters
    one_pass = Collected()
    execute(one_pass, cases[:1], RunConfig(budget_s=1, timeout_s=60, passes=1,
                                           criterion=twenty))
    assert "passes" not in one_pass.saved[0].counters
    assert len(one_pass.saved[0].samples) >= 20
    assert len(spin.samples) == 2 * len(one_pass.saved[0].samples)  # both passes', merged


def test_passes_merge_samples_in_order_and_keep_what_only_a_pass_could_see() -> None:
    from gpuvs.execute.runner import merged
    c = case("test_spin", 1)
    first = Measurement(c, Status.OK, samples=(1.0,) * 10, first_call_s=20.0, loops=3,
                        counters={"case_s": 1.0})
    later = Measurement(c, Status.OK, samples=(1.01,) * 10, first_call_s=0.1, loops=4,
                        counters={"case_s": 0.9}, caveats=(Caveat.CONTENDED,))
    m = merged(first, later)
    assert m.samples == (1.0,) * 10 + (1.01,) * 10 and m.first_call_s == 20.0 and m.loops == 3
    assert m.counters == {"case_s": 0.9, "passes": 2.0,
                          "passes_apart": pytest.approx(0.01)} and m.passes == (10, 10)
    assert Caveat.CONTENDED in m.caveats and Caveat.FIRST_CALL_SLOW in m.caveats


def test_a_case_between_its_passes_is_merged_unjudged_and_judged_once_at_its_last() -> None:
    """The parent summarised every pass of every case; only the last merge is judged,
    and it judges what a chain of judged merges would have."""
    from gpuvs.execute.runner import merged
    c = case("test_spin", 1)
    ok = [Measurement(c, Status.OK, samples=tuple(1.0 + 0.1 * k + 0.001 * i for i in range(12)),
                      first_call_s=20.0 if k == 0 else 0.1, counters={"case_s": 0.5},
                      caveats=caveats)
          for k, caveats in enumerate([(), (Caveat.DRIFTING, Caveat.BUDGET_EXHAUSTED), ()])]
    between = merged(ok[0], ok[1], judged=False)
    assert between.caveats == (Caveat.DRIFTING,)  # what the pass saw of itself, no more
    assert merged(between, ok[2]) == merged(merged(ok[0], ok[1]), ok[2])


@pytest.mark.usefixtures("worker_env")
def test_a_case_is_stored_after_its_first_pass_and_after_its_last() -> None:
    class Counted(Collected):
        def __init__(self) -> None:
            super().__init__()
            self.passes_stored: list[int] = []

        def record(self, m: Measurement) -> None:
            self.passes_stored.append(len(m.passes) or 1)
            super().record(m)

    sink = Counted()
    execute(sink, [case("test_spin", 300)], RunConfig(budget_s=0.4, timeout_s=60, passes=4))
    assert sink.passes_stored == [1, 4]


def test_the_interval_covers_both_passes_and_a_disagreement_is_named() -> None:
    """Each pass is a fresh process; a repeat lands among them, so the CI covers both
    medians — and where they disagree beyond each pass's own interval, the case says the
    process sets its number (`process_dependent`), not a generic doubt."""
    from gpuvs.execute.runner import merged
    c = case("test_spin", 1)
    rng = [1.0 + 0.001 * (i % 5) for i in range(40)]
    first = Measurement(c, Status.OK, samples=tuple(rng))
    close = merged(first, Measurement(c, Status.OK, samples=tuple(x * 1.0005 for x in rng)))
    apart = merged(first, Measurement(c, Status.OK, samples=tuple(x * 1.2 for x in rng)))
    assert Caveat.PROCESS_DEPENDENT not in close.caveats
    assert Caveat.PROCESS_DEPENDENT in apart.caveats
    s = apart.summary
    assert s is not None and s.ci_low <= 1.002 and s.ci_high >= 1.2 * 1.002
    assert apart.counters["passes_apart"] == pytest.approx(0.2)
    crashed = Measurement(c, Status.CRASHED, reason="the worker died")
    assert merged(first, crashed) is crashed


def test_passes_a_little_apart_are_no_doubt_and_their_join_is_no_drift() -> None:
    """Two steady passes 3 % apart: the interval covers both (±5 % or less), so neither
    `process_dependent` nor `unstable`; and the step between them, read as one run, is not
    `drifting` or `multimodal` — a shape is judged within a pass."""
    from gpuvs.execute.runner import merged
    c = case("test_spin", 1)
    rng = [1.0 + 0.001 * (i % 5) for i in range(40)]
    first = Measurement(c, Status.OK, samples=tuple(rng))
    later = Measurement(c, Status.OK, samples=tuple(x * 1.03 for x in rng))
    m = merged(first, later)
    assert not set(m.caveats) & {Caveat.PROCESS_DEPENDENT, Caveat.UNSTABLE, Caveat.DRIFTING,
                                 Caveat.MULTIMODAL}, m.caveats
    assert m.counters["passes_apart"] == pytest.approx(0.03)
    drifted = replace(later, caveats=(Caveat.DRIFTING,))  # as the pass itself judged it
    assert Caveat.DRIFTING in merged(first, drifted).caveats


def test_what_a_case_cost_the_run_adds_up_over_its_passes() -> None:
    """`runner_s` of a merged case is every pass's wait, not the last one's: a later plan's
    estimate reads it as what the case costs (`start_s`, workers starting, apart)."""
    from gpuvs.execute.runner import merged
    c = case("test_spin", 1)
    first = Measurement(c, Status.OK, samples=(1.0,) * 5,
                        counters={"case_s": 2.0, "runner_s": 6.5, "start_s": 4.0,
                                  "contended_retries": 1.0})
    later = Measurement(c, Status.OK, samples=(1.0,) * 5,
                        counters={"case_s": 0.5, "runner_s": 0.6, "start_s": 0.0})
    counters = merged(first, later).counters
    assert counters["case_s"] == 0.5  # the pass's own, which decides the next pass
    assert counters["runner_s"] == pytest.approx(7.1)
    assert (counters["start_s"], counters["contended_retries"]) == (4.0, 1.0)


def test_a_case_stored_between_its_passes_is_not_complete_for_resume() -> None:
    from gpuvs.execute.runner import complete
    first = Measurement(case("test_linear"), Status.OK, samples=(1e-3,) * 5,
                        counters={"case_s": 0.5})
    assert not complete(first, passes=2)  # only the first of two passes was stored
    assert complete(first, passes=1)
    merged = Measurement(first.case, Status.OK, samples=(1e-3,) * 10,
                         counters={"case_s": 0.5, "passes": 2.0})
    assert complete(merged, passes=2)
    failed = Measurement(first.case, Status.CRASHED, reason="died")
    assert complete(failed, passes=2)  # a failure is not measured twice


def test_workers_of_other_frameworks_let_numpys_blas_threads_sleep_after_work(monkeypatch
                                                                           ) -> None:
    """NumPy builds every case's inputs and reference; its OpenBLAS threads, left
    spinning, made torch's CPU product 8–24 ms instead of 76 µs on a 16-core host. The
    torch worker starts with OPENBLAS_THREAD_TIMEOUT=4; NumPy's own keeps the default."""
    from pathlib import Path

    from gpuvs.execute.runner import Worker
    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)

    def env_of(backend: str) -> dict[str, str]:
        w = Worker(backend)
        try:
            raw = Path(f"/proc/{w.proc.pid}/environ").read_bytes()
        finally:
            w.close()
        return dict(kv.split("=", 1) for kv in raw.decode().split("\0") if "=" in kv)

    assert env_of("torch")["OPENBLAS_THREAD_TIMEOUT"] == "4"
    assert "OPENBLAS_THREAD_TIMEOUT" not in env_of("numpy")
    monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", "20")  # the user's own choice stands
    assert env_of("torch")["OPENBLAS_THREAD_TIMEOUT"] == "20"


def test_a_case_is_observed_after_its_pass_is_timed_and_a_later_pass_only_samples() -> None:
    """Parts, kernel counts and busy time are observations: made after the first pass's
    last timed case, in the worker that timed it (which times nothing more), before the
    second pass samples again in a fresh process; the merged case keeps them (here each
    GRU timed alone)."""
    gru = Case("gru", "correct", "torch", "cpu", "float32", 20,
               (("axis", "hidden"), ("how", "sequential")))
    passes: list[Measurement] = []

    class EachPass:
        def record(self, m: Measurement) -> None:
            passes.append(m)

    execute(EachPass(), [gru], RunConfig(budget_s=0.1, passes=2, timeout_s=120))
    timed, observed, final = passes
    assert "gru1_s" not in timed.counters  # timing the case times the whole call only
    assert "gru1_s" in observed.counters and "gru2_s" in observed.counters
    assert observed.samples == timed.samples
    assert final.counters["passes"] == 2
    assert final.counters["gru1_s"] == observed.counters["gru1_s"]  # not measured again
    assert len(final.samples) > len(timed.samples)


class Watching(Collected):
    """Also keeps, at each record, the process that measured it and the workers alive."""

    def __init__(self) -> None:
        super().__init__()
        self.alive: list[set[int]] = []
        self.pids: list[int] = []

    def record(self, m: Measurement) -> None:
        import psutil

        super().record(m)
        self.pids.append(int(m.counters["pid"]))
        self.alive.append({p.pid for p in psutil.Process().children(recursive=True)
                           if p.status() != psutil.STATUS_ZOMBIE
                           and "gpuvs.execute.worker" in " ".join(p.cmdline())})


@pytest.mark.usefixtures("worker_env")
def test_every_pass_runs_in_a_worker_started_with_the_first_pass() -> None:
    """A pass in fresh processes used to pay a start-up (torch and a CUDA context: about
    5 s on the H100) before its first number. Every later pass's worker now starts beside
    the first pass's and waits ready: each is alive when the first pass records, and each
    measures its own pass."""
    sink = Watching()
    execute(sink, [Case("test_pid", "correct", "numpy", "cpu", "float32", 1)],
            RunConfig(budget_s=0.1, timeout_s=60, passes=3))
    first, last = sink.pids  # stored after the first pass and after the last
    assert first != last and {first, last} <= sink.alive[0]
    assert len(sink.alive[0]) == 3  # the middle pass's worker too, waiting ready


@pytest.mark.usefixtures("worker_env")
def test_passes_past_what_may_wait_ahead_start_as_earlier_ones_go(monkeypatch) -> None:
    """`--passes 20` on four backends would hold eighty workers; at most AHEAD_MOST wait
    ahead, and a later pass's workers start when an earlier pass's have gone."""
    from gpuvs.execute import runner
    monkeypatch.setattr(runner, "AHEAD_MOST", 2)
    sink = Watching()
    execute(sink, [Case("test_pid", "correct", "numpy", "cpu", "float32", 1)],
            RunConfig(budget_s=0.1, timeout_s=60, passes=4))
    assert len(sink.alive[0]) == 2  # the first pass's worker and the next one's
    (m,) = sink.saved
    assert m.counters["passes"] == 4 and len(set(sink.pids)) == 2


@pytest.mark.usefixtures("worker_env")
def test_each_posts_replay_process_is_started_before_the_first_case() -> None:
    """A post's replays run in a fresh process of their own; each such process used to
    start when its post came up, between cases. All start together before the first case
    now, so the second post's process is alive when the first case is recorded."""
    plain = Case("test_pid", "correct", "numpy", "cpu", "float32", 1)
    first, second = (Case(w, "as_written", "numpy", "cpu", "float32", 1)
                     for w in ("test_pid", "test_pid_other"))
    sink = Watching()
    execute(sink, [plain, first, second], RunConfig(budget_s=0.1, timeout_s=60, passes=1))
    measured, replayed, other = sink.pids
    assert len({measured, replayed, other}) == 3  # each post apart, and from measurements
    assert {replayed, other} <= sink.alive[0]


@pytest.mark.usefixtures("worker_env")
def test_workers_import_what_their_cases_need_before_they_are_ready() -> None:
    """Keras, torch's compiler, torch in a NumPy worker: imported at the case, each cost
    seconds on the run's path, once in each pass's fresh process. Every worker started
    ahead — both passes' and each post's replay process — has run its cases' preloads
    before it says it is ready; a preload that fails leaves its case to run as usual."""
    from gpuvs.execute.runner import Worker
    plain = Case("test_preloaded", "correct", "numpy", "cpu", "float32", 1)
    failing = Case("test_preloaded", "correct", "numpy", "cpu", "float32", 1, (("mark", "fail"),))
    replayed = Case("test_preloaded", "as_written", "numpy", "cpu", "float32", 1)
    every: list[Measurement] = []  # each pass's record, as the runner makes it
    sink = SimpleNamespace(record=every.append)
    execute(sink, [plain, failing, replayed], RunConfig(budget_s=0.1, timeout_s=60, passes=2))
    preloaded = [(m.case.key, m.counters.get("passes", 1), m.counters["preloaded"])
                 for m in every]
    assert preloaded == [(plain.key, 1, 1.0), (failing.key, 1, 0.0), (replayed.key, 1, 1.0),
                         (plain.key, 2, 1.0), (failing.key, 2, 0.0)]
    assert all(m.status is Status.OK for m in every)

    bare = Worker("numpy")  # told of no cases: nothing preloaded
    try:
        answer = bare.ask(Take(plain, Sampling(0.05, CONFIG.criterion)), timeout_s=60)
        assert isinstance(answer, Measured)
        assert answer.measurement.counters["preloaded"] == 0.0
    finally:
        bare.close()


def test_the_time_left_follows_the_plans_shape_at_the_runs_own_pace() -> None:
    """A sweep's small first cases do not set the pace of its large last ones: what is
    left is the estimate's seconds for the passes still to run, scaled by how long the
    passes run so far took against what it said of them."""
    config = replace(CONFIG, budget_s=1.0, passes=2)
    small, large = case("matmul", 256), case("matmul", 4096)
    expected = {small.key: (1.0, 0.5), large.key: (20.0,)}  # the large one runs once
    pace = Pace.of([small, large], config, expected)
    assert pace.left_s() is None  # no pass has set a pace
    prior = pace.prior_s  # the estimate's word, as if a tenth of it had run as said
    assert prior == pytest.approx(PACE_PRIOR_SHARE * 21.5)
    pace.ran(small.key, 0, 2.0, runs_again=True, decided=False)  # twice what was said
    assert pace.left_s() == pytest.approx((2.0 + prior) / (1.0 + prior) * (0.5 + 20.0))
    pace.ran(large.key, 0, 42.0, runs_again=False, decided=False)
    assert pace.left_s() == pytest.approx((44.0 + prior) / (21.0 + prior) * 0.5)
    pace.ran(small.key, 1, 1.0, runs_again=False, decided=False)
    assert pace.left_s() == 0


def test_a_first_case_far_quicker_than_estimated_does_not_empty_the_countdown() -> None:
    """A seeds run begins with the posts' replays, a second each where the estimate said
    four: alone they read its five minutes left as one."""
    config = replace(CONFIG, budget_s=1.0, passes=2)
    replay, rest = case("matmul", 64), [case("matmul", n) for n in range(100, 130)]
    pace = Pace.of([replay, *rest], config,
                   {replay.key: (4.0,)} | {c.key: (5.0, 5.0) for c in rest})
    pace.ran(replay.key, 0, 1.0, runs_again=False, decided=False)
    assert pace.left_s() > 300 / 3


def test_a_case_the_estimate_ran_once_that_runs_again_counts_its_later_pass_as_its_first(
        ) -> None:
    """On a busy machine the estimate takes a case whose retried first pass outlasts the
    runner's limit to run once; where it did not, its later pass is still to come."""
    config = replace(CONFIG, budget_s=1.0, passes=2)
    one = case("matmul", 1024)
    pace = Pace.of([one], config, {one.key: (3.0,)})
    pace.ran(one.key, 0, 3.0, runs_again=True, decided=False)
    assert pace.left_s() == pytest.approx(3.0)


def test_without_an_estimate_each_pass_counts_alike_and_cases_decided_at_once_set_no_pace(
        ) -> None:
    config = replace(CONFIG, budget_s=1.0, passes=2)
    cases = [case("matmul", n) for n in (64, 128, 256)]
    pace = Pace.of(cases, config)
    pace.ran(cases[0].key, 0, 0.0, runs_again=False, decided=True)  # unavailable
    assert pace.left_s() is None
    pace.ran(cases[1].key, 0, 3 * pace.default_s, runs_again=True, decided=False)
    # three times a default pass: its later pass and both of the last case's, as slow
    assert pace.left_s() == pytest.approx(3 * 3 * pace.default_s)
    pace.ran(cases[2].key, 0, 3 * pace.default_s, runs_again=False, decided=False)
    assert pace.left_s() == pytest.approx(3 * pace.default_s)  # a replay runs once