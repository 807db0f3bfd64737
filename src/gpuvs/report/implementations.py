"""Several implementations side by side, as a person reads them: one table with a row per
size, a column per implementation × device (its time and interval), and the winner
(`gpuvs.analysis.implementations`); the same answer in lines, for the `repr` of a
comparison and the fixture's summary; and as numbers, for the JSON document and
`Comparison.to_json` (`winner_record`). The tables of each implementation alone come from
`layout`, which adds this one after them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gpuvs import units
from gpuvs.analysis.implementations import Winner, names, side_by_side, winners
from gpuvs.analysis.speedup import END_TO_END, data_of
from gpuvs.model import YOURS_PREFIX, Case, Caveat, Measurement, Status
from gpuvs.table import Table

WINNER_COLUMNS = ("fastest", "over the next (95 % CI)", "intervals")
CONTENDED = " (contended)"


def label(case: Case) -> str:
    """'vectorised cpu', 'compiled cuda', 'compiled cuda end-to-end'."""
    name = case.workload.removeprefix(YOURS_PREFIX)
    return f"{name} {case.device}" + (" end-to-end" if data_of(case) == END_TO_END else "")


def table(ms: Sequence[Measurement]) -> Table:
    """Per size, each implementation × device with its interval, then the fastest, its
    margin over the next and whether their intervals are apart. A device that could not
    run here is a note, not a column of dashes."""
    shown = [m for m in ms if m.status is not Status.UNAVAILABLE]
    columns = list(dict.fromkeys(label(m.case) for m in shown))
    cells: dict[tuple[int, str], str] = {(m.case.size, label(m.case)): _cell(m) for m in shown}
    best = {w.size: w for w in winners(ms)}
    sizes = sorted({m.case.size for m in shown})
    rows = tuple((units.size(size), *(cells.get((size, c), "—") for c in columns),
                  *_winner_cells(best.get(size))) for size in sizes)
    dtype = next((m.case.dtype for m in ms if m.case.dtype), "")
    notes = ["fastest: of the cases whose data is where they run (the CPU's, a GPU's "
             "resident ones); over the next: the next one's median over its own, with the "
             "95 % interval a repeat's ratio lands in; apart: their intervals do not overlap, "
             "so the order is measured — where they overlap, these runs cannot tell the two "
             "apart"]
    if any(data_of(m.case) == END_TO_END for m in shown):
        notes.append("end-to-end: the host's data copied to the GPU and the output back "
                     "on every call")
    gone = {m.case.device: m.reason for m in ms if m.status is Status.UNAVAILABLE}
    notes += [f"unavailable: {device}: {reason}" for device, reason in gone.items()]
    return Table(f"{', '.join(names(ms))} side by side" + (f" · {dtype}" if dtype else ""),
                 ("size", *columns, *WINNER_COLUMNS), rows, tuple(notes),
                 wrapping=frozenset({"over the next (95 % CI)"}))


def _cell(m: Measurement) -> str:
    """The time and its interval (each implementation's own table names every doubt; here,
    contention, which may reorder them), or how the case ended."""
    s = m.summary
    if s is None:
        return m.status.value.replace("_", " ")
    return (units.seconds_ci(s.median, s.ci_halfwidth_rel)
            + (CONTENDED if Caveat.CONTENDED in m.caveats else ""))


def _winner_cells(w: Winner | None, named: Callable[[Case], str] = label
                  ) -> tuple[str, str, str]:
    if w is None:
        return "none finished", "", ""
    if w.next is None:
        return named(w.fastest.case), "the only one that finished", ""
    apart = "apart" if w.apart else "overlap: not told apart"
    return (named(w.fastest.case),
            f"{units.ratio(w.ratio, w.low, w.high)} over {named(w.next.case)}",
            apart + (CONTENDED if w.contended else ""))


def lines(ms: Sequence[Measurement], label: Callable[[Case], str] = label) -> list[str]:
    """One line per size: the fastest, its margin over the next, whether they are apart
    (`label` names a case: the fixture's are named by their test as well)."""
    out = []
    for w in winners(ms):
        fastest, over, apart = _winner_cells(w, label)
        out.append(f"at {units.size(w.size)}: {fastest} fastest"
                   + (f", {over}" if over else "") + (f"; {apart}" if apart else ""))
    return out


def winner_record(w: Winner) -> dict[str, Any]:
    """Several implementations at one size, as numbers: the fastest case (its data where
    it runs), the next one, the next's median over the fastest's with its CI, and whether
    their intervals are apart (else this measurement cannot order the two)."""
    def named(m: Measurement | None) -> dict[str, Any] | None:
        if m is None or m.summary is None:
            return None
        return {"key": m.case.key, "implementation": m.case.workload.removeprefix(YOURS_PREFIX),
                "device": m.case.device, "median_s": m.summary.median,
                "ci_low_s": m.summary.ci_low, "ci_high_s": m.summary.ci_high}

    return {"size": w.size, "fastest": named(w.fastest), "next": named(w.next),
            "ratio": w.ratio if w.next else None, "ratio_low": w.low if w.next else None,
            "ratio_high": w.high if w.next else None, "apart": w.apart,
            "contended": w.contended}


def winner_records(ms: Sequence[Measurement]) -> dict[str, Any]:
    """What a document of a run of several implementations adds: the winner at each size."""
    return {"winners": [winner_record(w) for w in winners(ms)]} if side_by_side(ms) else {}
