"""The SQLite store, on real files: what goes in comes out, and nothing is lost or mixed up."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import gpuvs
from gpuvs.errors import StoreError, UsageError
from gpuvs.model import Case, Caveat, Environment, Measurement, Run, Status
from gpuvs.store import open_store
from gpuvs.store.schema import SQLITE
from gpuvs.store.sqlite import SqliteStore

SRC = Path(gpuvs.__file__).resolve().parents[1]


def case(size: int = 1024, **params: str) -> Case:
    return Case("matmul", "correct", "torch", "cuda:0", "float32", size,
                tuple(params.items()))


def a_run(run_id: str = "r1", started_at: str = "2026-01-01T00:00:00+0000") -> Run:
    return Run(run_id, started_at, {"budget_s": 1.0, "sizes": [64, 128]},
               Environment("fp-abc", {"gpu": "H100", "cuda": "12.4"}))


@pytest.fixture
def store(tmp_path: Path):
    with SqliteStore(tmp_path / "results.sqlite") as s:
        s.create_run(a_run())
        yield s


def test_a_saved_measurement_comes_back_exactly(store: SqliteStore) -> None:
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


def test_the_file_uses_wal_and_the_current_schema_version(store: SqliteStore) -> None:
    with sqlite3.connect(store.path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SQLITE.version


def test_case_columns_are_queryable_and_stats_are_not_stored(store: SqliteStore) -> None:
    store.save("r1", Measurement(case(64, shape="square"), Status.OK, samples=(1.0, 2.0)))
    with sqlite3.connect(store.path) as raw:
        raw.row_factory = sqlite3.Row
        row = raw.execute("SELECT * FROM measurements").fetchone()
    assert (row["workload"], row["backend"], row["device"], row["size"]) == (
        "matmul", "torch", "cuda:0", 64)
    assert row["case_key"] == case(64, shape="square").key
    assert row["params"] == '{"shape": "square"}'
    assert set(row.keys()) == {  # the case, its outcome, the raw record: no statistics
        "id", "run_id", "case_key", "workload", "variant", "backend", "device", "dtype",
        "size", "params", "status", "reason", "data", "created_at"}


def test_saving_a_case_again_replaces_it_in_its_place(store: SqliteStore) -> None:
    first, second = case(64), case(128)
    store.save("r1", Measurement(first, Status.TIMEOUT, reason="killed after 300 s"))
    store.save("r1", Measurement(second, Status.OK, samples=(2.0,)))
    store.save("r1", Measurement(first, Status.OK, samples=(1.0,)))
    saved = store.measurements("r1")
    assert [(m.case, m.status) for m in saved] == [(first, Status.OK), (second, Status.OK)]
    assert store.finished_keys("r1") == {first.key, second.key}


def test_finished_keys_are_per_run_and_grow_with_each_save(store: SqliteStore) -> None:
    store.create_run(a_run("r2"))
    assert store.finished_keys("r1") == set()
    store.save("r1", Measurement(case(64), Status.CRASHED, reason="SIGSEGV"))
    assert store.finished_keys("r1") == {case(64).key}
    store.save("r1", Measurement(case(128), Status.OK, samples=(1.0,)))
    assert store.finished_keys("r1") == {case(64).key, case(128).key}
    assert store.finished_keys("r2") == set()


def test_a_run_round_trips_and_finishing_it_records_status_and_time(
        store: SqliteStore) -> None:
    started = store.get_run("r1")
    assert started == a_run()
    store.finish_run("r1", "interrupted", "2026-01-01T00:05:00+0000", "SIGTERM")
    ended = store.get_run("r1")
    assert (ended.status, ended.finished_at, ended.reason) == (
        "interrupted", "2026-01-01T00:05:00+0000", "SIGTERM")


def test_values_json_cannot_hold_are_stored_as_text(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "db.sqlite") as s:
        s.create_run(Run("r", "t0", {"out": tmp_path}, Environment("fp", {"cuda": None})))
        assert s.get_run("r").config == {"out": str(tmp_path)}


def test_runs_are_listed_newest_first(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "db.sqlite") as s:
        assert s.runs() == [] and s.latest_run_id() is None
        for i in range(4):
            s.create_run(a_run(f"r{i}"))
        assert [r.run_id for r in s.runs()] == ["r3", "r2", "r1", "r0"]
        assert [r.run_id for r in s.runs(limit=2)] == ["r3", "r2"]
        assert s.latest_run_id() == "r3"


def test_an_unknown_run_is_bad_usage_naming_the_recent_ones(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "db.sqlite") as s:
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
            s.finish_run("nope", "finished", "t1")
        assert s.measurements("r0") == []


def test_a_run_id_is_recorded_once_and_statuses_are_checked(store: SqliteStore) -> None:
    with pytest.raises(StoreError, match="'r1' is already in the results database"):
        store.create_run(a_run())
    with pytest.raises(UsageError, match="unknown run status 'done'; use one of running"):
        store.finish_run("r1", "done", "t1")


def test_a_database_from_a_newer_gpuvs_is_refused_naming_both_versions(
        tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    SqliteStore(path).close()
    with sqlite3.connect(path) as raw:
        raw.execute(f"PRAGMA user_version = {SQLITE.version + 1}")
    with pytest.raises(StoreError) as err:
        SqliteStore(path)
    message = str(err.value)
    assert f"schema version {SQLITE.version + 1}" in message
    assert f"version {SQLITE.version} this gpuvs reads" in message
    assert "upgrade gpuvs" in message and "\n" not in message


def test_reopening_keeps_everything(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    m = Measurement(case(), Status.OK, samples=(1.0, 2.0))
    with SqliteStore(path) as s:
        s.create_run(a_run())
        s.save("r1", m)
    with SqliteStore(path) as s:
        assert s.measurements("r1") == [m]


# --- opening: where the file is, and what happens when it cannot be used ---------------

def unopenable_paths(tmp_path: Path) -> dict[str, Path]:
    a_file = tmp_path / "file"
    a_file.write_text("not a directory")
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not an SQLite file, it only has the name of one" * 40)
    return {"parent is a file": a_file / "x.sqlite",
            "grandparent is a file": a_file / "sub" / "x.sqlite",
            "path is a directory": tmp_path,
            "not a database": garbage}


@pytest.mark.parametrize("kind", ["parent is a file", "grandparent is a file",
                                  "path is a directory", "not a database"])
def test_an_unusable_path_is_one_line_saying_what_to_do(tmp_path: Path, kind: str) -> None:
    path = unopenable_paths(tmp_path)[kind]
    with pytest.raises(StoreError) as err:
        SqliteStore(path)
    message = str(err.value)
    assert message.startswith(f"cannot open the results database {path}: ")
    assert message.endswith("; pass --db PATH or set GPUVS_DB to a writable file")
    assert "\n" not in message and "Traceback" not in message and "Errno" not in message
    assert err.value.__cause__ is None


def test_the_reason_names_what_is_in_the_way(tmp_path: Path) -> None:
    path = unopenable_paths(tmp_path)["grandparent is a file"]
    with pytest.raises(StoreError, match=f"{tmp_path / 'file'} is a file, not a directory"):
        SqliteStore(path)
    with pytest.raises(StoreError, match=": it is a directory;"):
        SqliteStore(tmp_path)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="needs POSIX permissions that bind (root ignores them)")
def test_a_read_only_directory_is_refused(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(StoreError, match="cannot open the results database"):
            SqliteStore(locked / "x.sqlite")
    finally:
        locked.chmod(0o700)


def test_parent_directories_are_created(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "a" / "b" / "db.sqlite") as s:
        assert s.path.exists()


def test_open_store_prefers_the_explicit_path_then_gpuvs_db(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUVS_DB", str(tmp_path / "env.sqlite"))
    with open_store() as s:
        assert s.path == tmp_path / "env.sqlite"
    with open_store(str(tmp_path / "explicit.sqlite")) as s:
        assert s.path == tmp_path / "explicit.sqlite"
    assert (tmp_path / "env.sqlite").exists() and (tmp_path / "explicit.sqlite").exists()


def test_open_store_defaults_to_the_user_data_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("platformdirs")
    if sys.platform != "linux":
        pytest.skip("XDG_DATA_HOME steers platformdirs on Linux only")
    monkeypatch.delenv("GPUVS_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    with open_store() as s:
        assert s.path == tmp_path / "gpuvs" / "gpuvs.sqlite"


def test_open_store_reads_sqlalchemy_style_urls(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with open_store("sqlite:///relative.sqlite") as s:  # three slashes: relative
        assert s.path == Path("relative.sqlite")
    assert (tmp_path / "relative.sqlite").exists()
    with open_store(f"sqlite:///{tmp_path}/absolute.sqlite") as s:  # four: absolute
        assert s.path == tmp_path / "absolute.sqlite"


@pytest.mark.parametrize(("location", "message"), [
    ("mysql://user:secret@db/gpuvs", "unsupported results database scheme 'mysql://'"),
    ("sqlite://", "names no file"),
])
def test_open_store_refuses_other_databases(location: str, message: str) -> None:
    with pytest.raises(StoreError) as err:
        open_store(location)
    assert message in str(err.value)
    assert "secret" not in str(err.value)


# --- several processes on one file ----------------------------------------------------

# Each writer is a fresh interpreter that imports gpuvs from src, so nothing is pickled
# and nothing depends on how pytest imported this module.
WRITER = """
import sys, time
from pathlib import Path
from gpuvs.model import Case, Measurement, Status
from gpuvs.store.sqlite import SqliteStore
db, run_id, writer, n, start = sys.argv[1:]
while time.time() < float(start):  # all writers start together, to contend for the lock
    time.sleep(0.001)
with SqliteStore(Path(db)) as store:
    for i in range(int(n)):
        case = Case("matmul", "correct", "numpy", "cpu", "float32", i, (("writer", writer),))
        store.save(run_id, Measurement(case, Status.OK, samples=(float(i + 1),)))
"""


def run_writers(db: Path, run_id: str, writers: int, each: int) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(SRC), os.environ.get("PYTHONPATH", "")])}
    start = time.time() + 1.0
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(db), run_id, str(w),
                               str(each), str(start)], env=env, stderr=subprocess.PIPE,
                              text=True) for w in range(writers)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "shared.sqlite"
    with SqliteStore(db) as s:
        s.create_run(a_run("shared"))
    run_writers(db, "shared", writers=4, each=100)
    with SqliteStore(db) as s:
        saved = s.measurements("shared")
    assert len(saved) == 400
    assert {(m.case.param("writer"), m.case.size) for m in saved} == {
        (str(w), i) for w in range(4) for i in range(100)}


def test_writers_that_create_a_new_file_together_all_succeed(tmp_path: Path) -> None:
    db = tmp_path / "fresh.sqlite"
    script = ("import sys, time; from pathlib import Path; "
              "from gpuvs.store.sqlite import SqliteStore\n"
              "while time.time() < float(sys.argv[2]): time.sleep(0.001)\n"
              "SqliteStore(Path(sys.argv[1])).close()")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    start = str(time.time() + 1.0)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(db), start], env=env,
                              stderr=subprocess.PIPE, text=True) for _ in range(8)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    with sqlite3.connect(db) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SQLITE.version


def test_a_version_1_database_is_upgraded_in_place_and_keeps_its_runs(tmp_path: Path) -> None:
    from gpuvs.store.schema import tables
    db = tmp_path / "v1.sqlite"
    with sqlite3.connect(db) as raw:
        for statement in tables(SQLITE, reason=False):  # as version 1 made them
            raw.execute(statement)
        raw.execute("INSERT INTO runs VALUES ('old', '2026-01-01T00:00:00+0000', NULL, "
                    "'finished', '{}', '{}', 'fp', '0.1.0')")
        raw.execute("PRAGMA user_version = 1")
    with SqliteStore(db) as s:
        old = s.get_run("old")
    assert (old.status, old.reason) == ("finished", "")
    with sqlite3.connect(db) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SQLITE.version == 2


# --- a corrupt file: one line for every command, and nothing written into it ------------

def _corrupt_store(path: Path) -> bytes:
    """A store of 300 cases whose middle table leaf page is overwritten with random bytes:
    a page that an append to the end of the table never passes through. Its bytes."""
    import random

    with SqliteStore(path) as s:
        s.create_run(a_run("r1"))
        for i in range(300):
            s.save("r1", Measurement(case(i + 1), Status.OK, samples=(1e-3, 2e-3, 3e-3)))
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = raw.execute("PRAGMA page_size").fetchone()[0]
    data = bytearray(path.read_bytes())
    leaves = [n for n in range(2, len(data) // size) if data[n * size] == 0x0D]
    victim = leaves[len(leaves) // 2]
    data[victim * size:(victim + 1) * size] = random.Random(7).randbytes(size)
    path.write_bytes(bytes(data))
    return bytes(data)


def test_a_corrupt_file_is_refused_before_anything_is_written_into_it(tmp_path: Path) -> None:
    from tests.helpers import invoke
    from tests.test_cli_input import QUICK, one_line_error
    db = tmp_path / "corrupt.sqlite"
    before = _corrupt_store(db)
    # It ran, wrote a run into the corrupt file and exited 0.
    result = invoke("run", "-w", "matmul", "-s", "64", *QUICK, "--passes", "1", "--db",
                    str(db))
    one_line_error(result, f"cannot open the results database {db}: it is corrupt (")
    assert "gpuvs writes nothing into it; `sqlite3 " in result.output
    assert db.read_bytes() == before


@pytest.mark.parametrize("command", [["runs"], ["show", "r1"], ["export", "r1", "-o", "-"],
                                     ["report", "r1", "-o", "{tmp}/r.html"],
                                     ["compare", "r1", "r1"]])
def test_every_command_reading_a_corrupt_file_is_one_line(command: list[str],
                                                          tmp_path: Path) -> None:
    from tests.helpers import invoke
    from tests.test_cli_input import one_line_error
    db = tmp_path / "corrupt.sqlite"
    _corrupt_store(db)
    args = [a.format(tmp=tmp_path) for a in command]
    one_line_error(invoke(*args, "--db", str(db)), f"the results database {db}: ")


def test_a_file_that_is_no_sqlite_database_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "not.sqlite"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)  # the magic, then no header
    with pytest.raises(StoreError, match="it is not a SQLite database"):
        open_store(str(path), reading=True)
