"""Predicted GPU series set against measured CPU ones: what `gpuvs predict` answers.

A `Target` is the GPU asked about: its profile, where that came from, and the residuals
of its validation run if it had one. Each GPU case of a sweep is predicted, not run
(`Predicted`); a `Series` sets those predictions against the fastest CPU case measured
at each size, as `gpuvs run` sets measured GPU series (`analysis.speedup`), and reads
the predicted crossover off them. Every number here that comes from the model is a
prediction, and the types say so: a measured number is a `Measurement`.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gpuvs import units
from gpuvs.analysis.crossover import GroupKey, group_key
from gpuvs.analysis.speedup import best_cpu_by_size, data_of
from gpuvs.errors import UsageError
from gpuvs.model import Case, Caveat, Measurement
from gpuvs.predicting import pricing, residuals
from gpuvs.predicting.profile import SUFFIX, Found, load_file, named, unusable
from gpuvs.predicting.residuals import Prediction, Residuals
from gpuvs.predicting.work import Work, of_case, tf32_words


@dataclass(frozen=True)
class Target:
    """The GPU predicted for: its profile and, where it was validated, its residuals."""

    found: Found
    residuals: Residuals | None
    skipped: tuple[str, ...] = ()  # files of the profile directory skipped, and why

    @property
    def name(self) -> str:
        return self.found.profile.name

    def predict(self, work: Work, leave_out: str = "") -> Prediction:
        """`work` on this GPU; UsageError when the profile lacks a ceiling it needs."""
        estimate = pricing.estimate(work, self.found.profile)
        if self.residuals is None:
            return Prediction(estimate)
        return self.residuals.predict(estimate, work.workload, leave_out)

    def lines(self) -> tuple[str, ...]:
        """Where the profile came from, and what its intervals rest on."""
        r = self.residuals
        validated = (
            f"intervals: where 90 % of {len(r.points)} cases validated for {self.name} fell "
            f"({_runs(r.runs)}), each against its prediction made without it"
            if r is not None else
            f"interval: not yet validated for {self.name}: no residuals beside its profile "
            "(benchmarks/predict.py on that GPU writes them), so times are the model's alone")
        return (f"predicted for {self.name} from the {self.found.origin()}", validated)


def _runs(runs: Sequence[str]) -> str:
    """The validation runs, by id where few (`gpuvs show` prints each), else counted."""
    if len(runs) <= 3:
        return f"run {', '.join(runs)}"
    return f"{len(runs)} runs, {runs[0]} … {runs[-1]}"


def target(spec: str | Path) -> Target:
    """The target a profile's name (`--target NAME`) or its file (a Path: `--profile
    FILE`; the library's `target=` also takes a path ending .json or holding a
    separator) names, refused where it predicts no GPU."""
    skipped: tuple[str, ...] = ()
    if isinstance(spec, Path) or spec.endswith(SUFFIX) or os.sep in spec:
        found = load_file(Path(spec))
    else:
        found, skipped = named(spec)
    if why := unusable(found.profile):
        raise UsageError(f"{why}; name a GPU's profile (`gpuvs profiles` lists them)")
    return Target(found, residuals.beside(found), skipped)


@dataclass(frozen=True)
class Predicted:
    """A GPU case predicted, not measured; `reason` says why one could not be."""

    case: Case
    prediction: Prediction | None
    reason: str = ""


def predict_cases(t: Target, cases: Iterable[Case]) -> list[Predicted]:
    """Each case predicted on `t` from its workload's counts."""
    out = []
    for case in cases:
        try:
            out.append(Predicted(case, t.predict(of_case(case))))
        except UsageError as e:
            out.append(Predicted(case, None, str(e)))
    return out


@dataclass(frozen=True)
class Point:
    """One size: the fastest CPU case measured there, and the GPU case predicted."""

    cpu: Measurement
    gpu: Predicted

    @property
    def size(self) -> int:
        return self.gpu.case.size

    @property
    def contended(self) -> bool:
        """The CPU time was measured while other processes took the CPU: it reads slow,
        and the speedup predicted against it high."""
        return Caveat.CONTENDED in self.cpu.caveats

    @property
    def speedup(self) -> float | None:
        """Predicted: the CPU's measured median ÷ the GPU's predicted time."""
        p = self.gpu.prediction
        return self.cpu.summary.median / p.seconds if p and self.cpu.summary else None

    @property
    def speedup_range(self) -> tuple[float, float] | None:
        p = self.gpu.prediction
        if p is None or p.interval is None or self.cpu.summary is None:
            return None
        low, high = p.interval
        return self.cpu.summary.median / high, self.cpu.summary.median / low


@dataclass(frozen=True)
class Series:
    """A predicted GPU series of a sweep against the measured CPU cases of its sizes."""

    group: GroupKey
    gpu: Case                    # the series: its case at size 0
    points: tuple[Point, ...]

    @property
    def data(self) -> str:
        return data_of(self.gpu)

    @property
    def crossover(self) -> int | None:
        """Predicted: the smallest size from which the predicted speedup stays above 1
        up to the largest size (None where it never does)."""
        size = None
        for p in reversed(self.points):
            if p.speedup is None or p.speedup <= 1:
                break
            size = p.size
        return size

    @property
    def low_confidence(self) -> str:
        return next((p.gpu.prediction.low_confidence for p in self.points
                     if p.gpu.prediction and p.gpu.prediction.low_confidence), "")


def series(cpu: Sequence[Measurement], predicted: Sequence[Predicted]) -> list[Series]:
    """Each predicted GPU series against its sweep's fastest CPU case per size, at the
    sizes where a CPU case finished."""
    fastest: dict[GroupKey, dict[int, Measurement]] = {}
    by_group: dict[GroupKey, list[Measurement]] = defaultdict(list)
    for m in cpu:
        by_group[group_key(m.case)].append(m)
    for key, ms in by_group.items():
        fastest[key] = best_cpu_by_size(ms)
    found: dict[tuple[GroupKey, Case], list[Point]] = defaultdict(list)
    for p in sorted(predicted, key=lambda p: p.case.size):
        key = group_key(p.case)
        at = fastest.get(key, {}).get(p.case.size)
        if at is not None:
            found[(key, p.case.series)].append(Point(at, p))
    return [Series(key, gpu, tuple(points)) for (key, gpu), points in found.items()]


@dataclass(frozen=True, repr=False)
class CallForecast:
    """The user's function: its CPU time measured here, its GPU time predicted. Read as
    `gpuvs.compare`'s `Comparison` reads: `speedup` and `speedup_end_to_end` (predicted,
    against the measured CPU), `crossover` (None: one call has no sizes), `to_json()`,
    a one-line repr and a full `str`."""

    name: str
    target: Target
    cpu: Measurement
    work: Work
    resident: Prediction
    end_to_end: Prediction

    @property
    def speedup(self) -> float | None:
        """Predicted, data resident: the measured CPU median ÷ the predicted GPU time."""
        return _ratio(self.cpu, self.resident)

    @property
    def speedup_end_to_end(self) -> float | None:
        """Predicted, copies in and out paid on every call."""
        return _ratio(self.cpu, self.end_to_end)

    @property
    def crossover(self) -> int | None:
        """None: one call has no size axis (a `SweepForecast`'s crossover is a size)."""
        return None

    @property
    def contended(self) -> bool:
        """The CPU time was measured while other processes took the CPU."""
        return Caveat.CONTENDED in self.cpu.caveats

    def assumptions(self) -> tuple[str, ...]:
        """What the prediction assumes that the user may change: TF32 where the call
        multiplies float32 matrices, and a contended CPU time; then what the model
        assumed: each op it priced as a class nearest its own, and how the copies go."""
        said = []
        if self.work.flops and self.work.dtype == "float32":
            said.append(tf32_words(self.work.backend, self.work.tf32, self.work.tf32_why))
        if self.contended:
            said.append(CONTENDED_WORDS)
        return (*said, *dict.fromkeys((*self.resident.estimate.notes,
                                       *self.end_to_end.estimate.notes)))

    def __repr__(self) -> str:
        shown = "—" if self.speedup is None else units.ratio(self.speedup)
        tf32 = (f", TF32 {'on' if self.work.tf32 else 'off'}"
                if self.work.flops and self.work.dtype == "float32" else "")
        return (f"<CallForecast {self.name} on {self.target.name}: CPU "
                f"{_seconds(self.cpu)} measured{' (contended)' * self.contended}, GPU "
                f"{units.seconds(self.resident.seconds)} predicted resident, speedup "
                f"{shown} predicted{tf32}>")

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))

    def __str__(self) -> str:
        lines = [*self.target.lines(),
                 f"{self.name}: CPU measured {_seconds(self.cpu)}; counted "
                 f"{self.work.flops:.3g} FLOP, {units.nbytes(self.work.bytes)} moved, "
                 f"{self.work.launches:.0f} op(s){_by_class(self.work)}",
                 *self.assumptions()]
        for data, p, speedup in (("resident", self.resident, self.speedup),
                                 ("end-to-end", self.end_to_end, self.speedup_end_to_end)):
            span = (f" [{units.seconds(p.interval[0])}, {units.seconds(p.interval[1])}]"
                    if p.interval else " (no interval: not validated)")
            shown = "—" if speedup is None else units.ratio(speedup)
            lines.append(f"  GPU {data}, predicted: {units.seconds(p.seconds)}{span}, "
                         f"predicted speedup {shown} — {p.why()}"
                         + (f" ({p.low_confidence})" if p.low_confidence else ""))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Every CPU number under `measured`, every GPU one under `predicted`."""
        return {"name": self.name, "target": self.target.name,
                "about": [*self.target.lines(), *self.assumptions()],
                "measured": {"cpu_median_s": self.cpu.summary.median if self.cpu.summary
                             else None, "contended": self.contended},
                "work": {"flops": self.work.flops, "bytes": self.work.bytes,
                         "launches": self.work.launches, "dtype": self.work.dtype,
                         "tf32": self.work.tf32, "host_s": self.work.host_s,
                         "by_class": [asdict(t) for t in self.work.tallies]},
                "predicted": {"resident": _predicted(self.resident, self.speedup),
                              "end_to_end": _predicted(self.end_to_end,
                                                       self.speedup_end_to_end)}}

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent)


@dataclass(frozen=True, repr=False)
class SweepForecast:
    """The user's function over sizes: each size's `CallForecast`, and where the GPU is
    predicted to start winning. `speedup` is the largest size's, as a `Comparison`'s."""

    name: str
    points: tuple[tuple[int, CallForecast], ...]

    @property
    def speedup(self) -> float | None:
        """Predicted, data resident, at the largest size."""
        return self.points[-1][1].speedup if self.points else None

    @property
    def speedup_end_to_end(self) -> float | None:
        return self.points[-1][1].speedup_end_to_end if self.points else None

    @property
    def crossover(self) -> int | None:
        """Predicted, data resident: the smallest size from which the predicted speedup
        stays above 1 up to the largest size (None where it never does)."""
        return _crossover([(n, f.speedup) for n, f in self.points])

    @property
    def crossover_end_to_end(self) -> int | None:
        return _crossover([(n, f.speedup_end_to_end) for n, f in self.points])

    def __repr__(self) -> str:
        sizes = f"{units.size(self.points[0][0])}…{units.size(self.points[-1][0])}" \
            if self.points else "no size"
        at = "never in range" if self.crossover is None else units.size(self.crossover)
        contended = sum(f.contended for _, f in self.points)
        target = self.points[0][1].target.name if self.points else "—"
        return (f"<SweepForecast {self.name} on {target}, sizes {sizes}: GPU predicted "
                f"faster from {at} (resident)"
                + (f", {contended} CPU time(s) contended" if contended else "") + ">")

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))

    def __str__(self) -> str:
        first = self.points[0][1]
        said = dict.fromkeys(a for _, f in self.points for a in f.assumptions())
        lines = [*first.target.lines(), *said,
                 f"{self.name}, per size: CPU measured, GPU predicted"]
        for n, f in self.points:
            lines.append(f"  {units.size(n)}: CPU {_seconds(f.cpu)}"
                         f"{' (contended)' * f.contended}; GPU resident "
                         f"{units.seconds(f.resident.seconds)}, end-to-end "
                         f"{units.seconds(f.end_to_end.seconds)} (predicted); predicted "
                         f"speedup {units.ratio(f.speedup or 0)} resident")
        for data, at in (("resident", self.crossover), ("end-to-end",
                                                        self.crossover_end_to_end)):
            lines.append(f"GPU ({data}) predicted faster from "
                         f"{units.size(at) if at else 'no size measured'}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "crossover": {"resident": self.crossover,
                                                 "end_to_end": self.crossover_end_to_end},
                "points": [{"size": n} | f.to_dict() for n, f in self.points]}

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent)


CONTENDED_WORDS = ("the CPU time was measured while other processes took the CPU "
                   "(contended): it reads slow, and the speedup predicted against it high")


def _ratio(cpu: Measurement, p: Prediction) -> float | None:
    return cpu.summary.median / p.seconds if cpu.summary else None


def _crossover(speedups: Sequence[tuple[int, float | None]]) -> int | None:
    size = None
    for n, speedup in reversed(speedups):
        if speedup is None or speedup <= 1:
            break
        size = n
    return size


def _predicted(p: Prediction, speedup: float | None) -> dict[str, Any]:
    return {"seconds": p.seconds, "interval_s": p.interval, "speedup": speedup,
            "bound": p.estimate.dominant.term, "why": p.why(),
            "low_confidence": p.low_confidence}


def _by_class(work: Work) -> str:
    """' (2 matmul, 1 sort, 3 elementwise; 38 µs of host work beyond them)'."""
    if not work.tallies:
        return ""
    ops = ", ".join(f"{t.ops} {t.op_class}" for t in work.tallies)
    return f" ({ops}; {units.seconds(work.host_s)} of host work beyond them)"


def _seconds(m: Measurement) -> str:
    return units.seconds(m.summary.median) if m.summary else f"{m.status}: {m.reason}"


def document(t: Target, found: Sequence[Series]) -> str:
    """The predictions as JSON: every GPU number under `predicted`, every CPU one under
    `measured`, with the target's profile and what its intervals rest on."""
    def point(p: Point) -> dict[str, object]:
        pr = p.gpu.prediction
        return {"size": p.size, "case": p.gpu.case.key,
                "measured": {"cpu_case": p.cpu.case.key,
                             "cpu_median_s": p.cpu.summary.median if p.cpu.summary else None,
                             "contended": p.contended},
                "predicted": None if pr is None else {
                    "seconds": pr.seconds, "interval_s": pr.interval,
                    "speedup": p.speedup, "bound": pr.estimate.dominant.term,
                    "terms_s": {k.value: v for k, v in pr.estimate.terms.items()},
                    "why": pr.why(), "low_confidence": pr.low_confidence}}

    return json.dumps({
        "target": t.name, "about": list(t.lines()), "profile": t.found.profile.to_dict(),
        "series": [{"series": s.gpu.key, "data": s.data,
                    "predicted_crossover": s.crossover, "points": [point(p) for p in s.points]}
                   for s in found]}, indent=1) + "\n"
