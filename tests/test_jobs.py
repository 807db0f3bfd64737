"""Each command's orchestration is a plain function below the command line: called with a
store and a config, with no parser, it records one run and returns it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuvs.config import RunConfig
from gpuvs.jobs import suite
from gpuvs.jobs.recording import Listener
from gpuvs.model import RunKind, Status
from gpuvs.store import open_store


@pytest.mark.usefixtures("worker_env")
def test_a_suite_is_measured_and_recorded_without_the_command_line(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "jobs.sqlite"))
    said: list[str] = []
    config = RunConfig(workloads=("test_spin",), backends=("numpy",), devices=("cpu",),
                       sizes=(100, 200), budget_s=0.05, passes=1).validate()
    try:
        done = suite.measure(store, suite.planned(config),
                             listener=Listener(started=lambda run_id: said.append(run_id)))
        assert said == [done.run_id]  # heard once, when the run existed
        assert done.record.kind is RunKind.SWEEP and done.record.status == "finished"
        # the calibration's probes first (the launch of NumPy's one-element op, a product
        # on one thread and on all, a copy past the caches), then the plan's cases
        probes = [m.case.param("bound") for m in done.measurements if m.case.calibrates]
        assert probes == ["launch", "cpu", "cpu", "host_memory"]
        assert [m.case.size for m in done.measurements[len(probes):]] == [100, 200]
        assert all(m.status is Status.OK for m in done.measurements)
        assert done.counts == {"ok": 6}
        assert [r.run_id for r in store.runs(10)] == [done.run_id]
    finally:
        store.close()


@pytest.mark.usefixtures("worker_env")
def test_a_resumed_suite_measures_only_what_its_run_lacks(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "jobs.sqlite"))
    config = RunConfig(workloads=("test_spin",), backends=("numpy",), devices=("cpu",),
                       sizes=(100,), budget_s=0.05, passes=1).validate()
    try:
        first = suite.measure(store, suite.planned(config))
        handle, again = suite.resumable(store, first.run_id)
        resumed = suite.planned(again, handle)
        assert resumed.todo == []  # every case already recorded
        done = suite.measure(store, resumed)
        assert done.run_id == first.run_id and done.counts == {}
    finally:
        store.close()
