"""A run's calibration as tables and records: its probes, first in everything that shows a
run (`views.of` puts the table first in every view; `documents` and the run export carry
the records), and two runs' probes side by side, first in `compare` and `check`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpuvs import units
from gpuvs.analysis.calibration import label, rate, split
from gpuvs.analysis.regression import Change
from gpuvs.measuring import caveats
from gpuvs.model import Caveat, Measurement, Status
from gpuvs.report.layout import regimes_words
from gpuvs.table import Table
from gpuvs.workloads.calibration import what

COLUMNS = ("probe", "runs", "time ±CI", "rate", "note")
SIDE_BY_SIDE_COLUMNS = ("probe", "A", "B", "B ÷ A (95 % CI)", "verdict")
TITLE = "the machine, calibrated: one fixed probe per bound, measured first in this run's workers"


def shown(ms: Sequence[Measurement]) -> list[Measurement]:
    """The probes a reader is shown: those that ran, or tried to (a backend not installed
    here is said once by the run, not again as a probe)."""
    return [m for m in split(ms)[0] if m.status is not Status.UNAVAILABLE]


def table(ms: Sequence[Measurement]) -> Table | None:
    """The run's probes, one row each; None for a run without a calibration."""
    probes = shown(ms)
    if not probes:
        return None
    rows = []
    for m in probes:
        s, found = m.summary, rate(m)
        time = (units.seconds_ci(s.median, s.ci_halfwidth_rel) + caveats.doubts(m.caveats)
                if s is not None else f"{m.status.value}: {m.reason}")
        rows.append((label(m.case), what(m.case), time,
                     units.rate(*found) if found else "",
                     ", ".join(filter(None, [*(str(cv).replace("_", " ") for cv in m.caveats
                                               if cv not in caveats.DOUBTS),
                                             regimes_words(m)]))))
    return Table(TITLE, COLUMNS, tuple(rows), notes=(
        "`gpuvs compare` and `gpuvs check` set each case against its bound's probe in the "
        "two runs: a change the machine's probe shows too is the machine's "
        "(docs/across-machines.md)",), wrapping=frozenset({"note"}))


def side_by_side(probes: Sequence[Change], names: tuple[str, str],
                 a_ms: Sequence[Measurement] = (), b_ms: Sequence[Measurement] = ()
                 ) -> Table:
    """Two runs' probes: A's, B's, B ÷ A with its CI and its verdict, as a case's; under
    them, each probe whose processes fell in two groups in either run, in words — the
    reason its ratio spans so much that it explains nothing (on two H200s the round trip
    took 2.4–4.8 ms in some processes and 11–17 ms in others)."""
    rows = tuple((c.series, units.seconds(c.a), units.seconds(c.b),
                  f"{c.ratio:.3f} [{c.low:.3f}, {c.high:.3f}]",
                  c.verdict + (" (contended)" if c.contended else "")) for c in probes)
    by = ({m.case.key: m for m in a_ms}, {m.case.key: m for m in b_ms})
    grouped = []
    for c in probes:
        said = [f"{side} {words}" for side, runs in zip("AB", by, strict=True)
                if c.key in runs and (words := regimes_words(runs[c.key]))]
        if said:
            grouped.append(f"{c.series}: {'; '.join(said)}")
    return Table(f"the machines: B ({names[1]}) against A ({names[0]}), probe by probe",
                 SIDE_BY_SIDE_COLUMNS, rows, notes=(
                     *grouped,
                     "each case below is set against its bound's probe: a change within "
                     "the threshold of its probe's is the machine's (verdict machine); a "
                     "probe contended or ambiguous explains nothing",))


def missing_line(a_ms: Sequence[Measurement], b_ms: Sequence[Measurement]) -> str | None:
    """The line that says why no calibration is set side by side, or None where one is."""
    without = [name for name, ms in (("A", a_ms), ("B", b_ms)) if not split(ms)[0]]
    if not without:
        return None
    return (f"no calibration in {' or '.join(without)} (a run made before gpuvs calibrated "
            "each run, or not by `gpuvs run`, `sweep`, `seeds` or `run-file`): every case is "
            "judged on its own")


def records(ms: Sequence[Measurement]) -> list[dict[str, Any]]:
    """The run's probes as the JSON documents carry them (`calibration`, docs/json.md)."""
    out = []
    for m in shown(ms):
        s, found = m.summary, rate(m)
        out.append({
            "probe": label(m.case), "bound": m.case.param("bound"),
            "threads": m.case.param("threads") or None, "backend": m.case.backend,
            "device": m.case.device, "key": m.case.key, "runs": what(m.case),
            "status": m.status.value, "reason": m.reason or None,
            "median_s": s.median if s else None, "ci_low_s": s.ci_low if s else None,
            "ci_high_s": s.ci_high if s else None,
            "rate": found[0] if found else None, "rate_unit": found[1] if found else None,
            "caveats": [cv.value for cv in m.caveats],
            "contended": Caveat.CONTENDED in m.caveats})
    return out


def machine_records(probes: Sequence[Change]) -> list[dict[str, Any]]:
    """Two runs' probes side by side, as `compare` and `check` documents carry them."""
    return [{"probe": c.series, "key": c.key, "a_s": c.a, "b_s": c.b, "ratio": c.ratio,
             "ratio_low": c.low, "ratio_high": c.high, "verdict": c.verdict,
             "contended": c.contended} for c in probes]
