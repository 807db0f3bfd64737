from __future__ import annotations

from gpuvs import units


def test_sizes_read_as_people_write_them() -> None:
    assert [units.size(n) for n in (64, 2048, 10_000, 31_623, 534_197, 10**9)] == [
        "64", "2048", "1e4", "31623", "5.34e5", "1e9"]


def test_seconds_bytes_and_rates() -> None:
    assert units.seconds(0.000123) == "123 µs"
    assert units.seconds(None) == "—"
    assert units.nbytes(3 * 1024**3) == "3 GiB"
    assert units.rate(3.2e12, "FLOP/s") == "3.2 TFLOP/s"
