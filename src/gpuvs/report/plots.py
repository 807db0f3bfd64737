"""The report's figures: what each plot shows (pure data), then drawn by Matplotlib.

`all_plots` decides what is drawn — per sweep time against size and the speedup against
size, per device a roofline — as `Plot` values with no Matplotlib in them, so they are
tested as data. `to_svg` and `to_png` draw them (Agg, imported inside the functions). The
SVG is deterministic: each figure's `svg.hashsalt` and `svg.id` are its name, and no
date is written, so the same run always gives the same bytes — and figures inlined into
one page never share an element id.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from gpuvs import units
from gpuvs.analysis import speedup
from gpuvs.analysis.ceilings import peak_for
from gpuvs.analysis.crossover import (
    Crossover,
    GroupKey,
    crossovers,
    group_key,
)
from gpuvs.analysis.speedup import Speedup
from gpuvs.model import Case, Caveat, Ceiling, Measurement, Status
from gpuvs.report.layout import size_axis, sweep_title

# Okabe–Ito: told apart with the common colour-vision deficiencies, and in grey print.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
CEILING_COLOR = "#777777"
CPU_BASELINE = "numpy"  # without a GPU, CPU backends are compared with NumPy's
FIGSIZE = (5.0, 3.3)  # inches: about half a laptop-screen page wide, fonts legible
ROOFLINE_FIGSIZE = (8.0, 4.4)  # full width: the legend goes beside the axes
LEGEND_INSIDE_MAX = 2  # series whose legend may sit inside the axes
ROOFLINE = "roofline"
PNG_DPI = 200


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
    style: str = "solid"  # solid | dashed (end-to-end) | points | ceiling


@dataclass(frozen=True)
class Mark:
    """A vertical line: where a series starts to win."""

    x: float
    label: str
    color: str


@dataclass(frozen=True)
class Plot:
    name: str       # file stem and SVG id, unique in a report: "02-speedup-matmul-…"
    section: str    # the sweep's title, or "roofline"
    title: str
    xlabel: str
    ylabel: str
    series: tuple[Series, ...]
    marks: tuple[Mark, ...] = ()
    unity: bool = False   # draw the 1× line
    caption: str = ""
    xunit: str = "size"   # how tick labels read: see TICKS
    yunit: str = "s"
    xlabels: tuple[str, ...] = ()  # a linear x axis, point i labelled xlabels[i] (runs)


def all_plots(measurements: Iterable[Measurement], ceilings: Sequence[Ceiling] = ()
              ) -> list[Plot]:
    """Every plot of the report, in its order: per sweep time and speedup, then rooflines."""
    ms = [m for m in measurements if m.status is Status.OK and m.summary is not None]
    groups: dict[GroupKey, list[Measurement]] = defaultdict(list)
    for m in ms:
        groups[group_key(m.case)].append(m)
    colors = _colors(ms)
    plots: list[Plot] = []
    for key, group in groups.items():
        title, xlabel = sweep_title(key), size_axis(key).label
        found = crossovers(group)
        plots.append(_time_plot(title, xlabel, group, found, colors))
        speedup = _speedup_plot(title, xlabel, group, found, colors)
        if speedup is not None:
            plots.append(speedup)
    plots += _roofline_plots(ms, ceilings, colors)
    return [_numbered(i, p) for i, p in enumerate(plots, 1)]


def _numbered(i: int, p: Plot) -> Plot:
    slug = re.sub(r"[^a-z0-9]+", "-", p.name.lower()).strip("-")
    return dataclasses.replace(p, name=f"{i:02d}-{slug}")


def series_label(case: Case) -> str:
    """'numpy cpu', 'torch cuda:0 · resident', 'torch cuda:0 · end-to-end'."""
    label = f"{case.backend} {case.device}"
    if case.device != "cpu":
        label += " · " + case.param("data", "resident").replace("_", "-")
    return label


def _colors(ms: Sequence[Measurement]) -> dict[tuple[str, str], str]:
    """One colour per backend and device, the same in every plot of the report."""
    keys = sorted({(m.case.backend, m.case.device) for m in ms})
    return {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(keys)}


def _style(case: Case) -> str:
    return "dashed" if case.param("data") == "end_to_end" else "solid"


def _time_plot(title: str, xlabel: str, group: Sequence[Measurement],
               found: Sequence[Crossover], colors: dict[tuple[str, str], str]) -> Plot:
    by_series: dict[Case, list[Measurement]] = defaultdict(list)
    for m in group:
        by_series[m.case.series].append(m)
    lines = []
    for case, ms in sorted(by_series.items(), key=lambda kv: series_label(kv[0])):
        ms = sorted(ms, key=lambda m: m.case.size)
        lines.append(Series(series_label(case), tuple(float(m.case.size) for m in ms),
                            *_medians_and_cis(ms), colors[(case.backend, case.device)],
                            style=_style(case)))
    return Plot(f"time {title}", title, f"time per call\n{title}", xlabel,
                "time per call (median)", tuple(lines), _marks(found, colors),
                caption="Median time per call with its 95 % CI band; dashed lines pay the "
                        "host↔device copies (end-to-end), solid ones do not (resident). "
                        "Vertical lines: where a GPU series starts to beat the fastest CPU.")


def _medians_and_cis(ms: Sequence[Measurement]
                     ) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
    s = [m.summary for m in ms if m.summary is not None]
    return (tuple(x.median for x in s), tuple(x.ci_low for x in s),
            tuple(x.ci_high for x in s))


def _marks(found: Sequence[Crossover], colors: dict[tuple[str, str], str]) -> tuple[Mark, ...]:
    return tuple(Mark(float(c.size), f"{series_label(c.gpu)} faster from {units.size(c.size)}",
                      colors[(c.gpu.backend, c.gpu.device)])
                 for c in found if c.size is not None)


def _speedup_plot(title: str, xlabel: str, group: Sequence[Measurement],
                  found: Sequence[Crossover], colors: dict[tuple[str, str], str]
                  ) -> Plot | None:
    """GPU series over the fastest CPU case; without a GPU, CPU backends over NumPy."""
    if found:
        pairs = [(c.gpu, c.points) for c in found]
        over, ylabel = "the fastest CPU case", "speedup over the fastest CPU"
    else:
        baseline, pairs = _cpu_pairs(group)
        if baseline is None:
            return None
        over, ylabel = series_label(baseline), f"speedup over {series_label(baseline)}"
    lines = tuple(
        Series(series_label(case), tuple(float(p.size) for p in points),
               tuple(p.estimate for p in points), tuple(p.low for p in points),
               tuple(p.high for p in points), colors[(case.backend, case.device)],
               style=_style(case))
        for case, points in sorted(pairs, key=lambda cp: series_label(cp[0])))
    return Plot(f"speedup {title}", title, f"speedup over {over}\n{title}", xlabel, ylabel, lines,
                _marks(found, colors), unity=True, yunit="×",
                caption=f"Ratio of medians over {over} at each size, with its bootstrap 95 % "
                        "CI; above the 1× line it is faster.")


def _cpu_pairs(group: Sequence[Measurement]
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
            points = tuple(speedup.of(by_series[base][n], at[n]) for n in sizes)
            pairs.append((case, points))
    return base, pairs


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


def to_svg(plot: Plot) -> str:
    """The plot as an `<svg>` element to inline in HTML: no XML prolog, no date."""
    buf = io.StringIO()
    with _figure(plot, {"svg.hashsalt": plot.name, "svg.id": plot.name,
                        "svg.fonttype": "path"}) as fig:
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return _scoped_ids(text[text.index("<svg"):], plot.name)


def _scoped_ids(svg: str, prefix: str) -> str:
    """Prefix every id inside the figure (and each reference to one) with the plot's name.

    Matplotlib numbers its elements per figure (`line2d_5`, glyphs `DejaVuSans-55`), so
    figures inlined into one page would share ids — and a reference resolves to the first
    element of the page with that id, which may belong to another figure.
    """
    root_end = svg.index(">") + 1  # the root keeps its id: the plot's name (svg.id)
    body = re.sub(r'\bid="([^"]+)"', rf'id="{prefix}-\1"', svg[root_end:])
    body = re.sub(r'href="#([^"]+)"', rf'href="#{prefix}-\1"', body)
    body = re.sub(r"url\(#([^)]+)\)", rf"url(#{prefix}-\1)", body)
    return svg[:root_end] + body


def to_png(plot: Plot) -> bytes:
    buf = io.BytesIO()
    with _figure(plot, {}) as fig:
        fig.savefig(buf, format="png", dpi=PNG_DPI)
    return buf.getvalue()


@contextlib.contextmanager
def _figure(plot: Plot, rc: dict[str, Any]) -> Iterator[Any]:
    """The drawn figure, made without pyplot so that nothing keeps it alive afterwards."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    known: Any = {k: v for k, v in rc.items() if k in matplotlib.rcParams}  # svg.id: ≥ 3.9
    # A roofline, or more series than a legend can sit among without hiding points: the
    # legend goes beside the axes, on a wider figure.
    outside = plot.section == ROOFLINE or len(plot.series) > LEGEND_INSIDE_MAX
    with matplotlib.rc_context(known):
        fig = Figure(figsize=ROOFLINE_FIGSIZE if outside else FIGSIZE, layout="constrained")
        _draw(fig, fig.add_subplot(), plot, legend_outside=outside)
        yield fig


def _draw(fig: Any, ax: Any, plot: Plot, legend_outside: bool) -> None:
    ax.set_xscale("linear" if plot.xlabels else "log")
    ax.set_yscale("log")
    for s in plot.series:
        _draw_series(ax, s)
    for mark in plot.marks:
        ax.axvline(mark.x, color=mark.color, linestyle=":", linewidth=1.2, label=mark.label)
    if plot.unity:
        ax.axhline(1.0, color="#333333", linewidth=0.8, label="1× (as fast)")
    ax.set_title(plot.title, fontsize=8.5, loc="left")
    ax.set_xlabel(plot.xlabel, fontsize=8)
    ax.set_ylabel(plot.ylabel, fontsize=8)
    if plot.xlabels:
        ax.set_xticks(range(len(plot.xlabels)), plot.xlabels, rotation=30, ha="right")
    else:
        _ticks(ax.xaxis, ax.get_xlim(), plot.xunit)
    _ticks(ax.yaxis, ax.get_ylim(), plot.yunit)
    ax.tick_params(which="both", labelsize=7.5)
    ax.grid(True, which="major", linewidth=0.4, alpha=0.5)
    if legend_outside:  # many series: inside the axes they would hide the points
        fig.legend(fontsize=7, loc="outside right upper", frameon=False)
    else:
        ax.legend(fontsize=7, loc="best", framealpha=0.85)


TICKS: dict[str, Callable[[float], str]] = {
    "size": lambda x: units.size(round(x)) if x >= 1 else f"{x:g}",
    "s": units.seconds,
    "×": lambda x: f"{x:g}×",
    "FLOP/s": lambda x: units.rate(x, "FLOP/s"),
    "": lambda x: f"{x:g}",
}
WIDE_DECADES = 2.5  # beyond this, label powers of ten only; within it, 1-2-5 steps


def _ticks(axis: Any, limits: tuple[float, float], unit: str) -> None:
    """Log-axis ticks labelled in the quantity's own units (2 µs, 4096, 1.5×)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    lo, hi = sorted(limits)
    wide = lo <= 0 or math.log10(hi / lo) > WIDE_DECADES
    axis.set_major_locator(LogLocator(subs=(1.0,) if wide else (1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda x, _pos: TICKS[unit](x)))
    axis.set_minor_formatter(NullFormatter())


def _draw_series(ax: Any, s: Series) -> None:
    if s.style == "points":
        ax.scatter(s.x, s.y, color=s.color, marker=s.marker, s=22, label=s.label,
                   edgecolors="white", linewidths=0.4, zorder=3)
    elif s.style == "ceiling":
        ax.plot(s.x, s.y, color=s.color, linewidth=1.6, label=s.label)
    else:
        ax.plot(s.x, s.y, color=s.color, marker=s.marker, markersize=3.5,
                linestyle="--" if s.style == "dashed" else "-", linewidth=1.4, label=s.label)
        if s.low and s.high:
            ax.fill_between(s.x, s.low, s.high, color=s.color, alpha=0.2, linewidth=0)
