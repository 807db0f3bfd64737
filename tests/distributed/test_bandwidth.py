"""The bandwidth and scaling formulas on numbers worked out by hand (nccl-tests' rules)."""

from __future__ import annotations

import pytest

from gpuvs.distributed.bandwidth import COLLECTIVES, algbw, bus_factor, busbw

GIB = 1024**3


@pytest.mark.parametrize(("collective", "nranks", "factor"), [
    ("all_reduce", 2, 1.0), ("all_reduce", 4, 1.5), ("all_reduce", 8, 1.75),
    ("all_gather", 2, 0.5), ("all_gather", 8, 0.875),
    ("reduce_scatter", 4, 0.75), ("broadcast", 2, 1.0), ("broadcast", 8, 1.0),
])
def test_bus_factors_are_nccl_tests(collective: str, nranks: int, factor: float) -> None:
    assert bus_factor(collective, nranks) == pytest.approx(factor)


@pytest.mark.parametrize("collective", ["all_reduce", "all_gather", "reduce_scatter"])
def test_one_rank_moves_nothing_over_a_link(collective: str) -> None:
    assert bus_factor(collective, 1) == 0.0


def test_zero_ranks_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one rank"):
        bus_factor("all_reduce", 0)


def test_algorithm_and_bus_bandwidth_of_a_1_gib_all_reduce_on_8_ranks() -> None:
    # 1 GiB in 10 ms: 107.37 GB/s algorithm bandwidth; × 2·7/8 = 187.90 GB/s on the bus.
    assert algbw(GIB, 0.010) == pytest.approx(107.374182e9)
    assert busbw("all_reduce", GIB, 0.010, 8) == pytest.approx(187.904819e9)


def test_all_gather_counts_its_output_bytes() -> None:
    # nccl-tests: 256 MiB gathered by 4 ranks in 2 ms → 134.2 GB/s algbw, ×3/4 on the bus.
    assert busbw("all_gather", 256 * 1024**2, 0.002, 4) == pytest.approx(100.663296e9)


def test_every_collective_has_a_factor() -> None:
    assert all(bus_factor(c, 2) > 0 for c in COLLECTIVES)

