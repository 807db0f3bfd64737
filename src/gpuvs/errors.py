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
