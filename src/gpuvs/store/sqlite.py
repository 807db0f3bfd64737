"""Results in SQLite: WAL, a busy timeout, one `BEGIN IMMEDIATE` transaction per case.

With WAL and a busy timeout, concurrent writers (parallel runs, the pytest plug-in) wait
for each other instead of failing with 'database is locked'; `BEGIN IMMEDIATE` takes the
write lock up front, because a read transaction upgraded to a write one can fail with
SQLITE_BUSY without waiting. A case is committed the moment it finishes, so a killed run
keeps everything it measured and `--resume` knows what to skip.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gpuvs.errors import StoreError, UsageError
from gpuvs.model import Environment, Measurement, Run
from gpuvs.store.schema import migrate

# How long a writer waits for another one's lock. Cases take seconds to measure and a
# save takes milliseconds, so a writer that waits this long is looking at a stuck peer.
BUSY_TIMEOUT_S = 30.0
# running → finished; or interrupted (a signal: --resume finishes it), failed (the store
# itself failed mid-run, reason recorded); aborted is what older gpuvs wrote.
RUN_STATUSES = ("running", "finished", "interrupted", "failed", "aborted")
RECENT_IN_ERRORS = 5

_RUN_COLUMNS = ("run_id, started_at, finished_at, status, config, environment, fingerprint, "
                "reason")


class SqliteStore:
    """Runs and their measurements in one SQLite file, one connection per process."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._conn = _connect(self.path)

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"

    def close(self) -> None:
        self._conn.close()

    @contextmanager
    def _transaction(self, doing: str) -> Iterator[sqlite3.Connection]:
        """Write under the lock taken up front; on any failure leave nothing half-written."""
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as e:
            raise StoreError(f"cannot {doing} in the results database {self.path}: "
                             f"{e}") from e
        try:
            yield self._conn
            self._conn.execute("COMMIT")
        except BaseException as e:
            if self._conn.in_transaction:
                with suppress(sqlite3.Error):
                    self._conn.execute("ROLLBACK")
            if isinstance(e, sqlite3.Error):
                raise StoreError(f"cannot {doing} in the results database {self.path}: "
                                 f"{e}") from e
            raise

    def create_run(self, run: Run) -> None:
        """Record the run as it starts, so even a run killed at once leaves its trace."""
        from gpuvs._version import __version__

        with self._transaction(f"record run {run.run_id!r}") as c:
            if _has_run(c, run.run_id):
                raise StoreError(f"run {run.run_id!r} is already in the results database "
                                 f"{self.path}")
            c.execute(f"INSERT INTO runs ({_RUN_COLUMNS}, gpuvs_version) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", (
                          run.run_id, run.started_at, run.finished_at, run.status,
                          _json(run.config), _json(run.environment.facts),
                          run.environment.fingerprint, run.reason, __version__))

    def finish_run(self, run_id: str, status: str, finished_at: str, reason: str = "") -> None:
        """Close the run honestly: a run that never gets here stays 'running'; one that
        ends early says why (`reason`)."""
        if status not in RUN_STATUSES:
            raise UsageError(f"unknown run status {status!r}; use one of "
                             f"{', '.join(RUN_STATUSES)}")
        with self._transaction(f"finish run {run_id!r}") as c:
            done = c.execute("UPDATE runs SET status = ?, finished_at = ?, reason = ? "
                             "WHERE run_id = ?", (status, finished_at, reason, run_id))
            if done.rowcount == 0:
                raise self._unknown_run(run_id)

    def save(self, run_id: str, m: Measurement) -> None:
        """Commit one measurement now; saving a case again replaces it in its place."""
        case = m.case
        with self._transaction(f"save case {case.key!r}") as c:
            if not _has_run(c, run_id):
                raise self._unknown_run(run_id)
            c.execute(
                "INSERT INTO measurements (run_id, case_key, workload, variant, backend, "
                "device, dtype, size, params, status, reason, data, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (run_id, case_key) DO UPDATE SET status = excluded.status, "
                "reason = excluded.reason, data = excluded.data, "
                "created_at = excluded.created_at",
                (run_id, case.key, case.workload, case.variant, case.backend, case.device,
                 case.dtype, case.size, _json(dict(case.params)), m.status.value, m.reason,
                 m.to_json(), _utc_now()))

    def get_run(self, run_id: str) -> Run:
        row = self._conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?",
                                 (run_id,)).fetchone()
        if row is None:
            raise self._unknown_run(run_id)
        return _run(row)

    def runs(self, limit: int = 20) -> list[Run]:
        """Newest first, in the order runs were recorded: clocks and time zones can move
        between runs, the order of inserts cannot."""
        rows = self._conn.execute(
            f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY rowid DESC LIMIT ?", (limit,))
        return [_run(r) for r in rows]

    def latest_run_id(self) -> str | None:
        row = self._conn.execute("SELECT run_id FROM runs ORDER BY rowid DESC LIMIT 1")
        newest = row.fetchone()
        return str(newest[0]) if newest else None

    def measurements(self, run_id: str) -> list[Measurement]:
        """In the order cases were first saved, which is the order they were planned."""
        rows = self._conn.execute(
            "SELECT data FROM measurements WHERE run_id = ? ORDER BY id", (run_id,))
        return [Measurement.from_dict(json.loads(r[0])) for r in rows]

    def finished_keys(self, run_id: str) -> set[str]:
        """Every case the run already recorded, whatever its status: what --resume skips."""
        rows = self._conn.execute("SELECT case_key FROM measurements WHERE run_id = ?",
                                  (run_id,))
        return {str(r[0]) for r in rows}

    def _unknown_run(self, run_id: str) -> UsageError:
        recent = [r[0] for r in self._conn.execute(
            "SELECT run_id FROM runs ORDER BY rowid DESC LIMIT ?", (RECENT_IN_ERRORS,))]
        known = f"recent runs: {', '.join(recent)}" if recent else "no runs yet"
        return UsageError(f"unknown run {run_id!r}; {known}")


def _connect(path: Path) -> sqlite3.Connection:
    """Open, configure and migrate, or fail with one line that says what to do instead."""
    conn: sqlite3.Connection | None = None
    try:
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a directory")
        path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: transactions are begun explicitly, never by the module.
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
        _use_wal(conn)
        conn.execute("PRAGMA synchronous=NORMAL")  # safe under WAL; fsyncs at checkpoints
        conn.execute("PRAGMA foreign_keys=ON")  # per connection
        migrate(conn)
        return conn
    except (OSError, sqlite3.Error, StoreError) as e:
        if conn is not None:
            conn.close()
        reason = e if isinstance(e, StoreError) else _reason(path, e)
        suffix = "" if isinstance(e, StoreError) else (
            "; pass --db PATH or set GPUVS_DB to a writable file")
        message = " ".join(f"cannot open the results database {path}: {reason}{suffix}".split())
        raise StoreError(message) from None


def _use_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL (it persists in the file), retrying while another process does too.

    Switching a new file out of rollback mode can fail with 'database is locked' at once,
    without the busy timeout, when several processes open it together; so wait here.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _reason(path: Path, e: OSError | sqlite3.Error) -> str:
    if isinstance(e, IsADirectoryError):
        return "it is a directory"
    blocker = next((p for p in path.parents if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        return f"{blocker} is a file, not a directory"
    if isinstance(e, OSError):
        return e.strerror or str(e)
    return str(e)


def _has_run(conn: sqlite3.Connection, run_id: str) -> bool:
    return conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is not None


def _json(value: Any) -> str:
    # Configs and environment facts may hold paths or other objects: store them readably
    # rather than fail a run over a value that only needs to be shown again.
    return json.dumps(dict(value), default=str)


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _run(row: Any) -> Run:
    run_id, started, finished, status, config, environment, fingerprint, reason = row
    return Run(run_id, started, json.loads(config),
               Environment(fingerprint, json.loads(environment)), status, finished, reason)
