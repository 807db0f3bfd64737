"""`gpuvs.Timer`: time any block or function, synchronising every device it used.

    with gpuvs.Timer() as t:            @gpuvs.Timer()
        y = model(x)                    def step(x): ...
    print(t)                            step(x); step(x); print(step.timer)

Reading the host clock over asynchronous GPU work times the launches, not the work
(seed 000's `%timeit`). So on entry and on exit the timer waits for every device in use:
each CUDA device that torch or CuPy holds memory on (a device-wide synchronise, so every
stream is drained), and JAX's live arrays. As a decorator it also waits for the arrays the
function returns. The first interval is kept apart as `first_call_s` (compilation,
handles, caches); the others are the samples, with the usual statistics.

Frameworks are looked up in `sys.modules`, never imported: code that has not loaded
torch has no torch work to wait for.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from gpuvs import stats, units

F = TypeVar("F", bound=Callable[..., Any])


def devices_in_use() -> dict[str, Callable[[], None]]:
    """Each device with work or memory of a loaded framework → how to wait for it."""
    found: dict[str, Callable[[], None]] = {}
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        current = torch.cuda.current_device()
        for i in range(torch.cuda.device_count()):
            if i == current or torch.cuda.memory_reserved(i) > 0:
                found[f"cuda:{i}"] = functools.partial(torch.cuda.synchronize, i)
    cupy = sys.modules.get("cupy")
    if cupy is not None and cupy.get_default_memory_pool().total_bytes() > 0:
        index = cupy.cuda.runtime.getDevice()
        found.setdefault(f"cuda:{index}", cupy.cuda.Device(index).synchronize)
    jax = sys.modules.get("jax")
    if jax is not None and hasattr(jax, "live_arrays"):
        for d in {d for a in jax.live_arrays() for d in a.devices()}:
            label = "cpu" if d.platform == "cpu" else f"{d.platform}:{d.id}"
            found.setdefault(label, lambda: jax.block_until_ready(jax.live_arrays()))
    return found


def synchronize_all(result: object = None) -> tuple[str, ...]:
    """Wait for every device in use (and for `result`, where JAX computes it); returns
    the devices waited for."""
    jax = sys.modules.get("jax")
    if jax is not None and result is not None:
        jax.block_until_ready(result)
    in_use = devices_in_use()
    for wait in in_use.values():
        wait()
    return tuple(sorted(in_use))


class Timer:
    """Synchronised wall time of a block or of every call of a function."""

    def __init__(self, name: str = "timer") -> None:
        self.name = name
        self.intervals: list[float] = []
        self.devices: tuple[str, ...] = ()
        self._t0: float | None = None

    def __enter__(self) -> Timer:
        synchronize_all()  # earlier queued work is not ours to count
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop(None)

    def _stop(self, result: object) -> None:
        used = synchronize_all(result)
        end = time.perf_counter()
        if self._t0 is None:
            raise RuntimeError("Timer stopped without being started")
        self.intervals.append(end - self._t0)
        self.devices = tuple(sorted({*self.devices, *used}))
        self._t0 = None

    def __call__(self, fn: F) -> F:
        """Decorate `fn`: every call is timed; the timer is `fn.timer`."""

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            self.__enter__()
            result = None
            try:
                result = fn(*args, **kwargs)
                return result
            finally:
                self._stop(result)

        timed.timer = self  # type: ignore[attr-defined]
        return timed  # type: ignore[return-value]

    @property
    def elapsed_s(self) -> float | None:
        """The last interval, in seconds."""
        return self.intervals[-1] if self.intervals else None

    @property
    def first_call_s(self) -> float | None:
        return self.intervals[0] if self.intervals else None

    @property
    def samples(self) -> tuple[float, ...]:
        """Every interval after the first (the first is compilation and caches too)."""
        return tuple(self.intervals[1:])

    @property
    def summary(self) -> stats.Summary | None:
        return stats.summarize(self.samples) if self.samples else None

    def __repr__(self) -> str:
        where = f"synchronised {', '.join(self.devices)}" if self.devices else "host only"
        if not self.intervals:
            return f"Timer({self.name!r}: not run yet)"
        if len(self.intervals) == 1:
            return f"Timer({self.name!r}: {units.seconds(self.intervals[0])}, {where})"
        s = stats.summarize(self.samples)
        return (f"Timer({self.name!r}: {units.seconds(s.median)} median of {s.n} calls "
                f"[{units.seconds(s.ci_low)}, {units.seconds(s.ci_high)}], first call "
                f"{units.seconds(self.first_call_s)}, {where})")
