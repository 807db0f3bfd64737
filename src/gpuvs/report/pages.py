"""Pages beyond one run's report: a comparison of runs (`gpuvs compare --report`) and a
store's history (`gpuvs report --history`). Self-contained and deterministic like the
run report: inline CSS and SVG, no script, no request; the same runs give the same bytes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpuvs import units
from gpuvs.analysis.regression import Change, geometric_means
from gpuvs.model import Case, Caveat, Measurement, Run, Status
from gpuvs.report.history import (
    change_table,
    environment_diff,
    means_table,
    unmatched_lines,
    verdict_counts,
)
from gpuvs.report.html import jinja
from gpuvs.report.plots import MARKERS, PALETTE, Mark, Plot, Series
from gpuvs.report.sections import Figure, TableView, figure_of, view
from gpuvs.table import Table

PAGE = "page.html.j2"
# A step change: consecutive runs whose CIs do not overlap, neither measured under
# contention, and whose medians differ by more than this.
STEP = 0.05


@dataclass(frozen=True)
class Section:
    title: str
    lines: tuple[str, ...] = ()
    figures: tuple[Figure, ...] = ()
    tables: tuple[TableView, ...] = ()


def render_compare(base: Run, base_ms: Sequence[Measurement],
                   results: Sequence[tuple[Run, list[Measurement], list[Change], list[Change],
                                           list[Any]]], threshold: float) -> str:
    """B, C… against A: per pair the environment diff, the two calibrations side by side,
    a plot of each case's ratio with its CI per workload, and the case and workload
    tables."""
    from gpuvs.report.calibration import missing_line, side_by_side
    sections = []
    for run, ms, probes, changes, unmatched in results:
        names = (base.run_id, run.run_id)
        missing = missing_line(base_ms, ms)
        lines = (*environment_diff(base, run), *unmatched_lines(unmatched, False),
                 *([missing] if missing else []), f"B against A: {verdict_counts(changes)}")
        tables = (*([view(side_by_side(probes, names, base_ms, ms))]
                    if probes and not missing else []),
                  view(change_table(changes, threshold, names)),
                  view(means_table(geometric_means(changes))))
        sections.append(Section(f"{run.run_id} (B) against {base.run_id} (A)", lines,
                                tuple(_ratio_figures(changes, threshold, run.run_id)), tables))
    facts = [("A", _label(base)), *((f"B{i + 1}" if len(results) > 1 else "B", _label(r))
                                    for i, (r, *_) in enumerate(results))]
    return str(jinja().get_template(PAGE).render(
        title=f"gpuvs comparison · {base.run_id}", facts=facts, sections=sections))


def _label(run: Run) -> str:
    from gpuvs.report.history import commit_of, gpus_of, machine_of
    return (f"{run.run_id} · {run.kind} · {run.started_at} · {machine_of(run)} · "
            f"{gpus_of(run)} · commit {commit_of(run)}")


def _ratio_figures(changes: Sequence[Change], threshold: float, name: str) -> list[Figure]:
    """Per workload: B ÷ A against size, a line per series (the case without its size),
    the CI shaded, the 1× line."""
    by: dict[str, dict[str, list[Change]]] = defaultdict(lambda: defaultdict(list))
    for c in changes:
        by[c.workload][c.series].append(c)
    figures = []
    for i, (workload, series) in enumerate(sorted(by.items())):
        lines = []
        for j, (label, cs) in enumerate(sorted(series.items())):
            cs = sorted(cs, key=lambda c: c.size)
            lines.append(Series(label, tuple(float(c.size or 1) for c in cs),
                                tuple(c.ratio for c in cs), tuple(c.low for c in cs),
                                tuple(c.high for c in cs), PALETTE[j % len(PALETTE)]))
        figures.append(figure_of(Plot(
            f"compare-{name}-{i:02d}", workload, f"{workload}: B ÷ A", "size",
            "B ÷ A (above 1: B slower)", tuple(lines), unity=True, yunit="×",
            caption=f"Ratio of medians with its bootstrap 95 % CI; ±{100 * threshold:g} % "
                    "around 1× counts as the same.")))
    return figures


def render_history(runs: Sequence[tuple[Run, list[Measurement]]], by: str,
                   workload: str | None) -> str:
    """Each case's median across runs, oldest first (x by date or by commit), its CI
    shaded, one line per environment fingerprint, and the step changes marked; a table of
    the steps found."""
    order = list(reversed(runs))
    plots, steps = history_plots(order, by, workload)
    rows = tuple((key, a, b, units.ratio(x)) for key, a, b, x in steps)
    table = Table("step changes", ("case", "from", "to", "new ÷ old"), rows, notes=(
        f"a step: consecutive runs on one environment fingerprint whose CIs do not overlap, "
        f"neither measured while other processes took the CPU (contended), and whose "
        f"medians differ by more than {100 * STEP:g} %",))
    sections = [Section("Cases across runs", figures=tuple(figure_of(p) for p in plots),
                        tables=(view(table),))]
    prints = list(dict.fromkeys(run.environment.fingerprint for run, _ in order))
    facts = [("runs", f"{len(order)}, oldest first"), ("x axis", f"by {by}"),
             ("workload", workload or "all"),
             ("environments", f"{len(prints)}: " + "; ".join(
                 _environment(run) for run in dict((r.environment.fingerprint, r)
                                                   for r, _ in order).values()))]
    return str(jinja().get_template(PAGE).render(title="gpuvs history", facts=facts,
                                                 sections=sections))


def history_plots(order: Sequence[tuple[Run, list[Measurement]]], by: str,
                  workload: str | None) -> tuple[list[Plot], list[tuple[str, str, str, float]]]:
    """Per case, sorted by its series then by size as a number: its medians across the
    runs `order`ed oldest first, a line per environment fingerprint (runs on another
    machine or software are never joined to these by a line, nor a step counted across
    them); and the steps found, as (case, from run, to run, new ÷ old)."""
    labels = x_labels([run for run, _ in order], by)
    prints = list(dict.fromkeys(run.environment.fingerprint for run, _ in order))
    cases: dict[Case, list[tuple[int, Measurement]]] = defaultdict(list)
    for i, (_, ms) in enumerate(order):
        for m in ms:
            if m.status is Status.OK and m.summary is not None and (
                    workload is None or m.case.workload == workload):
                cases[m.case].append((i, m))
    plots, steps = [], []
    for n, case in enumerate(sorted(cases, key=lambda c: (c.series.key, c.size))):
        lines, marks = [], []
        for j, fingerprint in enumerate(prints):
            points = [(i, m) for i, m in cases[case] if order[i][0].environment.fingerprint
                      == fingerprint]
            if not points:
                continue
            found = _steps(points)
            steps += [(case.key, labels[a], labels[b], x) for a, b, x in found]
            marks += [Mark(b, f"step ×{x:.3g}", "#D55E00") for _, b, x in found]
            lines.append(_history_line(points, f"environment {fingerprint}" if len(prints) > 1
                                       else "", PALETTE[j % len(PALETTE)],
                                       MARKERS[j % len(MARKERS)]))
        plots.append(Plot(f"history-{n:03d}", case.key, case.key, f"run (by {by})",
                          "seconds per call", tuple(lines), tuple(marks), xlabels=labels,
                          caption="Median per run with its 95 % CI" + (
                              ", one line per environment fingerprint (the runs of one "
                              "machine and software)." if len(prints) > 1 else ".")))
    return plots, steps


def _history_line(points: Sequence[tuple[int, Measurement]], label: str, color: str,
                  marker: str) -> Series:
    s = [m.summary for _, m in points if m.summary is not None]
    return Series(label, tuple(float(i) for i, _ in points), tuple(x.median for x in s),
                  tuple(x.ci_low for x in s), tuple(x.ci_high for x in s), color, marker)


def _environment(run: Run) -> str:
    from gpuvs.report.history import gpus_of, machine_of
    return f"{run.environment.fingerprint} ({machine_of(run)}, {gpus_of(run)})"


def x_labels(runs: Sequence[Run], by: str) -> tuple[str, ...]:
    """One label per run, each different: its start to the minute, or to the second where
    runs started in the same minute, or its commit; where two still read the same, the
    run id's last part tells them apart."""
    from gpuvs.report.history import commit_of
    if by == "commit":
        labels = [commit_of(run) for run in runs]
    else:
        stamps = [run.started_at.replace("T", " ") for run in runs]
        labels = [t[:16] for t in stamps]
        if len(set(labels)) < len(labels):
            labels = [t[:19] for t in stamps]
    if len(set(labels)) < len(labels):
        labels = [f"{label} · {run.run_id.rsplit('-', 1)[-1]}"
                  for label, run in zip(labels, runs, strict=True)]
    return tuple(labels)


def _steps(points: Sequence[tuple[int, Measurement]]) -> list[tuple[int, int, float]]:
    """(from index, to index, ratio) where consecutive runs moved beyond noise: their
    intervals apart, and neither measured under contention (a ×5.09 "step" was one run
    whose CPU other processes held)."""
    found = []
    for (a, ma), (b, mb) in zip(points, points[1:], strict=False):
        sa, sb = ma.summary, mb.summary
        if (sa is None or sb is None or Caveat.CONTENDED in ma.caveats
                or Caveat.CONTENDED in mb.caveats):
            continue
        ratio = sb.median / sa.median
        if sa.apart(sb) and abs(ratio - 1) > STEP:
            found.append((a, b, ratio))
    return found
