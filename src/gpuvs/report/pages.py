"""Pages beyond one run's report: a comparison of runs (`gpuvs compare --report`) and a
store's history (`gpuvs report --history`). Self-contained and deterministic like the
run report: inline CSS and SVG, no script, no request; the same runs give the same bytes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpuvs.analysis.regression import Change, geometric_means
from gpuvs.model import Measurement, Run, Status
from gpuvs.report.history import (
    change_table,
    environment_diff,
    means_table,
    unmatched_lines,
    verdict_counts,
)
from gpuvs.report.html import Figure, TableView, figure_of, jinja, view
from gpuvs.report.plots import PALETTE, Mark, Plot, Series
from gpuvs.table import Table

PAGE = "page.html.j2"
# A step change: consecutive runs whose CIs do not overlap and whose medians differ by
# more than this.
STEP = 0.05


@dataclass(frozen=True)
class Section:
    title: str
    lines: tuple[str, ...] = ()
    figures: tuple[Figure, ...] = ()
    tables: tuple[TableView, ...] = ()


def render_compare(base: Run, results: Sequence[tuple[Run, list[Measurement], list[Change],
                                                      list[Any]]], threshold: float) -> str:
    """B, C… against A: per pair the environment diff, a plot of each case's ratio with
    its CI per workload, and the case and workload tables."""
    sections = []
    for run, _, changes, unmatched in results:
        names = (base.run_id, run.run_id)
        lines = (*environment_diff(base, run), *unmatched_lines(unmatched, False),
                 f"B against A: {verdict_counts(changes)}")
        tables = (view(change_table(changes, threshold, names)),
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
    shaded and the step changes marked; a table of the steps found."""
    order = list(reversed(runs))
    labels = tuple(_x_label(run, by) for run, _ in order)
    cases: dict[str, list[tuple[int, Measurement]]] = defaultdict(list)
    for i, (_, ms) in enumerate(order):
        for m in ms:
            if m.status is Status.OK and m.summary is not None and (
                    workload is None or m.case.workload == workload):
                cases[m.case.key].append((i, m))
    figures, steps = [], []
    for n, (key, points) in enumerate(sorted(cases.items())):
        found = _steps(points)
        steps += [(key, labels[a], labels[b], x) for a, b, x in found]
        marks = tuple(Mark(b, f"step ×{x:.3g}", "#D55E00") for _, b, x in found)
        s = Series(key.split("/", 2)[-1], tuple(float(i) for i, _ in points),
                   tuple(m.summary.median for _, m in points),  # type: ignore[union-attr]
                   tuple(m.summary.ci_low for _, m in points),  # type: ignore[union-attr]
                   tuple(m.summary.ci_high for _, m in points))  # type: ignore[union-attr]
        figures.append(figure_of(Plot(f"history-{n:03d}", key, key, f"run (by {by})",
                                      "seconds per call", (s,), marks, xlabels=labels,
                                      caption="Median per run with its 95 % CI.")))
    rows = tuple((key, a, b, f"{x:.3g}×") for key, a, b, x in steps)
    table = Table("step changes", ("case", "from", "to", "new ÷ old"), rows, notes=(
        f"a step: consecutive runs whose CIs do not overlap and whose medians differ by "
        f"more than {100 * STEP:g} %",))
    sections = [Section("Cases across runs", figures=tuple(figures), tables=(view(table),))]
    facts = [("runs", f"{len(order)}, oldest first"), ("x axis", f"by {by}"),
             ("workload", workload or "all")]
    return str(jinja().get_template(PAGE).render(title="gpuvs history", facts=facts,
                                                 sections=sections))


def _x_label(run: Run, by: str) -> str:
    from gpuvs.report.history import commit_of
    return commit_of(run) if by == "commit" else run.started_at[:16].replace("T", " ")


def _steps(points: Sequence[tuple[int, Measurement]]) -> list[tuple[int, int, float]]:
    """(from index, to index, ratio) where consecutive runs moved beyond noise."""
    found = []
    for (a, ma), (b, mb) in zip(points, points[1:], strict=False):
        sa, sb = ma.summary, mb.summary
        if sa is None or sb is None:
            continue
        apart = sb.ci_low > sa.ci_high or sb.ci_high < sa.ci_low
        ratio = sb.median / sa.median
        if apart and abs(ratio - 1) > STEP:
            found.append((a, b, ratio))
    return found

