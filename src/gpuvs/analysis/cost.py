"""What a call costs at the prices a user gives, and how many times cheaper the GPU is.

Prices come from the user alone (`--price cpu=0.40,gpu=2.50,kwh=0.30` or
`[tool.gpuvs.prices]`): an hour of the CPU machine, an hour of the GPU machine, a
kilowatt-hour. There are no defaults; a made-up price would be a wrong answer, so a
figure that needs a price or an energy nobody gave is not given.

A case costs what a second of its device costs times its seconds per call: the hourly
price ÷ 3600, plus, with a kWh price, the energy price times its power (joules per call ÷
seconds per call, from `gpuvs.machine.energy`; a declared CPU power counts as declared).
So the cost ratio of two cases is their speedup times the ratio of what a second of each
costs, and its 95 % CI is the speedup's, scaled by that same ratio: the prices and powers
are taken as known, the time is what varies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gpuvs.analysis.speedup import Speedup
from gpuvs.machine import energy
from gpuvs.model import Measurement

SECONDS_PER_HOUR = 3600.0
JOULES_PER_KWH = 3.6e6


@dataclass(frozen=True)
class Prices:
    """The prices given: per hour of each machine, per kWh; None where none was given."""

    cpu_per_h: float | None = None
    gpu_per_h: float | None = None
    kwh: float | None = None

    @classmethod
    def of(cls, pairs: Iterable[Sequence[object]] | Mapping[str, float] | None) -> Prices:
        """From a run's stored `prices`: ((name, price), …) or {name: price}."""
        given: dict[object, object] = (dict(pairs.items()) if isinstance(pairs, Mapping)
                                       else {p[0]: p[1] for p in pairs or () if len(p) == 2})
        return cls(_float(given.get("cpu")), _float(given.get("gpu")), _float(given.get("kwh")))

    def __bool__(self) -> bool:
        return any(p is not None for p in (self.cpu_per_h, self.gpu_per_h, self.kwh))

    def words(self) -> str:
        """'cpu 0.4 and gpu 2.5 an hour; 0.3 a kWh', in the currency they were given in."""
        hourly = " and ".join(f"{name} {p:g}" for name, p in (("cpu", self.cpu_per_h),
                                                               ("gpu", self.gpu_per_h))
                              if p is not None)
        parts = ([f"{hourly} an hour"] if hourly else []) + (
            [f"{self.kwh:g} a kWh"] if self.kwh is not None else [])
        return "; ".join(parts)


NO_PRICES = Prices()  # no price given: no cost is shown


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def per_second(m: Measurement, prices: Prices) -> float | None:
    """What one second of `m`'s device costs: its hourly price, plus its power at the kWh
    price where one was given. None where a price or a power it needs is missing
    (`missing` says which)."""
    if missing(m, prices) is not None:
        return None
    hourly = prices.cpu_per_h if m.case.device == "cpu" else prices.gpu_per_h
    cost = hourly / SECONDS_PER_HOUR if hourly is not None else 0.0
    watts = _watts(m)
    if prices.kwh is not None and watts is not None:
        cost += prices.kwh * watts / JOULES_PER_KWH
    return cost


def missing(m: Measurement, prices: Prices) -> str | None:
    """What `m`'s cost lacks, in words; None when it can be priced."""
    kind = "cpu" if m.case.device == "cpu" else "gpu"
    hourly = prices.cpu_per_h if kind == "cpu" else prices.gpu_per_h
    if hourly is None and prices.kwh is None:
        return f"no price for the {kind.upper()} (--price {kind}=…)"
    if prices.kwh is not None and _watts(m) is None:
        how = " (--cpu-watts declares it)" if kind == "cpu" else " (--energy measures it)"
        return f"no {kind.upper()} energy to price at the kWh price{how}"
    return None


def _watts(m: Measurement) -> float | None:
    """The case's power per call: its joules per call over its seconds per call."""
    found = energy.of(m)
    if found is None or m.summary is None or m.summary.median <= 0:
        return None
    return found.per_call_j / m.summary.median


def per_million_calls(m: Measurement, prices: Prices) -> float | None:
    """The price of a million calls of `m`, where its prices (and power) are known."""
    rate = per_second(m, prices)
    if rate is None or m.summary is None:
        return None
    return rate * m.summary.median * 1e6


@dataclass(frozen=True)
class CostRatio:
    """How many times cheaper a call of the faster case is (below 1: dearer), with the
    speedup's 95 % CI scaled by the same prices."""

    estimate: float
    low: float
    high: float


def cheaper(baseline: Measurement, m: Measurement, s: Speedup, prices: Prices
            ) -> CostRatio | None:
    """`m` against `baseline` (`s` = baseline's time ÷ m's): baseline's cost per call ÷
    m's; None where either's price or power is unknown."""
    slow, fast = per_second(baseline, prices), per_second(m, prices)
    if slow is None or fast is None or fast <= 0:
        return None
    k = slow / fast
    return CostRatio(s.estimate * k, s.low * k, s.high * k)
