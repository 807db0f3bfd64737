"""Functions defined at the top of a module, as a user's library holds them: what
`gpuvs.compare(…, processes=N)` hands to worker processes, which import them by name."""

from __future__ import annotations

from typing import Any


def doubled(x: Any) -> Any:
    return x * 2.0


def added(x: Any) -> Any:
    return x + x


def broken(x: Any) -> Any:
    raise ValueError("no such thing")
