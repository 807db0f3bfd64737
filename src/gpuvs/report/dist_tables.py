"""`gpuvs dist` measurements → tables of strings, pure like layout.py.

Collectives: one table per collective (and backend, device, rank count), a row per size
with the slowest rank's time, the algorithm bandwidth and nccl-tests' bus bandwidth.
Scaling: one table per backend, device and batch mode, a row per rank count with
throughput, step time, scaling efficiency against one rank (with its bootstrap CI), and
the step split into compute and the communication it waits for.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from gpuvs import units
from gpuvs.analysis import speedup
from gpuvs.distributed import COLLECTIVE_WORKLOAD, SCALING_WORKLOAD, WORKLOADS
from gpuvs.distributed.bandwidth import COLLECTIVES, algbw, bus_factor, busbw, scaling_efficiency
from gpuvs.machine import energy
from gpuvs.model import Measurement, Status
from gpuvs.table import Table

COLLECTIVE_COLUMNS = ("size", "per call ±CI", "wall", "graph replay ±CI", "algbw", "busbw",
                      "loops", "note")
SCALING_COLUMNS = ("N", "batch", "threads", "step ±CI", "samples/s", "efficiency", "compute",
                   "comm", "note")
ENERGY_COLUMN = "energy/image"
_NUMERIC = {"algbw", "busbw", "loops", "N", "batch", "samples/s", "compute"}


def is_dist(m: Measurement) -> bool:
    return m.case.workload in WORKLOADS


def dist_tables(measurements: Iterable[Measurement]) -> list[Table]:
    """The collective tables (in COLLECTIVES order), then the scaling tables."""
    ms = [m for m in measurements if is_dist(m)]
    return collective_tables(ms) + scaling_tables(ms)


CollectiveKey = tuple[str, str, str, int]  # collective, backend, device, ranks
ScalingKey = tuple[str, str, str, str]  # backend, device, "weak" | "strong", batch


def collective_groups(ms: Iterable[Measurement]) -> dict[CollectiveKey, list[Measurement]]:
    """Collective cases by series, in COLLECTIVES order, each series by size."""
    groups: dict[CollectiveKey, list[Measurement]] = defaultdict(list)
    for m in ms:
        if m.case.workload == COLLECTIVE_WORKLOAD:
            c = m.case
            groups[(c.param("collective"), c.backend, c.device, int(c.param("nproc")))].append(m)
    order = sorted(groups, key=lambda k: (COLLECTIVES.index(k[0]), k[1], k[2], k[3]))
    return {k: sorted(groups[k], key=lambda m: m.case.size) for k in order}


def scaling_groups(ms: Iterable[Measurement]) -> dict[ScalingKey, list[Measurement]]:
    """Scaling cases by series, each series by rank count."""
    groups: dict[ScalingKey, list[Measurement]] = defaultdict(list)
    for m in ms:
        if m.case.workload == SCALING_WORKLOAD:
            c = m.case
            groups[(c.backend, c.device, c.param("scaling"), c.param("batch"))].append(m)
    return {k: sorted(groups[k], key=lambda m: m.case.size) for k in sorted(groups)}


def bases(series: Sequence[Measurement]) -> list[Measurement]:
    """The series' finished N = 1 cases, before the others and after them: what
    efficiency is measured against, and how far that moved while the others ran."""
    return [m for m in series if m.case.size == 1 and m.status is Status.OK]


def collective_tables(ms: Sequence[Measurement]) -> list[Table]:
    return [_collective_table(key, series) for key, series in collective_groups(ms).items()]


def _collective_table(key: CollectiveKey, ms: list[Measurement]) -> Table:
    name, backend, device, n = key
    rows = [_collective_row(m, name, n) for m in ms]
    notes = [f"busbw = algbw × {_factor_text(name)} (nccl-tests; {n} ranks: "
             f"×{bus_factor(name, n):.3g}); per call: what a loop of calls pays, per sample "
             "the slowest rank's, median of the samples, taken in batches after a barrier "
             "and an untimed loop",
             "size as nccl-tests counts it: " + _SIZE_MEANING[name]]
    if any(m.graph_summary for m in ms):
        notes.append("graph replay: the same calls captured as one CUDA graph and replayed, "
                     "sampled the same way, so no host launch is in it; where per call is "
                     "well above it, the host issuing the calls set the pace. NCCL ran the "
                     "captured calls slower than eager ones at some sizes (1–16 MiB on two "
                     "H200s), so algbw and busbw come from the per-call time, as nccl-tests "
                     "times its own launches")
    if n == 1:
        notes.append("one rank: nothing crosses a link, so busbw is 0; NCCL returns an "
                     "in-place all_reduce or broadcast at once, so algbw at one rank is "
                     "the call's overhead, not a bandwidth")
    return Table(f"dist · {name} · {backend} · {n} × {device}", COLLECTIVE_COLUMNS,
                 _right(COLLECTIVE_COLUMNS, rows), tuple(notes))


_SIZE_MEANING = {"all_reduce": "the buffer reduced", "broadcast": "the buffer sent",
                 "all_gather": "the gathered output (n pieces)",
                 "reduce_scatter": "the input reduced (n pieces)"}


def _factor_text(name: str) -> str:
    return {"all_reduce": "2(n−1)/n", "broadcast": "1"}.get(name, "(n−1)/n")


def _collective_row(m: Measurement, name: str, n: int) -> tuple[str, ...]:
    nbytes = m.counters.get("bytes", float(m.case.size))
    size = units.nbytes(nbytes) + ("" if nbytes == m.case.size else
                                   f" (of {units.nbytes(m.case.size)})")
    s = m.summary
    if s is None:
        return (size, "—", "", "", "", "", "", f"{m.status.value}: {m.reason}")
    wall = units.seconds(m.wall_summary.median) if m.wall_summary else ""
    replay = m.graph_summary
    return (size, units.seconds_ci(s.median, s.ci_halfwidth_rel), wall,
            units.seconds_ci(replay.median, replay.ci_halfwidth_rel) if replay else "",
            units.rate(algbw(nbytes, s.median), "B/s"),
            units.rate(busbw(name, nbytes, s.median, n), "B/s"), str(m.loops),
            ", ".join(str(cv).replace("_", " ") for cv in m.caveats))


def scaling_tables(ms: Sequence[Measurement]) -> list[Table]:
    return [_scaling_table(key, series) for key, series in scaling_groups(ms).items()]


def _scaling_table(key: ScalingKey, ms: list[Measurement]) -> Table:
    backend, device, mode, batch = key
    ones = bases(ms)
    rows: list[tuple[str, ...]] = [_scaling_row(m, ones) for m in ms]
    columns: tuple[str, ...] = SCALING_COLUMNS
    if any(energy.of(m) or energy.why_none(m) for m in ms):  # asked: --energy
        columns = (*SCALING_COLUMNS[:-1], ENERGY_COLUMN, SCALING_COLUMNS[-1])
        rows = [(*row[:-1], _energy_per_image(m), row[-1]) for m, row in zip(ms, rows,
                                                                              strict=True)]
    what = (f"batch {batch} per rank (weak scaling)" if mode == "weak"
            else f"global batch {batch} split over the ranks (strong scaling)")
    notes = ("batch: images per rank × ranks; efficiency: samples/s at N over N × samples/s "
             "at N = 1, with its 95 % bootstrap CI; step: per step the slowest rank's, "
             "median",
             "compute: the same step under DDP's no_sync() (no gradient all-reduce); "
             "comm: step − compute, the all-reduce time the backward pass did not hide "
             "(0 where it hid all of it)", *_baseline_notes(ms, ones, mode),
             *_energy_notes(ms, columns))
    return Table(f"dist scaling · seed 003 CNN, DDP · {backend} · {device} · {what}",
                 columns, _right(columns, rows), notes,
                 wrapping=frozenset({"efficiency", "comm"}))


def _scaling_row(m: Measurement, ones: Sequence[Measurement]) -> tuple[str, ...]:
    k = m.counters
    threads = f"{k['threads']:.0f}" if k.get("threads") else ""
    n = f"{m.case.size} ({m.case.param('round')})" if m.case.param("round") else str(m.case.size)
    head = (n, f"{k.get('per_rank_batch', 0):.0f} × {m.case.size}", threads)
    s = m.summary
    if s is None:
        return (*head, "—", "", "", "", "", f"{m.status.value}: {m.reason}")
    step = k.get("compute_s", 0.0) + k.get("comm_s", 0.0)
    comm = units.seconds(k.get("comm_s"))
    if k.get("comm_s") == 0.0:
        comm = "0 (hidden)"
    elif step > 0 and "comm_s" in k:
        comm += f" ({100 * k['comm_s'] / step:.0f}%)"
    return (*head, units.seconds_ci(s.median, s.ci_halfwidth_rel),
            f"{k['samples_per_s']:.4g}" if "samples_per_s" in k else "",
            _efficiency(m, ones), units.seconds(k.get("compute_s")), comm,
            ", ".join(str(cv).replace("_", " ") for cv in m.caveats))


def _energy_per_image(m: Measurement) -> str:
    """'41 mJ (18 mJ above idle)': every GPU's energy per step over the images a step
    trains (all ranks'); '—' where none could be read (the table's note says why)."""
    found = energy.of(m)
    images = m.counters.get("global_batch")
    if found is None or not images:
        return "—" if energy.why_none(m) else ""
    above = (f" ({units.joules(found.above_idle_j / images)} above idle)"
             if found.above_idle_j is not None else "")
    return units.joules(found.per_call_j / images) + above


def _energy_notes(ms: Sequence[Measurement], columns: Sequence[str]) -> tuple[str, ...]:
    """What the energy column holds, and why a case has none."""
    if ENERGY_COLUMN not in columns:
        return ()
    found = {m.case.size: f for m in ms if (f := energy.of(m)) is not None}
    idle = {n: f.idle_w for n, f in found.items() if f.idle_w is not None}
    what = ("every GPU's board, from NVML's counter" if ms[0].case.device != "cpu" else
            "the CPU package's (RAPL), every process on it")
    out = [f"{ENERGY_COLUMN}: {what}, over {energy.ENERGY_WINDOW_S:g} s and more of steps "
           "with the all-reduce taken after the timed ones, per image trained"
           + ("; above idle: less the GPUs' idle power, measured before the first case ("
              + ", ".join(f"{w:.3g} W at N = {n}" for n, w in sorted(idle.items())) + ")"
              if idle else "")] if found else []
    missing = {why for m in ms if energy.of(m) is None and (why := energy.why_none(m))}
    return (*out, *(f"{ENERGY_COLUMN}: {why}" for why in sorted(missing)))


def efficiency(m: Measurement, ones: Measurement | Sequence[Measurement]
               ) -> tuple[float, float, float]:
    """(estimate, low, high) of the scaling efficiency of `m` against N = 1 (`ones`: its
    runs before and after the others). The estimate is against the first; the interval is
    the union of the bootstrap CIs of t1 / tN (weak scaling) or t1 / (N · tN) (strong)
    against each baseline, so it includes how the baseline moved between launches."""
    ones = [ones] if isinstance(ones, Measurement) else list(ones)
    if m in ones:
        return 1.0, 1.0, 1.0  # the base itself, exactly: no interval against itself
    n = m.case.size
    est = scaling_efficiency(m.counters["samples_per_s"], ones[0].counters["samples_per_s"], n)
    per_rank = 1.0 if m.case.param("scaling") == "weak" else 1.0 / n
    ratios = [speedup.of(one, m) for one in ones]
    return (est, min(r.low for r in ratios) * per_rank, max(r.high for r in ratios) * per_rank)


def _efficiency(m: Measurement, ones: Sequence[Measurement]) -> str:
    if not ones or not m.samples:
        return ""
    if m is ones[0]:
        return "100% (base)"  # no interval: the base against itself
    if m in ones:
        return "(base again)"  # how far it moved: the table's note
    est, lo, hi = efficiency(m, ones)
    return f"{100 * est:.0f}% [{100 * lo:.0f}, {100 * hi:.0f}]"


def _baseline_notes(ms: Sequence[Measurement], ones: Sequence[Measurement], mode: str
                    ) -> tuple[str, ...]:
    """How far N = 1 moved between its runs; and, for weak scaling, why an efficiency
    above 100 % is printed at all."""
    notes: list[str] = []
    if len(ones) > 1 and all(o.summary for o in ones):
        first, last = (o.summary.median for o in (ones[0], ones[-1]))  # type: ignore[union-attr]
        notes.append(f"N = 1 before the others: {units.seconds(first)} a step, after them: "
                     f"{units.seconds(last)} ({100 * (last / first - 1):+.1f} %); each "
                     "efficiency's interval covers both baselines")
    if mode == "weak" and ones and any(efficiency(m, ones)[0] > 1 for m in ms
                                       if m.summary and m not in ones
                                       and "samples_per_s" in m.counters):
        notes.append("an efficiency above 100 %: weak scaling cannot beat one rank here; "
                     "each N runs apart from the others (a launch of its own, or its own "
                     "group of ranks in turn), and the host's pace moved between them (see "
                     "N = 1 before and after): read it as 100 % within that")
    return tuple(notes)


def _right(columns: Sequence[str], rows: Sequence[tuple[str, ...]]
           ) -> tuple[tuple[str, ...], ...]:
    """Numbers right-aligned by padding: the console aligns only the columns it knows."""
    widths = [max((len(r[i]) for r in rows if r[i]), default=0) for i in range(len(columns))]
    widths = [max(w, len(col)) if w else 0 for w, col in zip(widths, columns, strict=True)]
    return tuple(tuple(cell.rjust(widths[i]) if columns[i] in _NUMERIC else cell
                       for i, cell in enumerate(row)) for row in rows)


def ranks_note(info: dict[str, object]) -> str:
    """What the ranks ran with: versions, and the NCCL variables each one inherited (a
    host's NCCL_NVLS_ENABLE=0 must reach them all)."""
    versions = f"torch {info.get('torch', '?')}" + (f", nccl {info['nccl']}"
                                                    if info.get("nccl") else "")
    envs = [dict(e) for e in info.get("rank_env", ()) or ()]  # type: ignore[attr-defined]

    def listed(env: dict[str, str]) -> str:
        return " ".join(f"{k}={v}" for k, v in env.items()) or "none set"

    if envs and all(e == envs[0] for e in envs):
        passed = f"NCCL variables on every rank: {listed(envs[0])}"
    else:
        passed = "; ".join(f"rank {i}: {listed(e)}" for i, e in enumerate(envs))
    after = f"\n{info['after_saved']}" if info.get("after_saved") else ""
    return f"ranks: {versions}; {passed}{after}"
