"""The store's logic in portable SQL over a DB-API connection, one code path for every
database: SQLite (`sqlite.py`, the embedded default) and PostgreSQL (`postgres.py`, a
store a team shares). A subclass says how to connect, how a write transaction begins,
how parameters are marked and which column orders runs by insertion.

Every case is committed in a transaction of its own, so a killed run keeps everything it
measured, and several processes — several machines, with PostgreSQL — write one store.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime, timezone
from typing import Any, ClassVar

from gpuvs.errors import StoreError, UsageError
from gpuvs.model import Environment, Measurement, Run

# running → finished; or interrupted (a signal: --resume finishes it), failed (the store
# itself failed mid-run, reason recorded); aborted is what older gpuvs wrote.
RUN_STATUSES = ("running", "finished", "interrupted", "failed", "aborted")
RECENT_IN_ERRORS = 5
# The most stored cases a plan's estimate reads: the newest runs of its workloads.
HISTORY_LIMIT = 5000

_RUN_COLUMNS = ("run_id, started_at, finished_at, status, config, environment, fingerprint, "
                "reason")


class SqlStore:
    """Runs and their measurements; one connection per process."""

    begin: ClassVar[str] = "BEGIN"
    marker: ClassVar[str] = "?"       # how the driver marks a parameter
    insertion: ClassVar[str] = "rowid"  # a column that orders runs as they were recorded
    errors: ClassVar[tuple[type[BaseException], ...]] = ()

    def __init__(self, conn: Any, where: str, location: str) -> None:
        self._conn = conn
        self.path = where          # what messages show: a file, or a server without password
        self.location = location   # what reopens it: --db / $GPUVS_DB as given

    def __enter__(self) -> SqlStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"

    def close(self) -> None:
        self._conn.close()

    def _x(self, conn: Any, sql: str, params: tuple[Any, ...] = ()) -> Any:
        return conn.execute(sql.replace("?", self.marker), params)

    def _in_transaction(self) -> bool:
        return bool(self._conn.in_transaction)

    @contextmanager
    def _transaction(self, doing: str) -> Iterator[Any]:
        """Write under the lock taken up front; on any failure leave nothing half-written."""
        try:
            self._conn.execute(self.begin)
        except self.errors as e:
            raise StoreError(f"cannot {doing} in the results database {self.path}: "
                             f"{e}") from e
        try:
            yield self._conn
            self._conn.execute("COMMIT")
        except BaseException as e:
            if self._in_transaction():
                with suppress(*self.errors):
                    self._conn.execute("ROLLBACK")
            if isinstance(e, self.errors):
                raise StoreError(f"cannot {doing} in the results database {self.path}: "
                                 f"{e}") from e
            raise

    def create_run(self, run: Run) -> None:
        """Record the run as it starts, so even a run killed at once leaves its trace."""
        from gpuvs._version import __version__
        with self._transaction(f"record run {run.run_id!r}") as c:
            if self._has_run(c, run.run_id):
                raise StoreError(f"run {run.run_id!r} is already in the results database "
                                 f"{self.path}")
            self._x(c, f"INSERT INTO runs ({_RUN_COLUMNS}, gpuvs_version) "
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
            done = self._x(c, "UPDATE runs SET status = ?, finished_at = ?, reason = ? "
                             "WHERE run_id = ?", (status, finished_at, reason, run_id))
            if done.rowcount == 0:
                raise self._unknown_run(run_id)

    def save(self, run_id: str, m: Measurement) -> None:
        """Commit one measurement now; saving a case again replaces it in its place."""
        case = m.case
        with self._transaction(f"save case {case.key!r}") as c:
            if not self._has_run(c, run_id):
                raise self._unknown_run(run_id)
            self._x(
                c, "INSERT INTO measurements (run_id, case_key, workload, variant, backend, "
                "device, dtype, size, params, status, reason, data, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (run_id, case_key) DO UPDATE SET status = excluded.status, "
                "reason = excluded.reason, data = excluded.data, "
                "created_at = excluded.created_at",
                (run_id, case.key, case.workload, case.variant, case.backend, case.device,
                 case.dtype, case.size, _json(dict(case.params)), m.status.value, m.reason,
                 m.to_json(), _utc_now()))

    def get_run(self, run_id: str) -> Run:
        row = self._x(self._conn, f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?",
                                 (run_id,)).fetchone()
        if row is None:
            raise self._unknown_run(run_id)
        return _run(row)

    def runs(self, limit: int = 20) -> list[Run]:
        """Newest first, in the order runs were recorded: clocks and time zones can move
        between runs, the order of inserts cannot."""
        rows = self._x(self._conn, f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY "
                       f"{self.insertion} DESC LIMIT ?", (limit,))
        return [_run(r) for r in rows]

    def latest_run_id(self) -> str | None:
        row = self._x(self._conn,
                      f"SELECT run_id FROM runs ORDER BY {self.insertion} DESC LIMIT 1")
        newest = row.fetchone()
        return str(newest[0]) if newest else None

    def measurements(self, run_id: str) -> list[Measurement]:
        """In the order cases were first saved, which is the order they were planned."""
        rows = self._x(self._conn, "SELECT data FROM measurements WHERE run_id = ? ORDER BY id",
                       (run_id,))
        return [Measurement.from_dict(json.loads(r[0])) for r in rows]

    def history(self, fingerprint: str, workloads: Sequence[str], limit: int = HISTORY_LIMIT
                ) -> list[tuple[dict[str, Any], Measurement]]:
        """The cases of these workloads that finished `ok`, or ran out of time, on this
        set-up (`fingerprint`), newest first, each with its run's config: what a plan's
        estimate learns from (the time each case cost, at the budget its run gave it; a
        case that timed out is likely to again). Other set-ups' cases, and cases decided
        at once (unavailable, skipped), say nothing about this machine's pace."""
        if not workloads:
            return []
        marks = ", ".join("?" for _ in workloads)
        rows = self._x(self._conn, "SELECT r.config, m.data FROM measurements m JOIN runs r "
                       "ON r.run_id = m.run_id WHERE r.fingerprint = ? "
                       "AND m.status IN ('ok', 'timeout') "
                       f"AND m.workload IN ({marks}) ORDER BY m.id DESC LIMIT ?",
                       (fingerprint, *workloads, limit))
        return [(json.loads(config), Measurement.from_dict(json.loads(data)))
                for config, data in rows]

    def finished_keys(self, run_id: str) -> set[str]:
        """Every case the run already recorded, whatever its status: what --resume skips."""
        rows = self._x(self._conn, "SELECT case_key FROM measurements WHERE run_id = ?",
                                  (run_id,))
        return {str(r[0]) for r in rows}

    def _unknown_run(self, run_id: str) -> UsageError:
        recent = [r[0] for r in self._x(
            self._conn, f"SELECT run_id FROM runs ORDER BY {self.insertion} DESC LIMIT ?",
            (RECENT_IN_ERRORS,))]
        known = f"recent runs: {', '.join(recent)}" if recent else "no runs yet"
        return UsageError(f"unknown run {run_id!r}; {known}")


    def _has_run(self, conn: Any, run_id: str) -> bool:
        return self._x(conn, "SELECT 1 FROM runs WHERE run_id = ?",
                       (run_id,)).fetchone() is not None


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
