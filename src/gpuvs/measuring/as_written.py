"""The posts' own timing methods, reproduced on purpose for `as_written` cases.

Each seed post timed its GPU one of two ways, and both are wrong on an asynchronous
device for a reason gpuvs shows side by side with the correct figure:

- `%timeit` (IPython's): loops of calls between two host-clock readings, with no
  synchronisation, so on CUDA it times how fast kernels can be *queued*;
- `time.time()` around one call in a fresh process: no synchronisation, and the first
  call's compilation, handles and caches counted as if they were the work.

Nothing here synchronises a device. That is the point; never use these for a
`correct` case.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# IPython's %timeit: repeat 7 runs; grow loops ×10 (1, 10, 100 …) until a run takes 0.2 s.
TIMEIT_REPEAT = 7
TIMEIT_MIN_RUN_S = 0.2


@dataclass(frozen=True)
class SelfTimed:
    """A post's timing method: `run()` gives the per-call seconds it would have printed
    (one per %timeit run, or the one `time.time()` difference) and the last call's output,
    which is checked afterwards; `method` names it."""

    method: str
    run: Callable[[], tuple[Sequence[float], object]]


def timeit_loops(call: Callable[[], object], number: int | None = None,
                 repeat: int = TIMEIT_REPEAT) -> SelfTimed:
    """`%timeit` as IPython runs it: `number` loops per run (chosen like IPython when
    None), `repeat` runs, each run's host time ÷ loops. Its printed mean is their mean."""

    def run() -> tuple[list[float], object]:
        loops = number or _autorange(call)
        return [_loop_s(call, loops) / loops for _ in range(repeat)], call()

    label = f"%timeit -n{number}" if number else "%timeit"
    return SelfTimed(f"{label} -r{repeat}, no sync", run)


def wall_once(call: Callable[[], object]) -> SelfTimed:
    """`s = time.time(); call(); e = time.time(); print(e - s)`: one call, the first."""

    def run() -> tuple[list[float], object]:
        s = time.time()
        out = call()
        return [time.time() - s], out

    return SelfTimed("time.time() once, no sync, first call included", run)


def _loop_s(call: Callable[[], object], loops: int) -> float:
    t0 = time.perf_counter()
    for _ in range(loops):
        call()
    return time.perf_counter() - t0


def _autorange(call: Callable[[], object]) -> int:
    loops = 1
    while _loop_s(call, loops) < TIMEIT_MIN_RUN_S:
        loops *= 10
    return loops
