"""Where results live: a SQLite file or a PostgreSQL database (`postgresql://…`), at
--db, else $GPUVS_DB, else the user data directory; a run's lifecycle (`runs`), every
query (`sql`), the tables once (`schema`), and the one run format (`export`).

Nothing here imports a framework, so opening a store stays cheap for `gpuvs show`.
"""

from __future__ import annotations

import os
from pathlib import Path

from gpuvs.errors import StoreError
from gpuvs.store.export import shorten
from gpuvs.store.output import store_files
from gpuvs.store.sql import SqlStore
from gpuvs.store.sqlite import SqliteStore

ENV_VAR = "GPUVS_DB"
_POSTGRES = ("postgres", "postgresql")


def default_location() -> Path:
    """A per-user file, so runs accumulate across working directories."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("gpuvs")) / "gpuvs.sqlite"


def open_store(location: str | None = None, reading: bool = False) -> SqlStore:
    """Open the store at `location`, $GPUVS_DB, or the default.

    `location` is a path or a SQLAlchemy-style URL, as other tools write them:
    `sqlite:///relative.sqlite`, `sqlite:////absolute/path.sqlite`, or a shared
    PostgreSQL store, `postgresql://user:password@host:5432/dbname`. A file that does not
    exist is created, in a directory that does (a mistyped directory is an error, not a
    new tree); only the default location makes its directories. A command that only
    `reading` (show, compare, report) never creates a store: a missing file is an error.
    """
    chosen = location or os.environ.get(ENV_VAR)
    if chosen and chosen.partition("://")[0].lower().split("+")[0] in _POSTGRES:
        from gpuvs.store.postgres import PostgresStore
        return PostgresStore(chosen)
    path = _path(chosen) if chosen else default_location()
    try:
        missing = reading and not path.exists()
    except OSError as e:  # a name too long, a path through a file
        raise StoreError(f"cannot open the results database {shorten(str(path))}: "
                         f"{e.strerror or e}; pass --db PATH or set GPUVS_DB to a file") from None
    if missing:
        raise StoreError(f"no results database at {path}; `gpuvs run` stores runs there "
                         "(or pass --db PATH / set GPUVS_DB to the file that has them)")
    return SqliteStore(path, create_dirs=not chosen, writing=not reading)


def files(location: str | None = None) -> tuple[Path, ...]:
    """The files of the SQLite store that `location` (else $GPUVS_DB, else the default)
    names, whether or not it exists yet: what no output may be written over. None for a
    PostgreSQL store, or a location that names no file (opening it says why)."""
    chosen = location or os.environ.get(ENV_VAR)
    if chosen and chosen.partition("://")[0].lower().split("+")[0] in _POSTGRES:
        return ()
    try:
        return store_files(_path(chosen) if chosen else default_location())
    except StoreError:
        return ()


def _path(location: str) -> Path:
    scheme, sep, rest = location.partition("://")
    if not sep:
        return _expanded(location)
    dialect = scheme.lower().split("+")[0]  # postgresql+psycopg://, sqlite+pysqlite://
    if dialect != "sqlite":
        # Name the scheme only: the rest of a server URL may hold a password.
        raise StoreError(f"unsupported results database scheme {scheme + '://'!r}; use a "
                         "SQLite path or sqlite:///PATH")
    # sqlite:// + "/" + path: the third slash separates the (empty) host from the path.
    path = rest[1:] if rest.startswith("/") else ""
    if not path:
        raise StoreError(f"results database {location!r} names no file; use a SQLite path "
                         "or sqlite:///PATH")
    return _expanded(path)


def _expanded(path: str) -> Path:
    """`~/x` and `~ann/x` as the shell expands them; a user that does not exist is bad
    input, not a RuntimeError."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        user = path.partition("/")[0]
        raise StoreError(f"results database {shorten(path)!r}: {user} names no user's home "
                         "directory; give the path without ~, or with ~/") from None


__all__ = ["ENV_VAR", "SqlStore", "SqliteStore", "default_location", "files", "open_store"]
