"""The hooks entered around every case gpuvs times: one list, one lifecycle, whichever
entry point takes the samples (a worker of `gpuvs run`, `gpuvs.measure`, `gpuvs.compare`,
the magic, the pytest fixture, run-file's worker).

A `Watch` hears five moments of a case and may say something at the end:

    case_started()            before the inputs are built (a memory baseline, a CPU snapshot)
    timing()                  a context held while the protocol runs (NumPy's BLAS held still)
    sampling_started()        the first timed batch is about to start (an energy counter read)
    sampling_ended(calls)     the last batch is done; `calls` ran in between
    case_ended() -> Seen      caveats and counters for the measurement

and may answer the protocol's two questions about the device (`settled`, `governed`).

A watch only *reads* (counters, sensors, clocks) or *holds still* (thread pools). It never
runs work of its own in the process: the profiler, a CUDA graph capture and replay and a
part timed alone all change the speed of the calls timed after them in the same process
(on an H100 a launch-bound loop ran about twice as slow after one profiler session, and
84 % slower after a graph replay, for 10 s and more: docs/accuracy.md), so they are
observations, run apart
(`gpuvs.execute.observe`), and a process that has made one takes no more timed samples
(`observed`, `ensure_unobserved`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from gpuvs.errors import GpuvsError
from gpuvs.model import Caveat


@dataclass(frozen=True)
class Seen:
    """What a watch saw over a case: caveats to add, counters to store."""

    caveats: tuple[Caveat, ...] = ()
    counters: Mapping[str, float] = field(default_factory=dict)


class Watch:
    """One hook around a case; every moment is optional (the defaults do nothing)."""

    def case_started(self) -> None:
        return None

    def timing(self) -> AbstractContextManager[object]:
        return contextlib.nullcontext()

    def sampling_started(self) -> None:
        return None

    def sampling_ended(self, calls: int) -> None:
        return None

    def case_ended(self) -> Seen:
        return Seen()

    def settled(self) -> bool | None:
        """Whether the device's clocks stopped moving; None: this watch cannot tell."""
        return None

    def governed(self) -> bool | None:
        """Whether a power or heat limit sets the clocks now; None: cannot tell."""
        return None


class Watches:
    """The watches of one case, told each moment in order: what the protocol sees as its
    `Sensors` (settled when every watch that can tell says so, governed when any does)."""

    def __init__(self, watches: Sequence[Watch] = ()) -> None:
        self.watches = tuple(watches)

    def __bool__(self) -> bool:
        return bool(self.watches)

    def case_started(self) -> None:
        ensure_unobserved()
        for w in self.watches:
            w.case_started()

    @contextlib.contextmanager
    def timing(self) -> Iterator[None]:
        with contextlib.ExitStack() as held:
            for w in self.watches:
                held.enter_context(w.timing())
            yield

    def sampling_started(self) -> None:
        for w in self.watches:
            w.sampling_started()

    def sampling_ended(self, calls: int) -> None:
        for w in self.watches:
            w.sampling_ended(calls)

    def case_ended(self) -> Seen:
        """Every watch's caveats (in order, once each) and counters."""
        caveats: dict[Caveat, None] = {}
        counters: dict[str, float] = {}
        for w in self.watches:
            seen = w.case_ended()
            caveats.update(dict.fromkeys(seen.caveats))
            counters.update(seen.counters)
        return Seen(tuple(caveats), counters)

    def settled(self) -> bool:
        return all(s is not False for s in (w.settled() for w in self.watches))

    def governed(self) -> bool:
        return any(w.governed() for w in self.watches)

    def can_tell(self) -> bool:
        """Whether any watch reads the device's clocks (a GPU with NVML)."""
        return any(w.governed() is not None for w in self.watches)


class Observed(GpuvsError):
    """A timed case asked of a process that has already observed one (profiled it,
    captured it as a graph): its timings would carry the observation's cost."""


_OBSERVED: list[str] = []


def observed(what: str) -> None:
    """This process has made an observation that changes its speed (`what`, in words)."""
    _OBSERVED.append(what)


def ensure_unobserved() -> None:
    """Refuse to time in a process that has observed: the rule, kept at run time."""
    if _OBSERVED:
        raise Observed(f"this process already ran {_OBSERVED[0]}, which slows the calls "
                       "timed after it; timed samples come from a process that has not")


@contextlib.contextmanager
def observing(what: str) -> Iterator[None]:
    """Around an observation: marks the process observed, even if the observation fails."""
    try:
        yield
    finally:
        observed(what)
