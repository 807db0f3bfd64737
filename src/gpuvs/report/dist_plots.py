"""`gpuvs dist` runs as they are shown (`views.DIST`): SVG strings for the HTML report —
scaling (throughput and efficiency against the rank count) and bus bandwidth against size,
per collective — the page's sections, and each case's figures in the JSON document.

Matplotlib is imported only when a plot is drawn, and without pyplot: a `Figure` renders
through the Agg/SVG canvases with no global state and no display. Each figure has its own
`svg.hashsalt`, so two figures in one page never share element ids and the same
measurements always give the same SVG. An empty string means there is nothing to plot.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from gpuvs import units
from gpuvs.analysis import scaling
from gpuvs.distributed.bandwidth import busbw
from gpuvs.model import Measurement, Status
from gpuvs.report.dist_tables import (
    collective_groups,
    collective_tables,
    is_dist,
    ranks_text,
    scaling_groups,
    scaling_tables,
)
from gpuvs.report.draw import shown
from gpuvs.report.sections import Figure, Sweep, view

WIDTH_IN, HEIGHT_IN = 9.0, 3.6


def scaling_svg(ms: Iterable[Measurement]) -> str:
    """Left: samples/s against N, with the ideal N × (N = 1) line. Middle: scaling
    efficiency in % against N, with its 95 % interval. Right: each N's step split into
    compute and the communication it waits for, a bar per series side by side. A rank
    count is its rounds joined (`analysis.scaling.rows`)."""
    groups = {k: [r for r in scaling.rows([m for m in v if m.status is Status.OK])
                  if not r.again]  # N = 1 measured again: its bounds are in the others'
              for k, v in scaling_groups(ms).items()}
    groups = {k: v for k, v in groups.items() if v}
    if not groups:
        return ""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(WIDTH_IN * 1.4, HEIGHT_IN))
    rate, eff, split = fig.subplots(1, 3)
    _split_bars(split, groups)
    for (backend, device, mode, batch, _), found in groups.items():
        label = shown(f"{backend} {device}, {mode}, batch {batch}")
        ns = [r.n for r in found]
        line = rate.plot(ns, [r.joined.counters["samples_per_s"] for r in found], "o-",
                         label=label)
        one = next((r.joined for r in found if r.n == 1), None)
        bounds = [(r.n, r.efficiency) for r in found if r.efficiency is not None]
        if one is None or not bounds:
            continue
        rate.plot(ns, [n * one.counters["samples_per_s"] for n in ns], "--",
                  color=line[0].get_color(), alpha=0.5, label=f"ideal ({label})")
        est = [100 * e.estimate for _, e in bounds]
        err = [[100 * (e.estimate - e.low) for _, e in bounds],
               [100 * (e.high - e.estimate) for _, e in bounds]]
        eff.errorbar([n for n, _ in bounds], est, yerr=_nonnegative(err), fmt="o-", capsize=3,
                     label=label)
    eff.axhline(100, color="grey", linewidth=0.8)
    _axes(rate, "samples/s", "data-parallel throughput")
    _axes(eff, "efficiency (%)", "scaling efficiency against N = 1")
    for ax in (rate, eff):
        ax.set_xticks(sorted({r.n for found in groups.values() for r in found}))
        ax.set_xlabel("ranks (N)")
    return _svg(fig, "gpuvs-dist-scaling")


def _split_bars(ax: Any, groups: dict[Any, list[scaling.Row]]) -> None:
    """Per N and series, a bar of the step: compute (no_sync) below, comm stacked on it."""
    ns = sorted({r.n for found in groups.values() for r in found})
    width = 0.8 / len(groups)
    for i, ((backend, device, mode, *_), found) in enumerate(groups.items()):
        at = {r.n: r.joined for r in found}
        xs = [ns.index(n) - 0.4 + width * (i + 0.5) for n in ns if n in at]
        compute = [1e3 * at[n].counters.get("compute_s", 0.0) for n in ns if n in at]
        comm = [1e3 * at[n].counters.get("comm_s", 0.0) for n in ns if n in at]
        bars = ax.bar(xs, compute, width, label=shown(f"compute · {backend} {device}, {mode}"))
        ax.bar(xs, comm, width, bottom=compute, color=bars.patches[0].get_facecolor(),
               alpha=0.45, hatch="//", label=shown(f"comm · {backend} {device}, {mode}"))
    ax.set_xticks(range(len(ns)), [str(n) for n in ns])
    ax.set_xlabel("ranks (N)")
    ax.set_ylabel("ms per step")
    ax.set_title("a step: compute and the comm it waits for", fontsize=10)
    ax.grid(True, alpha=0.3)
    # Under the axes: bars fill the panel to its top, so a legend inside covers them.
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)


def bandwidth_svg(ms: Iterable[Measurement]) -> str:
    """Bus bandwidth (nccl-tests' definition) against size, one line per collective and
    rank count, both axes logarithmic. One rank has none to draw: nothing crosses a link,
    so its bus bandwidth is 0 by definition."""
    groups = {k: [m for m in v if m.summary is not None]
              for k, v in collective_groups(ms).items() if k[3] > 1}
    groups = {k: v for k, v in groups.items() if v}
    if not groups:
        return ""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN * 1.3))
    ax = fig.subplots()
    for (name, backend, device, n, nodes), series in groups.items():
        sizes = [m.counters.get("bytes", float(m.case.size)) for m in series]
        rates = [busbw(name, b, m.summary.median, n) / 1e9  # type: ignore[union-attr]
                 for b, m in zip(sizes, series, strict=True)]
        ax.plot(sizes, rates, "o-",
                label=shown(f"{name} · {backend} · {ranks_text(n, device, nodes)}"))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: units.nbytes(x)))
    ax.set_xlabel("size (nccl-tests' convention)")
    _axes(ax, "bus bandwidth (GB/s)", "collective bus bandwidth against size")
    return _svg(fig, "gpuvs-dist-bandwidth")


def _nonnegative(err: list[list[float]]) -> list[list[float]]:
    """Error bar lengths: a CI that excludes its own estimate draws no bar on that side."""
    return [[max(0.0, e) for e in side] for side in err]


def _axes(ax: Any, ylabel: str, title: str) -> None:
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def _svg(fig: Any, salt: str) -> str:
    import io

    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": salt}):
        fig.tight_layout()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


def dist_sections(ms: Sequence[Measurement]) -> list[Sweep]:
    """A `gpuvs dist` run: the collectives' bus bandwidth against size, then data-parallel
    scaling against N (throughput, efficiency, the step's compute and comm), each with
    its tables."""
    from markupsafe import Markup

    sections = (
        ("Collectives: bus bandwidth against size", "dist-bandwidth", bandwidth_svg,
         collective_tables, "bus bandwidth as nccl-tests defines it, one line per collective "
                            "and rank count"),
        ("Data-parallel scaling against N", "dist-scaling", scaling_svg, scaling_tables,
         "samples/s against the ideal, efficiency with its 95 % CI, and each N's step "
         "split into compute and the communication it waits for"),
    )
    out = []
    for title, name, draw, tables, caption in sections:
        found = tables(ms)
        if not found:
            continue
        svg = draw(ms)
        figures = (Figure(name, Markup(svg), caption),) if svg else ()
        out.append(Sweep(title, figures, tuple(view(t) for t in found), True))
    return out


def dist_numbers(m: Measurement, ms: Sequence[Measurement]) -> dict[str, Any]:
    """A `gpuvs dist` case's own figures: a collective's bandwidths and graph replay, a
    scaling case's throughput, efficiency (with its CI) and step split."""
    if not is_dist(m) or m.summary is None:
        return {}
    from gpuvs.distributed.bandwidth import algbw
    k, c = m.counters, m.case
    if c.param("collective"):
        nbytes, n = k.get("bytes", float(c.size)), int(c.param("nproc") or 1)
        replay = m.graph_summary
        return {"bytes": nbytes, "ranks": n,
                "algbw_bytes_per_s": algbw(nbytes, m.summary.median),
                "busbw_bytes_per_s": busbw(c.param("collective"), nbytes, m.summary.median, n),
                "graph_median_s": replay.median if replay else None}
    series = scaling_groups(ms).get(
        (c.backend, c.device, c.param("scaling"), c.param("batch"), c.param("nodes")), [])
    eff = scaling.efficiency(series, c.size) if series and "samples_per_s" in k else None
    return {"ranks": c.size, "round": c.param("round") or None,
            "samples_per_s": k.get("samples_per_s"),
            "efficiency": eff.estimate if eff else None,
            "efficiency_low": eff.low if eff else None,
            "efficiency_high": eff.high if eff else None,
            "efficiency_rounds": eff.rounds if eff else None,
            "compute_s": k.get("compute_s"), "comm_s": k.get("comm_s")}
