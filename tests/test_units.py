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


def test_a_ci_wider_than_its_median_is_not_printed_as_a_figure() -> None:
    """'±15725.6%' read as a measured number; past ±100 % the CI only says the median is
    unknown to within its own size."""
    assert units.seconds_ci(0.0123, 0.004) == "12.3 ms ±0.4%"
    assert units.seconds_ci(0.0123, 0.999) == "12.3 ms ±99.9%"
    assert units.seconds_ci(0.0123, 157.256) == "12.3 ms ±>100%"
    assert units.seconds_ci(0.0, float("inf")) == "0 ns ±>100%"
    assert units.seconds_ci(0.0123, float("nan")) == "12.3 ms ±>100%"


def test_a_ratio_shows_its_ci_to_the_digits_that_tell_the_bounds_apart() -> None:
    assert units.ratio(42.51, 41.02, 43.14) == "42.5× [41, 43.1]"
    assert units.ratio(1.0213, 1.0194, 1.0231) == "1.021× [1.019, 1.023]"
    assert units.ratio(1114.2, 1093.7, 1121.9) == "1110× [1090, 1120]"


def test_a_single_timing_on_each_side_shows_no_zero_width_interval() -> None:
    assert units.ratio(7.214, 7.214, 7.214) == "7.21× (single timings: no CI)"


def test_a_ratio_without_bounds_is_the_ratio_alone_written_out() -> None:
    assert units.ratio(5.2134) == "5.21×"
    assert units.ratio(1114.2) == "1110×"  # not 1.11e+03×


def test_money_is_written_out_as_an_amount_never_in_exponent_form() -> None:
    """Issue 42: `cost/1M calls` printed 5.27e-05."""
    assert units.money(5.27e-05) == "0.0000527"
    assert units.money(0.0527) == "0.0527"
    assert units.money(1.5) == "1.50" and units.money(12.34) == "12.3"
    assert units.money(0.000999996) == "0.00100" and units.money(999.96) == "1000"
    assert units.money(1234.5) == "1230" and units.money(0.0) == "0"
    assert units.money(None) == units.money(float("nan")) == "—"
