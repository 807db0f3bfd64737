"""How a `gpuvs.compare` result reads: its summary (the `repr` a notebook shows), its
tables and its plot, drawn from its measurements. `gpuvs.yours.comparison.Comparison`
holds the data and delegates here, so every rendering of a run lives in the report."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpuvs import units
from gpuvs.analysis import speedup
from gpuvs.analysis.crossover import Crossover, crossovers
from gpuvs.analysis.implementations import side_by_side
from gpuvs.analysis.speedup import data_of
from gpuvs.model import YOURS_PREFIX, Measurement, Status
from gpuvs.report import implementations
from gpuvs.report.plots import Plot, Series, colors_of, series_label, time_plot


def sizes_of(ms: Sequence[Measurement]) -> tuple[int, ...]:
    return tuple(sorted({m.case.size for m in ms}))


def dtype_of(ms: Sequence[Measurement]) -> str:
    return next((m.case.dtype for m in ms if m.case.dtype), "")


def resident_crossover(found: Sequence[Crossover]) -> int | None:
    """The smallest size from which the resident GPU is faster (CI above 1×)."""
    sizes = [c.size for c in found if c.data == "resident"]
    return next((s for s in sizes if s is not None), None)


def seconds_ci(m: Measurement) -> str:
    """'12.3 ms ±0.4%' for a finished case."""
    s = m.summary
    if s is None:
        return "—"
    return units.seconds_ci(s.median, s.ci_halfwidth_rel)


def _label(m: Measurement, several: bool = False) -> str:
    where = m.case.device if m.case.device == "cpu" else f"{m.case.device} {data_of(m.case)}"
    return f"{_implementation(m)} {where}" if several else where


def _implementation(m: Measurement) -> str:
    return m.case.workload.removeprefix(YOURS_PREFIX)


def summary(name: str, ms: Sequence[Measurement]) -> str:
    """The comparison in a few aligned lines: each case, its speedup, what failed, whether
    the outputs agreed, where the GPU starts to win; with several implementations, each
    case names its implementation, and at each size the fastest is said."""
    sizes = sizes_of(ms)
    sweep = len(sizes) > 1
    several = side_by_side(ms)
    where = (f"sizes {units.size(sizes[0])}–{units.size(sizes[-1])} ({len(sizes)})" if sweep
             else f"size {units.size(sizes[0])}" if sizes else "no size")
    lines = [" · ".join(filter(None, (f"gpuvs.compare: {name}", dtype_of(ms), where)))]
    speedups = {(w, s.device, s.data, s.size): s for w in dict.fromkeys(m.case.workload
                                                                       for m in ms)
                for s in speedup.speedups([m for m in ms if m.case.workload == w])}
    rows: list[list[str]] = []
    problems: list[str] = []
    skipped: dict[str, str] = {}
    for m in ms:
        if m.status is Status.UNAVAILABLE:
            skipped.setdefault(m.case.device, m.reason)
            continue
        head = [units.size(m.case.size)] if sweep else []
        head += [_implementation(m)] if several else []
        head += [m.case.device, data_of(m.case) if m.case.device != "cpu" else ""]
        if m.status is not Status.OK:
            rows.append([*head, m.status.value, "", "", "", ""])
            problems.append(f"{_label(m, several)}"
                            f"{f' at {units.size(m.case.size)}' if sweep else ''}: "
                            f"{m.status.value}: {m.reason}")
            continue
        wall = m.wall_summary.median if m.wall_summary else None
        speed = speedups.get((m.case.workload, m.case.device, data_of(m.case), m.case.size))
        caveats = ", ".join(str(c).replace("_", " ") for c in m.caveats)
        rows.append([*head, seconds_ci(m), f"wall {units.seconds(wall)}" if wall else "",
                     f"first call {units.seconds(m.first_call_s)}", str(speed or ""),
                     f"({caveats})" if caveats else ""])
    time_col = 2 + sweep + several
    lines += ["  " + line for line in _aligned(rows, {0, time_col} if sweep else {time_col})]
    lines += [f"{d}: skipped: {r}" for d, r in skipped.items()] + _processes_lines(ms)
    lines += problems + _agreement_lines(ms, several)
    lines += _crossover_lines(crossovers(ms), several)
    return "\n".join(lines + (implementations.lines(ms) if several else []))


def _processes_lines(ms: Sequence[Measurement]) -> list[str]:
    """Where the samples came from: one process (the caller's, by default), whose
    interval a new process may land outside, or several (`gpuvs.compare(…,
    processes=N)`)."""
    done = [m for m in ms if m.status is Status.OK]
    if not done:
        return []
    if all(m.one_process for m in done):
        return ["intervals: one process's each; a new process may land outside them "
                "(on a GPU machine a launch-bound call's speed can differ by process)"]
    most = max(len(m.passes) for m in done)
    return [f"intervals: over the processes that sampled each case (up to {most}), "
            "around the median of their medians"]


def _aligned(rows: list[list[str]], right: set[int]) -> list[str]:
    """Columns padded to their widest cell; those in `right` right-aligned."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [cell.rjust(w) if i in right else cell.ljust(w)
                 for i, (cell, w) in enumerate(zip(r, widths, strict=True)) if w]
        out.append("  ".join(cells).rstrip())
    return out


def _agreement_lines(ms: Sequence[Measurement], several: bool) -> list[str]:
    errors = [m.counters["rel_error"] for m in ms if "rel_error" in m.counters]
    if not errors or any(m.status is Status.WRONG_RESULT for m in ms):
        return []
    first = next(m for m in ms if m.status is Status.OK)
    reference = f"{_implementation(first)} on {first.case.device}" if several \
        else first.case.device
    return [f"outputs agree with {reference}'s (largest relative error {max(errors):.1e})"]


def _crossover_lines(found: Sequence[Crossover], several: bool) -> list[str]:
    lines = []
    for x in sorted(found, key=lambda x: (x.gpu.workload, x.gpu.device, x.data != "resident")):
        if len(x.points) < 2:
            continue
        last = x.points[-1]
        if x.size is not None:
            verdict = f"GPU faster from {units.size(x.size)}"
        else:
            verdict = ("GPU never faster in this range" if last.verdict != "gpu"
                       else "GPU faster only at the largest sizes")
        name = f"{x.gpu.workload.removeprefix(YOURS_PREFIX)} " if several else ""
        lines.append(f"{name}{x.gpu.device} {x.data}: {verdict}; {units.ratio(last.estimate)} "
                     f"at {units.size(last.size)}")
    return lines


def figure(name: str, ms: Sequence[Measurement], ax: Any = None) -> Any:
    """A matplotlib Figure drawn as the report draws its plots (colours, line styles, axis
    units, legend placement): time per call against size, a line per series with its 95 %
    CI band (a sweep); or each case's median with its CI (a single size). On `ax` when
    given, else on a figure of its own."""
    from gpuvs.report import draw
    plot = _time_plot(name, ms)
    return draw.figure(plot) if ax is None else draw.onto(plot, ax)


def _time_plot(name: str, ms: Sequence[Measurement]) -> Plot:
    done = [m for m in ms if m.status is Status.OK and m.summary is not None]
    dtype = dtype_of(ms)
    title = name + (f" · {dtype}" if dtype else "")
    colors = colors_of(done)
    if len(sizes_of(ms)) > 1:
        return time_plot(title, "size", done, crossovers(done), colors)
    # One size: a point per case, named on the x axis, so the legend has nothing to add.
    points = tuple(Series("", (float(i),), (s.median,), (s.ci_low,), (s.ci_high,),
                          colors[(m.case.backend, m.case.device)], style="points")
                   for i, (m, s) in enumerate((m, m.summary) for m in done if m.summary))
    at = f" at size {units.size(done[0].case.size)}" if done else ""
    return Plot(f"time {title}", title, f"time per call{at}", "",
                "time per call (median, 95 % CI)", points,
                xlabels=tuple(series_label(m.case) for m in done), subject=title)
