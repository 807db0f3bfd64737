"""A machine that lies is named: a case measured while other processes hog the CPUs is
`contended` (after one more try), never a plain `ok` with a tight interval."""

from __future__ import annotations

import subprocess
import sys

import pytest
from tests.test_runner import Collected

from gpuvs import contention
from gpuvs.config import RunConfig
from gpuvs.contention import Snapshot
from gpuvs.model import Case, Caveat, Status
from gpuvs.runner import execute


def test_other_processes_share_is_what_they_took_of_what_the_case_left() -> None:
    before = Snapshot(wall_s=0.0, machine_busy_s=0.0, own_s=0.0)
    quiet = Snapshot(wall_s=1.0, machine_busy_s=1.05, own_s=1.0)  # one core, ours
    busy = Snapshot(wall_s=1.0, machine_busy_s=2.0, own_s=1.0)  # the other core, theirs
    assert contention.others_share(before, quiet, cores=2) == pytest.approx(0.05)
    assert contention.others_share(before, busy, cores=2) == pytest.approx(1.0)
    assert contention.contended(before, busy, cores=2)
    assert not contention.contended(before, quiet, cores=2)


def test_a_share_made_of_a_few_clock_ticks_is_not_evidence() -> None:
    before = Snapshot(wall_s=0.0, machine_busy_s=0.0, own_s=0.0)
    short = Snapshot(wall_s=0.03, machine_busy_s=0.05, own_s=0.02)  # 3 ticks of others
    assert contention.others_share(before, short, cores=2) > contention.OTHERS_SHARE
    assert not contention.contended(before, short, cores=2)


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
