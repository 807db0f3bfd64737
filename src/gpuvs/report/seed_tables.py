"""Seed runs → the five posts answered, one line each (`seed_answers`: the report's and the
terminal's first answer), then one table per post: the claim, the as-written replay here,
the correct measurement here, the ratio of the two, and why they differ. Pure, like
layout.py."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gpuvs import seeds, units
from gpuvs.analysis import speedup
from gpuvs.analysis.regression import process_spread
from gpuvs.measuring import caveats
from gpuvs.measuring.caveats import ADVICE
from gpuvs.model import Caveat, Measurement, Status
from gpuvs.report import resources
from gpuvs.seeds.base import Figure, Found, Pick, Ratio, Row, Seed, value_of
from gpuvs.table import Table

# Energy and peak memory last: they describe the correct case, and a table without them
# (no case measured any) reads as before.
COLUMNS = ("", "post claims", "as written here", "correct here", "written ÷ correct", "why",
           "energy/call", "peak memory")
ANSWER_COLUMNS = ("post", "it claimed", "its method here", "correct here", "why")


def seed_answers(measurements: Iterable[Measurement]) -> Table:
    """One line per post with a case in `measurements`: its conclusion (the headline row
    of its table, quoted), the post's own method replayed here, the correct figure here
    with its 95 % CI, and the reason in a phrase, all from the numbers measured here."""
    ms = list(measurements)
    present, spread = {m.case.workload for m in ms}, process_spread(ms)
    rows = []
    for seed in seeds.REGISTRY.all():
        if not present & seed.workloads():
            continue
        mine = [m for m in ms if m.case.workload in seed.workloads()]
        head = seed.headline()
        row = head.row
        written, correct = value_of(row.written, mine), value_of(row.correct, mine)
        rows.append((f"{seed.name}: {row.shown(mine)}", row.claim,
                     _cell(row.written, written, mine), _with_ci(row.correct, mine, spread),
                     head.reason(Found(written, correct, mine))))
    return Table("the posts, answered here", ANSWER_COLUMNS, tuple(rows), notes=(
        "its method here: the post's own timing, replayed on this machine; correct here: "
        "the gpuvs protocol, with its 95 % CI; each post's own table has the rest",),
        wrapping=frozenset(ANSWER_COLUMNS))


def _with_ci(figure: Figure | None, ms: Sequence[Measurement],
             spread: Mapping[tuple[str, str], float]) -> str:
    """A correct figure with its 95 % CI: a ratio of two cases' figures with the interval
    a repeat's ratio lands in (`speedup.of`, with the whole run's `spread`), a time with
    its median's CI (a first call, timed once, has none)."""
    value = value_of(figure, ms)
    if figure is None or value is None:
        return _cell(figure, value, ms)
    if isinstance(figure, Ratio):
        slow, fast = figure.slow.find(ms), figure.fast.find(ms)
        assert slow is not None and fast is not None  # value_of found both
        s = speedup.of(slow, fast, spread)
        return units.ratio(s.estimate, s.low, s.high) + _doubts(figure, ms)
    m = figure.find(ms)
    if figure.stat == "time" and m is not None and m.summary is not None:
        return units.seconds_ci(m.summary.median, m.summary.ci_halfwidth_rel) + _doubts(
            figure, ms)
    return _cell(figure, value, ms)


def seed_tables(measurements: Iterable[Measurement]) -> list[Table]:
    """The tables of every seed with at least one case in `measurements`, in seed order."""
    ms = list(measurements)
    present = {m.case.workload for m in ms}
    tables: list[Table] = []
    for seed in seeds.REGISTRY.all():
        mine = [m for m in ms if m.case.workload in seed.workloads()]
        if mine and present & seed.workloads():
            tables.append(claims_table(seed, mine))
            tables.extend(seed.extra_tables(mine))
    return tables


def claims_table(seed: Seed, ms: Sequence[Measurement]) -> Table:
    rows = tuple(_row(row, ms) for row in seed.rows())
    return Table(
        title=f"seed {seed.name} · {seed.title} · the post ran on {seed.hardware}",
        columns=COLUMNS, rows=rows, notes=(f"the post's mistake: {seed.mistake}",
                                           *_notes(seed, ms), *resources.notes(ms)),
        wrapping=frozenset(COLUMNS))


def _row(row: Row, ms: Sequence[Measurement]) -> tuple[str, ...]:
    written, correct = value_of(row.written, ms), value_of(row.correct, ms)
    ratio = f"{written / correct:.2f}" if written and correct else "—"
    measured = row.correct.find(ms) if isinstance(row.correct, Pick) else None
    return (row.shown(ms), row.claim, _cell(row.written, written, ms),
            _cell(row.correct, correct, ms), ratio, row.why(Found(written, correct, ms)),
            resources.energy_cell(measured), _peak(measured))


def _peak(m: Measurement | None) -> str:
    """The correct case's peak: on its device for a GPU case, on the host for a CPU one."""
    if m is None or m.status is not Status.OK:
        return ""
    host, device = resources.memory_cells(m)
    return device if m.case.device != "cpu" else host


def _cell(figure: Figure | None, value: float | None, ms: Sequence[Measurement]) -> str:
    if figure is None:
        return "—"
    if value is not None:
        shown = units.ratio(value) if isinstance(figure, Ratio) else units.seconds(value)
        return shown + _doubts(figure, ms)
    return _missing(figure, ms)


# A ratio whose bounds (from its two cases' CIs) lie within this factor of each other, on
# one side of 1, gives the same answer whatever its cases' doubts: they are not shown.
DECIDED_SPAN = 1.5


def _doubts(figure: Figure, ms: Sequence[Measurement]) -> str:
    """The caveats that doubt the figure's cases, beside the figure — for a ratio, only
    where they could change its answer: its bounds straddle 1, or lie far apart. A
    figure that is a first call (one timing) carries no doubt about a median."""
    if isinstance(figure, Ratio) and _decided(figure, ms):
        return ""
    found = [cv for pick in _picks(figure) if pick.stat == "time"
             and (m := pick.find(ms)) is not None for cv in m.caveats]
    return caveats.doubts(list(dict.fromkeys(found)))


def _decided(ratio: Ratio, ms: Sequence[Measurement]) -> bool:
    slow, fast = ratio.slow.find(ms), ratio.fast.find(ms)
    if (slow is None or fast is None or slow.summary is None or fast.summary is None
            or "time" not in (ratio.slow.stat, ratio.fast.stat)):
        return False
    s_lo, s_hi = ((slow.summary.ci_low, slow.summary.ci_high) if ratio.slow.stat == "time"
                  else (value_of(ratio.slow, ms) or 0.0,) * 2)
    f_lo, f_hi = ((fast.summary.ci_low, fast.summary.ci_high) if ratio.fast.stat == "time"
                  else (value_of(ratio.fast, ms) or 0.0,) * 2)
    if min(s_lo, f_lo) <= 0:
        return False
    lo, hi = s_lo / f_hi, s_hi / f_lo
    return (lo > 1 or hi < 1) and hi / lo < DECIDED_SPAN


def _missing(figure: Figure, ms: Sequence[Measurement]) -> str:
    """Why a figure has no value: the status of the first of its cases that did not run."""
    for pick in (figure.slow, figure.fast) if isinstance(figure, Ratio) else (figure,):
        m = pick.find(ms)
        if m is None:
            return "not run"
        if m.status is not Status.OK:
            return _status(m)
    return "—"


def _status(m: Measurement) -> str:
    """`skipped: no CUDA device` and the like: the status, and the reason up to its '('."""
    status = "skipped" if m.status is Status.UNAVAILABLE else m.status.value
    return f"{status}: {m.reason.split(' (')[0].split('; ')[0]}"[:60]


def _notes(seed: Seed, ms: Sequence[Measurement]) -> list[str]:
    """The fairness warnings of this table: mixed dtypes in one comparison, TF32, sizes."""
    notes = []
    for row in seed.rows():
        for figure in (row.written, row.correct):
            if isinstance(figure, Ratio) and figure.slow.dtype != figure.fast.dtype:
                notes.append(f"dtype mismatch in '{row.shown(ms)}': {figure.slow.backend} "
                             f"{figure.slow.dtype} against {figure.fast.backend} "
                             f"{figure.fast.dtype} — {ADVICE[Caveat.DTYPE_MISMATCH]}")
    tf32 = sorted({m.case.backend_device for m in ms
                   if Caveat.TF32_ON in m.caveats})
    gpu_f32 = any(m.case.device != "cpu" and m.case.dtype == "float32" and
                  m.status is Status.OK for m in ms)
    if tf32:
        notes.append(f"TF32 was on for float32 products on {', '.join(tf32)}")
    elif gpu_f32:
        notes.append("TF32 was off for float32 matrix products: they ran at full float32 "
                     "precision" + _cudnn_tf32(ms))
    notes.extend(_size_notes(seed, ms))
    return notes


def _cudnn_tf32(ms: Sequence[Measurement]) -> str:
    """cuDNN's convolutions and RNNs follow their own switch, on by default in torch."""
    if any(m.counters.get("conv_tf32") for m in ms):
        return ("; cuDNN's float32 convolutions ran on TF32 "
                "(torch.backends.cudnn.allow_tf32, torch's default)")
    return ""


def _size_notes(seed: Seed, ms: Sequence[Measurement]) -> list[str]:
    """Say so where figures were measured at a size other than the post's."""
    moved = sorted({(m.case.size, pick.size) for row in seed.rows()
                    for pick in _picks(row.correct) + _picks(row.written)
                    if (m := pick.find(ms)) is not None and pick.size is not None
                    and m.case.size != pick.size})
    return [f"measured at size {units.size(got)}, not the post's {units.size(want)} "
            "(a --quick run)" for got, want in moved]


def _picks(figure: Figure | None) -> list[Pick]:
    if isinstance(figure, Ratio):
        return [figure.slow, figure.fast]
    return [figure] if isinstance(figure, Pick) else []


def seed_records(ms: Sequence[Measurement]) -> list[dict[str, Any]]:
    """Each post with cases here: per row, the claim, the as-written and correct figures
    (seconds, or a ratio where the post divided two times), and the sentence."""
    out = []
    present = {m.case.workload for m in ms}
    for seed in seeds.REGISTRY.all():
        if not present & seed.workloads():
            continue
        mine = [m for m in ms if m.case.workload in seed.workloads()]
        rows = []
        for row in seed.rows():
            written, correct = value_of(row.written, mine), value_of(row.correct, mine)
            rows.append({"label": row.shown(mine), "claim": row.claim,
                         f"as_written_{_unit(row.written)}": written,
                         f"correct_{_unit(row.correct)}": correct,
                         "written_over_correct": written / correct if written and correct
                         else None, "why": row.why(Found(written, correct, mine))})
        out.append({"seed": seed.name, "title": seed.title, "rows": rows})
    return out


def _unit(figure: Figure | None) -> str:
    """A post's figure is seconds, or a ratio where it divided two times ("40× faster")."""
    return "ratio" if isinstance(figure, Ratio) else "s"
