"""Results in SQLite: WAL, a busy timeout, one `BEGIN IMMEDIATE` transaction per case.

With WAL and a busy timeout, concurrent writers (parallel runs, the pytest plug-in) wait
for each other instead of failing with 'database is locked'; `BEGIN IMMEDIATE` takes the
write lock up front, because a read transaction upgraded to a write one can fail with
SQLITE_BUSY without waiting. A case is committed the moment it finishes, so a killed run
keeps everything it measured and `--resume` knows what to skip. The store's logic is
`sql.SqlStore`'s, shared with PostgreSQL.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from gpuvs.errors import StoreError
from gpuvs.store.schema import migrate
from gpuvs.store.sql import RUN_STATUSES, SqlStore

# How long a writer waits for another one's lock. Cases take seconds to measure and a
# save takes milliseconds, so a writer that waits this long is looking at a stuck peer.
BUSY_TIMEOUT_S = 30.0


class SqliteStore(SqlStore):
    """Runs and their measurements in one SQLite file, one connection per process."""

    begin = "BEGIN IMMEDIATE"
    marker = "?"
    insertion = "rowid"
    errors = (sqlite3.Error,)

    def __init__(self, path: Path, create_dirs: bool = True) -> None:
        super().__init__(_connect(Path(path), create_dirs), str(path), str(path))
        self.path = Path(path)  # type: ignore[assignment]


def _connect(path: Path, create_dirs: bool = True) -> sqlite3.Connection:
    """Open, configure and migrate, or fail with one line that says what to do instead.
    A file on storage this process cannot write (a read-only mount, a shared archive) is
    opened read-only, so that `show`, `compare` and `report` still read it."""
    conn: sqlite3.Connection | None = None
    try:
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a directory")
        if path.is_file() and not _writable(path):
            return _read_only(path)
        if not create_dirs and not path.parent.is_dir():
            raise StoreError(f"its directory {path.parent} does not exist; create it, or "
                             "give a path in an existing directory")
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


def _writable(path: Path) -> bool:
    import os

    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def _read_only(path: Path) -> sqlite3.Connection:
    """The file opened for reading only: `immutable` (nothing can write it from here, and
    WAL's shared-memory file could not be created beside it) unless a write-ahead log
    beside it still holds changes, which read-only mode reads through."""
    wal = Path(f"{path}-wal")
    flags = "mode=ro" if wal.exists() and wal.stat().st_size else "mode=ro&immutable=1"
    conn = sqlite3.connect(f"file:{path}?{flags}", uri=True, isolation_level=None)
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


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




__all__ = ["BUSY_TIMEOUT_S", "RUN_STATUSES", "SqliteStore"]
