"""The model against measurement: the error table docs/prediction.md publishes.

A validation run measures, on the target GPU, the cases the model predicts. Each GPU
case that finished is predicted twice over: once to learn from (`residuals_of`: its
measured ÷ modelled time), and once to judge (`checks`: predicted as if its own series
had not been measured, so that no case is its own calibration). The table then gives,
per workload and over all: the median and 90th-percentile error, the share of measured
times inside the predicted interval, and how often the predicted crossover fell within
one size step of the measured one. GPU → GPU (`scaled_checks`) predicts the target from
the same case measured on another GPU, scaled term by term.

`as_written` cases are left out: they replay a post's timing mistake (a launch timed
without waiting for the work), not a time per call.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from gpuvs.analysis.crossover import crossovers
from gpuvs.errors import UsageError
from gpuvs.model import Case, Measurement, Status
from gpuvs.predicting import pricing
from gpuvs.predicting.forecast import Predicted, Target, series
from gpuvs.predicting.profile import Profile
from gpuvs.predicting.residuals import Prediction, Residual, Residuals, of_points
from gpuvs.predicting.work import of_case

ALL = "all"


@dataclass(frozen=True)
class Check:
    """One GPU case: measured there, and predicted."""

    case: Case
    measured_s: float
    prediction: Prediction

    @property
    def error(self) -> float:
        """|predicted − measured| ÷ measured."""
        return abs(self.prediction.seconds - self.measured_s) / self.measured_s

    @property
    def inside(self) -> bool | None:
        found = self.prediction.interval
        return None if found is None else found[0] <= self.measured_s <= found[1]


@dataclass(frozen=True)
class CrossoverCheck:
    """A sweep's GPU series: where the GPU starts to win, predicted and measured."""

    gpu: Case
    sizes: tuple[int, ...]
    predicted: int | None
    measured: int | None

    @property
    def steps_apart(self) -> int:
        """Size steps between the two (never winning counts as one step past the end)."""
        def at(size: int | None) -> int:
            return self.sizes.index(size) if size in self.sizes else len(self.sizes)
        return abs(at(self.predicted) - at(self.measured))


@dataclass(frozen=True)
class ErrorRow:
    name: str                      # a workload, or ALL
    cases: int
    median_error: float
    p90_error: float
    inside: float | None           # share of measured times inside the interval
    crossovers: tuple[int, int]    # (within one size step, sweeps compared)


def judged(measurements: Iterable[Measurement]) -> list[Measurement]:
    """The GPU cases a validation judges: finished, timed per call, not a replay, nor a
    probe of its run's calibration (it describes the machine, as the profile does)."""
    return [m for m in measurements if m.case.device != "cpu" and m.status is Status.OK
            and m.summary is not None and m.case.variant != "as_written"
            and not m.case.calibrates]


def residuals_of(measurements: Iterable[Measurement], profile: Profile, runs: Sequence[str],
                 measured_at: str) -> Residuals:
    """What the measured GPU cases say of the model: measured ÷ modelled, per case."""
    points = []
    for m in judged(measurements):
        try:
            est = pricing.estimate(of_case(m.case), profile)
        except UsageError:  # the profile lacks what this case needs: nothing to learn
            continue
        points.append(Residual(m.case.workload, est.regime, m.case.series.key,
                               m.summary.median / est.seconds))  # type: ignore[union-attr]
    return of_points(profile.name, runs, measured_at, points)


def checks(measurements: Iterable[Measurement], target: Target) -> list[Check]:
    """Each judged case predicted without its own series in the calibration."""
    out = []
    for m in judged(measurements):
        try:
            prediction = target.predict(of_case(m.case), leave_out=m.case.series.key)
        except UsageError:
            continue
        out.append(Check(m.case, m.summary.median, prediction))  # type: ignore[union-attr]
    return out


def scaled_checks(source: Iterable[Measurement], measured: Iterable[Measurement],
                  source_profile: Profile, target_profile: Profile) -> list[Check]:
    """GPU → GPU: each case measured on both, predicted on the target from the source's
    measurement scaled term by term."""
    there = {m.case.key: m for m in judged(measured)}
    out = []
    for m in judged(source):
        if m.case.key not in there:
            continue
        try:
            seconds, est = pricing.scaled(m.summary.median, of_case(m.case),  # type: ignore[union-attr]
                                        source_profile, target_profile)
        except UsageError:
            continue
        prediction = Prediction(est, seconds / est.seconds, None,
                                f"the case measured on {source_profile.name}")
        out.append(Check(m.case, there[m.case.key].summary.median, prediction))  # type: ignore[union-attr]
    return out


def crossover_checks(measurements: Sequence[Measurement], found: Sequence[Check]
                     ) -> list[CrossoverCheck]:
    """Each measured sweep's GPU series: its measured crossover (`analysis.crossover`)
    against the one its predictions give against the same CPU cases."""
    predicted = [Predicted(c.case, c.prediction) for c in found]
    cpu = [m for m in measurements if m.case.device == "cpu"]
    by_series = {(s.group, s.gpu): s for s in series(cpu, predicted)}
    out = []
    for measured in crossovers(measurements):
        s = by_series.get((measured.group, measured.gpu))
        sizes = tuple(p.size for p in measured.points)
        if s is None or len(sizes) < 2 or tuple(p.size for p in s.points) != sizes:
            continue
        out.append(CrossoverCheck(measured.gpu, sizes, s.crossover, measured.size))
    return out


def by_workload(c: Check) -> str:
    return c.case.workload


def by_regime(c: Check) -> str:
    return f"{c.prediction.estimate.regime}-bound"


def error_rows(found: Sequence[Check], crossed: Sequence[CrossoverCheck] = (),
               key: Callable[[Check], str] = by_workload) -> list[ErrorRow]:
    """Per workload (or per `key`), then over all; the crossovers count per workload."""
    by: dict[str, list[Check]] = defaultdict(list)
    for c in found:
        by[key(c)].append(c)
    swept: dict[str, list[CrossoverCheck]] = defaultdict(list)
    for x in crossed:
        swept[x.gpu.workload].append(x)
    return [_row(name, by[name], swept[name]) for name in sorted(by)] + (
        [_row(ALL, list(found), list(crossed))] if found else [])


def _row(name: str, found: Sequence[Check], crossed: Sequence[CrossoverCheck]) -> ErrorRow:
    errors = np.array([c.error for c in found])
    inside = [c.inside for c in found if c.inside is not None]
    return ErrorRow(name, len(found), float(np.median(errors)),
                    float(np.quantile(errors, 0.9)),
                    float(np.mean(inside)) if inside else None,
                    (sum(x.steps_apart <= 1 for x in crossed), len(crossed)))
