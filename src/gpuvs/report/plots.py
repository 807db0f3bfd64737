"""The report's figures: what each plot shows, as pure data (`report.draw` draws them).

`all_plots` decides what is drawn — per sweep time against size and the speedup against
size, per device a roofline — as `Plot` values with no Matplotlib in them, so they are
tested as data.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gpuvs import units
from gpuvs.analysis import speedup
from gpuvs.analysis.calibration import cases_of
from gpuvs.analysis.ceilings import peak_for
from gpuvs.analysis.crossover import (
    Crossover,
    GroupKey,
    crossovers,
    group_key,
)
from gpuvs.analysis.regression import process_spread
from gpuvs.analysis.speedup import Speedup
from gpuvs.machine import energy
from gpuvs.model import Case, Caveat, Ceiling, Measurement, Status
from gpuvs.report.layout import size_axis, sweep_title

# Okabe–Ito: told apart with the common colour-vision deficiencies, and in grey print.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
CEILING_COLOR = "#777777"
CPU_BASELINE = "numpy"  # without a GPU, CPU backends are compared with NumPy's
ROOFLINE = "roofline"
ENERGY = "energy"
NAME_MAX = 160  # characters of a plot's name (its file's stem, its SVG id) after its number


@dataclass(frozen=True)
class Series:
    """One line (or scatter) of a plot; `low`/`high` draw its 95 % CI band where given."""

    label: str
    x: tuple[float, ...]
    y: tuple[float, ...]
    low: tuple[float, ...] = ()
    high: tuple[float, ...] = ()
    color: str = PALETTE[0]
    marker: str = "o"
    style: str = "solid"  # solid | dashed (end-to-end) | points | ceiling | predicted


@dataclass(frozen=True)
class Mark:
    """Where something starts: with `y`, a ring on a series' own point (the size from
    which a GPU series wins, so that no line of the legend is spent on it and no colour
    shared by two series makes it ambiguous); without, a vertical line in the legend (a
    step in a history)."""

    x: float
    label: str
    color: str
    y: float | None = None


@dataclass(frozen=True)
class Plot:
    name: str       # file stem and SVG id, unique in a report: "02-speedup-matmul-…"
    section: str    # the sweep's title, or "roofline"
    title: str      # what it shows: "time per call"
    xlabel: str
    ylabel: str
    series: tuple[Series, ...]
    marks: tuple[Mark, ...] = ()
    unity: bool = False   # draw the 1× line
    caption: str = ""
    xunit: str = "size"   # how tick labels read: see TICKS
    yunit: str = "s"
    xlabels: tuple[str, ...] = ()  # a linear x axis, point i labelled xlabels[i] (runs)
    # What it is of ("Square matrix product, float32"): under the title where nothing
    # around the plot names it (a PNG for a slide, a notebook), not on the report's page,
    # whose section heading does.
    subject: str = ""


def all_plots(measurements: Iterable[Measurement], ceilings: Sequence[Ceiling] = ()
              ) -> list[Plot]:
    """Every plot of the report, in its order: per sweep time and speedup, then rooflines
    (a run's calibration is no sweep: its probes are in none)."""
    ms = [m for m in cases_of(measurements) if m.status is Status.OK and m.summary is not None]
    groups: dict[GroupKey, list[Measurement]] = defaultdict(list)
    for m in ms:
        groups[group_key(m.case)].append(m)
    colors, spread = colors_of(ms), process_spread(ms)
    plots: list[Plot] = []
    for key, group in groups.items():
        title, xlabel = sweep_title(key), size_axis(key).label
        found = crossovers(group, spread)
        plots.append(time_plot(title, xlabel, group, found, colors))
        speedup = _speedup_plot(title, xlabel, group, found, colors, spread)
        if speedup is not None:
            plots.append(speedup)
    plots += _roofline_plots(ms, ceilings, colors)
    plots += [p for key, group in groups.items()
              if (p := energy_plot(sweep_title(key), group, colors)) is not None]
    return [_numbered(i, p) for i, p in enumerate(plots, 1)]


def _numbered(i: int, p: Plot) -> Plot:
    slug = re.sub(r"[^a-z0-9]+", "-", p.name.lower())[:NAME_MAX].strip("-")
    return dataclasses.replace(p, name=f"{i:02d}-{slug}")


def series_label(case: Case) -> str:
    """'numpy cpu', 'torch cuda:0 · resident', 'torch cuda:0 · end-to-end'."""
    label = case.backend_device
    if case.device != "cpu":
        label += " · " + case.param("data", "resident").replace("_", "-")
    return label


def colors_of(ms: Sequence[Measurement]) -> dict[tuple[str, str], str]:
    """One colour per backend and device, the same in every plot of the report."""
    keys = sorted({(m.case.backend, m.case.device) for m in ms})
    return {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(keys)}


def _style(case: Case) -> str:
    return "dashed" if case.param("data") == "end_to_end" else "solid"


def time_plot(title: str, xlabel: str, group: Sequence[Measurement],
              found: Sequence[Crossover], colors: dict[tuple[str, str], str]) -> Plot:
    """Median time per call against size, a line per series with its CI band; the size
    from which each GPU series beats the fastest CPU case ringed on its line."""
    by_series: dict[Case, list[Measurement]] = defaultdict(list)
    for m in group:
        by_series[m.case.series].append(m)
    lines = []
    for case, ms in sorted(by_series.items(), key=lambda kv: series_label(kv[0])):
        ms = sorted(ms, key=lambda m: m.case.size)
        lines.append(Series(series_label(case), tuple(float(m.case.size) for m in ms),
                            *_medians_and_cis(ms), colors[(case.backend, case.device)],
                            style=_style(case)))
    marks = _marks(found, colors, {s.label: dict(zip(s.x, s.y, strict=True)) for s in lines})
    dashed = any(s.style == "dashed" for s in lines)
    caption = ("Median time per call with its 95 % CI band, one line per "
               + ("series" if dashed else "backend and device")
               + ("; dashed lines pay the host↔device copies in every call (end-to-end), "
                  "solid ones do not (resident)" if dashed else "") + "." + _rings(marks))
    return Plot(f"time {title}", title, "time per call", xlabel, "time per call (median)",
                tuple(lines), marks, caption=caption, subject=title)


def _rings(marks: Sequence[Mark]) -> str:
    return (" A ring marks the size from which that GPU series stays faster than the "
            "fastest CPU case." if marks else "")


def _medians_and_cis(ms: Sequence[Measurement]
                     ) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
    s = [m.summary for m in ms if m.summary is not None]
    return (tuple(x.median for x in s), tuple(x.ci_low for x in s),
            tuple(x.ci_high for x in s))


def _marks(found: Sequence[Crossover], colors: dict[tuple[str, str], str],
           at: dict[str, dict[float, float]]) -> tuple[Mark, ...]:
    """A ring per GPU series where it starts to win, on its own line's point there."""
    return tuple(Mark(float(c.size), f"{series_label(c.gpu)} faster from {units.size(c.size)}",
                      colors[(c.gpu.backend, c.gpu.device)],
                      at.get(series_label(c.gpu), {}).get(float(c.size)))
                 for c in found if c.size is not None)


def _speedup_plot(title: str, xlabel: str, group: Sequence[Measurement],
                  found: Sequence[Crossover], colors: dict[tuple[str, str], str],
                  spread: Mapping[tuple[str, str], float]) -> Plot | None:
    """GPU series over the fastest CPU case; without a GPU, CPU backends over NumPy."""
    if found:
        pairs = [(c.gpu, c.points) for c in found]
        over, ylabel = "the fastest CPU case", "speedup over the fastest CPU"
    else:
        baseline, pairs = _cpu_pairs(group, spread)
        if baseline is None:
            return None
        over, ylabel = series_label(baseline), f"speedup over {series_label(baseline)}"
    lines = tuple(
        Series(series_label(case), tuple(float(p.size) for p in points),
               tuple(p.estimate for p in points), tuple(p.low for p in points),
               tuple(p.high for p in points), colors[(case.backend, case.device)],
               style=_style(case))
        for case, points in sorted(pairs, key=lambda cp: series_label(cp[0])))
    marks = _marks(found, colors, {s.label: dict(zip(s.x, s.y, strict=True)) for s in lines})
    return Plot(f"speedup {title}", title, f"speedup over {over}", xlabel, ylabel, lines,
                marks, unity=True, yunit="×", subject=title,
                caption=f"Ratio of medians over {over} at each size, with the 95 % interval "
                        "a repeat's ratio lands in; above the 1× line it is faster."
                        + _rings(marks))


def _cpu_pairs(group: Sequence[Measurement], spread: Mapping[tuple[str, str], float]
               ) -> tuple[Case | None, list[tuple[Case, tuple[Speedup, ...]]]]:
    """Each other CPU series against the baseline series, at the sizes both ran."""
    by_series: dict[Case, dict[int, Measurement]] = defaultdict(dict)
    for m in group:
        if m.case.device == "cpu":
            by_series[m.case.series][m.case.size] = m
    if len(by_series) < 2:
        return None, []
    base = min(by_series, key=lambda c: (c.backend != CPU_BASELINE, c.backend))
    pairs = []
    for case, at in by_series.items():
        sizes = sorted(set(at) & set(by_series[base]))
        if case != base and sizes:
            points = tuple(speedup.of(by_series[base][n], at[n], spread) for n in sizes)
            pairs.append((case, points))
    return base, pairs


def energy_plot(title: str, group: Sequence[Measurement],
                colors: dict[tuple[str, str], str]) -> Plot | None:
    """Energy per call against time per call, where measured: a line per backend and
    device (and data mode), a point per size; None where no case has an energy figure."""
    by_series: dict[Case, list[tuple[int, float, float]]] = defaultdict(list)
    for m in group:
        found = energy.of(m)
        if found is not None and m.summary is not None:
            by_series[m.case.series].append((m.case.size, m.summary.median, found.per_call_j))
    if not by_series:
        return None
    lines = tuple(
        Series(series_label(case) + ("" if _measured(group, case) else " (declared)"),
               tuple(t for _, t, _ in sorted(points)), tuple(j for _, _, j in sorted(points)),
               color=colors[(case.backend, case.device)], style=_style(case))
        for case, points in sorted(by_series.items(), key=lambda kv: series_label(kv[0])))
    return Plot(f"energy {title}", ENERGY, f"energy per call against time per call\n{title}",
                "time per call (median)", "energy per call", lines, xunit="s", yunit="J",
                caption="One point per backend and device at each size, joined from the "
                        "smallest size up: further left is faster, lower spends less energy. "
                        "GPU: the board's energy (NVML's counter); CPU: RAPL's package and "
                        "DRAM, or a declared power (a straight line: watts × time).")


def _measured(group: Sequence[Measurement], series: Case) -> bool:
    """Whether the series' energy was measured, not declared."""
    return all(f.measured for m in group if m.case.series == series
               and (f := energy.of(m)) is not None)


def _roofline_plots(ms: Sequence[Measurement], ceilings: Sequence[Ceiling],
                    colors: dict[tuple[str, str], str]) -> list[Plot]:
    """Per device: each case at its arithmetic intensity and achieved FLOP/s, under the
    roofs of the measured ceilings (peak FLOP/s per dtype, memory bandwidth)."""
    placed: dict[str, list[Measurement]] = defaultdict(list)
    for m in ms:
        if m.counters.get("flops") and m.counters.get("bytes_moved"):
            placed[m.case.device].append(m)
    plots = []
    for device, cases in sorted(placed.items()):
        points = _roofline_points(cases, colors)
        roofs = _roofs(cases, ceilings, [x for s in points for x in s.x])
        caption = ("Each case at its arithmetic intensity (FLOP per byte moved) and achieved "
                   "FLOP/s; the grey roofs are this machine's measured ceilings: "
                   "min(peak FLOP/s, bandwidth × intensity)." if roofs else
                   f"No measured ceilings for {device}, so no roofs: run `gpuvs ceilings` on "
                   "this machine, then `gpuvs report` again. Each case is placed at its "
                   "arithmetic intensity and achieved FLOP/s.")
        skipped = sum(1 for m in ms if m.case.device == device) - len(cases)
        if skipped:
            caption += f" {skipped} case(s) without arithmetic or bytes counted are not shown."
        plots.append(Plot(f"roofline {device}", ROOFLINE, f"roofline · {device}",
                          "arithmetic intensity (FLOP/byte)", "achieved FLOP/s",
                          (*roofs, *points), caption=caption, xunit="", yunit="FLOP/s"))
    return plots


def _roofline_points(cases: Sequence[Measurement], colors: dict[tuple[str, str], str]
                     ) -> list[Series]:
    """One scatter per sweep and series: colour by backend, marker by sweep."""
    sweeps = list(dict.fromkeys(sweep_title(group_key(m.case)) for m in cases))
    by: dict[tuple[str, str], list[Measurement]] = defaultdict(list)
    for m in sorted(cases, key=lambda m: m.case.size):
        by[(sweep_title(group_key(m.case)), series_label(m.case))].append(m)
    out = []
    for (sweep, label), group in sorted(by.items()):
        case = group[0].case
        out.append(Series(
            f"{sweep} · {label}",
            tuple(m.counters["flops"] / m.counters["bytes_moved"] for m in group),
            tuple(m.counters["flops"] / m.summary.median for m in group),  # type: ignore[union-attr]
            color=colors[(case.backend, case.device)],
            marker=MARKERS[sweeps.index(sweep) % len(MARKERS)], style="points"))
    return out


def _roofs(cases: Sequence[Measurement], ceilings: Sequence[Ceiling], xs: Sequence[float]
           ) -> list[Series]:
    """One roof per distinct (peak, bandwidth) that binds a plotted case."""
    found: dict[tuple[float, float], str] = {}
    for m in cases:
        peaks = peak_for(m.case, ceilings, tf32=Caveat.TF32_ON in m.caveats,
                         working_set=m.counters.get("working_set_bytes"))
        if "bytes" in peaks:
            label = f"{m.case.dtype} peak {units.rate(peaks['flops'], 'FLOP/s')}, " \
                if "flops" in peaks else ""
            found[(peaks.get("flops", math.inf), peaks["bytes"])] = (
                label + f"bandwidth {units.rate(peaks['bytes'], 'B/s')}")
    if not found or not xs:
        return []
    ridges = [f / b for f, b in found if math.isfinite(f)]
    lo, hi = min([*xs, *ridges]) / 10, max([*xs, *ridges]) * 10
    grid = tuple(lo * (hi / lo) ** (i / 64) for i in range(65))
    return [Series(label, grid, tuple(min(flops, bw * x) for x in grid), color=CEILING_COLOR,
                   style="ceiling")
            for (flops, bw), label in sorted(found.items(), key=lambda kv: kv[1])]
