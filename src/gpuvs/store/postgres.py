"""Results in PostgreSQL: one store that several machines and processes write at once.

`--db postgresql://user:password@host:5432/dbname` (or `$GPUVS_DB`) opens it through
psycopg 3 (`pip install 'gpuvs[postgres]'`). The tables are SQLite's, and so is every
query (`sql.SqlStore`); what differs is how to connect, how parameters are marked, which
column orders runs (a serial `seq`), and how the schema is versioned: a `gpuvs_schema`
table, migrated under an advisory lock so that two processes meeting an empty database
do not both create it. A password never appears in a message.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from gpuvs.errors import StoreError
from gpuvs.store.schema import SCHEMA_VERSION, refuse_newer
from gpuvs.store.sql import SqlStore

# One key for gpuvs's migrations among every advisory lock on the server.
MIGRATION_LOCK = 0x67707673  # "gpvs"
CONNECT_TIMEOUT_S = 10

# The schema at version 2, as one step: a PostgreSQL store starts where SQLite ends.
POSTGRES_SCHEMA: tuple[str, ...] = (
    """CREATE TABLE runs (
        seq           BIGSERIAL UNIQUE,
        run_id        TEXT PRIMARY KEY,
        started_at    TEXT NOT NULL,
        finished_at   TEXT,
        status        TEXT NOT NULL,
        config        TEXT NOT NULL,
        environment   TEXT NOT NULL,
        fingerprint   TEXT NOT NULL,
        gpuvs_version TEXT NOT NULL,
        reason        TEXT NOT NULL DEFAULT ''
    )""",
    """CREATE TABLE measurements (
        id         BIGSERIAL PRIMARY KEY,
        run_id     TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
        case_key   TEXT NOT NULL,
        workload   TEXT NOT NULL,
        variant    TEXT NOT NULL,
        backend    TEXT NOT NULL,
        device     TEXT NOT NULL,
        dtype      TEXT NOT NULL,
        size       BIGINT NOT NULL,
        params     TEXT NOT NULL,
        status     TEXT NOT NULL,
        reason     TEXT NOT NULL,
        data       TEXT NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (run_id, case_key)
    )""",
    "CREATE INDEX measurements_by_case ON measurements (workload, backend, device, dtype)",
)
# POSTGRES_MIGRATIONS[n] = (m, statements): from version n (0: empty) to version m. An
# empty database goes straight to version 2, the first version PostgreSQL stores had.
POSTGRES_MIGRATIONS: dict[int, tuple[int, tuple[str, ...]]] = {0: (2, POSTGRES_SCHEMA)}


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

    def __init__(self, url: str) -> None:
        import psycopg

        type(self).errors = (psycopg.Error,)
        check_url(url)
        super().__init__(_connect(url), shown(url), url)

    def _in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return bool(self._conn.info.transaction_status != TransactionStatus.IDLE)


def _connect(url: str) -> Any:
    """Connect (autocommit: gpuvs begins its own transactions) and migrate, or one line
    that says what to fix."""
    try:
        import psycopg
    except ImportError:
        raise StoreError("a PostgreSQL store needs psycopg: pip install 'gpuvs[postgres]'"
                         ) from None
    dsn = url.replace("postgresql+psycopg://", "postgresql://", 1)
    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
    except psycopg.Error as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise StoreError(f"cannot open the results database {shown(url)}: "
                         f"{first.replace(dsn, shown(url))}") from None
    try:
        _migrate(conn)
    except StoreError as e:
        conn.close()
        raise StoreError(f"cannot open the results database {shown(url)}: {e}") from None
    except BaseException:
        conn.close()
        raise
    return conn


def _migrate(conn: Any) -> None:
    """Bring the database to SCHEMA_VERSION under an advisory lock; refuse a newer one."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS gpuvs_schema (version INTEGER NOT NULL)")
        row = conn.execute("SELECT version FROM gpuvs_schema").fetchone()
        version = int(row[0]) if row else 0
        refuse_newer(version)
        while version < SCHEMA_VERSION:
            version, statements = POSTGRES_MIGRATIONS[version]
            for statement in statements:
                conn.execute(statement)
        conn.execute("DELETE FROM gpuvs_schema")
        conn.execute("INSERT INTO gpuvs_schema (version) VALUES (%s)", (version,))
