"""A machine that lies is named: a case measured while other processes hog the CPUs is
`contended` (after one more try), never a plain `ok` with a tight interval."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest
from tests.test_runner import Collected

from gpuvs.config import RunConfig
from gpuvs.execute.runner import execute
from gpuvs.machine import contention, sensors
from gpuvs.machine.contention import Snapshot
from gpuvs.measuring.watch import Seen
from gpuvs.model import Case, Caveat, Measurement, Status

START = Snapshot(wall_s=0.0, machine_busy_s=0.0, own_s=0.0)


def test_a_process_on_a_core_the_case_left_idle_takes_nothing_from_it() -> None:
    # A GPU case asks for one core (the thread that launches); on 2 cores a process
    # busy on the other one took nothing from it. Two such processes did.
    one_hog = Snapshot(wall_s=1.0, machine_busy_s=2.0, own_s=1.0)
    two_hogs = Snapshot(wall_s=1.0, machine_busy_s=2.0, own_s=0.6)  # time-sliced with us
    assert contention.others_share(START, one_hog, demand=1, cores=2) == 0.0
    assert not contention.contended(START, one_hog, demand=1, cores=2)
    assert contention.others_share(START, two_hogs, demand=1, cores=2) == pytest.approx(0.4)
    assert contention.contended(START, two_hogs, demand=1, cores=2)


def test_a_case_at_every_core_is_contended_by_what_others_took_of_them() -> None:
    # Two threads on 2 cores: whatever others ran came out of the case's own cores.
    busy = Snapshot(wall_s=1.0, machine_busy_s=2.0, own_s=1.4)
    assert contention.others_share(START, busy, demand=2, cores=2) == pytest.approx(0.3)
    assert contention.contended(START, busy, demand=2, cores=2)


def test_background_ticks_under_a_case_at_every_core_of_a_big_machine_are_not_contention(
        ) -> None:
    # On the 16-core H100 host, 0.25 s of other CPU time during a 0.3 s torch case at 16
    # threads was measured as contention: 5 % of what the case asked for, and within what
    # the kernel's 10 ms ticks on 16 cores can account for at the case's two ends.
    case = Snapshot(wall_s=0.3, machine_busy_s=16 * 0.3, own_s=16 * 0.3 - 0.25)
    assert contention.others_share(START, case, demand=16, cores=16) == pytest.approx(
        0.25 / 4.8)
    assert not contention.contended(START, case, demand=16, cores=16)
    # Four busy cores of its sixteen for the whole case are contention.
    four = Snapshot(wall_s=0.3, machine_busy_s=16 * 0.3, own_s=12 * 0.3)
    assert contention.contended(START, four, demand=16, cores=16)


def test_a_share_made_of_a_few_clock_ticks_is_not_evidence() -> None:
    short = Snapshot(wall_s=0.03, machine_busy_s=0.08, own_s=0.02)  # 6 ticks of others
    assert contention.others_share(START, short, demand=2, cores=2) > contention.OTHERS_SHARE
    assert not contention.contended(START, short, demand=2, cores=2)


@pytest.mark.usefixtures("worker_env")
def test_a_case_measured_while_two_processes_hog_the_cores_says_so() -> None:
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        sink = Collected()
        case = Case("elementwise", "correct", "numpy", "cpu", "float32", 10_000_000,
                    (("op", "scale"),))
        # One pass of a fixed 60 samples of milliseconds each: a window long enough for the
        # kernel's CPU-time ticks to show the hogs (a CI met early made it too short).
        execute(sink, [case], RunConfig(budget_s=1.0, timeout_s=120, passes=1,
                                        criterion="fixed:n=60"))
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    (m,) = sink.saved
    assert m.status is Status.OK, m.reason
    assert m.counters["contended_retries"] == 1  # measured again after a pause
    assert Caveat.CONTENDED in m.caveats
    assert m.counters["others_cpu_share"] > contention.OTHERS_SHARE


def test_gpuvs_run_names_a_busy_machine_before_it_starts(monkeypatch) -> None:
    import os

    import psutil

    monkeypatch.setattr(os, "getloadavg", lambda: (4.0 * psutil.cpu_count(), 0.0, 0.0))
    line = contention.busy_line()
    assert line is not None and line.startswith("this machine is busy: load ")
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert contention.busy_line() is None


def test_a_load_begun_just_before_the_run_is_named_though_the_load_average_lags(
        monkeypatch) -> None:
    """Two processes that started hogging the cores a moment ago barely move the 1-minute
    load; what they took since the command began names the machine busy."""
    import os
    import time

    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    began = contention.snapshot()
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        time.sleep(0.5)
        line = contention.busy_line(since=began)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert line is not None and line.startswith("this machine is busy: other processes took ")
    assert contention.busy_line(since=contention.snapshot()) is None  # an instant: no evidence


def test_a_tree_snapshot_counts_a_live_child_as_its_own_and_a_plain_one_as_another(
        ) -> None:
    """run-file's workers burn CPU before its first case is written: read over the process
    tree, their time is the command's own, not another job's. Read over this process alone,
    as the sampling watches read it, a live child is another process. (A shared runner
    busy for a moment is another job too: one of three tries must find it quiet.)"""
    def one_try() -> float:
        child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            time.sleep(0.2)  # started: spinning
            plain, tree = contention.snapshot(), contention.snapshot(tree=True)
            time.sleep(0.6)
            plain_after, tree_after = contention.snapshot(), contention.snapshot(tree=True)
        finally:
            child.kill()
            child.wait()
        assert tree_after.own_s - tree.own_s > 0.4  # the child's 0.6 s on a core of its own
        assert plain_after.own_s - plain.own_s < 0.1
        # Against the one core the child took: all of it another's, or none of it.
        assert contention.contended(plain, plain_after, demand=1, cores=1)
        return contention.others_share(tree, tree_after, demand=1, cores=1)

    assert min(one_try() for _ in range(3)) < contention.OTHERS_SHARE


def test_a_tree_reading_leaves_the_command_s_own_processes_out_of_the_busy_listing(
        tmp_path) -> None:
    """The listing names other jobs: a quiet 2-core box read 'busy: python (99 %)',
    run-file's own worker."""
    worker = tmp_path / "ownworker"  # the name the listing would show
    worker.symlink_to(sys.executable)
    child = subprocess.Popen([str(worker), "-c", "while True: pass"])
    load = 4.0 * (psutil.cpu_count() or 1)  # busy whatever the share: the listing is shown
    try:
        time.sleep(0.2)
        plain = contention.busy_line(since=contention.snapshot(), load_at_start=load)
        tree = contention.busy_line(since=contention.snapshot(tree=True), load_at_start=load)
    finally:
        child.kill()
        child.wait()
    assert plain is not None and "ownworker (" in plain, plain
    assert tree is not None and tree.startswith(f"this machine is busy: load {load:.1f} ")
    assert "ownworker" not in tree, tree


def test_the_load_read_at_the_start_is_the_one_said(monkeypatch) -> None:
    """run-file reads the load before its workers raise it, and says that one."""
    import os

    monkeypatch.setattr(os, "getloadavg", lambda: (4.0 * psutil.cpu_count(), 0.0, 0.0))
    assert contention.busy_line(load_at_start=0.0) is None
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    line = contention.busy_line(load_at_start=2.0 * psutil.cpu_count())
    assert line is not None
    assert line.startswith(f"this machine is busy: load {2.0 * psutil.cpu_count():.1f} on ")


def _busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _hogs(n: int) -> list[subprocess.Popen[bytes]]:
    """`n` other processes at full speed. They are reaped only after the watch has read
    the CPU times: a reaped child's time counts as this process's own."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def _stop(hogs: list[subprocess.Popen[bytes]]) -> None:
    for h in hogs:
        h.kill()


def _reap(hogs: list[subprocess.Popen[bytes]]) -> None:
    for h in hogs:
        h.kill()
        h.wait()


def _seen(before_s: float, sampling_s: float, hogs: int, hogs_from: str = "case",
          hogs_until: str = "end") -> Seen:
    """What the contention watch saw of a case at every core: `before_s` of the case's own
    work before its sampling (inputs, first call, warm-up), then `sampling_s` of samples,
    with `hogs` busy loops from the case's start (or the sampling's) until its end (or
    the sampling's start)."""
    watch = sensors.Contention(demand=psutil.cpu_count() or 1)
    watch.case_started()
    running = _hogs(hogs) if hogs_from == "case" else []
    try:
        _busy(before_s)
        if hogs_until == "sampling":
            _stop(running)
            time.sleep(0.05)
        watch.sampling_started()
        if hogs_from == "sampling":
            running = _hogs(hogs)
        _busy(sampling_s)
        watch.sampling_ended(calls=1)
        return watch.case_ended()
    finally:
        _reap(running)


def test_what_others_ran_before_the_sampling_began_is_not_contention() -> None:
    """A thread pool of the case measured just before, in another process, spinning on
    while this case builds its inputs, takes nothing from its samples."""
    tries = (_seen(0.6, 0.6, psutil.cpu_count() or 1, hogs_until="sampling")
             for _ in range(3))  # one of three: a shared runner may be busy for a moment
    assert any(Caveat.CONTENDED not in seen.caveats for seen in tries)


def test_what_others_ran_while_the_samples_were_taken_is() -> None:
    seen = _seen(0.0, 0.6, psutil.cpu_count() or 1, hogs_from="sampling")
    assert Caveat.CONTENDED in seen.caveats, seen.counters


def test_processes_too_short_to_show_contention_alone_show_it_together() -> None:
    """Five processes of 0.06 s each on two cores, two busy loops beside them: each window
    is within the ticks' miscount, the five together are not."""
    assert not contention.evidence(0.08, 0.12, cores=2)
    assert contention.evidence(5 * 0.08, 5 * 0.12, cores=2, windows=5)
    assert not contention.evidence(5 * 0.005, 5 * 0.12, cores=2, windows=5)  # a tick or two


def test_a_case_merged_from_its_processes_is_contended_where_they_add_up_to_it() -> None:
    from gpuvs.execute.runner import merged

    case = Case("elementwise", "correct", "numpy", "cpu", "float32", 1000, (("op", "scale"),))
    each = {"others_cpu_s": 0.08, "asked_cpu_s": 0.12}
    first = Measurement(case, Status.OK, samples=(1e-6,) * 20, counters=each)
    m = first
    for _ in range(4):
        m = merged(m, Measurement(case, Status.OK, samples=(1e-6,) * 20, counters=each))
    assert Caveat.CONTENDED in m.caveats and m.counters["others_cpu_s"] == pytest.approx(0.4)
    assert m.counters["others_cpu_share"] == pytest.approx(0.4 / 0.6)
    quiet = {"others_cpu_s": 0.001, "asked_cpu_s": 0.12}
    calm = Measurement(case, Status.OK, samples=(1e-6,) * 20, counters=quiet)
    assert Caveat.CONTENDED not in merged(calm, calm).caveats


def test_a_sampling_too_short_to_show_anything_is_judged_over_the_whole_case() -> None:
    """A steady call meets its criterion in 20 ms: no window that short holds evidence,
    so the case's own window, busy loops and all, is read instead."""
    seen = _seen(0.6, 0.01, (psutil.cpu_count() or 1) + 1)
    assert Caveat.CONTENDED in seen.caveats, seen.counters


def test_a_worker_waits_for_its_own_thread_pool_to_stop_spinning_before_it_answers() -> None:
    """A pool spinning after its work (OpenBLAS's, 0.1 s) took CPU from the next case in
    another process; `quiet` waits until the process's own CPU time stops moving."""

    class Pool:
        """Every thread of the process, spinning `busy_s` of wall time on `threads`."""

        def __init__(self, busy_s: float, threads: int = 16) -> None:
            self.now, self.busy_s, self.threads = 0.0, busy_s, threads

        def sleep(self, s: float) -> None:
            self.now += s

        def cpu(self) -> float:
            return self.threads * min(self.now, self.busy_s)

    spinning = Pool(busy_s=0.1)
    waited = contention.quiet(most_s=1.0, step_s=0.005, clock=lambda: spinning.now,
                              own=spinning.cpu, sleep=spinning.sleep)
    assert 0.1 <= waited <= 0.11  # the first step after the pool stopped was quiet
    never = Pool(busy_s=10.0)
    assert contention.quiet(most_s=0.02, step_s=0.005, clock=lambda: never.now,
                            own=never.cpu, sleep=never.sleep) == pytest.approx(0.02)


def test_quiet_returns_once_a_real_spinning_thread_stops() -> None:
    import threading

    def spin() -> None:
        end = time.perf_counter() + 0.1
        while time.perf_counter() < end:
            pass

    t = threading.Thread(target=spin)
    t.start()
    waited = contention.quiet(most_s=2.0)
    t.join()
    assert 0.05 < waited < 1.0
