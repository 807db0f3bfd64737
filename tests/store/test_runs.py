"""A run's lifecycle, from its one owner: created at once, each case committed as it is
recorded, then finished or interrupted (the line that says so counting the cases by
status, as `gpuvs runs` does, and naming those a first pass stored); its kind in its
config, a sweep's left implicit as sweeps have always been stored. On both databases
(`any_db`)."""

from __future__ import annotations

import re

import pytest

from gpuvs.errors import Interrupted
from gpuvs.model import Case, Measurement, RunKind, Status
from gpuvs.store import open_store
from gpuvs.store.runs import guarded, start_run


def _case(size: int) -> Measurement:
    return Measurement(Case("matmul", "correct", "numpy", "cpu", "float32", size), Status.OK,
                       samples=(1e-3, 1.1e-3, 0.9e-3))


def test_a_started_run_is_stored_at_once_and_keeps_each_case_it_records(any_db: str) -> None:
    with open_store(any_db) as store:
        run = start_run(store, RunKind.SEEDS, {"seeds": ["000"]})
        assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{4}", run.run_id)
        assert store.get_run(run.run_id).status == "running"
        run.record(_case(1))
        run.record(_case(2))
        assert run.finished_keys() == {_case(1).case.key, _case(2).case.key}
        run.finish()
        stored = run.stored()
    assert stored.status == "finished" and stored.finished_at is not None
    assert dict(stored.config) == {"kind": "seeds", "seeds": ["000"]}
    assert stored.kind is RunKind.SEEDS


def test_a_sweep_is_stored_without_a_kind_and_reads_back_as_one(any_db: str) -> None:
    with open_store(any_db) as store:
        run = start_run(store, RunKind.SWEEP, {"budget_s": 1.0})
        run.interrupt("SIGINT after 3 of 9 cases")
        stored = run.stored()
    assert "kind" not in stored.config and stored.kind is RunKind.SWEEP
    assert (stored.status, stored.reason) == ("interrupted", "SIGINT after 3 of 9 cases")


def test_an_interrupted_run_counts_its_cases_as_gpuvs_runs_does(any_db: str) -> None:
    """Cases are counted by status, as `gpuvs runs` counts them (an interrupt once said
    18 while `runs` showed 30 ok); those that ran one pass of two are named apart."""
    with open_store(any_db) as store:
        run = start_run(store, RunKind.SWEEP, {})
        with pytest.raises(Interrupted, match="no case was recorded. finish it."), \
                guarded(run, "finish it."):
            raise KeyboardInterrupt
        for size in (64, 128, 256):
            run.record(_case(size))
        run.record(Measurement(Case("matmul", "correct", "torch", "cuda:0", "float32", 64),
                               Status.UNAVAILABLE, reason="no CUDA device"))
        with pytest.raises(Interrupted, match=re.escape(
                "its recorded cases are kept: 3 ok (2 of them after their first pass only, "
                "which finishing it measures again), 1 unavailable. finish it.")), \
                guarded(run, "finish it.", finished=lambda: 2):
            raise KeyboardInterrupt
        with pytest.raises(Interrupted, match="kept: 3 ok, 1 unavailable. finish it."), \
                guarded(run, "finish it."):  # by default, every recorded case is complete
            raise KeyboardInterrupt
        assert store.get_run(run.run_id).status == "interrupted"


def test_the_calibrations_probes_are_counted_apart_from_the_cases_an_interrupt_keeps(
        any_db: str) -> None:
    from gpuvs.workloads.calibration import probe
    with open_store(any_db) as store:
        run = start_run(store, RunKind.YOURS, {})
        run.record(Measurement(probe("launch", "numpy", "cpu"), Status.OK, samples=(1e-6,)))
        with pytest.raises(Interrupted, match=re.escape(
                "no case was recorded, with the machine's calibration (1 probe)")), \
                guarded(run, "again."):
            raise KeyboardInterrupt
        run.record(_case(64))
        with pytest.raises(Interrupted, match=re.escape(
                "kept: 1 ok, with the machine's calibration (1 probe). again.")), \
                guarded(run, "again."):
            raise KeyboardInterrupt
        # a case after its first pass only is counted among the cases, never a probe
        # (an interrupted run said "34 ok (38 of them after their first pass only …)")
        with pytest.raises(Interrupted, match=re.escape(
                "kept: 1 ok (1 of them after their first pass only, which finishing it "
                "measures again), with the machine's calibration (1 probe). again.")), \
                guarded(run, "again.", finished=lambda: 0):
            raise KeyboardInterrupt


def test_a_run_written_lazily_and_stopped_before_its_first_case_names_no_run(
        any_db: str) -> None:
    """run-file's run is written at its first case: stopped before it (the workers
    starting, the calibration), nothing is stored and no run id is named."""
    with open_store(any_db) as store:
        run = start_run(store, RunKind.YOURS, {}, lazily=True)
        with pytest.raises(Interrupted) as stopped, guarded(run, "measure it again."):
            raise KeyboardInterrupt
        assert str(stopped.value) == ("stopped by SIGINT before any case was recorded: no run "
                                      "was saved. measure it again.")
        assert run.run_id not in str(stopped.value) and store.runs(10) == []
