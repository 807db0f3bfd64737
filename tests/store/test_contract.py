"""The store's contract, on both databases (`any_db`: a SQLite file, then a database
of a private PostgreSQL server): what goes in comes out exactly, runs are listed and
finished as recorded, and several processes writing at once lose nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.store.samples import a_run, case

import gpuvs
from gpuvs.errors import StoreError, UsageError
from gpuvs.model import Caveat, Environment, Measurement, Run, Status
from gpuvs.store import SqlStore, open_store

SRC = Path(gpuvs.__file__).resolve().parents[1]


@pytest.fixture
def store(any_db: str) -> Iterator[SqlStore]:
    with open_store(any_db) as s:
        s.create_run(a_run())
        yield s


def test_a_saved_measurement_comes_back_exactly(store: SqlStore) -> None:
    timed = Measurement(
        case(4096, shape="square", layout="C"), Status.OK, samples=(1e-7 / 3, 0.1 + 0.2, 2.5e-5),
        wall_samples=(3.1e-5, 3.3e-5, 2.9e-5), loops=64, first_call_s=0.731, warmups=3,
        timer="cuda_event", counters={"flops": 1.37e11, "bytes_moved": 2.0 ** 40},
        caveats=(Caveat.FIRST_CALL_SLOW, Caveat.TF32_ON), workload_version="9f3e",
        graph_samples=(9.9e-6, 1.01e-5, 1e-5))
    failed = Measurement(case(1 << 20), Status.OOM, reason="CUDA out of memory: 80 GiB",
                         first_call_s=None)
    store.save("r1", timed)
    store.save("r1", failed)
    assert store.measurements("r1") == [timed, failed]
    assert store.measurements("r1")[1].first_call_s is None
    assert "graph_samples" not in failed.to_dict()  # only where sampled: older runs read alike


def test_saving_a_case_again_replaces_it_in_its_place(store: SqlStore) -> None:
    first, second = case(64), case(128)
    store.save("r1", Measurement(first, Status.TIMEOUT, reason="killed after 300 s"))
    store.save("r1", Measurement(second, Status.OK, samples=(2.0,)))
    store.save("r1", Measurement(first, Status.OK, samples=(1.0,)))
    saved = store.measurements("r1")
    assert [(m.case, m.status) for m in saved] == [(first, Status.OK), (second, Status.OK)]
    assert store.finished_keys("r1") == {first.key, second.key}


def test_finished_keys_are_per_run_and_grow_with_each_save(store: SqlStore) -> None:
    store.create_run(a_run("r2"))
    assert store.finished_keys("r1") == set()
    store.save("r1", Measurement(case(64), Status.CRASHED, reason="SIGSEGV"))
    assert store.finished_keys("r1") == {case(64).key}
    store.save("r1", Measurement(case(128), Status.OK, samples=(1.0,)))
    assert store.finished_keys("r1") == {case(64).key, case(128).key}
    assert store.finished_keys("r2") == set()


def test_a_run_round_trips_and_finishing_it_records_status_and_time(
        store: SqlStore) -> None:
    started = store.get_run("r1")
    assert started == a_run()
    store.finish_run("r1", "interrupted", "2026-01-01T00:05:00+0000", "SIGTERM")
    ended = store.get_run("r1")
    assert (ended.status, ended.finished_at, ended.reason) == (
        "interrupted", "2026-01-01T00:05:00+0000", "SIGTERM")


def test_values_json_cannot_hold_are_stored_as_text(any_db: str, tmp_path: Path) -> None:
    with open_store(any_db) as s:
        s.create_run(Run("r", "2026-01-01T00:00:00+0000", {"out": tmp_path},
                         Environment("fp", {"cuda": None})))
        assert s.get_run("r").config == {"out": str(tmp_path)}
        assert s.get_run("r").environment.facts == {"cuda": None}


def test_runs_are_listed_newest_first(any_db: str) -> None:
    with open_store(any_db) as s:
        assert s.runs() == [] and s.latest_run_id() is None
        for i in range(4):
            s.create_run(a_run(f"r{i}"))
        assert [r.run_id for r in s.runs()] == ["r3", "r2", "r1", "r0"]
        assert [r.run_id for r in s.runs(limit=2)] == ["r3", "r2"]
        assert s.latest_run_id() == "r3"


def test_an_unknown_run_is_bad_usage_naming_the_recent_ones(any_db: str) -> None:
    with open_store(any_db) as s:
        with pytest.raises(UsageError, match=r"^unknown run 'nope'; no runs yet$"):
            s.get_run("nope")
        for i in range(7):
            s.create_run(a_run(f"r{i}"))
        with pytest.raises(UsageError) as err:
            s.get_run("nope")
        assert str(err.value) == "unknown run 'nope'; recent runs: r6, r5, r4, r3, r2"
        with pytest.raises(UsageError, match="unknown run 'nope'"):
            s.save("nope", Measurement(case(), Status.OK, samples=(1.0,)))
        with pytest.raises(UsageError, match="unknown run 'nope'"):
            s.finish_run("nope", "finished", "2026-01-01T00:05:00+0000")
        assert s.measurements("r0") == []


def test_a_run_id_is_recorded_once_and_statuses_are_checked(store: SqlStore) -> None:
    with pytest.raises(StoreError, match="'r1' is already in the results database"):
        store.create_run(a_run())
    with pytest.raises(UsageError, match="unknown run status 'done'; use one of running"):
        store.finish_run("r1", "done", "t1")


def test_reopening_keeps_everything(any_db: str) -> None:
    m = Measurement(case(), Status.OK, samples=(1.0, 2.0))
    with open_store(any_db) as s:
        s.create_run(a_run())
        s.save("r1", m)
    with open_store(any_db) as s:
        assert s.measurements("r1") == [m]


def test_concurrent_writers_lose_nothing(any_db: str) -> None:
    with open_store(any_db) as s:
        s.create_run(a_run("shared"))
    run_writers(any_db, "shared", writers=4, each=100)
    with open_store(any_db) as s:
        saved = s.measurements("shared")
    assert len(saved) == 400
    assert {(m.case.param("writer"), m.case.size) for m in saved} == {
        (str(w), i) for w in range(4) for i in range(100)}


# Each writer is a fresh interpreter that imports gpuvs from src, so nothing is pickled
# and nothing depends on how pytest imported this module.
WRITER = """
import sys, time
from gpuvs.model import Case, Measurement, Status
from gpuvs.store import open_store
db, run_id, writer, n, start = sys.argv[1:]
while time.time() < float(start):  # all writers start together, to contend for the lock
    time.sleep(0.001)
with open_store(db) as store:
    for i in range(int(n)):
        case = Case("matmul", "correct", "numpy", "cpu", "float32", i, (("writer", writer),))
        store.save(run_id, Measurement(case, Status.OK, samples=(float(i + 1),)))
"""


def run_writers(db: str, run_id: str, writers: int, each: int) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(SRC), os.environ.get("PYTHONPATH", "")])}
    start = time.time() + 2.0
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, db, run_id, str(w),
                               str(each), str(start)], env=env, stderr=subprocess.PIPE,
                              text=True) for w in range(writers)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
