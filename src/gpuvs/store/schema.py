"""The tables of a store, defined once for both databases, with what differs between
them named (`Dialect`); each database's schema version and its forward-only migrations.

A store records the schema version it was written with; gpuvs upgrades older ones in
place and refuses newer ones, because an older gpuvs cannot know what a newer one stored.
SQLite keeps the version in `PRAGMA user_version` (migrated here, `migrate`); PostgreSQL
in a `gpuvs_schema` table, under an advisory lock (`store.postgres`).
"""

from __future__ import annotations

import sqlite3
from contextlib import suppress
from dataclasses import dataclass

from gpuvs.errors import StoreError


@dataclass(frozen=True)
class Dialect:
    """What the tables' definition says differently in one database."""

    name: str
    version: int          # the schema version this gpuvs writes there
    run_order: str        # a column ordering runs as recorded ("": SQLite's own rowid)
    key: str              # the measurements' own id, numbered by the database
    integer: str          # a case's size: 64 bits in both
    timestamp: str        # when a run started and ended, when a case was saved
    document: str         # JSON: a run's config and environment, a case's params and data


# SQLite has no types to speak of: timestamps are ISO 8601 text as gpuvs writes them,
# documents JSON text. Version 1 had no `reason` column; version 2 added it.
SQLITE = Dialect("SQLite", 2, run_order="", key="INTEGER PRIMARY KEY", integer="INTEGER",
                 timestamp="TEXT", document="TEXT")
# PostgreSQL stores started at version 2 with SQLite's text columns; version 3 gives them
# their types, so that SQL over a shared store can compare times and query documents.
POSTGRES = Dialect("PostgreSQL", 3, run_order="seq BIGSERIAL UNIQUE,",
                   key="BIGSERIAL PRIMARY KEY", integer="BIGINT", timestamp="TIMESTAMPTZ",
                   document="JSONB")

# Why a run ended early (interrupted by a signal, failed storage): schema version 2.
REASON = "reason TEXT NOT NULL DEFAULT ''"


def tables(d: Dialect, reason: bool = True) -> tuple[str, ...]:
    """The runs and measurements tables and their index, in dialect `d` (without
    `reason`: as SQLite's version 1 made them). Only the case columns are broken out, for
    SQL across runs; `data` holds the whole measurement (`Measurement.to_record`), which
    is what gpuvs reads back: its samples, and its statistics kept under a key of the
    samples they came from (a read takes them instead of bootstrapping again)."""
    last = f",\n        {REASON}" if reason else ""
    return (
        f"""CREATE TABLE runs (
        {d.run_order}
        run_id        TEXT PRIMARY KEY,
        started_at    {d.timestamp} NOT NULL,
        finished_at   {d.timestamp},
        status        TEXT NOT NULL,
        config        {d.document} NOT NULL,
        environment   {d.document} NOT NULL,
        fingerprint   TEXT NOT NULL,
        gpuvs_version TEXT NOT NULL{last}
    )""",
        f"""CREATE TABLE measurements (
        id         {d.key},
        run_id     TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
        case_key   TEXT NOT NULL,
        workload   TEXT NOT NULL,
        variant    TEXT NOT NULL,
        backend    TEXT NOT NULL,
        device     TEXT NOT NULL,
        dtype      TEXT NOT NULL,
        size       {d.integer} NOT NULL,
        params     {d.document} NOT NULL,
        status     TEXT NOT NULL,
        reason     TEXT NOT NULL,
        data       {d.document} NOT NULL,
        created_at {d.timestamp} NOT NULL,
        UNIQUE (run_id, case_key)
    )""",
        "CREATE INDEX measurements_by_case ON measurements (workload, backend, device, dtype)",
    )


def _typed(d: Dialect) -> tuple[str, ...]:
    """Text columns to `d`'s types, their values converted (and refused, if one is not a
    timestamp or JSON, with the transaction and the version left as they were)."""
    def retyped(table: str, columns: dict[str, str]) -> str:
        return f"ALTER TABLE {table} " + ", ".join(
            f"ALTER COLUMN {c} TYPE {t} USING {c}::{t}" for c, t in columns.items())
    return (retyped("runs", {"started_at": d.timestamp, "finished_at": d.timestamp,
                             "config": d.document, "environment": d.document}),
            retyped("measurements", {"params": d.document, "data": d.document,
                                     "created_at": d.timestamp}))


# MIGRATIONS[dialect][n] = (m, statements): from version n (0: an empty database) to m.
# Never edit a shipped step: add the next one and bump the dialect's version. An empty
# database goes straight to the latest tables.
MIGRATIONS: dict[str, dict[int, tuple[int, tuple[str, ...]]]] = {
    SQLITE.name: {0: (SQLITE.version, tables(SQLITE)),
                  1: (2, (f"ALTER TABLE runs ADD COLUMN {REASON}",))},
    POSTGRES.name: {0: (POSTGRES.version, tables(POSTGRES)),
                    2: (3, _typed(POSTGRES))},
}


def user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection) -> None:
    """Bring a SQLite database to its dialect's version; refuse one written by a newer
    gpuvs.

    `conn` must be in autocommit mode (`isolation_level=None`). The version is read again
    under the write lock because several processes may open a new file at once: only the
    first one creates the tables, the others find them done.
    """
    version = user_version(conn)
    refuse_newer(version, SQLITE)
    if version == SQLITE.version:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = user_version(conn)
        refuse_newer(version, SQLITE)
        for statement in steps(version, SQLITE):
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SQLITE.version}")
        conn.execute("COMMIT")
    except BaseException:
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise


def steps(version: int, d: Dialect) -> list[str]:
    """The statements that take a database of `d` from `version` to `d.version`."""
    out: list[str] = []
    while version < d.version:
        if version not in MIGRATIONS[d.name]:
            raise StoreError(f"it has {d.name} schema version {version}, which no gpuvs "
                             "wrote; pass --db PATH to use another store")
        version, statements = MIGRATIONS[d.name][version]
        out += statements
    return out


def refuse_newer(version: int, d: Dialect) -> None:
    if version > d.version:
        raise StoreError(f"it has schema version {version}, newer than the version "
                         f"{d.version} this gpuvs reads; upgrade gpuvs, or pass --db "
                         "PATH to use another store")
