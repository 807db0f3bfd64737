"""Results in PostgreSQL: one store that several machines and processes write at once.

`--db postgresql://user:password@host:5432/dbname` (or `$GPUVS_DB`) opens it through
psycopg 3 (`pip install 'gpuvs[postgres]'`). The tables are `schema.tables` in the
PostgreSQL dialect (timestamps `timestamptz`, documents `jsonb`), and every query is
`sql.SqlStore`'s; what differs is how to connect, how parameters are marked, which
column orders runs (a serial `seq`), how the schema is versioned (a `gpuvs_schema`
table, migrated under an advisory lock so that two processes meeting an empty database
do not both create it), and that a connection lost to a server restart is made again. A
password never appears in a message.
"""

from __future__ import annotations

import json
import math
from typing import Any
from urllib.parse import urlsplit

from gpuvs.errors import StoreError, first_line
from gpuvs.store.schema import POSTGRES, refuse_newer, steps
from gpuvs.store.sql import SqlStore

# One key for gpuvs's migrations among every advisory lock on the server.
MIGRATION_LOCK = 0x67707673  # "gpvs"
CONNECT_TIMEOUT_S = 10
# How long a save (or any use of the store) tries a lost connection again: a server
# restarted by its operator is back within seconds; a case is not lost to one.
RECONNECT_S = 60.0
# SQLSTATE classes and codes that say the server went away, not that the work was wrong:
# 08 connection exceptions, 57P01-57P03 shutdown and start-up.
LOST = ("08", "57P01", "57P02", "57P03")


def shown(url: str) -> str:
    """The URL as messages show it: scheme, host, port and database, no user or password
    — whatever the URL holds (a port that is no number, a broken IPv6 address)."""
    scheme, _, rest = url.partition("://")
    rest = rest.partition("?")[0].rpartition("@")[2]  # user and password end at the last @
    host, slash, path = rest.partition("/")
    return f"{scheme}://{host or 'localhost'}{slash}{path}"


def check_url(url: str) -> None:
    """A URL psycopg can be given: its port, where it names one, a number from 1 to
    65535; else one line naming the port (urllib and libpq would raise their own)."""
    try:
        port = urlsplit(url).port
    except ValueError as e:
        raise StoreError(f"cannot open the results database {shown(url)}: {e}; write "
                         "postgresql://USER:PASSWORD@HOST:PORT/DBNAME, the port a number "
                         "from 1 to 65535") from None
    if port == 0:
        raise StoreError(f"cannot open the results database {shown(url)}: port 0; the "
                         "port is a number from 1 to 65535")


class PostgresStore(SqlStore):
    """Runs and their measurements in a PostgreSQL database, one connection per process."""

    begin = "BEGIN"
    marker = "%s"
    insertion = "seq"
    reconnect_s = RECONNECT_S

    def __init__(self, url: str) -> None:
        check_url(url)
        type(self).errors = (_psycopg().Error,)
        super().__init__(_connect(url), shown(url), url)

    def _in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return bool(self._conn.info.transaction_status != TransactionStatus.IDLE)

    def _lost(self, error: BaseException) -> bool:
        state = getattr(error, "sqlstate", None) or ""
        return bool(self._conn.closed or self._conn.broken
                    or state.startswith(LOST[0]) or state in LOST[1:])

    def _reconnect(self) -> None:
        """A new connection in place of the lost one (which is closed, if it was not)."""
        fresh = _connect(self.location)
        old, self._conn = self._conn, fresh
        old.close()

    def _document(self, value: Any, compact: bool = False) -> str:
        """JSON for a jsonb column, which has no NaN or Infinity: such a float is written
        as the string Python's float() reads back ('NaN', 'Infinity')."""
        return super()._document(_finite(value), compact)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return json.dumps(value)  # 'NaN', 'Infinity', '-Infinity'
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _psycopg() -> Any:
    """psycopg 3, or one line naming the extra that installs it (without it, the first
    use was a ModuleNotFoundError's traceback)."""
    try:
        import psycopg
    except ImportError:
        raise StoreError("a PostgreSQL store needs psycopg, which is not installed: "
                         "pip install 'gpuvs[postgres]'") from None
    return psycopg


def _connect(url: str) -> Any:
    """Connect (autocommit: gpuvs begins its own transactions; timestamps read in UTC)
    and migrate, or one line that says what to fix."""
    psycopg = _psycopg()
    dsn = url.replace("postgresql+psycopg://", "postgresql://", 1)
    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                               options="-c TimeZone=UTC")
    except psycopg.Error as e:
        raise StoreError(f"cannot open the results database {shown(url)}: "
                         f"{first_line(e).replace(dsn, shown(url))}") from None
    try:
        _migrate(conn)
    except StoreError as e:
        conn.close()
        raise StoreError(f"cannot open the results database {shown(url)}: {e}") from None
    except psycopg.Error as e:  # a migration the data refused: nothing of it was kept
        conn.close()
        why = "; ".join(line.strip() for line in str(e).splitlines() if line.strip())
        raise StoreError(f"cannot open the results database {shown(url)}: migrating it to "
                         f"schema version {POSTGRES.version} failed ({why}) and was undone; "
                         "the store is as it was, and an older gpuvs still reads it: correct "
                         "the row whose text is no JSON or timestamp, then open it again"
                         ) from None
    except BaseException:
        conn.close()
        raise
    return conn


def _migrate(conn: Any) -> None:
    """Bring the database to its version under an advisory lock; refuse a newer one."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS gpuvs_schema (version INTEGER NOT NULL)")
        row = conn.execute("SELECT version FROM gpuvs_schema").fetchone()
        version = int(row[0]) if row else 0
        refuse_newer(version, POSTGRES)
        if version == POSTGRES.version:
            return
        for statement in steps(version, POSTGRES):
            conn.execute(statement)
        conn.execute("DELETE FROM gpuvs_schema")
        conn.execute("INSERT INTO gpuvs_schema (version) VALUES (%s)", (POSTGRES.version,))
