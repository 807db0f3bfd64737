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


def test_a_ratio_shows_its_ci_to_the_digits_that_tell_the_bounds_apart() -> None:
    assert units.ratio(42.51, 41.02, 43.14) == "42.5× [41, 43.1]"
    assert units.ratio(1.0213, 1.0194, 1.0231) == "1.021× [1.019, 1.023]"
    assert units.ratio(1114.2, 1093.7, 1121.9) == "1110× [1090, 1120]"


def test_a_single_timing_on_each_side_shows_no_zero_width_interval() -> None:
    assert units.ratio(7.214, 7.214, 7.214) == "7.21× (single timings: no CI)"
