"""A file gpuvs writes where the user said: checked before anything is written, then
written atomically (temporary file, fsync, `os.replace`).

One typo once cost every finished case: `gpuvs export latest -o y.db --db y.db` renamed
a JSON file over the results database, and `--json`, `--report`, `report -o`, `predict
--json` and `compare --report` did the same. So an output path is refused, in one line,
when it is

- a file of the results store (the SQLite file, its `-wal`, `-shm` or `-journal`), by
  identity — which also covers a store not yet created;
- anything but a regular file: a directory, a symbolic link, a FIFO, a device, a socket
  (the rename would put a regular file in its place);
- an existing file that is not of the kind gpuvs is about to write there, read off its
  first bytes: a SQLite database or its log, a user's notes, a PNG where a JSON export
  goes. An empty file holds nothing to lose, and a file of the same kind (the report a
  previous run wrote) is what a user means to replace.

Every writer goes through `check_output`: the commands at the door with the kind the
flag writes (`cli.app.check_writable`), and `write_atomic` again with the kind of the
content in hand, so that a path that changed during a run is still never overwritten.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from gpuvs.errors import UsageError

SHARED_MODE = 0o644
SQLITE_MAGIC = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database
# The files SQLite keeps beside a database: its log in WAL mode and its shared memory,
# or its rollback journal.
SQLITE_SIDES = ("-wal", "-shm", "-journal")

# The kinds gpuvs writes, as `kind_of` names them.
JSON, HTML, CSV, PNG = "a JSON document", "an HTML page", "a gpuvs CSV export", "a PNG image"
CSV_HEADER = b"run_id,started_at,"  # `store.export.CSV_COLUMNS` begins so
# How much of a file's beginning says what it is.
HEAD = 64
_WAL_MAGIC = (b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")
_JOURNAL_MAGIC = b"\xd9\xd5\x05\xf9\x20\xa1\x63\xd7"
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def kind_of(head: bytes) -> str:
    """What a file beginning with `head` holds, in words: one of the kinds gpuvs writes
    (JSON, HTML, CSV, PNG), a SQLite database or one of its logs, or another file."""
    text = head.lstrip().lower()
    return ("a SQLite database" if head.startswith(SQLITE_MAGIC) else
            "a SQLite write-ahead log" if head[:4] in _WAL_MAGIC else
            "a SQLite journal" if head.startswith(_JOURNAL_MAGIC) else
            PNG if head.startswith(_PNG_MAGIC) else
            HTML if text.startswith((b"<!doctype html", b"<html")) else
            JSON if text.startswith((b"{", b"[")) else
            CSV if head.startswith(CSV_HEADER) else
            "a file gpuvs did not write")


def check_output(path: Path, kind: str, protected: Iterable[Path] = ()) -> None:
    """UsageError, in one line, unless `path` may receive a file of `kind`: it is none
    of the `protected` files (the results store's), no special file, and either absent,
    empty, or a file of the same kind (see the module's docstring)."""
    if "\x00" in str(path):  # every system call on it would raise ValueError
        raise UsageError(f"the output path {_shown(path)!r} holds a NUL byte, which no "
                         "file name can; give a file path")
    try:
        _check(path, kind, tuple(protected))
    except OSError as e:  # a name too long, a loop of links: the path cannot be written
        raise UsageError(f"cannot write {_shown(path)}: {e.strerror or e}") from None


def _check(path: Path, kind: str, protected: tuple[Path, ...]) -> None:
    refuse_special(path)
    if path.is_dir():
        raise UsageError(f"{path} is a directory; give a file path")
    # The path itself, or a folder on the way that writing would create (`plot --png`).
    store = next(((p, q) for p in protected for q in (path, *path.parents)
                  if _same(q, p)), None)
    if store is not None:
        part, on_the_way = store[0], store[1] != path
        raise UsageError(f"{path} {'is under' if on_the_way else 'is'} {_store_part(part)}; "
                         "gpuvs never writes a file over it: give another path")
    found = _holds(path)
    if found is not None and found != kind:
        raise UsageError(f"{path} exists and holds {found}, not {kind}; gpuvs replaces only "
                         "a file of the kind it writes there: give a new path, or move the "
                         "file away first")


def _shown(path: Path, most: int = 80) -> str:
    text = str(path)
    return text if len(text) <= most else f"{text[:most]}… ({len(text):,} characters)"


def store_files(database: Path) -> tuple[Path, ...]:
    """A SQLite store's file and the files SQLite keeps beside it."""
    return (database, *(Path(f"{database}{side}") for side in SQLITE_SIDES))


def _store_part(path: Path) -> str:
    side = next((s for s in SQLITE_SIDES if path.name.endswith(s)), "")
    return (f"the results database's {side[1:]} file (of {str(path).removesuffix(side)})"
            if side else "the results database")


def _same(path: Path, other: Path) -> bool:
    """The same file, however spelled: the same resolved path (a store not yet
    created), or the same inode (a hard link)."""
    try:
        if path.resolve() == other.resolve():
            return True
        return path.exists() and other.exists() and path.samefile(other)
    except (OSError, RuntimeError):  # a loop of links, a name too long: not the store
        return False


def _holds(path: Path) -> str | None:
    """What the regular file at `path` holds; None where there is nothing to lose (no
    file, an empty one)."""
    try:
        with path.open("rb") as f:
            head = f.read(HEAD)
    except (FileNotFoundError, NotADirectoryError):  # the write itself will say
        return None
    except OSError as e:
        raise UsageError(f"cannot read {path} to see what it holds ({e.strerror or e}), so "
                         "gpuvs does not replace it: give another path") from None
    return kind_of(head) if head else None


def write_atomic(path: Path, content: str | bytes, protected: Iterable[Path] = ()) -> None:
    """Readers see the old file or the new one, never half of one; and only a file that
    `check_output` lets through is replaced (of the kind of `content`).

    The temporary file is private (0600); the result gets the mode of the file it replaces,
    else the usual 0644, since a report or an export is written to be shared.
    """
    data = content.encode() if isinstance(content, str) else content
    check_output(path, kind_of(data[:HEAD]), tuple(protected))
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else SHARED_MODE
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def refuse_special(path: Path) -> None:
    """A symbolic link, a FIFO, a device or a socket at `path` is refused in one line:
    the rename that makes a write atomic would put a regular file in its place — a link
    to a report elsewhere, a pipe a reader waits on, /dev/null — and say "wrote"."""
    try:
        mode = path.lstat().st_mode
    except OSError:  # nothing there (or nothing to see): the write itself will say
        return
    kind = ("a symbolic link" if stat.S_ISLNK(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "")
    if kind:
        raise UsageError(f"{path} is {kind}; gpuvs writes regular files only, so it would "
                         "be replaced: give the path of a regular file or a new one")
