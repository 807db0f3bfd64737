"""What a call costs the host beyond its ops' launches, measured on the CPU run.

On a GPU each op costs the host its launch, which the op-class probes measure on the
target (`pricing`). The call costs the host more: Python between the ops,
`nn.Module.__call__` and its hooks, autograd's bookkeeping. A small-batch module's
forward on a GPU is mostly that (priced at its launches alone, an MLP block read a
third of its time). None of it depends on the device, so it is timed here:

- a few calls run under a dispatch mode that notes when each op enters and leaves the
  dispatcher; the time between ops (the gaps) is the host's, less what the mode itself
  costs per op and per call — its way in and out, the argument parsing a launch pays
  anyway — measured on a bare `x * 1` loop under the same mode (`_bare`);
- a view or an allocation launches no kernel on a GPU but costs the host its dispatch,
  a view's cost without the mode;
- on one thread, with the ops' outputs kept until the call returns: a CPU op's other
  threads spin on after it and freeing a large CPU array costs an `munmap`, neither of
  which a GPU's host sees;
- a gap after an op over TRUSTED_BYTES (views between them move nothing) is timed with
  the CPU's caches just emptied by that op's data (100–200 µs after 64 MiB), which a
  GPU's host never pays: it counts as the call's typical gap, the median of the others
  (none where there are none); the gap before the first op follows the call before,
  whose last op was the same;
- the least over a few calls (other processes only ever add), never more than the whole
  call took without the mode;
- a call over much data is timed on its arguments cut to one row, where it then runs
  the same ops in the same order: its Python is the same, and its data stay in cache.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from functools import cache
from typing import Any

from gpuvs.predicting.opclasses import VIEW, classify
from gpuvs.predicting.tensors import moved, tensors

CALLS = 10            # calls timed, the least of them kept
BUDGET_S = 0.3        # ... or fewer, once they took this long (at least two)
KEPT_BYTES = 1 << 30  # outputs kept alive during a timed call, at most
TRUSTED_BYTES = 1 << 20
BARE_OPS = 200


def host_cost(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any],
              ops: Sequence[str] = ()) -> float:
    """Seconds per call the host spends beyond its ops' own dispatch (the module's
    docstring says how). Where `ops` (the call's ops, as counted) moved much data, the
    call is timed on its arguments cut to their first row, if it then runs the same ops
    in the same order: the same Python on data the CPU's caches hold."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        small = _shrunk(args, kwargs)
        if small is not None and _ops(fn, *small) == tuple(ops):
            args, kwargs = small
        return _least(fn, args, kwargs)
    finally:
        torch.set_num_threads(threads)


def _least(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]
           ) -> float:
    gap, fixed, view = _bare()
    best, plain, spent, calls = math.inf, math.inf, 0.0, 0
    while calls < CALLS and (calls < 2 or spent < BUDGET_S):
        clock, took = _timed(lambda: fn(*args, **kwargs), True)
        best = min(best, clock.extra(gap, fixed) + clock.views * view)
        plain = min(plain, _timed(lambda: fn(*args, **kwargs), False)[1])
        spent, calls = spent + took + plain, calls + 1
    return max(0.0, min(best, plain))


def _shrunk(args: tuple[Any, ...], kwargs: Mapping[str, Any]
            ) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The arguments with each tensor of more than one row cut to its first (a module's
    weights and a sparse tensor as they are), or None where none has more than one."""
    import torch
    from torch.utils._pytree import tree_map

    cut = False

    def first(x: Any) -> Any:
        nonlocal cut
        if isinstance(x, torch.Tensor) and x.layout is torch.strided and x.dim() and len(x) > 1:
            cut = True
            return x[:1].clone()
        return x

    small = tree_map(first, (args, dict(kwargs)))
    return small if cut else None


def _ops(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]
         ) -> tuple[str, ...] | None:
    """The ops `fn(*args, **kwargs)` runs, in order; None where it raises."""
    clock = _clock_class()()
    try:
        with clock:
            fn(*args, **kwargs)
    except Exception:  # the cut arguments do not fit together: time the call as given
        return None
    return tuple(clock.names)


def _timed(call: Callable[[], Any], clocked: bool) -> tuple[Any, float]:
    """`call()`, under a fresh timing mode if `clocked`, the collector off: (the mode,
    seconds)."""
    clock = _clock_class()()
    collecting = gc.isenabled()
    gc.disable()
    try:
        clock.started = time.perf_counter()
        with clock if clocked else nullcontext():
            out = call()
        clock.ended = time.perf_counter()
    finally:
        if collecting:
            gc.enable()
    del out
    clock.kept.clear()
    return clock, clock.ended - clock.started


@cache
def _bare() -> tuple[float, float, float]:
    """The timing mode's own costs, on one thread, each the least of ten tries: what one
    op costs outside its dispatch (the median gap of a loop of `x * 1` on one element:
    the mode's way in and out, the loop, parsing the arguments), what entering and
    leaving the mode costs a call beyond that, and what a view costs the host with no
    mode at all."""
    import torch

    x = torch.ones(1)

    def loop() -> None:
        for _ in range(BARE_OPS):
            x * 1

    gaps, fixed, views = [], [], []
    for _ in range(10):
        clock, _ = _timed(loop, True)
        gaps.append(statistics.median(clock.gaps[1:]))  # a gap the machine interrupted
        # is no gap of the mode's
        clock, _ = _timed(lambda: x * 1, True)
        fixed.append(sum(clock.all_gaps()[0]))
        started = time.perf_counter()
        for _ in range(BARE_OPS):
            x.view(-1)
        views.append((time.perf_counter() - started) / BARE_OPS)
    gap = min(gaps)
    return gap, max(0.0, min(fixed) - gap), min(views)


@cache
def _clock_class() -> Any:
    """A TorchDispatchMode noting each gap between ops, whether the last op before it
    that moved data (not a view) moved more than TRUSTED_BYTES, the ops and the views
    among them, and keeping the ops' outputs (up to KEPT_BYTES) alive until the call
    returns."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Clock(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()  # type: ignore[no-untyped-call]
            self.started = self.ended = 0.0
            self.gaps: list[float] = []       # before each op
            self.after_large: list[bool] = []  # ... whether the op before it was large
            self.left = 0.0                    # the last op's end
            self.ops = self.views = self.held = 0
            self.names: list[str] = []
            self.kept: list[Any] = []
            self.large = False

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            entered = time.perf_counter()
            self.gaps.append(entered - (self.left or self.started))
            self.after_large.append(self.large)
            out = func(*args, **(kwargs or {}))
            self.ops += 1
            self.names.append(str(func))
            if classify(func, args, out).op_class == VIEW:  # it moves no data
                self.views += 1
                self.left = time.perf_counter()
                return out
            self.large = moved(args, kwargs, out) > TRUSTED_BYTES
            if self.held < KEPT_BYTES:
                self.kept.append(out)
                self.held += sum(t.numel() * t.element_size() for t in tensors(out))
            self.left = time.perf_counter()
            return out

        def all_gaps(self) -> tuple[list[float], list[bool]]:
            """The gap before each op and the one after the last, and whether the op
            before each was large (before the first: the call before this one's last)."""
            return ([*self.gaps, self.ended - (self.left or self.started)],
                    [self.large, *self.after_large[1:], self.large])

        def extra(self, gap: float, fixed: float) -> float:
            """The gaps' seconds beyond the mode's own; a gap after a large op counts
            as the median of the others' (0 where there are none)."""
            gaps, large = self.all_gaps()
            trusted = [g - gap for g, big in zip(gaps, large, strict=True) if not big]
            typical = max(0.0, statistics.median(trusted)) if trusted else 0.0
            polluted = sum(g - gap - typical for g, big in zip(gaps, large, strict=True)
                           if big)
            return sum(gaps) - self.ops * gap - fixed - polluted

    return Clock
