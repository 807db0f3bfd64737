"""Results in SQLite: WAL, a busy timeout, one `BEGIN IMMEDIATE` transaction per case.

With WAL and a busy timeout, concurrent writers (parallel runs, the pytest plug-in)
wait for each other instead of failing with 'database is locked'; `BEGIN IMMEDIATE`
takes the write lock up front so the timeout applies. A case is committed the moment it
finishes, so a killed run keeps everything it measured.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gpuvs.errors import StoreError, UsageError
from gpuvs.model import Environment, Measurement, Run
from gpuvs.store.schema import migrate

BUSY_TIMEOUT_S = 30.0


class SqliteStore:
    """Runs and their measurements in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            migrate(self._conn)
        except (OSError, sqlite3.Error) as e:
            raise StoreError(f"cannot open the results database {path}: {e}; pass --db PATH "
                             "or set GPUVS_DB to a writable file") from None

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._conn.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as e:
            raise StoreError(f"cannot write to the results database {self.path}: {e}") from None
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def create_run(self, run: Run) -> None:
        from gpuvs import __version__

        with self._write() as c:
            c.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (
                run.run_id, run.started_at, run.finished_at, run.status,
                json.dumps(dict(run.config), default=str),
                json.dumps(dict(run.environment.facts), default=str),
                run.environment.fingerprint, __version__))

    def finish_run(self, run_id: str, status: str, finished_at: str) -> None:
        with self._write() as c:
            c.execute("UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ?",
                      (status, finished_at, run_id))

    def save(self, run_id: str, m: Measurement) -> None:
        """Commit one measurement now; saving a case again replaces it."""
        c = m.case
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO measurements (run_id, case_key, workload, variant, "
                "backend, device, dtype, size, params, status, reason, data, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, c.key, c.workload, c.variant, c.backend, c.device, c.dtype, c.size,
                 json.dumps(c.params), m.status.value, m.reason, m.to_json(),
                 time.strftime("%Y-%m-%dT%H:%M:%S%z")))

    def get_run(self, run_id: str) -> Run:
        row = self._conn.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            recent = [r.run_id for r in self.runs(5)]
            known = f"recent runs: {', '.join(recent)}" if recent else "no runs yet"
            raise UsageError(f"unknown run {run_id!r}; {known}")
        return _run(row)

    def runs(self, limit: int = 20) -> list[Run]:
        rows = self._conn.execute(
            "SELECT * FROM runs ORDER BY started_at DESC, rowid DESC LIMIT ?", (limit,))
        return [_run(r) for r in rows]

    def latest_run_id(self) -> str | None:
        newest = self.runs(1)
        return newest[0].run_id if newest else None

    def measurements(self, run_id: str) -> list[Measurement]:
        rows = self._conn.execute(
            "SELECT data FROM measurements WHERE run_id = ? ORDER BY id", (run_id,))
        return [Measurement.from_dict(json.loads(r[0])) for r in rows]

    def finished_keys(self, run_id: str) -> set[str]:
        rows = self._conn.execute("SELECT case_key FROM measurements WHERE run_id = ?",
                                  (run_id,))
        return {r[0] for r in rows}


def _run(row: Any) -> Run:
    run_id, started, finished, status, config, environment, fingerprint, _ = row
    return Run(run_id, started, json.loads(config), Environment(fingerprint,
               json.loads(environment)), status, finished)
