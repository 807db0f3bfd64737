"""No output over data (issue 43): every output flag of every command, pointed at the
results store or one of SQLite's files beside it, is refused in one line with exit code
2 before anything is written, and the store still reads with its runs. An existing file
is replaced only by one of its own kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.helpers import invoke

from gpuvs.errors import UsageError
from gpuvs.model import Case, Environment, Measurement, Run, Status
from gpuvs.store import open_store
from gpuvs.store.output import CSV, HTML, JSON, PNG, check_output, kind_of, write_atomic

CPU = ["-b", "numpy", "-d", "cpu", "-s", "64", "--budget", "0.05", "--passes", "1"]
# Every output flag of every command; {out} is the path tried, {export} a run's JSON
# export, {script} a run-file script.
OUTPUT_FLAGS = [
    ["run", "-w", "matmul", *CPU, "--json", "{out}"],
    ["run", "-w", "matmul", *CPU, "--report", "{out}"],
    ["sweep", "matmul", *CPU, "--json", "{out}"],
    ["sweep", "matmul", *CPU, "--report", "{out}"],
    ["seeds", "--seed", "0", "--quick", "-d", "cpu", "--json", "{out}"],
    ["run-file", "{script}::work", "-d", "cpu", "--json", "{out}"],
    ["dist", "collectives", "--backend", "gloo", "--nproc", "2", "--json", "{out}"],
    ["dist", "scaling", "--backend", "gloo", "--nproc", "2", "--json", "{out}"],
    ["predict", "-w", "matmul", "-s", "64", "--target", "h100", "--json", "{out}"],
    ["predict", "-w", "matmul", "-s", "64", "--target", "h100", "--report", "{out}"],
    ["predict", "--from-run", "r1", "--target", "h100", "--json", "{out}"],
    ["export", "r1", "-o", "{out}"],
    ["export", "r1", "-f", "csv", "-o", "{out}"],
    ["report", "r1", "-o", "{out}"],
    ["report", "--from", "{export}", "-o", "{out}"],
    ["report", "--history", "-o", "{out}"],
    ["plot", "r1", "--png", "{out}"],
    ["compare", "r1", "{export}", "--report", "{out}"],
]


def _store_with_a_run(path: Path) -> None:
    with open_store(str(path)) as store:
        store.create_run(Run("r1", "2026-01-01T00:00:00+0000", {"budget_s": 1.0},
                             Environment("fp", {"cpu_model": "test"}), "finished",
                             "2026-01-01T00:01:00+0000"))
        for size in (64, 128):
            store.save("r1", Measurement(Case("matmul", "correct", "numpy", "cpu", "float32",
                                              size, (("shape", "square"),)), Status.OK,
                                         samples=(1e-3, 1.1e-3, 0.9e-3)))


def _still_reads(path: Path) -> None:
    with open_store(str(path), reading=True) as store:
        assert [r.run_id for r in store.runs()] == ["r1"]
        assert [m.case.size for m in store.measurements("r1")] == [64, 128]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "results.sqlite"
    _store_with_a_run(path)
    assert invoke("export", "r1", "-o", str(tmp_path / "r1.json"), "--db",
                  str(path)).exit_code == 0
    (tmp_path / "mine.py").write_text("def work():\n    return 1\n")
    return path


def _one_line_refusal(args: list[str], *mentions: str) -> None:
    result = invoke(*args)
    shown = f"gpuvs {' '.join(args)}:\n{result.output}"
    assert result.exit_code == 2, shown
    assert "Traceback" not in result.output, shown
    assert len(result.output.strip().splitlines()) == 1, shown
    assert all(m in result.output for m in mentions), shown


@pytest.mark.parametrize("side", ["", "-wal"])
@pytest.mark.parametrize("flags", OUTPUT_FLAGS, ids=lambda f: " ".join(f[:3]))
def test_every_output_flag_pointed_at_the_store_is_refused_and_the_store_still_reads(
        flags: list[str], side: str, store: Path) -> None:
    target = Path(f"{store}{side}")
    args = [a.format(out=target, export=store.parent / "r1.json",
                     script=store.parent / "mine.py") for a in flags]
    _one_line_refusal([*args, "--db", str(store)], str(target), "the results database",
                      "gpuvs never writes a file over it")
    _still_reads(store)
    wal = Path(f"{store}-wal")  # SQLite's own while a connection is open, never ours
    assert not wal.is_dir()
    assert not wal.exists() or kind_of(wal.read_bytes()[:64]) not in (JSON, HTML, CSV, PNG)


def test_the_store_named_by_gpuvs_db_is_protected_as_the_one_given_by_db(
        store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUVS_DB", str(store))
    _one_line_refusal(["export", "r1", "-o", str(store)], "is the results database")
    _one_line_refusal(["report", "r1", "-o", f"{store}-shm"],
                      "is the results database's shm file")
    _still_reads(store)


def test_a_store_not_yet_created_is_protected_from_the_run_that_would_create_it(
        tmp_path: Path) -> None:
    fresh = tmp_path / "new.sqlite"
    _one_line_refusal(["run", "-w", "matmul", *CPU, "--json", str(fresh), "--db", str(fresh)],
                      "is the results database")
    assert not fresh.exists()


def test_another_database_or_a_users_file_is_never_replaced(store: Path,
                                                            tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    _store_with_a_run(other)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    _one_line_refusal(["export", "r1", "-o", str(other), "--db", str(store)],
                      f"{other} exists and holds a SQLite database, not {JSON}")
    _one_line_refusal(["report", "r1", "-o", str(notes), "--db", str(store)],
                      f"{notes} exists and holds a file gpuvs did not write, not {HTML}")
    _one_line_refusal(["export", "r1", "-f", "csv", "-o", str(tmp_path / "r1.json"), "--db",
                       str(store)], f"holds {JSON}, not {CSV}")
    _one_line_refusal(["report", "r1", "-o", str(tmp_path), "--db", str(store)],
                      "is a directory")
    _still_reads(other)
    assert notes.read_text() == "my notes\n"


def test_a_file_of_the_same_kind_or_an_empty_one_is_replaced(store: Path,
                                                             tmp_path: Path) -> None:
    again, empty = tmp_path / "r1.json", tmp_path / "empty.html"
    empty.touch()
    before = again.read_text()
    assert invoke("export", "r1", "-o", str(again), "--db", str(store)).exit_code == 0
    assert json.loads(again.read_text()) == json.loads(before)
    assert invoke("report", "r1", "-o", str(empty), "--db", str(store)).exit_code == 0
    assert kind_of(empty.read_bytes()[:64]) == HTML


@pytest.mark.parametrize(("head", "kind"), [
    (b"SQLite format 3\x00\x10\x00", "a SQLite database"),
    (b"\x37\x7f\x06\x82\x00\x2d\xe2\x18", "a SQLite write-ahead log"),
    (b"\xd9\xd5\x05\xf9\x20\xa1\x63\xd7", "a SQLite journal"),
    (b'\n {"format_version": 1', JSON), (b"<!DOCTYPE html>\n<html", HTML),
    (b"run_id,started_at,workload", CSV), (b"\x89PNG\r\n\x1a\n\x00", PNG),
    (b"name,value\n", "a file gpuvs did not write"),
])
def test_what_a_file_holds_is_read_off_its_first_bytes(head: bytes, kind: str) -> None:
    assert kind_of(head) == kind


def test_write_atomic_checks_the_content_it_writes_not_only_the_flag(tmp_path: Path) -> None:
    """A library writer (a profile, residuals) goes through the same check."""
    page = tmp_path / "page.html"
    page.write_text("<!doctype html><p>kept</p>")
    with pytest.raises(UsageError, match="holds an HTML page, not a JSON document"):
        write_atomic(page, '{"a": 1}')
    with pytest.raises(UsageError, match="is the results database"):
        write_atomic(tmp_path / "db", "{}", protected=[tmp_path / "db"])
    with pytest.raises(UsageError, match="is under the results database's wal file"):
        check_output(tmp_path / "x-wal" / "p.png", PNG,
                     protected=[tmp_path / "x", tmp_path / "x-wal"])
    assert page.read_text() == "<!doctype html><p>kept</p>"
