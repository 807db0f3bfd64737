"""`gpuvs dist` measurements → tables of strings, pure like layout.py.

Collectives: one table per collective (and backend, device, rank count), a row per size
with the slowest rank's time, the algorithm bandwidth and nccl-tests' bus bandwidth.
Scaling: one table per backend, device and batch mode, a row per rank count (its rounds
joined, `analysis.scaling`) with throughput, step time, scaling efficiency against one
rank (with its interval over the rounds), and the step split into compute and the
communication it waits for. Ranks on several torchrun nodes are said as nodes × ranks per
node ("2 nodes × 2"), in the title and beside each N that spans more than one node.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from gpuvs import units
from gpuvs.analysis import scaling
from gpuvs.distributed import COLLECTIVE_WORKLOAD, SCALING_WORKLOAD, WORKLOADS
from gpuvs.distributed.bandwidth import COLLECTIVES, algbw, bus_factor, busbw
from gpuvs.distributed.hosts import spans
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


# collective, backend, device, ranks, nodes ("2x2": nodes × ranks per node; "" for one)
CollectiveKey = tuple[str, str, str, int, str]
ScalingKey = tuple[str, str, str, str, str]  # backend, device, "weak" | "strong", batch, nodes


def collective_groups(ms: Iterable[Measurement]) -> dict[CollectiveKey, list[Measurement]]:
    """Collective cases by series, in COLLECTIVES order, each series by size."""
    groups: dict[CollectiveKey, list[Measurement]] = defaultdict(list)
    for m in ms:
        if m.case.workload == COLLECTIVE_WORKLOAD:
            c = m.case
            groups[(c.param("collective"), c.backend, c.device, int(c.param("nproc")),
                    c.param("nodes"))].append(m)
    order = sorted(groups, key=lambda k: (COLLECTIVES.index(k[0]), *k[1:]))
    return {k: sorted(groups[k], key=lambda m: m.case.size) for k in order}


def scaling_groups(ms: Iterable[Measurement]) -> dict[ScalingKey, list[Measurement]]:
    """Scaling cases by series, each series by rank count."""
    groups: dict[ScalingKey, list[Measurement]] = defaultdict(list)
    for m in ms:
        if m.case.workload == SCALING_WORKLOAD:
            c = m.case
            groups[(c.backend, c.device, c.param("scaling"), c.param("batch"),
                    c.param("nodes"))].append(m)
    return {k: sorted(groups[k], key=lambda m: m.case.size) for k in sorted(groups)}


def ranks_text(n: int, device: str, nodes: str) -> str:
    """'2 × cuda', or on several nodes '2 nodes × 2 × cuda'."""
    return f"{nodes_text(nodes)} × {device}" if nodes else f"{n} × {device}"


def nodes_text(nodes: str) -> str:
    """'2 nodes × 2' from a case's `nodes` parameter ('2x2'); '' on one node."""
    count, _, per = nodes.partition("x")
    return f"{count} nodes × {per}" if per else ""


def collective_tables(ms: Sequence[Measurement]) -> list[Table]:
    return [_collective_table(key, series) for key, series in collective_groups(ms).items()]


def _collective_table(key: CollectiveKey, ms: list[Measurement]) -> Table:
    name, backend, device, n, nodes = key
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
    return Table(f"dist · {name} · {backend} · {ranks_text(n, device, nodes)}",
                 COLLECTIVE_COLUMNS,
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
    backend, device, mode, batch, nodes = key
    found = scaling.rows(ms)
    rows: list[tuple[str, ...]] = [_scaling_row(row, nodes) for row in found]
    columns: tuple[str, ...] = SCALING_COLUMNS
    if any(energy.of(m) or energy.why_none(m) for m in ms):  # asked: --energy
        columns = (*SCALING_COLUMNS[:-1], ENERGY_COLUMN, SCALING_COLUMNS[-1])
        rows = [(*row[:-1], _energy_per_image(r.joined), row[-1])
                for r, row in zip(found, rows, strict=True)]
    what = (f"batch {batch} per rank (weak scaling)" if mode == "weak"
            else f"global batch {batch} split over the ranks (strong scaling)")
    rounds = max((r.efficiency.rounds for r in found if r.efficiency), default=0)
    interval = (f"each round's N against that round's N = 1, their geometric mean over "
                f"{rounds} rounds with its 95 % interval over them (Student's t), never "
                f"narrower than ±{scaling.LAUNCH_SPREAD:.0%} of it: what another launch "
                "gives, which no round of this one can see"
                if rounds else "with its 95 % interval")
    notes = (f"batch: images per rank × ranks; efficiency: samples/s at N over N × samples/s "
             f"at N = 1, {interval}; step: per step the slowest rank's, median",
             "compute: the same step under DDP's no_sync() (no gradient all-reduce); "
             "comm: step − compute, the all-reduce time the backward pass did not hide "
             "(0 where it hid all of it)", *_baseline_notes(ms, found, mode),
             *_energy_notes(ms, columns))
    where = f" · {nodes_text(nodes)}" if nodes else ""
    return Table(f"dist scaling · seed 003 CNN, DDP · {backend} · {device}{where} · {what}",
                 columns, _right(columns, rows), notes,
                 wrapping=frozenset({"efficiency", "comm", "note"}))


def _scaling_row(row: scaling.Row, nodes: str) -> tuple[str, ...]:
    m, n = row.joined, row.n
    k = m.counters
    threads = f"{k['threads']:.0f}" if k.get("threads") else ""
    across = spans(n, int(nodes.partition("x")[2] or n))
    label = str(n) + (" (after)" if row.again else "") + (
        f" ({across} nodes)" if across > 1 else "")
    head = (label, f"{k.get('per_rank_batch', 0):.0f} × {n}", threads)
    failed = [c for c in row.cases if c.status is not Status.OK]
    why = (f"{failed[0].status.value}: {failed[0].reason}" if len(row.cases) == 1 else
           f"{len(failed)} of {len(row.cases)} rounds {failed[0].status.value}: "
           f"{failed[0].reason}") if failed else ""
    s = m.summary
    if s is None:
        return (*head, "—", "", "", "", "", why or f"{m.status.value}: {m.reason}")
    step = k.get("compute_s", 0.0) + k.get("comm_s", 0.0)
    comm = units.seconds(k.get("comm_s"))
    if k.get("comm_s") == 0.0:
        comm = "0 (hidden)"
    elif step > 0 and "comm_s" in k:
        comm += f" ({100 * k['comm_s'] / step:.0f}%)"
    note = [str(cv).replace("_", " ") for cv in m.caveats] + ([why] if why else [])
    return (*head, units.seconds_ci(s.median, s.ci_halfwidth_rel),
            f"{k['samples_per_s']:.4g}" if "samples_per_s" in k else "",
            _efficiency(row), units.seconds(k.get("compute_s")), comm, ", ".join(note))


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


def _efficiency(row: scaling.Row) -> str:
    if row.n == 1:
        return "(base again)" if row.again else "100% (base)"  # no interval against itself
    e = row.efficiency
    return "" if e is None else f"{100 * e.estimate:.0f}% [{100 * e.low:.0f}, {100 * e.high:.0f}]"


def _baseline_notes(ms: Sequence[Measurement], found: Sequence[scaling.Row], mode: str
                    ) -> tuple[str, ...]:
    """How far N = 1 moved while the other counts ran; and, for weak scaling, why an
    efficiency above 100 % is printed at all."""
    notes: list[str] = []
    moved = scaling.baseline_moved(ms)
    paired = any(r.efficiency and r.efficiency.rounds for r in found)
    if moved and paired:
        low, high = moved
        notes.append(f"N = 1 across the rounds: {units.seconds(low)} to {units.seconds(high)} "
                     f"a step (each round's median; {100 * (high / low - 1):.1f} % apart): "
                     "each N is paired with the N = 1 measured just before it, which takes "
                     "that drift out of its efficiency")
    elif moved:
        first, last = moved
        notes.append(f"N = 1 before the others: {units.seconds(first)} a step, after them: "
                     f"{units.seconds(last)} ({100 * (last / first - 1):+.1f} %); each "
                     "efficiency's interval covers both baselines")
    if mode == "weak" and any(r.efficiency and r.efficiency.estimate > 1 for r in found
                              if r.n > 1):
        notes.append("an efficiency above 100 %: weak scaling cannot beat one rank here; "
                     "the host's pace moved while the rank counts ran (see N = 1 above): "
                     "read it as 100 % within its interval")
    return tuple(notes)


def _right(columns: Sequence[str], rows: Sequence[tuple[str, ...]]
           ) -> tuple[tuple[str, ...], ...]:
    """Numbers right-aligned by padding: the console aligns only the columns it knows."""
    widths = [max((len(r[i]) for r in rows if r[i]), default=0) for i in range(len(columns))]
    widths = [max(w, len(col)) if w else 0 for w, col in zip(widths, columns, strict=True)]
    return tuple(tuple(cell.rjust(widths[i]) if columns[i] in _NUMERIC else cell
                       for i, cell in enumerate(row)) for row in rows)


def ranks_note(info: dict[str, object]) -> str:
    """What the ranks ran with: versions, the NCCL variables each one inherited (a host's
    NCCL_NVLS_ENABLE=0 must reach them all), the nodes and machines they ran on; which
    machines were busy, and what ended the ranks early."""
    versions = f"torch {info.get('torch', '?')}" + (f", nccl {info['nccl']}"
                                                    if info.get("nccl") else "")
    envs = [dict(e) for e in info.get("rank_env", ()) or ()]  # type: ignore[attr-defined]

    def listed(env: dict[str, str]) -> str:
        return " ".join(f"{k}={v}" for k, v in env.items()) or "none set"

    if envs and all(e == envs[0] for e in envs):
        passed = f"NCCL variables on every rank: {listed(envs[0])}"
    else:
        passed = "; ".join(f"rank {i}: {listed(e)}" for i, e in enumerate(envs))
    where = f"; {info['layout']}" if info.get("layout") else ""
    after = "".join(f"\n{line}" for line in (
        *(f"busy: {b}" for b in info.get("busy", ()) or ()),  # type: ignore[attr-defined]
        *([str(info["after_saved"])] if info.get("after_saved") else []),
        *([f"the ranks could not go on: {info['lost']}; the cases left are recorded "
           "skipped"] if info.get("lost") else [])))
    return f"ranks: {versions}; {passed}{where}{after}"
