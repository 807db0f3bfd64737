"""The SQLite store, on real files: what goes in comes out, and nothing is lost or mixed up."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.store.samples import a_run, case

import gpuvs
from gpuvs.errors import StoreError
from gpuvs.model import Measurement, Status
from gpuvs.store import open_store
from gpuvs.store.schema import SQLITE
from gpuvs.store.sqlite import SqliteStore

SRC = Path(gpuvs.__file__).resolve().parents[1]


@pytest.fixture
def store(tmp_path: Path):
    with SqliteStore(tmp_path / "results.sqlite") as s:
        s.create_run(a_run())
        yield s


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
