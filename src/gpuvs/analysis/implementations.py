"""Several implementations of one function side by side: at each size, which one, on which
device, is the fastest, by how much over the next, and whether the two can be told apart.

`gpuvs.compare({"loop": f, "vectorised": g}, x)` and `gpuvs run-file m.py::f m.py::g`
time each implementation on each device; each is its own workload (`yours:loop`), set
against its own CPU case in its own table. This module answers the question the user
asked of all of them at once: "which of my versions, on which device, from what size on".

The contenders at a size are the finished cases whose data is where they run: the CPU's,
and a GPU's resident ones (a GPU's end-to-end case is the same implementation paying the
copies, never faster than its resident twin). The winner's margin is the next one's median
over its own, with the 95 % interval a repeat's ratio lands in (`speedup.of`, as every
speedup in gpuvs), and the two are `apart` only when their medians' intervals do not
overlap: otherwise this measurement cannot say which of the two is faster.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpuvs.analysis import speedup
from gpuvs.analysis.regression import process_spread
from gpuvs.analysis.speedup import RESIDENT, data_of
from gpuvs.model import YOURS_PREFIX, Caveat, Measurement, Status


@dataclass(frozen=True)
class Winner:
    """The fastest case at one size, and the next fastest with how far behind it is."""

    size: int
    fastest: Measurement
    next: Measurement | None  # None: no other case finished at this size
    ratio: float = 1.0        # the next one's median over the fastest's (≥ 1)
    low: float = 1.0          # 95 % interval of the ratio: where a repeat's lands
    high: float = 1.0

    @property
    def apart(self) -> bool:
        """Whether the two medians' 95 % CIs do not overlap: the order is measured."""
        if self.next is None:
            return True
        a, b = self.fastest.summary, self.next.summary
        return a is not None and b is not None and a.apart(b)

    @property
    def contended(self) -> bool:
        """Whether other processes took the CPU from either: the order may be theirs."""
        return any(m is not None and Caveat.CONTENDED in m.caveats
                   for m in (self.fastest, self.next))


def names(ms: Sequence[Measurement]) -> tuple[str, ...]:
    """The user's implementations measured, in the order first met (the reference first)."""
    return tuple(dict.fromkeys(m.case.workload.removeprefix(YOURS_PREFIX) for m in ms
                               if m.case.workload.startswith(YOURS_PREFIX)))


def side_by_side(ms: Sequence[Measurement]) -> bool:
    """Whether `ms` hold several of the user's implementations to set side by side."""
    return len(names(ms)) > 1


def winners(ms: Sequence[Measurement]) -> list[Winner]:
    """At each size where a contender finished, the fastest and its margin over the next."""
    by_size: dict[int, list[Measurement]] = {}
    for m in ms:
        if (m.status is Status.OK and m.summary is not None and m.samples
                and (m.case.device == "cpu" or data_of(m.case) == RESIDENT)):
            by_size.setdefault(m.case.size, []).append(m)
    found, spread = [], process_spread(ms)
    for size, contenders in sorted(by_size.items()):
        first, *rest = sorted(contenders, key=_median)
        if not rest:
            found.append(Winner(size, first, None))
            continue
        margin = speedup.of(rest[0], first, spread)
        found.append(Winner(size, first, rest[0], margin.estimate, margin.low, margin.high))
    return found


def _median(m: Measurement) -> float:
    assert m.summary is not None
    return m.summary.median
