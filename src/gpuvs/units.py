"""Formatting seconds, bytes and rates for people — used only at the edges (CLI, report)."""

from __future__ import annotations

import math


def _scaled(value: float, steps: tuple[tuple[float, str], ...], digits: int = 3) -> str:
    for factor, suffix in steps:
        if abs(value) >= factor:
            return f"{value / factor:.{digits}g} {suffix}"
    factor, suffix = steps[-1]
    return f"{value / factor:.{digits}g} {suffix}"


def seconds(s: float | None) -> str:
    if s is None or math.isnan(s):
        return "—"
    return _scaled(s, ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")))


def money(amount: float | None, digits: int = 3) -> str:
    """'0.0527', '0.0000527', '12.3', '1234': an amount in the currency its prices were
    given in, to `digits` significant digits, written out as a price is (never
    '5.27e-05', which reads as a code, not an amount)."""
    if amount is None or not math.isfinite(amount):
        return "—"
    rounded = float(f"{amount:.{digits}g}")  # 0.000999996 is 0.00100, not 0.001000
    if rounded == 0:
        return "0"
    places = max(0, digits - 1 - math.floor(math.log10(abs(rounded))))
    return f"{rounded:.{places}f}"


# Past this half-width the CI says only that the median is unknown to within its own size:
# '±15725.6%' would print noise as if it were a measured figure.
CI_REL_SHOWN_MAX = 1.0


def seconds_ci(median: float, rel: float) -> str:
    """'12.3 ms ±0.4%': a median and the half-width of its CI, relative to it; a CI wider
    than the median itself is '12.3 ms ±>100%'."""
    if not rel <= CI_REL_SHOWN_MAX:  # NaN and inf too
        return f"{seconds(median)} ±>{100 * CI_REL_SHOWN_MAX:.0f}%"
    return f"{seconds(median)} ±{100 * rel:.1f}%"


SINGLE = "single timings: no CI"


def ratio(estimate: float, low: float | None = None, high: float | None = None) -> str:
    """'42.5× [41, 43.1]': a ratio with its CI, to as many significant digits (3 to 5) as
    tell the bounds apart. A CI of no width comes from one timing on each side (a post's
    own `time.time()`): nothing to resample, so no interval is shown, and it says so.
    Without bounds (a prediction that has no interval) it is the ratio alone, '42.5×'.
    Every speedup and cost ratio gpuvs prints is written here, so all read alike."""
    if low is None or high is None:
        return f"{_digits(estimate, 3)}×"
    if low == high:
        return f"{_digits(estimate, 3)}× ({SINGLE})"
    digits = next((d for d in (3, 4) if _digits(low, d) != _digits(high, d)), 5)
    return f"{_digits(estimate, digits)}× [{_digits(low, digits)}, {_digits(high, digits)}]"


def _digits(x: float, digits: int) -> str:
    """`x` to `digits` significant digits, written out where %g would switch to an
    exponent for a ratio (1110, not 1.11e+03)."""
    text = f"{x:.{digits}g}"
    if "e+" not in text:
        return text
    return str(round(round(x, digits - 1 - math.floor(math.log10(abs(x))))))


def nbytes(b: float) -> str:
    return _scaled(b, ((1024**4, "TiB"), (1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB"),
                       (1, "B")))


def rate(per_s: float, unit: str) -> str:
    """`rate(3.2e12, 'FLOP/s')` → '3.2 TFLOP/s'."""
    return _scaled(per_s, ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"),
                           (1.0, ""))) + unit


def size(n: int) -> str:
    """Sizes as people write them: 1000000 → '1e6', 534197 → '5.34e5', 2048 → '2048'."""
    if n < 100_000:
        return f"1e{round(math.log10(n))}" if n >= 10_000 and n == 10 ** round(
            math.log10(n)) else str(n)
    exponent = math.floor(math.log10(n))
    mantissa = f"{n / 10**exponent:.3g}"
    return f"1e{exponent}" if mantissa == "1" else f"{mantissa}e{exponent}"


def joules(j: float | None) -> str:
    """Energy as people read it: 1.06 J, 130 mJ, 9.1 kJ."""
    if j is None or math.isnan(j):
        return "—"
    return _scaled(j, ((1e6, "MJ"), (1e3, "kJ"), (1.0, "J"), (1e-3, "mJ"), (1e-6, "µJ"),
                       (1e-9, "nJ")))
