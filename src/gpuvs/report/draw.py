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

FIGSIZE = (5.0, 3.3)  # inches: drawn at 1:1 in the page (480 px wide), two side by side
ROOFLINE_FIGSIZE = (8.0, 4.4)  # full width: its legend's labels name sweeps
LEGEND_INSIDE_MAX = 2  # series whose legend may sit inside the axes
LEGEND_ROW_IN = 0.21  # inches each row of a legend below the axes adds to the figure
CHAR_PT, COLUMN_GAP_PT = 5.2, 30.0  # a legend label's character, and a column's handle
# Points. The page shows a plot at its own size (1 pt = 4/3 CSS px): tick labels and the
# legend at 8.5 pt are 11 px, readable in a screenshot shown at half its pixels.
TITLE_PT, LABEL_PT, TICK_PT, LEGEND_PT = 10.0, 9.0, 8.5, 8.5
PNG_DPI = 200
# A title, label or legend entry (`shown`), per line: the longest gpuvs draws is about
# 120 characters ("Two GRU forwards as the post's first timing (autograd on, first
# call), by hidden size, float32 · as written · torch cpu").
TEXT_MAX, TEXT_LINES = 160, 3
ID_MAX = 200  # characters of an SVG id: a plot's number and NAME_MAX
MAX_XLABELS = 12  # a linear x axis of runs labels at most this many, evenly apart
INSIDE, BELOW, BESIDE = "inside", "below", "beside"
T = TypeVar("T")


def to_svg(plot: Plot) -> str:
    """The plot as an `<svg>` element to inline in HTML: no XML prolog, no date. Titled
    with what it shows only: the page's section heading names the sweep."""
    def svg(fig: Any) -> str:
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
        return buf.getvalue()

    ident = element_id(plot.name)
    text = _saved(plot, {"svg.hashsalt": ident, "svg.id": ident, "svg.fonttype": "path"}, svg,
                  titled=False)
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
    """The plot for a slide: titled with what it shows and what it is of."""
    def png(fig: Any) -> bytes:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=PNG_DPI)
        return buf.getvalue()

    return _saved(plot, {}, png, titled=True)


def _saved(plot: Plot, rc: dict[str, Any], save: Callable[[Any], T], titled: bool) -> T:
    """`plot` saved by `save`, from a figure made without pyplot (nothing keeps it alive
    afterwards). The legend is checked on the figure as saved, whose drawing laid it out:
    a second drawing only to place the legend would double the cost of every plot, and
    only a legend that hides data costs a second figure (legend below the axes)."""
    import matplotlib

    matplotlib.use("Agg")
    known: Any = {k: v for k, v in rc.items() if k in matplotlib.rcParams}  # svg.id: ≥ 3.9
    with matplotlib.rc_context(known):
        where = _placement(plot)
        fig, legend = _new_figure(plot, where, titled)
        saved = save(fig)
        if where == INSIDE and _hides_data(fig.axes[0], legend, plot):
            saved = save(_new_figure(plot, BELOW, titled)[0])
    return saved


def figure(plot: Plot) -> Any:
    """`plot` as a Matplotlib Figure, with no pyplot and no backend chosen (a notebook
    shows it as it is), titled in full; the legend below the axes, on a taller figure,
    where inside them it would hide data."""
    where = _placement(plot)
    fig, legend = _new_figure(plot, where, titled=True)
    if where == INSIDE and legend is not None:
        fig.draw_without_rendering()  # lays the figure out and places the legend
        if _hides_data(fig.axes[0], legend, plot):
            fig, _ = _new_figure(plot, BELOW, titled=True)
    return fig


def onto(plot: Plot, ax: Any) -> Any:
    """`plot` drawn on the caller's Axes (a notebook's), as the report draws it; the legend
    beside the axes where inside it would hide data (the caller's figure keeps its size).
    Returns the Axes' Figure."""
    _draw(ax, plot, titled=True)
    beside = _placement(plot) != INSIDE
    if not beside and (legend := _legend(ax, INSIDE)) is not None:
        ax.figure.draw_without_rendering()  # lays the figure out and places the legend
        beside = _hides_data(ax, legend, plot)
    if beside:
        _legend(ax, BESIDE)
    return ax.figure


def _placement(plot: Plot) -> str:
    """A roofline's legend, or one of more series than it can sit among without hiding
    points, below the axes; else inside, where it hides nothing."""
    labelled = [s for s in plot.series if s.label]
    return BELOW if plot.section == ROOFLINE or len(labelled) > LEGEND_INSIDE_MAX else INSIDE


def _new_figure(plot: Plot, where: str, titled: bool) -> tuple[Any, Any]:
    """The figure and its legend: below the axes on a taller figure (the axes keep their
    size however many lines it lists), in two columns where its labels fit two abreast."""
    from matplotlib.figure import Figure

    width, height = ROOFLINE_FIGSIZE if plot.section == ROOFLINE else FIGSIZE
    labels = _legend_labels(plot)
    widest = max(map(len, labels), default=0) * CHAR_PT + COLUMN_GAP_PT
    columns = 2 if 2 * widest <= width * 72 else 1
    if where == BELOW:
        height += LEGEND_ROW_IN * math.ceil(len(labels) / columns)
    fig = Figure(figsize=(width, height), layout="constrained")
    ax = fig.add_subplot()
    _draw(ax, plot, titled)
    return fig, _legend(ax, where, columns)


def _legend_labels(plot: Plot) -> list[str]:
    return ([s.label for s in plot.series if s.label] + ["1× (as fast)"] * plot.unity
            + [m.label for m in plot.marks if m.y is None])


def _legend(ax: Any, where: str, columns: int = 1) -> Any:
    """Inside the axes where Matplotlib finds the least in its way, below them in
    `columns`, or beside them; None when nothing is labelled (the x axis names each
    point)."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    if where == BELOW:
        return ax.figure.legend(handles, labels, loc="outside lower center", ncols=columns,
                                fontsize=LEGEND_PT, frameon=False)
    if where == BESIDE:
        return ax.legend(fontsize=LEGEND_PT, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                         borderaxespad=0.0, frameon=False)
    return ax.legend(fontsize=LEGEND_PT, loc="best", framealpha=0.85)


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


def _draw(ax: Any, plot: Plot, titled: bool) -> None:
    ax.set_xscale("linear" if plot.xlabels else "log")
    ax.set_yscale("log")
    for s in plot.series:
        _draw_series(ax, s)
    for mark in plot.marks:
        if mark.y is None:
            ax.axvline(mark.x, color=mark.color, linestyle=":", linewidth=1.2,
                       label=shown(mark.label))
        else:
            ax.plot([mark.x], [mark.y], linestyle="none", marker="o", markersize=10,
                    markerfacecolor="none", markeredgecolor=mark.color,
                    markeredgewidth=1.6, zorder=4)
    if plot.unity:
        ax.axhline(1.0, color="#333333", linewidth=0.8, label="1× (as fast)")
    title = f"{plot.title}\n{plot.subject}" if titled and plot.subject else plot.title
    ax.set_title(shown(title), fontsize=TITLE_PT, loc="left")
    ax.set_xlabel(shown(plot.xlabel), fontsize=LABEL_PT)
    ax.set_ylabel(shown(plot.ylabel), fontsize=LABEL_PT)
    if plot.xlabels:
        every = math.ceil(len(plot.xlabels) / MAX_XLABELS)  # a label every `every` points
        ax.set_xticks(range(len(plot.xlabels)), [
            shown(label) if i % every == 0 else "" for i, label in enumerate(plot.xlabels)],
            rotation=30, ha="right")
        ax.set_xlim(-0.5, len(plot.xlabels) - 0.5)
    else:
        _ticks(ax.xaxis, ax.get_xlim(), plot.xunit)
    _ticks(ax.yaxis, ax.get_ylim(), plot.yunit)
    ax.tick_params(which="both", labelsize=TICK_PT)
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
