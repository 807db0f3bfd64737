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
from gpuvs.store.output import SQLITE_MAGIC as MAGIC
from gpuvs.store.schema import migrate
from gpuvs.store.sql import RUN_STATUSES, SqlStore

# How long a writer waits for another one's lock. Cases take seconds to measure and a
# save takes milliseconds, so a writer that waits this long is looking at a stuck peer.
BUSY_TIMEOUT_S = 30.0
ANOTHER = "; pass --db PATH or set GPUVS_DB to a writable file"


class SqliteStore(SqlStore):
    """Runs and their measurements in one SQLite file, one connection per process."""

    begin = "BEGIN IMMEDIATE"
    marker = "?"
    insertion = "rowid"
    errors = (sqlite3.Error,)

    def __init__(self, path: Path, create_dirs: bool = True, writing: bool = True) -> None:
        super().__init__(_connect(Path(path), create_dirs, writing), str(path), str(path))
        self.path = Path(path)  # type: ignore[assignment]


def _connect(path: Path, create_dirs: bool = True, writing: bool = True) -> sqlite3.Connection:
    """Open, check, configure and migrate, or fail with one line that says what to do
    instead. A file on storage this process cannot write (a read-only mount, a shared
    archive) is opened read-only, so that `show`, `compare` and `report` still read it;
    a file that is not a sound SQLite database is refused before anything is written
    into it (`check_header`; `check_pages` when `writing`)."""
    conn: sqlite3.Connection | None = None
    try:
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a directory")
        check_header(path)
        if path.is_file() and not _writable(path):
            return _read_only(path)
        if not create_dirs and not path.parent.is_dir():
            raise StoreError(f"its directory {path.parent} does not exist; create it, or "
                             "give a path in an existing directory")
        path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: transactions are begun explicitly, never by the module.
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
        if writing:
            check_pages(conn, path)
        _use_wal(conn)
        conn.execute("PRAGMA synchronous=NORMAL")  # safe under WAL; fsyncs at checkpoints
        conn.execute("PRAGMA foreign_keys=ON")  # per connection
        migrate(conn)
        return conn
    except (OSError, sqlite3.Error, StoreError) as e:
        if conn is not None:
            conn.close()
        reason = e if isinstance(e, StoreError) else _reason(path, e)
        suffix = "" if isinstance(e, StoreError) else ANOTHER
        message = " ".join(f"cannot open the results database {path}: {reason}{suffix}".split())
        raise StoreError(message) from None


def check_header(path: Path) -> None:
    """A file that exists must start as a SQLite database does: the magic string and a
    page size SQLite can have. O(1): SQLite itself says only "file is not a database",
    and only at the first query."""
    try:
        with path.open("rb") as f:
            header = f.read(100)
    except FileNotFoundError:
        return
    if not header:  # an empty file: SQLite makes it a new database
        return
    size = int.from_bytes(header[16:18], "big") if len(header) == 100 else 0
    size = 65536 if size == 1 else size
    if not (header.startswith(MAGIC) and 512 <= size <= 65536 and size & (size - 1) == 0):
        raise StoreError(f"it is not a SQLite database (its first 100 bytes are no SQLite "
                         f"header){ANOTHER}")


def check_pages(conn: sqlite3.Connection, path: Path) -> None:
    """Before gpuvs writes into a file: `PRAGMA quick_check`, every page read once. On
    the 2-core box: 8 ms for 1,000 cases (4.5 MB), 1.0 s for 100,000 cases (560 MB; 6 s
    when none of it is cached) — against 0.15 ms for `check_header`, which cannot see
    random bytes inside a page. Nor can a write that does not pass through that page:
    a run went on writing into a corrupt file and exited 0."""
    try:
        found = [str(r[0]) for r in conn.execute("PRAGMA quick_check(3)")]
    except sqlite3.DatabaseError as e:  # a page the check itself cannot walk
        found = [str(e)]
    if found != ["ok"]:
        raise StoreError(f"it is corrupt ({'; '.join(found)}), and gpuvs writes nothing "
                         f"into it; `sqlite3 {path} .recover | sqlite3 NEW.sqlite` saves what "
                         f"can be read{ANOTHER}")


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
