"""Where results live. SQLite by default; the location comes from --db, GPUVS_DB or the
user data directory."""

from __future__ import annotations

import os
from pathlib import Path

from gpuvs.errors import StoreError
from gpuvs.store.sqlite import SqliteStore

ENV_VAR = "GPUVS_DB"


def default_location() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("gpuvs")) / "gpuvs.sqlite"


def open_store(location: str | None = None) -> SqliteStore:
    """`None` → $GPUVS_DB → the user data directory; `sqlite:///PATH` or a plain path."""
    location = location or os.environ.get(ENV_VAR) or str(default_location())
    if "://" in location:
        scheme, _, rest = location.partition("://")
        if scheme != "sqlite":
            raise StoreError(f"unsupported results database {location!r}; use a SQLite path "
                             "or sqlite:///PATH")
        location = rest[1:] if rest.startswith("/") and not rest.startswith("//") else rest
    return SqliteStore(Path(location).expanduser())


__all__ = ["ENV_VAR", "SqliteStore", "default_location", "open_store"]
