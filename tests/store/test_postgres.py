"""The shared store for teams: PostgreSQL, for real — a private server the test set-up
starts (tests/store/conftest.py), a fresh database for every test."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.helpers import run_id
from typer.testing import CliRunner

from gpuvs.cli import app
from gpuvs.errors import StoreError
from gpuvs.model import Case, Environment, Measurement, Run, Status
from gpuvs.store import open_store
from gpuvs.store.postgres import PostgresStore, shown

SRC = Path(__file__).resolve().parents[2] / "src"


def a_run(run_id: str) -> Run:
    return Run(run_id, "2026-01-01T00:00:00+0000", {"budget_s": 1.0},
               Environment("fp", {"cpu_model": "test"}))


def a_case(size: int, status: Status = Status.OK) -> Measurement:
    case = Case("matmul", "correct", "numpy", "cpu", "float32", size)
    return Measurement(case, status, samples=(1e-3, 1.1e-3) if status is Status.OK else (),
                       reason="" if status is Status.OK else "the worker died")


def test_the_store_contract_holds_on_postgresql(postgres_db: str) -> None:
    with open_store(postgres_db) as store:
        assert isinstance(store, PostgresStore)
        store.create_run(a_run("r1"))
        store.create_run(a_run("r2"))
        store.save("r1", a_case(2))
        store.save("r1", a_case(1))
        store.save("r1", a_case(2, Status.CRASHED))  # replaced, in its place
        store.finish_run("r1", "interrupted", "2026-01-01T00:05:00+0000", "SIGTERM")
        assert [m.case.size for m in store.measurements("r1")] == [2, 1]
        assert store.measurements("r1")[0].status is Status.CRASHED
        assert store.finished_keys("r1") == {a_case(1).case.key, a_case(2).case.key}
        assert [r.run_id for r in store.runs(10)] == ["r2", "r1"]  # newest first
        assert store.latest_run_id() == "r2"
        ended = store.get_run("r1")
        assert (ended.status, ended.reason) == ("interrupted", "SIGTERM")
        with pytest.raises(Exception, match="unknown run 'nope'; recent runs: r2, r1"):
            store.get_run("nope")


def test_a_newer_schema_is_refused_and_a_password_is_never_shown(postgres_db: str) -> None:
    import psycopg

    open_store(postgres_db).close()  # migrated to this gpuvs's version
    with psycopg.connect(postgres_db, autocommit=True) as conn:
        conn.execute("UPDATE gpuvs_schema SET version = version + 1")
    with pytest.raises(StoreError, match="newer than the version 2 this gpuvs reads"):
        open_store(postgres_db)
    assert shown("postgresql://ann:s3cret@db.example:5433/results") == (
        "postgresql://db.example:5433/results")
    with pytest.raises(StoreError) as err:
        open_store(postgres_db.replace("postgres@", "postgres:s3cret@").replace(
            "/gpuvs_", "/missing_"))
    assert "cannot open the results database" in str(err.value)
    assert "s3cret" not in str(err.value)


WRITER = """
import sys, time
from gpuvs.model import Case, Measurement, Status
from gpuvs.store import open_store
url, run_id, writer, n, start = sys.argv[1:]
while time.time() < float(start):  # all writers start together, to contend
    time.sleep(0.001)
with open_store(url) as store:
    for i in range(int(n)):
        case = Case("matmul", "correct", "numpy", "cpu", "float32", i, (("writer", writer),))
        store.save(run_id, Measurement(case, Status.OK, samples=(float(i),)))
"""


def test_processes_that_meet_an_empty_database_and_write_together_lose_nothing(
        postgres_db: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC),
                                                        os.environ.get("PYTHONPATH", "")])}
    creator = ("import sys; from gpuvs.store import open_store; from tests.store.test_postgres "
               "import a_run; s = open_store(sys.argv[1]); s.create_run(a_run('shared'))")
    start = str(time.time() + 1.5)  # the first to migrate wins; the others find it done
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, postgres_db, "shared", str(w),
                               "50", start], env=env, stderr=subprocess.PIPE, text=True)
             for w in range(3)]
    made = subprocess.run([sys.executable, "-c", creator, postgres_db], env=env | {
        "PYTHONPATH": env["PYTHONPATH"] + os.pathsep + str(SRC.parent)},
        capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    with open_store(postgres_db) as store:
        saved = store.measurements("shared")
    assert {(m.case.param("writer"), m.case.size) for m in saved} == {
        (str(w), i) for w in range(3) for i in range(50)}


def test_gpuvs_run_show_and_export_on_a_postgresql_store(postgres_db: str) -> None:
    invoke = CliRunner().invoke
    ran = invoke(app, ["run", "-w", "matmul", "-b", "numpy", "-d", "cpu", "-s", "64",
                       "--budget", "0.05", "--passes", "1", "--db", postgres_db],
                 env={"COLUMNS": "200"})
    assert ran.exit_code == 0, ran.output
    rid = run_id(ran.output)
    shown_run = invoke(app, ["show", rid, "--db", postgres_db], env={"COLUMNS": "200"})
    assert shown_run.exit_code == 0 and "Square matrix product, float32" in shown_run.output
    exported = invoke(app, ["export", rid, "-f", "csv", "-o", "-", "--db", postgres_db])
    assert exported.exit_code == 0 and exported.stdout.count("\n") == 3  # header + 2 cases
