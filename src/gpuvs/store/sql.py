"""The store's logic in portable SQL over a DB-API connection, one code path for every
database: SQLite (`sqlite.py`, the embedded default) and PostgreSQL (`postgres.py`, a
store a team shares). A subclass says how to connect, how a write transaction begins,
how parameters are marked, which column orders runs by insertion, how its documents and
timestamps come back, and whether a lost connection can be made again.

Every case is committed in a transaction of its own, so a killed run keeps everything it
measured, and several processes — several machines, with PostgreSQL — write one store.
What comes back is untrusted: a row gpuvs could not have written is a `StoreError`, as
is any error of the database, reading or writing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from datetime import datetime, timezone
from typing import Any, ClassVar, TypeVar

from gpuvs.errors import StoreError, UsageError, first_line
from gpuvs.model import Environment, Measurement, Run
from gpuvs.store.export import measurement_from, shorten
from gpuvs.store.runs import TIMESTAMP_FORMAT

# running → finished; or interrupted (a signal: --resume finishes it), failed (the store
# itself failed mid-run, reason recorded); aborted is what older gpuvs wrote.
RUN_STATUSES = ("running", "finished", "interrupted", "failed", "aborted")
RECENT_IN_ERRORS = 5
# What a row holds that gpuvs could not have written: a document that is not JSON, a
# value of the wrong type, a measurement `measurement_from` refuses.
UNREADABLE = (ValueError, TypeError, KeyError, AttributeError, ArithmeticError,
              RecursionError)
# The most stored cases a plan's estimate reads: the newest runs of its workloads.
HISTORY_LIMIT = 5000

_RUN_COLUMNS = ("run_id, started_at, finished_at, status, config, environment, fingerprint, "
                "reason")
T = TypeVar("T")


class SqlStore:
    """Runs and their measurements; one connection per process."""

    begin: ClassVar[str] = "BEGIN"
    marker: ClassVar[str] = "?"       # how the driver marks a parameter
    insertion: ClassVar[str] = "rowid"  # a column that orders runs as they were recorded
    errors: ClassVar[tuple[type[BaseException], ...]] = ()
    reconnect_s: ClassVar[float] = 0.0  # how long to try a lost connection again

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

    def _lost(self, error: BaseException) -> bool:
        """Whether `error` says the connection is gone (a server restarted), so that the
        same work on a new connection may succeed. SQLite has no connection to lose."""
        return False

    def _reconnect(self) -> None:
        raise NotImplementedError

    def _document(self, value: Any, compact: bool = False) -> str:
        """A mapping as the database stores it: JSON text (a measurement's `compact`, as
        `Measurement.to_json` writes it). Configs and environment facts may hold paths or
        other objects: stored readably rather than fail a run over a value that only
        needs to be shown again."""
        return json.dumps(value, default=str, separators=(",", ":") if compact else None)

    def _attempt(self, doing: str, work: Callable[[Any], T], write: bool = False,
                 patience: float | None = None) -> T:
        """`work(connection)` — in a transaction of its own if it `write`s — or a
        StoreError saying what could not be done. Where the connection was lost, the
        work runs again on a new one until `patience` (`reconnect_s`) has passed, and
        after one new connection at least: a case measured while a server restarted is
        still saved."""
        waited = self.reconnect_s if patience is None else patience
        deadline, pause, again = time.monotonic() + waited, 0.25, False
        while True:
            try:
                return self._once(work, write)
            except self.errors as e:
                lost = self._lost(e)
                if not lost or (again and time.monotonic() > deadline):
                    raise StoreError(_failed(doing, self.path, e, lost, waited)) from None
            except UNREADABLE as e:
                raise StoreError(f"cannot {doing} from the results database {self.path}: it "
                                 f"holds a row gpuvs cannot read ({shorten(str(e))})") from None
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause, again = min(2 * pause, 5.0), True
            with suppress(StoreError, *self.errors):  # still down: the next try says so
                self._reconnect()

    def _once(self, work: Callable[[Any], T], write: bool) -> T:
        if not write:
            return work(self._conn)
        self._conn.execute(self.begin)
        try:
            done = work(self._conn)
            self._conn.execute("COMMIT")
            return done
        except BaseException:
            if self._in_transaction():
                with suppress(*self.errors):
                    self._conn.execute("ROLLBACK")
            raise

    def create_run(self, run: Run) -> None:
        """Record the run as it starts, so even a run killed at once leaves its trace. A
        run id is recorded once; only a try again after a lost connection, whose first
        commit did arrive, finds this same run there and leaves it."""
        from gpuvs._version import __version__
        row = (run.run_id, run.started_at, run.finished_at, run.status,
               self._document(dict(run.config)), self._document(dict(run.environment.facts)),
               run.environment.fingerprint, run.reason, __version__)

        def ours(found: Run) -> bool:  # the same fingerprint and settings: this run
            return (found.environment.fingerprint == run.environment.fingerprint
                    and dict(found.config) == json.loads(row[4]))

        tries: list[Any] = []

        def work(c: Any) -> None:
            tries.append(c)
            found = self._x(c, f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?",
                            (run.run_id,)).fetchone()
            if found is not None and not (len(tries) > 1 and ours(self._run(found))):
                raise StoreError(f"run {run.run_id!r} is already in the results database "
                                 f"{self.path}")
            if found is None:
                self._x(c, f"INSERT INTO runs ({_RUN_COLUMNS}, gpuvs_version) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
        self._attempt(f"record run {run.run_id!r}", work, write=True)

    def finish_run(self, run_id: str, status: str, finished_at: str, reason: str = "",
                   patience: float | None = None) -> None:
        """Close the run honestly: a run that never gets here stays 'running'; one that
        ends early says why (`reason`). `patience`: how long to try a lost connection
        again, when not `reconnect_s` (a run whose save just failed is marked at once)."""
        if status not in RUN_STATUSES:
            raise UsageError(f"unknown run status {status!r}; use one of "
                             f"{', '.join(RUN_STATUSES)}")

        def work(c: Any) -> None:
            done = self._x(c, "UPDATE runs SET status = ?, finished_at = ?, reason = ? "
                              "WHERE run_id = ?", (status, finished_at, reason, run_id))
            if done.rowcount == 0:
                raise self._unknown_run(run_id)
        self._attempt(f"finish run {run_id!r}", work, write=True, patience=patience)

    def save(self, run_id: str, m: Measurement) -> None:
        """Commit one measurement now; saving a case again replaces it in its place."""
        case = m.case
        row = (run_id, case.key, case.workload, case.variant, case.backend, case.device,
               case.dtype, case.size, self._document(dict(case.params)), m.status.value,
               m.reason, self._document(m.to_record(), compact=True), _utc_now())

        def work(c: Any) -> None:
            if not self._has_run(c, run_id):
                raise self._unknown_run(run_id)
            self._x(
                c, "INSERT INTO measurements (run_id, case_key, workload, variant, backend, "
                "device, dtype, size, params, status, reason, data, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (run_id, case_key) DO UPDATE SET status = excluded.status, "
                "reason = excluded.reason, data = excluded.data, "
                "created_at = excluded.created_at", row)
        self._attempt(f"save case {case.key!r}", work, write=True)

    def get_run(self, run_id: str) -> Run:
        def work(c: Any) -> Run:
            row = self._x(c, f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?",
                          (run_id,)).fetchone()
            if row is None:
                raise self._unknown_run(run_id)
            return self._run(row)
        return self._attempt(f"read run {run_id!r}", work)

    def runs(self, limit: int = 20) -> list[Run]:
        """Newest first, in the order runs were recorded: clocks and time zones can move
        between runs, the order of inserts cannot."""
        return self._attempt("list the runs", lambda c: [self._run(r) for r in self._x(
            c, f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY {self.insertion} DESC LIMIT ?",
            (limit,))])

    def latest_run_id(self) -> str | None:
        def work(c: Any) -> str | None:
            newest = self._x(c, f"SELECT run_id FROM runs ORDER BY {self.insertion} DESC "
                                "LIMIT 1").fetchone()
            return str(newest[0]) if newest else None
        return self._attempt("find the latest run", work)

    def measurements(self, run_id: str) -> list[Measurement]:
        """In the order cases were first saved, which is the order they were planned."""
        return self._attempt(f"read the cases of run {run_id!r}", lambda c: [
            measurement_from(self._parsed(r[0])) for r in self._x(
                c, "SELECT data FROM measurements WHERE run_id = ? ORDER BY id", (run_id,))])

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
        return self._attempt("read this set-up's past cases", lambda c: [
            (dict(self._parsed(config)), measurement_from(self._parsed(data)))
            for config, data in self._x(
                c, "SELECT r.config, m.data FROM measurements m JOIN runs r "
                "ON r.run_id = m.run_id WHERE r.fingerprint = ? "
                "AND m.status IN ('ok', 'timeout') "
                f"AND m.workload IN ({marks}) ORDER BY m.id DESC LIMIT ?",
                (fingerprint, *workloads, limit))])

    def finished_keys(self, run_id: str) -> set[str]:
        """Every case the run already recorded, whatever its status: what --resume skips."""
        return self._attempt(f"read the cases of run {run_id!r}", lambda c: {
            str(r[0]) for r in self._x(c, "SELECT case_key FROM measurements WHERE run_id = ?",
                                       (run_id,))})

    def _unknown_run(self, run_id: str) -> UsageError:
        recent = [r[0] for r in self._x(
            self._conn, f"SELECT run_id FROM runs ORDER BY {self.insertion} DESC LIMIT ?",
            (RECENT_IN_ERRORS,))]
        known = f"recent runs: {', '.join(recent)}" if recent else "no runs yet"
        return UsageError(f"unknown run {shorten(repr(run_id))}; {known}")

    def _has_run(self, conn: Any, run_id: str) -> bool:
        return self._x(conn, "SELECT 1 FROM runs WHERE run_id = ?",
                       (run_id,)).fetchone() is not None

    def _run(self, row: Any) -> Run:
        run_id, started, finished, status, config, environment, fingerprint, reason = row
        return Run(run_id, _text(started), dict(self._parsed(config)),
                   Environment(fingerprint, dict(self._parsed(environment))), status,
                   None if finished is None else _text(finished), reason)

    @staticmethod
    def _parsed(value: Any) -> Any:
        """A document as the driver returns it, the one place every read goes through:
        JSON text from SQLite; from PostgreSQL's jsonb, already parsed (a dict or a
        list; parsing it again failed every second run on a PostgreSQL store)."""
        return json.loads(value) if isinstance(value, (str, bytes)) else value


def _text(when: Any) -> str:
    """A timestamp as runs record it: text as written, or (timestamptz) formatted so."""
    return when.strftime(TIMESTAMP_FORMAT) if isinstance(when, datetime) else str(when)


def _failed(doing: str, where: str, e: BaseException, lost: bool, waited: float) -> str:
    again = f" and could not connect again within {waited:g} s" if lost and waited else ""
    return f"cannot {doing} in the results database {where}{again}: {first_line(e)}"


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
