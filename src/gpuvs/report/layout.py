"""Measurements → tables of strings. Pure: the console, HTML and JSON renderers only draw.

One table per workload group (variant, params, dtype). Each row is one case; GPU rows
carry the speedup over the fastest CPU case of the same size, with the 95 % interval a
repeat's speedup lands in (`speedup.of`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from gpuvs import units, workloads
from gpuvs.analysis import speedup
from gpuvs.analysis.ceilings import contended_note, peak_for, read
from gpuvs.analysis.cost import NO_PRICES, Prices
from gpuvs.analysis.crossover import (
    Crossover,
    GroupKey,
    crossovers,
    group_key,
)
from gpuvs.analysis.implementations import side_by_side
from gpuvs.analysis.regression import borrowed, process_spread
from gpuvs.analysis.roofline import Finding, busy_seconds, findings
from gpuvs.analysis.speedup import best_cpu_by_size
from gpuvs.measuring import caveats
from gpuvs.model import Case, Caveat, Ceiling, Measurement, Status
from gpuvs.report import implementations, resources
from gpuvs.table import Table
from gpuvs.workloads import SizeAxis

COLUMNS = ("size", "backend", "device", "threads", "data", "time ±CI", "wall", "GPU busy",
           "throughput", "of peak", "GPU vs CPU", *resources.COLUMNS, "note")


COLD = ("cache", "cold")  # what --cold adds to every case of a run


def sweep_title(key: GroupKey) -> str:
    """A sweep named for a slide: "Square matrix product, float32", then "· as written"
    for a variant other than `correct`. The name is the workload's own (`title`); one
    it does not name (a `yours:` function) reads "matmul · correct · float32 · k=v"."""
    workload, variant, dtype, params = key
    known = workloads.find(workload)
    name = known.title(tuple(p for p in params if p != COLD)) if known else None
    if name is None:
        extra = " ".join(f"{k}={v}" for k, v in params)
        return f"{workload} · {variant} · {dtype}" + (f" · {extra}" if extra else "")
    shown = "" if variant == "correct" else f" · {variant.replace('_', ' ')}"
    return f"{name}, {dtype}{shown}" + (" · caches flushed" if COLD in params else "")


def size_axis(key: GroupKey) -> SizeAxis:
    """What `size` counts in this sweep ("elements"), as its workload says; else "size"."""
    known = workloads.find(key[0])
    return known.size_axis(key[3]) if known else SizeAxis()


CROSSOVER_COLUMNS = ("GPU series", "data", "GPU faster from", "tie band", "model crossover",
                     "asymptotic", "at largest size")


def result_tables(measurements: Iterable[Measurement],
                  ceilings: Sequence[Ceiling] = (), prices: Prices = NO_PRICES) -> list[Table]:
    """Per group: the cases, then (where a CPU and a GPU series exist) the crossovers;
    with several of the user's implementations, then one table of them side by side.

    With measured ceilings, each case also shows the share of the ceiling it reached, and
    a table whose shares use ceilings measured on a busy machine says so; where measured,
    its energy and peak memory; with `prices`, a million calls' cost.
    """
    measurements = list(measurements)
    groups: dict[GroupKey, list[Measurement]] = defaultdict(list)
    for m in measurements:
        groups[group_key(m.case)].append(m)
    tables = []
    disturbed = contended_note(ceilings)
    spread = process_spread(measurements)
    for key, ms in groups.items():
        found = crossovers(ms, spread)
        wins_from = {c.gpu: c.size for c in found if c.size is not None}
        table = _table(key, ms, ceilings, findings(ms, ceilings), wins_from, prices, spread)
        if disturbed and any(row[COLUMNS.index("of peak")] for row in table.rows):
            table = replace(table, notes=(*table.notes, disturbed))
        tables.append(table)
        if found:
            crossing = crossover_table(key, found)
            contended = sum(Caveat.CONTENDED in m.caveats for m in ms)
            if contended:
                crossing = replace(crossing, notes=(*crossing.notes, (
                    f"{contended} case(s) of this sweep were measured while other processes "
                    "held the machine (contended): the crossover may move on a quiet one")))
            tables.append(crossing)
    if side_by_side(measurements):
        tables.append(implementations.table(measurements))
    return tables


def crossover_table(key: GroupKey, found: Sequence[Crossover]) -> Table:
    rows = tuple(_crossover_row(c) for c in sorted(found, key=lambda c: (c.data, c.gpu.backend)))
    notes = ("GPU faster from: the smallest size from which the 95 % CI of the speedup over "
             "the fastest CPU case stays above 1×; model: where t = t0 + work/throughput "
             "fits cross; asymptotic: the ratio of fitted throughputs",)
    return Table(f"crossover · {sweep_title(key)}", CROSSOVER_COLUMNS, rows, notes)


def _crossover_row(c: Crossover) -> tuple[str, ...]:
    last = c.points[-1]
    measured = units.size(c.size) if c.size is not None else (
        "never in range" if last.verdict != "gpu" else "—")
    if c.size is not None and c.size == c.points[0].size:
        measured = (f"{units.size(c.size)} (only size)" if len(c.points) == 1
                    else f"≤ {units.size(c.size)} (every size)")
    band = "" if c.tie_band is None else "–".join(dict.fromkeys(map(units.size, c.tie_band)))
    model = "" if c.modelled_size is None else (
        f"≈ {units.size(round(c.modelled_size))}" + (" (extrapolated)" if c.extrapolated else ""))
    asym = units.ratio(c.asymptotic_speedup) if c.asymptotic_speedup else ""
    at_last = f"{units.ratio(last.estimate, last.low, last.high)} at {units.size(last.size)}"
    return (c.gpu.backend_device, c.data, measured, band, model, asym, at_last)


def _table(key: GroupKey, ms: list[Measurement], ceilings: Sequence[Ceiling],
           found: Mapping[str, Finding], wins_from: Mapping[Case, int],
           prices: Prices, spread: Mapping[tuple[str, str], float]) -> Table:
    best_cpu = best_cpu_by_size(ms)
    shown = [m for m in ms if m.status is not Status.UNAVAILABLE]
    order = sorted(shown, key=lambda m: (m.case.size, m.case.device != "cpu", m.case.backend,
                                         m.case.device, m.case.param("data")))
    rows = tuple(_row(m, best_cpu.get(m.case.size), ceilings, found.get(m.case.key),
                      wins_from.get(m.case.series), prices, spread)
                 for m in order)
    axis = size_axis(key)
    notes = ((f"size: {axis.label}",) if axis != SizeAxis() else ()) + (
        fairness(ms), *resources.notes(ms, prices), *_unavailable_notes(ms))
    if not best_cpu:
        notes += ("no CPU case finished: no speedup or crossover can be computed without a "
                  "CPU series",)
    if not any(m.case.device != "cpu" and m.status is Status.OK for m in ms):
        notes += ("no GPU case finished: no speedup or crossover can be computed without a "
                  "GPU series",)
    return Table(sweep_title(key), COLUMNS, rows, notes)


def fairness(ms: Sequence[Measurement]) -> str:
    """One line on what makes the rows comparable, or not: dtype, threads, TF32, caches."""
    done = [m for m in ms if m.status is Status.OK]
    dtypes = sorted({m.case.dtype for m in done})
    parts = [f"dtype {', '.join(dtypes)} on every backend" if len(dtypes) == 1
             else f"dtype mismatch: {', '.join(dtypes)}"]
    threads = sorted({(m.case.backend, int(m.counters["threads"])) for m in done
                      if "threads" in m.counters})
    if threads:
        parts.append("CPU threads " + ", ".join(f"{b} {n}" for b, n in threads))
    tf32 = sorted({m.case.backend_device for m in done
                   if Caveat.TF32_ON in m.caveats})
    parts.append(f"TF32 on for {', '.join(tf32)}" if tf32 else "no TF32")
    if any(m.case.backend == "jax" for m in done):
        parts.append("JAX with 64-bit types enabled (its default is 32-bit)")
    cold = any(m.case.param("cache") == "cold" for m in done)
    parts.append("caches flushed before each call" if cold
                 else "caches warm (--cold flushes them)")
    return "fair comparison: " + "; ".join(parts)


def _unavailable_notes(ms: Sequence[Measurement]) -> tuple[str, ...]:
    """One line per backend and device that could not run, instead of one row per size."""
    reasons = {(m.case.backend, m.case.device): m.reason for m in ms
               if m.status is Status.UNAVAILABLE}
    return tuple(f"unavailable: {b} on {d}: {r}" for (b, d), r in sorted(reasons.items()))


def _row(m: Measurement, cpu: Measurement | None, ceilings: Sequence[Ceiling],
         finding: Finding | None, wins_from: int | None, prices: Prices,
         spread: Mapping[tuple[str, str], float]) -> tuple[str, ...]:
    c = m.case
    threads = m.counters.get("threads")
    head = (units.size(c.size), c.backend, c.device, f"{threads:.0f}" if threads else "",
            c.param("data", "resident") if c.device != "cpu" else "")
    s = m.summary
    if s is None:
        return (*head, "—", *("",) * (len(COLUMNS) - len(head) - 2),
                f"{m.status.value}: {m.reason}")
    wall = units.seconds(m.wall_summary.median) if m.wall_summary else ""
    return (*head, units.seconds_ci(s.median, s.ci_halfwidth_rel)
            + caveats.doubts(m.caveats), wall,
            busy_cell(m), throughput(m), of_peak(m, ceilings), _speedup(m, cpu, spread),
            *resources.cells(m, prices), _note(m, finding, wins_from, borrowed(m, spread)))


def busy_cell(m: Measurement) -> str:
    """'6.6 µs (36 %)': the GPU's own busy time per call and its share of a call."""
    busy = busy_seconds(m)
    if busy is None or m.summary is None or m.summary.median <= 0:
        return ""
    return f"{units.seconds(busy)} ({100 * min(busy / m.summary.median, 1):.0f}%)"


def regimes_words(m: Measurement) -> str:
    """'bimodal across processes: 7.1 µs in 3 of 5, 9.9 µs in 2' where the case's processes
    fell in two groups (`Measurement.regimes`), else ''."""
    found = m.regimes
    if found is None:
        return ""
    total = found.fast_count + found.slow_count
    return (f"bimodal across processes: {units.seconds(found.fast)} in {found.fast_count} of "
            f"{total}, {units.seconds(found.slow)} in {found.slow_count}")


def _one_process(m: Measurement, lent: float) -> str:
    """A case timed in one process, in words: where its run's cases of its kind show how
    far processes fall apart (`lent`, `regression.borrowed`), how far a repeat may land,
    which `compare` and `check` judge it by; the user's own code, timed in its own
    process, that its interval is that one's. A post's replay is the post's timing."""
    if lent > 0 and m.case.variant != "as_written":
        return (f"one process's interval: a repeat may land ±{lent:.0%} away, as this "
                f"run's {m.case.backend} {m.case.device} cases fell across processes")
    return "one process's interval" if m.case.users_code and m.one_process else ""


def _note(m: Measurement, finding: Finding | None, wins_from: int | None,
          lent: float = 0.0) -> str:
    """The bound and why (with where this GPU series starts to win), then the caveats, and
    where the case's processes fell in two groups, the groups, and what `_one_process`
    says of a case timed in one process."""
    named = ", ".join(filter(None, [*(str(cv).replace("_", " ") for cv in m.caveats),
                                    regimes_words(m), _one_process(m, lent)]))
    if finding is None:
        return named
    why = f"{finding.bound}: {finding.why}"
    if wins_from is not None and m.case.size < wins_from:
        why += f"; here the GPU is faster only from {units.size(wins_from)}"
    return f"{why}. {named}" if named else why


def throughput(m: Measurement) -> str:
    """Achieved FLOP/s and bytes/s, from the median, where the workload counts them."""
    if m.summary is None or m.summary.median <= 0:
        return ""
    rates = []
    if m.counters.get("flops"):
        rates.append(units.rate(m.counters["flops"] / m.summary.median, "FLOP/s"))
    if m.counters.get("bytes_moved"):
        rates.append(units.rate(m.counters["bytes_moved"] / m.summary.median, "B/s"))
    return ", ".join(rates)


def of_peak(m: Measurement, ceilings: Sequence[Ceiling]) -> str:
    """Shares of the matching FLOP/s and bandwidth ceilings; empty without ceilings."""
    if m.summary is None or m.summary.median <= 0:
        return ""
    peaks = peak_for(m.case, ceilings, tf32=Caveat.TF32_ON in m.caveats,
                     working_set=m.counters.get("working_set_bytes"))
    shares = []
    if m.counters.get("flops") and peaks.get("flops"):
        shares.append(f"{100 * m.counters['flops'] / m.summary.median / peaks['flops']:.0f}% "
                      "FLOP")
    if m.counters.get("bytes_moved") and peaks.get("bytes"):
        shares.append(f"{100 * m.counters['bytes_moved'] / m.summary.median / peaks['bytes']:.0f}"
                      "% B/W")
    return ", ".join(shares)


def _speedup(m: Measurement, cpu: Measurement | None,
             spread: Mapping[tuple[str, str], float]) -> str:
    if m.case.device == "cpu" or cpu is None or not m.samples:
        return ""
    s = speedup.of(cpu, m, spread)
    busy = Caveat.CONTENDED in m.caveats or Caveat.CONTENDED in cpu.caveats
    return units.ratio(s.estimate, s.low, s.high) + (" (contended)" if busy else "")


def status_line(counts: dict[str, int]) -> str:
    """'12 ok, 3 unavailable, 1 oom' in a fixed order."""
    order = [s.value for s in Status]
    return ", ".join(f"{counts[k]} {k}" for k in order if counts.get(k))


def ceilings_table(measurements: Sequence[Measurement], run_id: str, fingerprint: str
                   ) -> Table:
    """The ceilings read off the probes (`gpuvs ceilings`), and a note for each backend
    and device where they could not be measured."""
    rows = tuple((c.name, c.backend, c.device,
                  units.seconds(c.value) if c.unit == "s" else units.rate(c.value, c.unit))
                 for c in read(measurements))
    missing: dict[tuple[str, str], str] = {}
    for m in measurements:
        if m.summary is None:
            missing.setdefault((m.case.backend, m.case.device), f"{m.status.value}: {m.reason}")
    notes = tuple(f"not measured on {backend} {device}: {why}"
                  for (backend, device), why in sorted(missing.items()))
    if disturbed := contended_note(read(measurements)):
        notes += (disturbed,)
    return Table(f"ceilings · run {run_id} · environment {fingerprint}",
                 ("ceiling", "backend", "device", "measured"), rows, notes,
                 wrapping=frozenset({"ceiling"}))
