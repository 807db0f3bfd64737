"""The answer first: per sweep, who wins, from what size, by how much (with its CI).

With GPU series, each is set against the fastest CPU case at each size (the crossover
analysis); without, the fastest CPU series at the largest size is set against the best
of the others. Either way "from size" is where the winner's 95 % CI starts to stay above
1× up to the largest size — a tie anywhere after it moves it on. Pure, like layout.py.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from gpuvs import units
from gpuvs.analysis import speedup
from gpuvs.analysis.crossover import (
    Crossover,
    GroupKey,
    crossovers,
    group_key,
    measured_crossover,
)
from gpuvs.analysis.speedup import Speedup
from gpuvs.model import Case, Caveat, Measurement, Status
from gpuvs.report.layout import sweep_title
from gpuvs.report.plots import series_label
from gpuvs.table import Table

COLUMNS = ("sweep", "who wins", "from size", "by (95 % CI)", "over")
FASTEST_CPU = "the fastest CPU case"


def verdict_table(measurements: Iterable[Measurement]) -> Table:
    """One row per GPU series of each sweep, or one per CPU-only sweep."""
    groups: dict[GroupKey, list[Measurement]] = defaultdict(list)
    for m in measurements:
        groups[group_key(m.case)].append(m)
    rows: list[tuple[str, ...]] = []
    for key, ms in groups.items():
        title = sweep_title(key)
        done = [m for m in ms if m.status is Status.OK and m.summary is not None]
        found = crossovers(done)
        made = ([_gpu_row(title, c) for c in sorted(found, key=_resident_first)] if found
                else [_cpu_row(title, done)])
        rows += [_busy(row, done) for row in made]
    return Table("", COLUMNS, tuple(rows), notes=(
        "from size: the smallest size from which the winner's 95 % CI stays above 1× up to "
        "the largest size measured; by: the ratio of medians at the largest size, with its "
        "bootstrap 95 % CI",), wrapping=frozenset(COLUMNS))


def _busy(row: tuple[str, ...], done: Sequence[Measurement]) -> tuple[str, ...]:
    """A verdict built on cases measured while other work held the machine says so."""
    contended = sum(Caveat.CONTENDED in m.caveats for m in done)
    if not contended:
        return row
    by = COLUMNS.index("by (95 % CI)")
    return (*row[:by], f"{row[by]}; {contended} case(s) of this sweep contended: measured "
                       "on a busy machine", *row[by + 1:])


def _resident_first(c: Crossover) -> tuple[str, str, bool]:
    return (c.gpu.backend, c.gpu.device, c.data != "resident")


def _gpu_row(title: str, c: Crossover) -> tuple[str, ...]:
    gpu = series_label(c.gpu)
    last = c.points[-1]
    if last.verdict == "gpu":
        return (title, gpu, _from(c.points), _by(last), FASTEST_CPU)
    if last.verdict == "cpu":
        inverted = tuple(p.inverse() for p in c.points)
        return (title, FASTEST_CPU, _from(inverted), _by(inverted[-1]), gpu)
    return (title, "tie", "—", _by(last) + " (the CI holds 1×)", f"{gpu} against {FASTEST_CPU}")


def _cpu_row(title: str, done: Sequence[Measurement]) -> tuple[str, ...]:
    by_series: dict[Case, dict[int, Measurement]] = defaultdict(dict)
    for m in done:
        by_series[m.case.series][m.case.size] = m
    if not by_series:
        return (title, "—", "—", "no case finished", "")
    if len(by_series) == 1:
        only = next(iter(by_series))
        return (title, series_label(only), "—", "nothing to compare with", "")
    largest = max(n for at in by_series.values() for n in at)
    winner = min((s for s in by_series if largest in by_series[s]),
                 key=lambda s: by_series[s][largest].summary.median)  # type: ignore[union-attr]
    points = []
    for n in sorted(by_series[winner]):
        others = [at[n] for s, at in by_series.items() if s != winner and n in at]
        if others:
            best = min(others, key=lambda m: m.summary.median)  # type: ignore[union-attr]
            points.append((speedup.of(best, by_series[winner][n]), best.case))
    if not points:
        return (title, series_label(winner), "—", "no other series at the same sizes", "")
    last, runner_up = points[-1]
    speedups = tuple(p for p, _ in points)
    if last.verdict != "gpu":  # "gpu" reads "above 1×" here: the winner's CI clears 1
        return (title, "tie", "—", _by(last) + " (the CI holds 1×)",
                f"{series_label(winner)} against {series_label(runner_up)}")
    return (title, series_label(winner), _from(speedups), _by(last), series_label(runner_up))


def _from(points: Sequence[Speedup]) -> str:
    size = measured_crossover(points)
    if size is None:
        return "—"
    if size != points[0].size:
        return units.size(size)
    return "every size" if len(points) > 1 else f"{units.size(size)} (only size)"


def _by(p: Speedup) -> str:
    return f"{p.estimate:.3g}× [{p.low:.3g}, {p.high:.3g}] at {units.size(p.size)}"
