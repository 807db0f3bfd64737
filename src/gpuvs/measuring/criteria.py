"""Stopping criteria: when a case has enough samples.

A criterion is a pure object fed numbers (nvbench's `stopping_criterion`): `add(sample)`
then `done()`. No clock, no device, so each is tested on synthetic streams. The budget
(seconds per case) is enforced by the protocol, not here: a criterion only says whether
the samples so far are good enough.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import ClassVar

from gpuvs import stats
from gpuvs.errors import UsageError

_REGISTRY: dict[str, type[StoppingCriterion]] = {}
# The largest count a criterion's parameter may ask (`fixed:n=`, `min_samples=`): more
# samples than a case's budget ever holds, and far more than a run file is read with.
MAX_COUNT = 1_000_000


def register(cls: type[StoppingCriterion]) -> type[StoppingCriterion]:
    if cls.name in _REGISTRY:
        raise ValueError(f"criterion {cls.name!r} is registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def names() -> tuple[str, ...]:
    return tuple(sorted(_REGISTRY))


class StoppingCriterion(ABC):
    """Decides, from the samples so far, whether sampling may stop."""

    name: ClassVar[str]
    defaults: ClassVar[Mapping[str, float]]

    def __init__(self, **params: float) -> None:
        unknown = set(params) - set(self.defaults)
        if unknown:
            raise UsageError(
                f"unknown parameter {sorted(unknown)[0]!r} for criterion {self.name!r}; "
                f"accepted: {', '.join(sorted(self.defaults))}"
            )
        for key, value in params.items():  # every parameter is a count or a share: > 0
            whole = float(self.defaults[key]).is_integer() and self.defaults[key] >= 1
            if not (math.isfinite(value) and value > 0 and (not whole or (
                    value == int(value) and value <= MAX_COUNT))):
                kind = (f"a whole number from 1 to {MAX_COUNT:,}" if whole
                        else "a positive number")
                raise UsageError(f"criterion parameter {key}={value:g} must be {kind}; e.g. "
                                 f"{self.name}:{key}={self.defaults[key]:g}")
        self.params = {**self.defaults, **params}
        self.samples: list[float] = []

    def add(self, sample: float) -> None:
        if not math.isfinite(sample) or sample < 0:
            raise ValueError(f"a sample must be a finite, non-negative time; got {sample!r}")
        self.samples.append(sample)

    def reset(self) -> None:
        """Forget the samples: the device changed regime (a power cap set in) and the
        protocol samples again from the start."""
        self.samples.clear()

    @abstractmethod
    def done(self) -> bool: ...


# The stretch bootstrap is asked once a batch, not once a sample: fewer resamples suffice
# for a yes/no; the stored summary recomputes it in full.
_CHECK_RESAMPLES = 300


@register
class MedianCI(StoppingCriterion):
    """Stop when the 95 % CI of the median is within ±`rel` of the median (default ±1 %):
    the order-statistic CI first (cheap), then the CI between stretches of the run, so
    that a case whose later samples drifted goes on sampling while its budget lasts."""

    name = "median-ci"
    defaults: ClassVar[Mapping[str, float]] = {"rel": 0.01, "min_samples": 10}

    def done(self) -> bool:
        if len(self.samples) < self.params["min_samples"]:
            return False
        med = sorted(self.samples)[len(self.samples) // 2]
        if med <= 0:
            return False
        limit = self.params["rel"] * med
        lo, hi = stats.median_ci(self.samples)
        if (hi - lo) / 2 > limit:
            return False
        between = stats.stretch_median_ci(self.samples, resamples=_CHECK_RESAMPLES)
        return between is None or max(hi, between[1]) - min(lo, between[0]) <= 2 * limit


@register
class StdRel(StoppingCriterion):
    """nvbench's rule: stop when the relative standard deviation is below `max_noise`."""

    name = "stdrel"
    defaults: ClassVar[Mapping[str, float]] = {"max_noise": 0.005, "min_samples": 10}

    def done(self) -> bool:
        n = len(self.samples)
        if n < self.params["min_samples"]:
            return False
        mean = sum(self.samples) / n
        var = sum((s - mean) ** 2 for s in self.samples) / (n - 1)
        return mean > 0 and math.sqrt(var) / mean <= self.params["max_noise"]


@register
class FixedCount(StoppingCriterion):
    """Stop after exactly `n` samples (for reproducing a fixed-repeat method)."""

    name = "fixed"
    defaults: ClassVar[Mapping[str, float]] = {"n": 7}

    def done(self) -> bool:
        return len(self.samples) >= self.params["n"]


def parse(spec: str) -> Callable[[], StoppingCriterion]:
    """`'median-ci:rel=0.02'` → a factory of fresh criteria; bad specs raise UsageError."""
    name, _, rest = spec.partition(":")
    if name not in _REGISTRY:
        raise UsageError(f"unknown criterion {name!r}; known: {', '.join(names())}")
    params: dict[str, float] = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        try:
            params[key.strip().replace("-", "_")] = float(value)
        except ValueError:
            raise UsageError(
                f"criterion parameter {item!r} must be NAME=NUMBER, e.g. {name}:"
                f"{next(iter(_REGISTRY[name].defaults))}=0.02"
            ) from None
        if not eq:
            raise UsageError(f"criterion parameter {item!r} must be NAME=NUMBER")
    cls = _REGISTRY[name]
    cls(**params)  # validate now, in the parent, not later in a worker
    return lambda: cls(**params)
