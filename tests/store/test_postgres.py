"""The shared store for teams: PostgreSQL, for real — a private server the test set-up
starts (tests/store/conftest.py), a fresh database for every test."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import run_id
from typer.testing import CliRunner

from gpuvs.cli import app
from gpuvs.errors import StoreError
from gpuvs.model import Case, Environment, Measurement, Run, RunKind, Status
from gpuvs.store import open_store
from gpuvs.store.postgres import PostgresStore, shown
from gpuvs.store.runs import guarded, latest_unfinished, start_run

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
    with pytest.raises(StoreError, match="newer than the version 3 this gpuvs reads"):
        open_store(postgres_db)
    assert shown("postgresql://ann:s3cret@db.example:5433/results") == (
        "postgresql://db.example:5433/results")
    with pytest.raises(StoreError) as err:
        open_store(postgres_db.replace("postgres@", "postgres:s3cret@").replace(
            "/gpuvs_", "/missing_"))
    assert "cannot open the results database" in str(err.value)
    assert "s3cret" not in str(err.value)


# Every process says it is ready (its imports done), then waits for the test's "go": all
# of them meet the empty database at once, however loaded the machine. The creator makes
# the run; each writer, once its store is open (the migration raced), waits until the
# run is there, then saves its cases while the others save theirs.
PROCESS = """
import sys, time
from pathlib import Path
from gpuvs.errors import UsageError
from gpuvs.model import Case, Environment, Measurement, Run, Status
from gpuvs.store import open_store
url, folder, role, n = sys.argv[1:]
Path(folder, "ready-" + role).touch()
while not Path(folder, "go").exists():
    time.sleep(0.001)
with open_store(url) as store:
    if role == "creator":
        store.create_run(Run("shared", "2026-01-01T00:00:00+0000", {}, Environment("fp", {})))
        sys.exit(0)
    deadline = time.monotonic() + 120
    while True:
        try:
            store.get_run("shared")
            break
        except UsageError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)
    for i in range(int(n)):
        case = Case("matmul", "correct", "numpy", "cpu", "float32", i, (("writer", role),))
        store.save("shared", Measurement(case, Status.OK, samples=(float(i + 1),)))
"""


def test_processes_that_meet_an_empty_database_and_write_together_lose_nothing(
        postgres_db: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC),
                                                        os.environ.get("PYTHONPATH", "")])}
    roles = ["creator", "0", "1", "2"]
    procs = [subprocess.Popen([sys.executable, "-c", PROCESS, postgres_db, str(tmp_path),
                               role, "50"], env=env, stderr=subprocess.PIPE, text=True)
             for role in roles]
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"ready-{r}").exists() for r in roles):
        assert time.monotonic() < deadline, "the processes did not start"
        assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
        time.sleep(0.01)
    (tmp_path / "go").touch()
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
    # a header, the calibration's four probes (NumPy's launch, its product on one thread
    # and on all, a copy), and the two cases
    assert exported.exit_code == 0 and exported.stdout.count("\n") == 7


# --- typed columns (issue 31), and a store made before them -----------------------------

def _types(url: str, table: str) -> dict[str, str]:
    import psycopg

    with psycopg.connect(url) as conn:
        return dict(conn.execute("SELECT column_name, data_type FROM information_schema."
                                 "columns WHERE table_name = %s", (table,)).fetchall())


def test_times_are_timestamptz_and_documents_jsonb(postgres_db: str) -> None:
    import psycopg

    with open_store(postgres_db) as store:
        store.create_run(Run("r1", "2026-01-01T01:30:00+0100", {"budget_s": 1.0, "nan": math.nan},
                             Environment("fp", {"cpu_model": "test"})))
        store.save("r1", Measurement(a_case(2).case, Status.OK, samples=(1e-3,),
                                     counters={"flops": 2.0}))
        back = store.get_run("r1")
        assert back.started_at == "2026-01-01T00:30:00+0000"  # the same instant, in UTC
        assert back.config["budget_s"] == 1.0 and back.config["nan"] == "NaN"
        assert store.measurements("r1")[0].counters == {"flops": 2.0}
    assert _types(postgres_db, "runs").items() >= {
        "started_at": "timestamp with time zone", "finished_at": "timestamp with time zone",
        "config": "jsonb", "environment": "jsonb"}.items()
    assert _types(postgres_db, "measurements").items() >= {
        "params": "jsonb", "data": "jsonb", "created_at": "timestamp with time zone"}.items()
    with psycopg.connect(postgres_db) as conn:  # SQL over the store: times compare, JSON
        row = conn.execute("SELECT data->'counters'->>'flops', started_at < now() FROM "
                           "measurements JOIN runs USING (run_id)").fetchone()
    assert row == ("2.0", True)


def _version_2_store(url: str, config: str = '{"budget_s": 1.0}') -> None:
    """A store as gpuvs made them before typed columns: the same tables, all text."""
    import dataclasses

    import psycopg

    from gpuvs.store.schema import POSTGRES, tables
    text = dataclasses.replace(POSTGRES, timestamp="TEXT", document="TEXT")
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in tables(text):
            conn.execute(statement)
        conn.execute("CREATE TABLE gpuvs_schema (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO gpuvs_schema VALUES (2)")
        conn.execute("INSERT INTO runs (run_id, started_at, finished_at, status, config, "
                     "environment, fingerprint, gpuvs_version) VALUES ('old', "
                     "'2026-01-01T00:00:00+0000', '2026-01-01T00:05:00+0000', 'finished', "
                     "%s, '{\"cpu_model\": \"x\"}', 'fp', '0.1.0')", (config,))
        conn.execute("INSERT INTO measurements (run_id, case_key, workload, variant, backend, "
                     "device, dtype, size, params, status, reason, data, created_at) VALUES "
                     "('old', %s, 'matmul', 'correct', 'numpy', 'cpu', 'float32', 2, '{}', "
                     "'ok', '', %s, '2026-01-01T00:01:00+00:00')",
                     (a_case(2).case.key, a_case(2).to_json()))


def test_a_version_2_store_is_migrated_to_typed_columns_and_keeps_its_runs(
        postgres_db: str) -> None:
    _version_2_store(postgres_db)
    with open_store(postgres_db) as store:
        old = store.get_run("old")
        assert (old.started_at, old.finished_at) == ("2026-01-01T00:00:00+0000",
                                                     "2026-01-01T00:05:00+0000")
        assert old.config == {"budget_s": 1.0}
        assert store.measurements("old") == [a_case(2)]
    assert _types(postgres_db, "runs")["config"] == "jsonb"
    assert _types(postgres_db, "measurements")["created_at"] == "timestamp with time zone"


def test_a_store_whose_rows_cannot_be_typed_is_refused_and_left_as_it_was(
        postgres_db: str) -> None:
    import psycopg

    _version_2_store(postgres_db, config="{not json")
    with pytest.raises(StoreError) as err:
        open_store(postgres_db)
    message = str(err.value)
    assert "migrating it to schema version 3 failed (invalid input syntax for type json" in \
           message and "and was undone; the store is as it was" in message
    assert "\n" not in message
    with psycopg.connect(postgres_db) as conn:
        assert conn.execute("SELECT version FROM gpuvs_schema").fetchone() == (2,)
    assert _types(postgres_db, "runs")["config"] == "text"


# --- a server restart (issue 30): nothing measured is lost ------------------------------

def _back_in(server: Any, seconds: float) -> threading.Thread:
    def start() -> None:
        time.sleep(seconds)
        server.start()
    thread = threading.Thread(target=start)
    thread.start()
    return thread


def test_a_save_lives_through_a_server_restart(postgres: Any, postgres_db: str) -> None:
    with open_store(postgres_db) as store:
        store.create_run(a_run("r1"))
        store.save("r1", a_case(1))
        postgres.stop()
        back = _back_in(postgres, 2.0)
        try:
            store.save("r1", a_case(2))  # its connection is gone: a new one, once back
        finally:
            back.join()
        assert [m.case.size for m in store.measurements("r1")] == [1, 2]


def test_a_save_that_finally_fails_says_how_to_resume_and_latest_finds_the_run(
        postgres: Any, postgres_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PostgresStore, "reconnect_s", 1.0)
    store = open_store(postgres_db)
    run = start_run(store, RunKind.SWEEP, {"budget_s": 1.0}, Environment("fp", {}))
    run.record(a_case(1))
    postgres.stop()
    try:
        with pytest.raises(StoreError) as err, guarded(run, "`gpuvs run --resume latest` "
                                                            "finishes it."):
            run.record(a_case(2))
    finally:
        postgres.start()
    message = str(err.value)
    assert message.startswith(f"cannot save case {a_case(2).case.key!r} in the results "
                              "database postgresql://localhost/gpuvs_")
    assert "and could not connect again within 1 s: " in message
    assert message.endswith(f"run {run.run_id} could not be marked failed (it reads running); "
                            "every case finished before it is kept. `gpuvs run --resume "
                            "latest` finishes it.")
    with open_store(postgres_db) as again:
        assert again.get_run(run.run_id).status == "running"
        found = latest_unfinished(again, RunKind.SWEEP)
        assert found is not None and found.run_id == run.run_id
        assert again.finished_keys(run.run_id) == {a_case(1).case.key}


def test_a_save_the_server_refuses_marks_the_run_failed_and_resume_latest_finds_it(
        postgres_db: str) -> None:
    store = open_store(postgres_db)
    run = start_run(store, RunKind.SWEEP, {"budget_s": 1.0}, Environment("fp", {}))
    too_big = Measurement(Case("matmul", "correct", "numpy", "cpu", "float32", 2**63),
                          Status.OK, samples=(1e-3,))
    with pytest.raises(StoreError) as err, guarded(run, "`gpuvs run --resume latest` "
                                                        "finishes it."):
        run.record(too_big)
    assert "bigint out of range" in str(err.value)
    assert f"run {run.run_id} is marked failed" in str(err.value)
    assert run.stored().status == "failed"
    found = latest_unfinished(store, RunKind.SWEEP)
    assert found is not None and found.run_id == run.run_id
    store.close()


@pytest.mark.usefixtures("worker_env")
def test_gpuvs_run_keeps_a_case_measured_while_the_server_restarted(postgres: Any,
                                                                    postgres_db: str) -> None:
    """The case samples for 3 s; the server stops once the run is recorded and is back
    about 1.5 s later, long before the case ends: its save finds the connection gone."""
    import psycopg

    cmd = [sys.executable, "-m", "gpuvs", "run", "-w", "test_spin", "-s", "2e5", "-b",
           "numpy", "-d", "cpu", "--budget", "3", "--passes", "1", "--criterion",
           "fixed:n=1000", "--db", postgres_db]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while True:
        with psycopg.connect(postgres_db) as conn, suppress(psycopg.errors.UndefinedTable):
            if conn.execute("SELECT count(*) FROM runs").fetchone()[0]:
                break
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    postgres.stop()
    _back_in(postgres, 1.5).join()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    with open_store(postgres_db) as store:
        (run,) = store.runs()
        assert run.status == "finished"
        assert [m.status for m in store.measurements(run.run_id)
                if not m.case.calibrates] == [Status.OK]
