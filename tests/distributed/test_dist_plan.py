"""Sizes, cases and specs of `gpuvs dist`, before any rank starts."""

from __future__ import annotations

import pytest

from gpuvs.distributed.spec import (
    Setup,
    Spec,
    collective_cases,
    parse_bytes,
    parse_sizes,
    per_rank_batch,
    scaling_cases,
)
from gpuvs.errors import UsageError

CPU2 = Setup("gloo", "cpu", 2)


@pytest.mark.parametrize(("text", "n"), [("4096", 4096), ("1KiB", 1024), ("64k", 65536),
                                         ("16MiB", 16 * 1024**2), ("1G", 1024**3)])
def test_byte_counts(text: str, n: int) -> None:
    assert parse_bytes(text) == n


@pytest.mark.parametrize(("text", "message"), [
    ("1.5KiB", "is not a byte count"), ("12 parsecs", "is not a byte count"),
    ("6", "whole number of float32 elements"), ("0", "whole number of float32 elements"),
])
def test_bad_byte_counts(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_bytes(text)


def test_size_ranges_step_by_4_unless_told() -> None:
    assert parse_sizes(["1KiB:64KiB"]) == (1024, 4096, 16384, 65536)
    assert parse_sizes(["1KiB:8KiB:2", "4096"]) == (1024, 2048, 4096, 8192)


@pytest.mark.parametrize(("spec", "message"), [
    ("1KiB:1MiB:1", "factor '1' must be a whole number from 2"),
    ("1MiB:1KiB", "ends before it starts"), ("1:2:3:4", "START:STOP or START:STOP:FACTOR"),
])
def test_bad_size_ranges(spec: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_sizes([spec])


def test_collective_cases_interleave_collectives_per_size() -> None:
    cases = collective_cases(CPU2, ["1KiB:4KiB"], [])
    assert [(c.size, c.param("collective")) for c in cases][:5] == [
        (1024, "all_reduce"), (1024, "all_gather"), (1024, "reduce_scatter"),
        (1024, "broadcast"), (4096, "all_reduce")]
    assert {c.param("nproc") for c in cases} == {"2"}
    assert cases[0].workload == "dist_collective" and cases[0].backend == "gloo"


def test_the_cpu_default_sweep_stops_at_64_mib() -> None:
    sizes = sorted({c.size for c in collective_cases(CPU2, [], ["broadcast"])})
    assert sizes[0] == 1024 and sizes[-1] == 64 * 1024**2 and len(sizes) == 9


def test_unknown_collective() -> None:
    with pytest.raises(UsageError, match="unknown collective 'allreduce'; accepted: all_reduce"):
        collective_cases(CPU2, [], ["allreduce"])


def test_scaling_cases_weak_and_strong() -> None:
    weak = scaling_cases(Setup("gloo", "cpu", 4), 32, strong=False)
    assert [c.size for c in weak] == [1, 2, 3, 4]
    assert {c.param("round") for c in weak} == {"1"}
    assert {per_rank_batch(c) for c in weak} == {32}
    strong = scaling_cases(Setup("gloo", "cpu", 2), 32, strong=True)
    assert [per_rank_batch(c) for c in strong] == [32, 16]
    with pytest.raises(UsageError, match="32 is not divisible by 3"):
        scaling_cases(Setup("gloo", "cpu", 3), 32, strong=True)


def test_rounds_interleave_every_rank_count() -> None:
    """1, 2, 1, 2, …: each N is measured seconds after the N = 1 it is paired with."""
    cases = scaling_cases(Setup("nccl", "cuda", 2), 32, strong=False, rounds=3)
    assert [(c.size, c.param("round")) for c in cases] == [
        (1, "1"), (2, "1"), (1, "2"), (2, "2"), (1, "3"), (2, "3")]
    assert len({c.key for c in cases}) == 6


def test_strong_scaling_on_four_or_eight_ranks_runs_the_counts_that_split_the_batch() -> None:
    four = scaling_cases(Setup("nccl", "cuda", 4), 32, strong=True)
    assert [c.size for c in four] == [1, 2, 4]
    eight = scaling_cases(Setup("nccl", "cuda", 8), 32, strong=True)
    assert [(c.size, per_rank_batch(c)) for c in eight] == [(1, 32), (2, 16), (4, 8), (8, 4)]


def test_cases_on_several_nodes_say_so_in_their_key() -> None:
    """Four ranks on two nodes cross other links than four on one: another case."""
    one, two = Setup("gloo", "cpu", 4), Setup("gloo", "cpu", 4, nodes=2)
    assert two.per_node == 2 and one.layout() == ()
    (alone,), (spread,) = (collective_cases(s, ["1KiB"], ["all_reduce"]) for s in (one, two))
    assert spread.param("nodes") == "2x2" and alone.param("nodes") == ""
    assert alone.key != spread.key
    assert {c.param("nodes") for c in scaling_cases(two, 4, strong=False)} == {"2x2"}


def test_a_spec_travels_as_json() -> None:
    spec = Spec("collectives", CPU2, collective_cases(CPU2, ["1KiB"], []), samples=3,
                extra={"sizes": [1024]})
    assert Spec.from_json(spec.to_json()) == spec
    assert spec.config()["command"] == "collectives" and spec.config()["samples"] == 3
    nodes = Setup("gloo", "cpu", 4, nodes=2)
    scaling = Spec("scaling", nodes, scaling_cases(nodes, 4, False, rounds=2), rounds=2)
    assert Spec.from_json(scaling.to_json()) == scaling
    assert scaling.config()["nodes"] == 2 and scaling.config()["rounds"] == 2
