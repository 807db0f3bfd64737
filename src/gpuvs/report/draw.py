"""`Plot` values drawn by Matplotlib: inline SVG for the page, PNG for slides.

Matplotlib (Agg) is imported inside the functions, and no pyplot: nothing keeps a figure
alive afterwards. The SVG is deterministic: each figure's `svg.hashsalt` and `svg.id` are
its name, and no date is written, so the same run always gives the same bytes — and
figures inlined into one page never share an element id.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable
from typing import Any, TypeVar

from gpuvs import units
from gpuvs.report.plots import ROOFLINE, Plot, Series

FIGSIZE = (5.0, 3.3)  # inches: about half a laptop-screen page wide, fonts legible
ROOFLINE_FIGSIZE = (8.0, 4.4)  # full width: the legend goes beside the axes
LEGEND_INSIDE_MAX = 2  # series whose legend may sit inside the axes
PNG_DPI = 200
# A title, label or legend entry (`shown`), per line: the longest gpuvs draws is about
# 120 characters ("Two GRU forwards as the post's first timing (autograd on, first
# call), by hidden size, float32 · as written · torch cpu").
TEXT_MAX, TEXT_LINES = 160, 3
ID_MAX = 200  # characters of an SVG id: a plot's number and NAME_MAX
T = TypeVar("T")


def to_svg(plot: Plot) -> str:
    """The plot as an `<svg>` element to inline in HTML: no XML prolog, no date."""
    def svg(fig: Any) -> str:
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
        return buf.getvalue()

    ident = element_id(plot.name)
    text = _saved(plot, {"svg.hashsalt": ident, "svg.id": ident, "svg.fonttype": "path"}, svg)
    return _scoped_ids(text[text.index("<svg"):], ident)


def element_id(name: str) -> str:
    """A plot's name as an SVG id: letters, digits and dashes only. The page inlines the
    SVG unescaped, and a name may come from a run file (a workload called `"><script>`)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", name)[:ID_MAX].strip("-") or "plot"


def shown(text: str) -> str:
    """Text drawn on a plot: at most TEXT_LINES lines of TEXT_MAX characters (a 10 KB name
    drawn as glyph paths once made a 316 MB page), each `$` literal — Matplotlib reads
    text between two as mathematics, and a name such as `${a}{b$` raised instead."""
    lines = [line if len(line) <= TEXT_MAX else line[:TEXT_MAX - 1] + "…"
             for line in text.split("\n")[:TEXT_LINES]]
    return "\n".join(lines).replace("$", r"\$")


def _scoped_ids(svg: str, prefix: str) -> str:
    """Prefix every id inside the figure (and each reference to one) with the plot's name.

    Matplotlib numbers its elements per figure (`line2d_5`, glyphs `DejaVuSans-55`), so
    figures inlined into one page would share ids — and a reference resolves to the first
    element of the page with that id, which may belong to another figure.
    """
    root_end = svg.index(">") + 1  # the root keeps its id: the plot's name (svg.id)
    body = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}-{m[1]}"', svg[root_end:])
    body = re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}-{m[1]}"', body)
    body = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}-{m[1]})", body)
    return svg[:root_end] + body


def to_png(plot: Plot) -> bytes:
    def png(fig: Any) -> bytes:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=PNG_DPI)
        return buf.getvalue()

    return _saved(plot, {}, png)


def _saved(plot: Plot, rc: dict[str, Any], save: Callable[[Any], T]) -> T:
    """`plot` saved by `save`, from a figure made without pyplot (nothing keeps it alive
    afterwards). The legend is checked on the figure as saved, whose drawing laid it out:
    a second drawing only to place the legend would double the cost of every plot, and
    only a legend that hides data costs a second figure (beside the axes)."""
    import matplotlib

    matplotlib.use("Agg")
    known: Any = {k: v for k, v in rc.items() if k in matplotlib.rcParams}  # svg.id: ≥ 3.9
    with matplotlib.rc_context(known):
        outside = _legend_beside(plot)
        fig, legend = _new_figure(plot, outside)
        saved = save(fig)
        if not outside and _hides_data(fig.axes[0], legend, plot):
            saved = save(_new_figure(plot, outside=True)[0])
    return saved


def figure(plot: Plot) -> Any:
    """`plot` as a Matplotlib Figure, with no pyplot and no backend chosen (a notebook
    shows it as it is); the legend beside the axes, on a wider figure, where inside them
    it would hide data."""
    outside = _legend_beside(plot)
    fig, legend = _new_figure(plot, outside)
    if not outside and legend is not None:
        fig.draw_without_rendering()  # lays the figure out and places the legend
        if _hides_data(fig.axes[0], legend, plot):
            fig, _ = _new_figure(plot, outside=True)
    return fig


def onto(plot: Plot, ax: Any) -> Any:
    """`plot` drawn on the caller's Axes (a notebook's), as the report draws it; the legend
    beside the axes where inside it would hide data. Returns the Axes' Figure."""
    _draw(ax, plot)
    outside = _legend_beside(plot)
    if not outside and (legend := _legend(ax, outside=False)) is not None:
        ax.figure.draw_without_rendering()  # lays the figure out and places the legend
        outside = _hides_data(ax, legend, plot)
    if outside:
        _legend(ax, outside=True)
    return ax.figure


def _legend_beside(plot: Plot) -> bool:
    """A roofline, or more series than a legend can sit among without hiding points."""
    labelled = [s for s in plot.series if s.label]
    return plot.section == ROOFLINE or len(labelled) > LEGEND_INSIDE_MAX


def _new_figure(plot: Plot, outside: bool) -> tuple[Any, Any]:
    """The figure and its legend; with the legend beside the axes, a wider figure."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=ROOFLINE_FIGSIZE if outside else FIGSIZE, layout="constrained")
    ax = fig.add_subplot()
    _draw(ax, plot)
    return fig, _legend(ax, outside)


def _legend(ax: Any, outside: bool) -> Any:
    """Beside the axes, or inside where Matplotlib finds the least in its way; None when
    nothing is labelled (the x axis names each point)."""
    if not ax.get_legend_handles_labels()[0]:
        return None
    if outside:
        return ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                         borderaxespad=0.0, frameon=False)
    return ax.legend(fontsize=7, loc="best", framealpha=0.85)


def _hides_data(ax: Any, legend: Any, plot: Plot) -> bool:
    """Whether the legend inside the axes, on a figure already drawn (which placed it),
    lies over a series: a point, a CI bound, or the line between two of them.
    Matplotlib's "best" place is the least bad, not a free one."""
    from matplotlib.path import Path

    if legend is None:
        return False
    box = legend.get_window_extent()
    for s in plot.series:
        for ys in filter(None, (s.y, s.low, s.high)):
            points = ax.transData.transform(list(zip(s.x, ys, strict=True)))
            if (any(box.contains(x, y) for x, y in points)
                    or Path(points).intersects_bbox(box, filled=False)):
                return True
    return False


def _draw(ax: Any, plot: Plot) -> None:
    ax.set_xscale("linear" if plot.xlabels else "log")
    ax.set_yscale("log")
    for s in plot.series:
        _draw_series(ax, s)
    for mark in plot.marks:
        ax.axvline(mark.x, color=mark.color, linestyle=":", linewidth=1.2,
                   label=shown(mark.label))
    if plot.unity:
        ax.axhline(1.0, color="#333333", linewidth=0.8, label="1× (as fast)")
    ax.set_title(shown(plot.title), fontsize=8.5, loc="left")
    ax.set_xlabel(shown(plot.xlabel), fontsize=8)
    ax.set_ylabel(shown(plot.ylabel), fontsize=8)
    if plot.xlabels:
        ax.set_xticks(range(len(plot.xlabels)), [shown(x) for x in plot.xlabels],
                      rotation=30, ha="right")
        ax.set_xlim(-0.5, len(plot.xlabels) - 0.5)
    else:
        _ticks(ax.xaxis, ax.get_xlim(), plot.xunit)
    _ticks(ax.yaxis, ax.get_ylim(), plot.yunit)
    ax.tick_params(which="both", labelsize=7.5)
    ax.grid(True, which="major", linewidth=0.4, alpha=0.5)


TICKS: dict[str, Callable[[float], str]] = {
    "size": lambda x: units.size(round(x)) if x >= 1 else f"{x:g}",
    "s": units.seconds,
    "×": lambda x: f"{x:g}×",
    "FLOP/s": lambda x: units.rate(x, "FLOP/s"),
    "J": units.joules,
    "": lambda x: f"{x:g}",
}
WIDE_DECADES = 2.5  # beyond this, label powers of ten only; within it, 1-2-5 steps
NARROW_DECADES = 0.7  # within this, every step from 1 to 9: a 1-2-5 tick may not fall in


def _ticks(axis: Any, limits: tuple[float, float], unit: str) -> None:
    """Log-axis ticks labelled in the quantity's own units (2 µs, 4096, 1.5×)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    lo, hi = sorted(limits)
    decades = math.log10(hi / lo) if lo > 0 else math.inf
    subs = ((1.0,) if decades > WIDE_DECADES else (1.0, 2.0, 5.0) if decades > NARROW_DECADES
            else tuple(float(k) for k in range(1, 10)))
    axis.set_major_locator(LogLocator(subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda x, _pos: TICKS[unit](x)))
    axis.set_minor_formatter(NullFormatter())


def _draw_series(ax: Any, s: Series) -> None:
    label = shown(s.label)
    if s.style == "points":
        ax.scatter(s.x, s.y, color=s.color, marker=s.marker, s=22, label=label,
                   edgecolors="white", linewidths=0.4, zorder=3)
        if s.low and s.high:  # each point's 95 % CI as an error bar
            ax.errorbar(s.x, s.y, yerr=([y - lo for y, lo in zip(s.y, s.low, strict=True)],
                                        [hi - y for y, hi in zip(s.y, s.high, strict=True)]),
                        fmt="none", ecolor=s.color, elinewidth=1.2, capsize=3)
    elif s.style == "ceiling":
        ax.plot(s.x, s.y, color=s.color, linewidth=1.6, label=label)
    elif s.style == "predicted":  # the model's numbers: dashed, hollow, a lighter band
        ax.plot(s.x, s.y, color=s.color, marker=s.marker, markersize=4.5,
                markerfacecolor="white", linestyle=(0, (5, 2.5)), linewidth=1.4,
                label=label)
        if s.low and s.high:
            ax.fill_between(s.x, s.low, s.high, color=s.color, alpha=0.1, linewidth=0)
    else:
        ax.plot(s.x, s.y, color=s.color, marker=s.marker, markersize=3.5,
                linestyle="--" if s.style == "dashed" else "-", linewidth=1.4, label=label)
        if s.low and s.high:
            ax.fill_between(s.x, s.low, s.high, color=s.color, alpha=0.2, linewidth=0)
