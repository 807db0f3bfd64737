"""Bandwidth formulas: pure arithmetic on bytes, seconds and rank counts (a scaling
efficiency is `analysis.scaling`'s).

The bus-bandwidth factors are nccl-tests' (`doc/PERFORMANCE.md` there): they turn the
algorithm bandwidth (bytes ÷ time) into what each link carries, so a number can be set
against the hardware's link speed whatever the collective and the rank count. Sizes
follow nccl-tests too: all-gather counts its output bytes, reduce-scatter its input
bytes, all-reduce and broadcast the one buffer.
"""

from __future__ import annotations

from collections.abc import Callable

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")

# n ranks → the share of the bytes each rank sends over its link.
_BUS_FACTORS: dict[str, Callable[[int], float]] = {
    "all_reduce": lambda n: 2 * (n - 1) / n,  # a reduce-scatter then an all-gather
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,  # pipelined: every byte crosses each link once
}


def bus_factor(collective: str, nranks: int) -> float:
    """nccl-tests' factor from algorithm to bus bandwidth (0 for one rank: no traffic)."""
    if nranks < 1:
        raise ValueError(f"a collective needs at least one rank, not {nranks}")
    return _BUS_FACTORS[collective](nranks)


def algbw(nbytes: float, seconds: float) -> float:
    """Algorithm bandwidth in bytes per second: the collective's size over its time."""
    return nbytes / seconds


def busbw(collective: str, nbytes: float, seconds: float, nranks: int) -> float:
    """Bus bandwidth in bytes per second, comparable with the link speed."""
    return algbw(nbytes, seconds) * bus_factor(collective, nranks)

