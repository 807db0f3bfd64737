"""The SQLite schema, its version, and forward-only migrations (`PRAGMA user_version`).

A database records the schema version it was written with; gpuvs upgrades older ones in
place and refuses newer ones, because an older gpuvs cannot know what a newer one stored.
"""

from __future__ import annotations

import sqlite3
from contextlib import suppress

from gpuvs.errors import StoreError

SCHEMA_VERSION = 2

# Only the case columns are broken out, for SQL queries across runs; `data` holds the
# whole measurement (`Measurement.to_json`), which is what gpuvs reads back. Statistics
# are derived from the samples and never stored.
_V1: tuple[str, ...] = (
    """CREATE TABLE runs (
        run_id        TEXT PRIMARY KEY,
        started_at    TEXT NOT NULL,
        finished_at   TEXT,
        status        TEXT NOT NULL,
        config        TEXT NOT NULL,
        environment   TEXT NOT NULL,
        fingerprint   TEXT NOT NULL,
        gpuvs_version TEXT NOT NULL
    )""",
    """CREATE TABLE measurements (
        id         INTEGER PRIMARY KEY,
        run_id     TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
        case_key   TEXT NOT NULL,
        workload   TEXT NOT NULL,
        variant    TEXT NOT NULL,
        backend    TEXT NOT NULL,
        device     TEXT NOT NULL,
        dtype      TEXT NOT NULL,
        size       INTEGER NOT NULL,
        params     TEXT NOT NULL,
        status     TEXT NOT NULL,
        reason     TEXT NOT NULL,
        data       TEXT NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (run_id, case_key)
    )""",
    "CREATE INDEX measurements_by_case ON measurements (workload, backend, device, dtype)",
)

# Version 2: a run that ended early says why (interrupted by a signal, failed storage).
_V2: tuple[str, ...] = ("ALTER TABLE runs ADD COLUMN reason TEXT NOT NULL DEFAULT ''",)

# MIGRATIONS[n] takes a database at version n to version n + 1. Never edit a shipped
# step: add the next one and bump SCHEMA_VERSION.
MIGRATIONS: dict[int, tuple[str, ...]] = {0: _V1, 1: _V2}


def user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection) -> None:
    """Bring the database to SCHEMA_VERSION; refuse one written by a newer gpuvs.

    `conn` must be in autocommit mode (`isolation_level=None`). The version is read again
    under the write lock because several processes may open a new file at once: only the
    first one creates the tables, the others find them done.
    """
    version = user_version(conn)
    refuse_newer(version)
    if version == SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = user_version(conn)
        refuse_newer(version)
        while version < SCHEMA_VERSION:
            for statement in MIGRATIONS[version]:
                conn.execute(statement)
            version += 1
        conn.execute(f"PRAGMA user_version = {version}")
        conn.execute("COMMIT")
    except BaseException:
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise


def refuse_newer(version: int) -> None:
    if version > SCHEMA_VERSION:
        raise StoreError(f"it has schema version {version}, newer than the version "
                         f"{SCHEMA_VERSION} this gpuvs reads; upgrade gpuvs, or pass --db "
                         "PATH to use another file")
