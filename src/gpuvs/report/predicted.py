"""Predicted GPU series, drawn and tabled apart from measured ones.

Every column and line that holds a number the model made says *predicted*; measured CPU
times sit beside them under their own heading. In the plots the measured CPU series are
solid lines with their CI bands, the predicted GPU series dashed lines with hollow
markers, their interval shaded where the target was validated. The validation's error
tables (`benchmarks/predict.py`, docs/prediction.md) are built here too.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from gpuvs import units, workloads
from gpuvs.analysis.crossover import GroupKey, group_key
from gpuvs.model import Case, Measurement
from gpuvs.predicting.forecast import Point, Predicted, Series, Target
from gpuvs.predicting.profile import Found
from gpuvs.predicting.residuals import Residuals
from gpuvs.predicting.validation import CrossoverCheck, ErrorRow
from gpuvs.predicting.work import tf32, tf32_words
from gpuvs.report.html import jinja
from gpuvs.report.layout import size_axis, sweep_title
from gpuvs.report.pages import PAGE, Section
from gpuvs.report.plots import PALETTE, Plot
from gpuvs.report.plots import Series as Line
from gpuvs.report.sections import figure_of, view
from gpuvs.table import Table

COLUMNS = ("size", "GPU", "data", "CPU measured (fastest)", "GPU predicted [90 % interval]",
           "speedup predicted", "bound predicted", "note")
ERROR_COLUMNS = ("cases", "median error", "90th pct error", "inside interval",
                 "crossover within 1 step")


def forecast_tables(found: Sequence[Series], target: Target,
                    unpredicted: Sequence[Predicted] = ()) -> list[Table]:
    """Per sweep, a row per predicted GPU case; then the predicted crossovers."""
    by: dict[GroupKey, list[Series]] = defaultdict(list)
    for s in found:
        by[s.group].append(s)
    tables = []
    for key, group in by.items():
        rows = [row for _, row in sorted(((p.size, s.gpu.backend_device, s.data), _row(s, p))
                                         for s in group for p in s.points)]
        tables.append(Table(f"{sweep_title(key)} · GPU predicted for {target.name}", COLUMNS,
                            tuple(rows), notes=(
                                "CPU: measured here; GPU: predicted by the model, not "
                                "measured (docs/prediction.md says how, and how well)",
                                *target.lines(), *_assumed(key, group)),
                            wrapping=frozenset({"note"})))
    if found:
        tables.append(crossover_table(found, target))
    if unpredicted:
        tables.append(Table("not predicted", ("case", "why"),
                            tuple((p.case.key, p.reason) for p in unpredicted)))
    return tables


def _assumed(key: GroupKey, group: Sequence[Series]) -> list[str]:
    """What a sweep's predictions assume that a setting changes, or the machine did: TF32
    for float32 matrix products, per GPU backend, and CPU times measured contended."""
    said = []
    if key[2] == "float32" and workloads.get(key[0]).matrix_units:
        said += [f"TF32: {tf32_words(b, *tf32(b))}"
                 for b in sorted({s.gpu.backend for s in group})]
    if any(p.contended for s in group for p in s.points):
        said.append("contended: a CPU time measured while other processes took the CPU; it "
                    "reads slow, and the speedup predicted against it high")
    return said


def _row(s: Series, p: Point) -> tuple[str, ...]:
    prediction = p.gpu.prediction
    cpu = p.cpu
    measured = (f"{units.seconds(cpu.summary.median)} ({cpu.case.backend}"
                f"{', contended' * p.contended})" if cpu.summary else "—")
    if prediction is None:
        return (units.size(p.size), s.gpu.backend_device, s.data, measured, "—", "—", "—",
                p.gpu.reason)
    span = prediction.interval
    time = units.seconds(prediction.seconds) + (
        f" [{units.seconds(span[0])}, {units.seconds(span[1])}]" if span else " (no interval)")
    ratio = p.speedup_range
    speedup = ("—" if p.speedup is None else units.ratio(p.speedup, *ratio) if ratio
               else units.ratio(p.speedup))
    note = prediction.why() + (f"; {prediction.low_confidence}"
                               if prediction.low_confidence else "")
    return (units.size(p.size), s.gpu.backend_device, s.data, measured, time, speedup,
            prediction.estimate.dominant.term, note)


def crossover_table(found: Sequence[Series], target: Target) -> Table:
    rows = []
    for s in found:
        where = s.crossover
        rows.append((sweep_title(s.group), s.gpu.backend_device, s.data,
                     (size_axis(s.group).phrase.format(units.size(where)) if where
                      else "never in range"),
                     "low" if s.low_confidence else ""))
    low = ("confidence low: the validation on that GPU missed this workload by more than "
           "25 % (median); the note of its rows says by how much",)
    return Table(f"predicted crossovers · {target.name}",
                 ("sweep", "GPU series", "data", "GPU predicted faster from", "confidence"),
                 tuple(rows), notes=(
                     "from: the smallest size from which the predicted GPU time stays "
                     "below the fastest CPU time measured here",
                     *(low if any(r[-1] for r in rows) else ())))


def error_table(title: str, rows: Sequence[ErrorRow], notes: Sequence[str] = (),
                by: str = "workload") -> Table:
    """The validation's error table: per workload (or what `by` names), then all."""
    return Table(title, (by, *ERROR_COLUMNS), tuple(
        (r.name, str(r.cases), f"{r.median_error:.1%}", f"{r.p90_error:.1%}",
         "—" if r.inside is None else f"{r.inside:.0%}",
         f"{r.crossovers[0]}/{r.crossovers[1]}" if r.crossovers[1] else "—")
        for r in rows), notes=("error: |predicted − measured| ÷ measured", *notes))


def crossover_checks_table(title: str, checks: Sequence[CrossoverCheck]) -> Table:
    return Table(title, ("GPU series", "sizes", "predicted from", "measured from", "steps"),
                 tuple((c.gpu.key.replace("/0", "", 1), f"{len(c.sizes)}",
                        units.size(c.predicted) if c.predicted else "never",
                        units.size(c.measured) if c.measured else "never",
                        str(c.steps_apart)) for c in checks))


def predicted_plots(cpu: Sequence[Measurement], found: Sequence[Series]) -> list[Plot]:
    """Per sweep: measured CPU series (solid, CI band) and predicted GPU series (dashed,
    hollow markers — circles resident, squares end-to-end — interval band), time per
    call against size; one colour per backend and device, as in a run's report."""
    by: dict[GroupKey, list[Series]] = defaultdict(list)
    for s in found:
        by[s.group].append(s)
    keys = sorted({(m.case.backend, m.case.device) for m in cpu}
                  | {(s.gpu.backend, s.gpu.device) for s in found})
    colors = {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(keys)}
    plots = []
    for i, (key, group) in enumerate(by.items(), 1):
        lines = _measured_lines([m for m in cpu if group_key(m.case) == key], colors)
        lines += [_predicted_line(s, colors) for s in sorted(group, key=lambda s: s.gpu.key)]
        title = sweep_title(key)
        plots.append(Plot(f"{i:02d}-predicted", title, f"time per call, GPU predicted\n{title}",
                          size_axis(key).label, "time per call", tuple(lines), caption=(
                              "Solid: CPU cases measured here (median, 95 % CI band). Dashed "
                              "with hollow markers: GPU predicted by the model (circles: data "
                              "resident; squares: copies paid), with the band of its "
                              "validated interval where there is one.")))
    return plots


def _predicted_line(s: Series, colors: dict[tuple[str, str], str]) -> Line:
    points = [p for p in s.points if p.gpu.prediction]
    spans = [p.gpu.prediction.interval for p in points]  # type: ignore[union-attr]
    return Line(f"{s.gpu.backend_device} · {s.data.replace('_', '-')} · predicted",
                tuple(float(p.size) for p in points),
                tuple(p.gpu.prediction.seconds for p in points),  # type: ignore[union-attr]
                tuple(x[0] for x in spans if x) if all(spans) else (),
                tuple(x[1] for x in spans if x) if all(spans) else (),
                colors[(s.gpu.backend, s.gpu.device)],
                marker="s" if s.data == "end_to_end" else "o", style="predicted")


def _measured_lines(cpu: Sequence[Measurement], colors: dict[tuple[str, str], str]
                    ) -> list[Line]:
    by: dict[Case, list[Measurement]] = defaultdict(list)
    for m in cpu:
        if m.summary is not None:
            by[m.case.series].append(m)
    lines = []
    for case, ms in sorted(by.items(), key=lambda kv: kv[0].backend):
        ms = sorted(ms, key=lambda m: m.case.size)
        s = [m.summary for m in ms if m.summary]
        lines.append(Line(f"{case.backend} cpu · measured", tuple(float(m.case.size) for m in ms),
                          tuple(x.median for x in s), tuple(x.ci_low for x in s),
                          tuple(x.ci_high for x in s), colors[(case.backend, case.device)]))
    return lines


def profiles_table(found: Sequence[tuple[Found, Residuals | None]], mine: str) -> Table:
    """`gpuvs profiles`: each profile, where it came from, and whether it was validated."""
    return Table("device profiles", ("name", "device", "from", "validated", "file"), tuple(
        (f.profile.name, f.profile.describe(), f.where,
         f"{len(r.points)} cases" if r else "not yet", str(f.path)) for f, r in found),
        notes=(f"yours: {mine}; `gpuvs ceilings --save-profile NAME` adds one there, "
               "`gpuvs predict --profile FILE` reads any file",))


def render_forecast(target: Target, tables: Sequence[Table], plots: Sequence[Plot]) -> str:
    """`gpuvs predict --report`: the plots, then the tables, on one page."""
    sections = [Section("Predicted against measured", lines=target.lines(),
                        figures=tuple(figure_of(p) for p in plots),
                        tables=tuple(view(t) for t in tables))]
    facts = [("target", target.found.profile.describe()), ("GPU numbers", "predicted"),
             ("CPU numbers", "measured here")]
    return str(jinja().get_template(PAGE).render(
        title=f"gpuvs predict · {target.name}", facts=facts, sections=sections))
