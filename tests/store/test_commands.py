"""The commands that write and read a store, on both databases (`any_db`: a SQLite file,
then a database of a private PostgreSQL server): a second run, a dry run that reads the
store's history, a sweep, `predict` reusing the CPU cases it measured, an interrupted
run finished with `--resume`, and seeds. PostgreSQL once failed each of these after the
first run (its jsonb columns arrive parsed, and were parsed again)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from tests.helpers import interruptible, invoke, pythonpath, run_id

from gpuvs.errors import StoreError
from gpuvs.model import Status
from gpuvs.store import open_store

CPU = ["-b", "numpy", "-d", "cpu", "--budget", "0.05", "--passes", "1"]


def _ok(*args: str) -> str:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return result.output


def _cases(db: str) -> dict[str, list[Status]]:
    """Each stored run's case statuses, newest run first, its calibration's probes apart;
    {} before any store exists."""
    try:
        with open_store(db, reading=True) as store:
            return {r.run_id: [m.status for m in store.measurements(r.run_id)
                               if not m.case.calibrates]
                    for r in store.runs(100)}
    except StoreError:
        return {}


def test_a_second_run_a_dry_run_and_a_sweep_read_what_the_first_stored(any_db: str) -> None:
    first = run_id(_ok("run", "-w", "matmul", "-s", "64", *CPU, "--db", any_db))
    second = _ok("run", "-w", "matmul", "-s", "64,128", *CPU, "--db", any_db)
    planned = _ok("run", "-w", "matmul", "-s", "64", *CPU, "--dry-run", "--db", any_db)
    assert "from this machine's past runs" in planned  # the store's history, read back
    swept = _ok("sweep", "matmul", "-s", "64,128", *CPU, "--db", any_db)
    runs = _cases(any_db)
    assert list(runs)[-1] == first and run_id(second) in runs and run_id(swept) in runs
    assert [len(statuses) for statuses in runs.values()] == [4, 4, 2]
    assert all(s is Status.OK for statuses in runs.values() for s in statuses)
    assert "Square matrix product" in _ok("show", first, "--db", any_db)
    assert _ok("compare", first, run_id(second), "--db", any_db)


def test_predict_measures_into_the_store_and_predicts_from_a_stored_run(any_db: str
                                                                        ) -> None:
    """`predict` looks up the CPU cases this machine measured before (each run's
    measurements, read back), records those it measures, and `--from-run` reads them."""
    selectors = ["-w", "matmul", "-b", "torch", "-s", "64", "-a", "shape=square"]
    measured = _ok("predict", *selectors, "--target", "h100", "--db", any_db)
    assert "CPU cases measured here" in measured and "predicted for h100" in measured
    stored = _ok("predict", "--from-run", "latest", *selectors, "--target", "h100", "--db",
                 any_db)
    assert "predicted for h100" in stored


@pytest.mark.usefixtures("worker_env")
def test_an_interrupted_run_is_finished_by_resume_latest(any_db: str) -> None:
    """The case of test_cli_input's SIGINT test, on both databases."""
    cmd = [sys.executable, "-m", "gpuvs", "run", "-w", "test_spin", "-s",
           "2e4,4e4,6e4,8e4,1e5", "-b", "numpy", "-d", "cpu", "--budget", "0.4", "--passes",
           "1", "--criterion", "fixed:n=40", "--db", any_db]
    proc = interruptible(cmd, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while sum(map(len, _cases(any_db).values())) < 2:
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err, err
    with open_store(any_db, reading=True) as store:
        (run,) = store.runs()
        assert (run.status, run.reason) == ("interrupted", "stopped by SIGINT")
    kept = sum(map(len, _cases(any_db).values()))
    resumed = _ok("run", "--resume", "latest", "--db", any_db)
    assert f"{kept} already recorded" in resumed
    with open_store(any_db, reading=True) as store:
        (run,) = store.runs()
        assert run.status == "finished"
    assert sum(map(len, _cases(any_db).values())) == 5


def test_seeds_on_a_postgresql_store(postgres_db: str) -> None:
    """The smallest seeds run (seed 000, --quick, on the CPU: about a minute on the
    2-core box). On SQLite, tests/conftest.py's session run makes the same one."""
    out = _ok("seeds", "--seed", "0", "--quick", "-d", "cpu", "--db", postgres_db)
    (statuses,) = _cases(postgres_db).values()
    assert statuses and all(s is Status.OK for s in statuses), out
    assert "seed 000 · NumPy vs PyTorch" in _ok("show", "latest", "--db", postgres_db)


def test_without_psycopg_a_postgresql_store_names_the_extra_in_one_line() -> None:
    """psycopg hidden from a fresh interpreter, as on an install without the extra."""
    hide = ("import sys; sys.modules['psycopg'] = None; sys.argv = ['gpuvs', 'runs', "
            "'--db', 'postgresql://ann:s3cret@db.example/results']; "
            "from gpuvs.cli import main; main()")
    done = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": pythonpath()}, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: a PostgreSQL store needs psycopg, which is not installed: "
        "pip install 'gpuvs[postgres]'"]
