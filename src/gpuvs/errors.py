"""The exceptions gpuvs raises on purpose; everything else is a bug or a framework error."""

from __future__ import annotations


class GpuvsError(Exception):
    """Base of every error gpuvs raises deliberately."""


class UsageError(GpuvsError):
    """Bad input from the user: the message names the bad value and what is accepted."""


class BackendUnavailable(GpuvsError):
    """A backend or device cannot run here; the message is one readable line."""


class StoreError(GpuvsError):
    """The results store cannot be opened, read or written."""


class WrongResult(GpuvsError):
    """A timed call produced an output that disagrees with the reference."""


class Interrupted(GpuvsError):
    """A run stopped by SIGINT (Ctrl-C) or SIGTERM: stored as `interrupted`, every case
    it recorded kept; the message says how to finish it."""


def _first(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else ""


def first_line(e: BaseException) -> str:
    """The first line of `e`'s message, or its type's name when it has none: a library's
    error can run to many lines (a driver's traceback, a tensor printed whole), and every
    place gpuvs shows one (a reason stored with a case, an error in a terminal or a CI
    log) shows one line, never an empty one."""
    return _first(e) or type(e).__name__


# A first line can still be a tensor printed whole: a reason is stored with its case and
# shown in tables, so it is cut to stay readable.
ONE_LINE_MAX = 500


def one_line(e: BaseException) -> str:
    """'RuntimeError: the first line of its message' (at most 500 characters), or the
    type's name alone when the message is empty: the type says what failed where the
    first line alone would not (a KeyError's message is only the key)."""
    first = _first(e)
    return (f"{type(e).__name__}: {first}" if first else type(e).__name__)[:ONE_LINE_MAX]
