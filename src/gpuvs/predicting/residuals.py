"""What a validation run on the real GPU taught the model: its calibration and intervals.

`benchmarks/predict.py` measures the cases it predicts on the target GPU and keeps, for
each, the ratio of the measured time to the model's (`Residual`). Shipped beside the
profile (`NAME.residuals.json`), they give every later prediction three things:

- a **calibration**: the median ratio of like cases — those of the same workload in the
  same regime (the dominant term), else every case in that regime, else every case. A
  probe's dispatch cost is one op in a loop, its copy one array into memory used before;
  a workload's ops and copies cost a steady multiple of them. The user's code is
  calibrated by the validated functions measured on the target itself where there are
  enough (`Residual.measured_on`): a profile's probes are one process's, and a
  launch-bound probe lands in one of two groups (docs/accuracy.md), so its functions'
  ratios belong to that GPU;
- an **interval**: each validated case was also predicted as if its own series had not
  been measured; the ranks of measured ÷ predicted over the cases of its regime that
  hold a new case's ratio nine times in ten (`conformal`), applied to the prediction —
  measured spread, not a guess;
- a **confidence**: a workload whose cases were missed by more than TARGET_ERROR
  (median, each predicted without its own series) is predicted with low confidence,
  and the prediction says so with the number.

Without residuals for a target there is neither calibration nor interval, and a
prediction says its interval is not yet validated.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from gpuvs.errors import UsageError
from gpuvs.predicting.pricing import Estimate
from gpuvs.predicting.profile import RESIDUALS_SUFFIX, Found, read_bounded
from gpuvs.store.export import shorten
from gpuvs.store.output import write_atomic

FORMAT_VERSION = 1
TARGET_ERROR = 0.25   # the bar for CPU → GPU: a workload past it is low-confidence
MIN_GROUP = 5         # fewer like cases than this: the next, wider group calibrates
COVERAGE = 0.90       # the interval's: a new case's measured time inside it nine times in ten
USERS = ""            # the workload of the user's own code: none of gpuvs's


@dataclass(frozen=True)
class Residual:
    """One validated case: its workload, its regime, its series (what is left out when
    it is predicted for the error table) and measured ÷ modelled time per call; for a
    validated function, the GPU (profile name) it was measured and priced on."""

    workload: str
    regime: str
    series: str
    ratio: float
    measured_on: str = ""


@dataclass(frozen=True)
class Prediction:
    """A predicted time per call: the model's estimate, calibrated where validated."""

    estimate: Estimate
    factor: float = 1.0                          # the calibration applied
    spread: tuple[float, float] | None = None    # measured ÷ predicted: `conformal`
    basis: str = ""                              # the like cases, in words
    low_confidence: str = ""                     # why not to rely on it, where that holds

    @property
    def seconds(self) -> float:
        return self.estimate.seconds * self.factor

    @property
    def interval(self) -> tuple[float, float] | None:
        if self.spread is None:
            return None
        return self.seconds * self.spread[0], self.seconds * self.spread[1]

    @property
    def validated(self) -> bool:
        return self.spread is not None

    def why(self) -> str:
        """The bound in words, then what the validation run did to it (an unvalidated
        target says so once, above its table, not in every row)."""
        if not self.validated:
            return self.estimate.why
        return f"{self.estimate.why}; × {self.factor:.3g}, the median of {self.basis}"


@dataclass(frozen=True)
class Residuals:
    target: str                 # the profile's name
    runs: tuple[str, ...]       # the validation runs they came from
    measured_at: str
    points: tuple[Residual, ...]

    def predict(self, estimate: Estimate, workload: str, leave_out: str = "") -> Prediction:
        """`estimate` calibrated and given its interval; with `leave_out`, as if that
        series had not been measured (how the error table predicts a validated case)."""
        points = [p for p in self.points if p.series != leave_out]
        found = _factor(points, workload, estimate.regime, self.target)
        if found is None:
            return Prediction(estimate)
        factor, basis = found
        spread = self._spread(workload, estimate.regime, leave_out)
        return Prediction(estimate, factor, spread, basis,
                          self.low_confidence(workload, estimate.regime))

    def low_confidence(self, workload: str, regime: str) -> str:
        """Why `workload`'s predictions are weak on this target, or "" (for the user's
        code, the validated functions of its regime stand for it, else every case of its
        regime)."""
        key = workload
        if workload == USERS:
            key = _yours(regime)
            if self.errors.get(key, (0.0, 0))[1] < MIN_GROUP:
                key = f"{regime}-bound"
        error = self.errors.get(key)
        if error is None or error[0] <= TARGET_ERROR:
            return ""
        what = key if key.endswith(" functions") else f"{key} cases"
        return (f"low confidence: {self.target}'s validation missed {what} by "
                f"{error[0]:.0%} (median of {error[1]}, each predicted without its series)")

    @cached_property
    def errors(self) -> dict[str, tuple[float, int]]:
        """Median error of the cross-validated predictions per workload and per regime
        (`{regime}-bound`): |predicted − measured| ÷ measured."""
        by: dict[str, list[float]] = {}
        for p, q in zip(self.points, self._cross_validated, strict=True):
            for key in (_yours(p.regime) if p.workload == USERS else p.workload,
                        f"{p.regime}-bound"):
                by.setdefault(key, []).append(abs(1 / q - 1))
        return {k: (float(np.median(v)), len(v)) for k, v in by.items()}

    @cached_property
    def _cross_validated(self) -> tuple[float, ...]:
        """Each point's measured ÷ predicted, its series left out of the calibration
        (1 where nothing else calibrates it)."""
        out = []
        for p in self.points:
            found = _factor([o for o in self.points if o.series != p.series], p.workload,
                            p.regime, p.measured_on or self.target)
            out.append(p.ratio / found[0] if found else 1.0)
        return tuple(out)

    def _spread(self, workload: str, regime: str, leave_out: str) -> tuple[float, float]:
        """The interval (`conformal`) of the cross-validated ratios of `regime`'s cases —
        for the user's code, the validated functions' first, those measured on the target
        before the rest — (of every case, where the regime has too few)."""
        pairs = [(p, q) for p, q in zip(self.points, self._cross_validated, strict=True)
                 if p.series != leave_out and (workload == USERS or p.workload != USERS)]
        qs = [q for p, q in pairs if p.regime == regime and p.workload == USERS
              and p.measured_on == self.target]
        if len(qs) < MIN_GROUP:
            qs = [q for p, q in pairs if p.regime == regime and p.workload == USERS]
        if workload != USERS or len(qs) < MIN_GROUP:
            qs = [q for p, q in pairs if p.regime == regime]
        if len(qs) < MIN_GROUP:
            qs = [q for _, q in pairs]
        return conformal(qs)

    def to_dict(self) -> dict[str, Any]:
        return {"format_version": FORMAT_VERSION, "target": self.target,
                "runs": list(self.runs), "measured_at": self.measured_at,
                "points": [{k: v for k, v in asdict(p).items()
                            if k != "measured_on" or v} for p in self.points]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str) -> Residuals:
        if not isinstance(d, Mapping) or d.get("format_version") != FORMAT_VERSION:
            raise UsageError(f"{where} is not a gpuvs residuals file of format "
                             f"{FORMAT_VERSION}; benchmarks/predict.py writes one")
        try:
            return of_points(str(d["target"]), [str(r) for r in d["runs"]],
                             str(d["measured_at"]),
                             [Residual(str(p["workload"]), str(p["regime"]), str(p["series"]),
                                       float(p["ratio"]), str(p.get("measured_on", "")))
                              for p in d["points"]])
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise UsageError(f"{where} is not a complete residuals file: "
                             f"{shorten(str(err))}") from None


def conformal(ratios: Sequence[float], coverage: float = COVERAGE) -> tuple[float, float]:
    """The interval of cross-validated ratios that holds a new, like case's ratio with
    probability `coverage`, each tail half the rest: of n ratios, sorted, the
    ⌊(n + 1)·a⌋-th and the ⌈(n + 1)·(1 − a)⌉-th, a = (1 − coverage) ÷ 2 (split
    conformal prediction: the new case is one more draw beside the n, and each rank
    of n + 1 is equally likely to be its). The 5th and 95th percentiles of the n
    themselves, as gpuvs took before, hold it less often the fewer there are: on 24
    functions never seen (2026-11-27) 79 % of the measured times fell inside, against
    81–87 % for the cases they were read from. Past the ranks n holds (fewer than
    19 ratios for 90 %), the extremes: the interval then holds a new case less often
    than it says, which the validation's own figures show."""
    ordered = sorted(ratios)
    n, tail = len(ordered), (1 - coverage) / 2
    low = math.floor((n + 1) * tail + 1e-9)  # (1 − 0.9) ÷ 2 is 0.04999…: 40 × it is 2
    high = math.ceil((n + 1) * (1 - tail) - 1e-9)
    return float(ordered[max(low, 1) - 1]), float(ordered[min(high, n) - 1])


def _yours(regime: str) -> str:
    """The key of the validated functions of `regime` (`benchmarks/corpus.py`'s)."""
    return f"{regime}-bound functions"


def _factor(points: Sequence[Residual], workload: str, regime: str, target: str
            ) -> tuple[float, str] | None:
    """The median ratio of the narrowest group of like cases with MIN_GROUP of them (the
    widest, all cases, with any), and the group in words. gpuvs's workloads are
    calibrated by their cases alone, each in its regime. The user's code is calibrated
    by the validated functions (`benchmarks/corpus.py`: ordinary functions measured on a
    GPU) measured on `target`, whatever their regime, else by every validated function's
    case. One regime's functions did no better than all of them, pooled over two GPUs or
    on one (each of the corpus's five sets predicted with the other four's calibration,
    2026-11-28: 31.5, 29.9, 33.0, 31.3 and 33.6 % against 29.4, 25.4, 33.5, 29.9 and
    33.1 % median error, data resident; on the H200's sets, 30.8 % against 24.4 %). The
    target's own functions do better than both GPUs' together: a profile's probes are one
    VM's and one process's, and its functions' ratios belong to it. On the H200 the
    launch-bound functions ran at 0.78–0.89× the pooled calibration in each of three
    sets; the seventh set, calibrated by the fifth and sixth alone, read 23.3 % instead
    of 31.1 % (docs/prediction.md)."""
    if workload != USERS:
        points = [p for p in points if p.workload != USERS]
    mine = [p for p in points if p.workload == workload
            and (workload == USERS or p.regime == regime)]
    there = [p for p in mine if workload == USERS and p.measured_on == target]
    groups = ((f"validated functions measured on {target}", [p.ratio for p in there]),
              (f"{regime}-bound {workload} cases" if workload else "validated function cases",
               [p.ratio for p in mine]),
              (f"{regime}-bound cases", [p.ratio for p in points if p.regime == regime]),
              ("validated cases", [p.ratio for p in points]))
    for i, (words, ratios) in enumerate(groups):
        if len(ratios) >= MIN_GROUP or ratios and i == len(groups) - 1:
            return float(np.median(ratios)), f"{len(ratios)} {words}"
    return None


def of_points(target: str, runs: Iterable[str], measured_at: str,
              points: Iterable[Residual]) -> Residuals:
    """Residuals from validated cases (a ratio that is not positive and finite says
    nothing about the model)."""
    return Residuals(target, tuple(runs), measured_at,
                     tuple(p for p in points if p.ratio > 0 and np.isfinite(p.ratio)))


def save(residuals: Residuals, path: Path) -> None:
    write_atomic(path, json.dumps(residuals.to_dict(), indent=1) + "\n")


def beside(found: Found) -> Residuals | None:
    """The residuals shipped or saved beside a profile, if its target was validated."""
    path = found.sibling(RESIDUALS_SUFFIX)
    if not path.is_file():
        return None
    # untrusted as a profile is: bounded in size and nesting, one line if bad
    return Residuals.from_dict(read_bounded(path, "residuals"), str(path))
