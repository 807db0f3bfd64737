"""Seed 001 — "parallel" forward of two independent GRUs (Korean blog).

Two `nn.GRU(input_size=10, hidden_size=20, batch_first=True)` on CUDA, inputs
`torch.randn(32, 5, 10)`; `time.time()` around `gru1(x1); gru2(x2)`, then the same under
`torch.no_grad()`, called "parallel execution": about 2× faster. The first timing was
the first GRU call of the process, with autograd recording; the second was not a first
call and recorded nothing; neither synchronised; nothing ran in parallel. Here both
timings are replayed, then the pair is measured one after the other, on two CUDA streams
(two threads on the CPU), as one block-diagonal GRU and as a CUDA graph, over hidden
size, batch and sequence length, to show whether and from where concurrency pays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gpuvs.model import Case, Measurement, Status
from gpuvs.seeds import register
from gpuvs.seeds.base import (
    Found,
    Headline,
    Pick,
    Ratio,
    Row,
    Seed,
    SeedOptions,
    seconds_of,
)
from gpuvs.table import Table
from gpuvs.units import seconds
from gpuvs.workloads.base import TOLERANCE
from gpuvs.workloads.gru import NO_OVERLAP, POST, overlap_of

GPU = "cuda:0"
DEVICES = (GPU, "cpu")
DTYPE = "float32"
POST_AXIS = "hidden"
# Beyond the post's cell: two sizes per axis, and in a --quick run the first of them
# (on an H100 with 16 cores the full run took 73 s, the quick one 49 s).
SWEEP = {"hidden": (256, 1024), "batch": (1024, 4096), "seq": (128, 512)}
QUICK = {axis: sizes[0] for axis, sizes in SWEEP.items()}
CONCURRENT = ("streams", "batched", "graph")
# "Pays": at least this much faster than one GRU after the other.
PAYS = 1.1
# As written below this share of the protocol's time: the replay timed the launches only.
MISSED = 0.8
# A pair replayed as a CUDA graph in under this share of its eager time: the eager pair
# is launch-bound (the CPU issuing kernels, not the GPU running them, sets its time).
LAUNCH_BOUND = 0.5
# A first call above this multiple of the steady pair paid for one-time set-up.
SET_UP = 2.0


def _pick(variant: str, how: str, device: str, axis: str = POST_AXIS,
          size: int | None = None) -> Pick:
    return Pick("gru", variant, "torch", device, DTYPE, (("axis", axis), ("how", how)),
                POST[axis] if size is None else size)


def _by_device(variant: str, how: str) -> dict[str, Pick]:
    return {d: _pick(variant, how, d) for d in DEVICES}


W_SEQ = _by_device("as_written", "post_sequential")
W_PAR = _by_device("as_written", "post_parallel")
AUTOGRAD = _by_device("correct", "autograd")
SEQ = _by_device("correct", "sequential")
HOW = {how: _by_device("correct", how) for how in CONCURRENT}


def _hows(device: str) -> tuple[str, ...]:
    """What the pair is measured as on `device`: CUDA graphs exist on GPUs only."""
    return ("sequential", *(h for h in CONCURRENT if h != "graph" or device != "cpu"))


def _in_order(device: str) -> list[str]:
    """Two threads last in each cell: until their pool is joined, its OpenMP teams slow the
    CPU cases that come after."""
    return sorted(_hows(device), key=lambda how: how == "streams")


def _s(v: float | None) -> str:
    return seconds(v) if v is not None else "—"


def _name(device: str) -> str:
    return "GPU" if device != "cpu" else "CPU"


def _absent(device: str) -> str:
    return "needs a CUDA device: the post ran on one" if device != "cpu" else "did not run"


def _post_ratio_why(device: str) -> Callable[[Found], str]:
    def why(f: Found) -> str:
        if f.written is None or f.correct is None:
            return _absent(device)
        saved = (f"no_grad skips autograd's bookkeeping ({f.correct:.2g}×)" if f.correct >= PAYS
                 else "turning autograd off saved nothing measurable")
        return (f"the first timing was the first GRU call ({_s(f.of(W_SEQ[device]))}, set-up "
                f"included) with autograd on; measured apart, the pair takes "
                f"{_s(f.of(AUTOGRAD[device]))} with autograd and {_s(f.of(SEQ[device]))} "
                f"without: {saved}, and the two GRUs still ran one after the other")
    return why


def _first_call_why(device: str) -> Callable[[Found], str]:
    def why(f: Found) -> str:
        if f.written is None or f.correct is None:
            return _absent(device)
        if f.written > SET_UP * f.correct:
            what = "cuDNN's handle, " if device != "cpu" else ""
            return (f"the process's first GRU call pays one-time set-up ({what}kernel choice, "
                    f"allocations): {_s(f.written)}, against {_s(f.correct)} for every pair "
                    "after it")
        return (f"here the first call ({_s(f.written)}) cost about what every later pair "
                f"does ({_s(f.correct)})")
    return why


def _no_grad_why(device: str) -> Callable[[Found], str]:
    def why(f: Found) -> str:
        if f.written is None or f.correct is None:
            return _absent(device)
        if device == "cpu":
            return (f"CPU calls are synchronous, so one time.time() difference ({_s(f.written)})"
                    f" is right up to noise; the median of many is {_s(f.correct)}")
        graph = f.of(HOW["graph"][device])
        if graph is not None and graph < LAUNCH_BOUND * f.correct:
            return (f"launch-bound: the GPU runs both GRUs in {_s(graph)} (as a CUDA graph); "
                    f"the rest of the {_s(f.correct)} a pair takes is the CPU issuing kernels, "
                    f"which time.time() sees with or without a sync — one such timing "
                    f"({_s(f.written)}) is noise next to the median of many")
        if f.written < MISSED * f.correct:
            return (f"without a sync time.time() saw the launches ({_s(f.written)}), not the "
                    f"GRUs: the GPU needs {_s(f.correct)}")
        return (f"the missing sync hid little here ({_s(f.written)} against {_s(f.correct)}): "
                "the CPU takes about as long to issue the kernels as the GPU to run them")
    return why


def _alone_in(ms: Sequence[Measurement], m: Measurement | None) -> Measurement | None:
    """Where `m`'s each-GRU-alone times are: a graph's own parts (each GRU in a graph of
    its own), else the `sequential` case's of the same cell (see workloads/gru.py)."""
    if m is None or m.case.param("how") in ("graph", "sequential"):
        return m
    return _pick("correct", "sequential", m.case.device, m.case.param("axis"),
                 m.case.size).find(ms, exact=True)


def _overlap(ms: Sequence[Measurement], m: Measurement | None) -> float | None:
    return overlap_of(m, _alone_in(ms, m))


def _alone(ms: Sequence[Measurement], m: Measurement | None) -> str:
    ref = _alone_in(ms, m)
    if m is None or m.summary is None or ref is None:
        return ""
    a, b = ref.counters.get("gru1_s"), ref.counters.get("gru2_s")
    return f"alone {_s(a)} and {_s(b)}, together {_s(m.summary.median)}"


NO_OVERLAP_WHY = {
    ("streams", "gpu"): "the GRUs are launch-bound (the CPU takes longer to issue their "
                        "kernels than the GPU to run them), so the second stream finds "
                        "nothing to run beside the first, and switching streams adds host "
                        "work of its own",
    ("graph", "gpu"): "one launch replays every kernel, but the two branches did not run "
                      "at the same time",
    ("streams", "cpu"): "handing each GRU to a thread with half the cores costs more than "
                        "it saves at this size",
}


def _concurrency_why(device: str, how: str) -> Callable[[Found], str]:
    def why(f: Found) -> str:
        if f.correct is None:
            return _absent(device)
        m = HOW[how][device].find(f.ms)
        if how == "batched":
            return (f"one GRU call instead of two, with twice the arithmetic (zeros off the "
                    f"block diagonal): {f.correct:.2g}× ({_alone(f.ms, m)})")
        overlap = _overlap(f.ms, m)
        if overlap is None:
            return "each GRU alone was not measured, so the overlap is unknown"
        kind = "cpu" if device == "cpu" else "gpu"
        if overlap <= NO_OVERLAP:
            return f"no overlap happened ({_alone(f.ms, m)}): {NO_OVERLAP_WHY[how, kind]}"
        what = {"streams": "two streams", "graph": "the graph's two branches"}[how]
        if device == "cpu":
            what = "two threads"
        return f"{what} overlapped {overlap:.0%} of the shorter GRU ({_alone(f.ms, m)})"
    return why


def _headline_why(f: Found) -> str:
    """The post's "about 2×", in a phrase: a first call against later ones (where it cost
    more), and both timings one GRU after the other (with what two CUDA streams did)."""
    if f.written is None or f.correct is None:
        return _absent(GPU)
    first, steady = f.of(W_SEQ[GPU]), f.of(AUTOGRAD[GPU])
    streams = f.of(Ratio(SEQ[GPU], HOW["streams"][GPU]))
    said = []
    if first and steady and first > SET_UP * steady:
        said.append(f"its 'sequential' timing was the first GRU call ({_s(first)}; a pair "
                    f"takes {_s(steady)} after it)")
    said.append("both timings ran the GRUs one after the other"
                + (f" (on two CUDA streams: {streams:.2g}×)" if streams else ""))
    return ", and ".join(said)


def _device_rows(device: str) -> list[Row]:
    gpu = device != "cpu"
    name = _name(device)
    rows = [
        Row(f"'sequential' ÷ 'parallel', the post's two timings ({name})",
            "about 2×" if gpu else "—", Ratio(W_SEQ[device], W_PAR[device]),
            Ratio(AUTOGRAD[device], SEQ[device]), _post_ratio_why(device)),
        Row(f"gru1(x1); gru2(x2), autograd on, the first call ({name})", "—",
            W_SEQ[device], AUTOGRAD[device], _first_call_why(device)),
        Row(f"the same pair under torch.no_grad() ({name})", "—", W_PAR[device],
            SEQ[device], _no_grad_why(device)),
        Row(f"two {'CUDA streams' if gpu else 'threads'} vs one after the other ({name})",
            "—", None, Ratio(SEQ[device], HOW["streams"][device]),
            _concurrency_why(device, "streams")),
        Row(f"one block-diagonal GRU for both vs one after the other ({name})", "—", None,
            Ratio(SEQ[device], HOW["batched"][device]), _concurrency_why(device, "batched")),
    ]
    if gpu:
        rows.append(Row("a CUDA graph of both (two branches) vs one after the other (GPU)",
                        "—", None, Ratio(SEQ[device], HOW["graph"][device]),
                        _concurrency_why(device, "graph")))
    return rows


@register
class Seed001(Seed):
    name = "001"
    title = "two independent nn.GRU(10, 20) forwards on randn(32, 5, 10): 'parallel'?"
    hardware = "a CUDA GPU (not stated)"
    mistake = ("the 'sequential' timing was the first call, with autograd; the 'parallel' one "
               "only turned autograd off; no synchronisation; nothing ran in parallel")

    def cases(self, options: SeedOptions) -> tuple[Case, ...]:
        # The replays first: the post's first timing was the process's first GRU call.
        picks = [W_SEQ[GPU], W_PAR[GPU], W_SEQ["cpu"], W_PAR["cpu"]]
        picks += [p for d in DEVICES for p in (AUTOGRAD[d], *(
            _pick("correct", how, d) for how in _in_order(d)))]
        for axis, sizes in SWEEP.items():
            for size in ((QUICK[axis],) if options.quick else sizes):
                picks += [_pick("correct", how, d, axis, size)
                          for d in DEVICES for how in _in_order(d)]
        return tuple(Case(p.workload, p.variant, p.backend, p.device, p.dtype,
                          p.size or POST[POST_AXIS], p.params) for p in picks)

    def headline(self) -> Headline:
        return Headline(_device_rows(GPU)[0], _headline_why)

    def rows(self) -> tuple[Row, ...]:
        return tuple(_device_rows(GPU) + _device_rows("cpu"))

    def extra_tables(self, ms: Sequence[Measurement]) -> list[Table]:
        tables = [concurrency_table(ms, d) for d in DEVICES]
        return [t for t in tables if t is not None]


def _at(ms: Sequence[Measurement], how: str, device: str, axis: str, size: int
        ) -> Measurement | None:
    """The case at `size` on `axis`; the post's value on any axis is the post's cell."""
    if size == POST[axis]:
        axis = POST_AXIS
        size = POST[axis]
    return _pick("correct", how, device, axis, size).find(ms, exact=True)


def _series(ms: Sequence[Measurement], device: str, axis: str) -> list[int]:
    """Sizes measured along `axis` on `device`, the post's value among them."""
    sizes = {m.case.size for m in ms if m.case.workload == "gru" and m.case.device == device
             and m.case.param("axis") == axis and m.case.variant == "correct"}
    return sorted(sizes | {POST[axis]})


def _each_alone(m: Measurement | None) -> str:
    if m is None or "gru1_s" not in m.counters or "gru2_s" not in m.counters:
        return "—"
    return f"{_s(m.counters['gru1_s'])} + {_s(m.counters['gru2_s'])}"


def _makespan_cell(m: Measurement | None, sequential: float | None) -> str:
    if m is not None and m.status is not Status.OK:
        return str(m.status)
    t = seconds_of(m)
    if t is None:
        return "—"
    return f"{_s(t)} ({sequential / t:.2g}×)" if sequential else _s(t)


def _overlap_cell(ms: Sequence[Measurement], m: Measurement | None) -> str:
    overlap = _overlap(ms, m)
    if overlap is None:
        return "—"
    return "none" if overlap <= NO_OVERLAP else f"{overlap:.0%}"


def _pays_from(ms: Sequence[Measurement], device: str, axis: str, how: str) -> str:
    """The smallest size from which `how` is PAYS× faster than sequential at every
    measured size on `axis`, in words."""
    sizes = _series(ms, device, axis)
    pays: list[tuple[int, bool]] = []
    for size in sizes:
        seq, other = (seconds_of(_at(ms, h, device, axis, size)) for h in ("sequential", how))
        if seq and other:
            pays.append((size, seq / other >= PAYS))
    if not pays:
        return f"{how} not measured"
    start = next((s for i, (s, _) in enumerate(pays) if all(ok for _, ok in pays[i:])), None)
    return f"{how} from {start}" if start is not None else f"{how} never (to {pays[-1][0]})"


def concurrency_table(ms: Sequence[Measurement], device: str) -> Table | None:
    """Per device: the pair's makespan by how and size along each axis, its speedup over
    sequential, the overlap, and from which size concurrency starts to pay."""
    if not any(m.case.device == device and m.status is Status.OK for m in ms):
        return None
    hows = _hows(device)[1:]
    cells_for = [("post", POST_AXIS, POST[POST_AXIS])] + [
        (axis, axis, s) for axis in SWEEP for s in _series(ms, device, axis) if s != POST[axis]]
    rows = []
    for label, axis, size in cells_for:
        seq = _at(ms, "sequential", device, axis, size)
        dims = dict(POST) | {axis: size}
        row = [label, f"{dims['hidden']} × {dims['batch']} × {dims['seq']}",
               _each_alone(seq),
               _makespan_cell(seq, None)]
        for how in hows:
            m = _at(ms, how, device, axis, size)
            row.append(_makespan_cell(m, seconds_of(seq)))
            if how != "batched":
                row.append(_overlap_cell(ms, m))
        rows.append(tuple(row))
    return Table(title=f"seed 001 · {device}: the pair by how and size — makespan (speedup "
                       "over sequential) and overlap", columns=_columns(device),
                 rows=tuple(rows), notes=_notes(ms, device, hows),
                 wrapping=frozenset(_columns(device)[2:]))


def _columns(device: str) -> tuple[str, ...]:
    if device == "cpu":
        return ("sweep", "hidden × batch × seq", "each alone", "sequential", "two threads",
                "overlap", "block GRU")
    return ("sweep", "hidden × batch × seq", "each alone", "sequential", "two streams",
            "overlap", "block GRU", "CUDA graph", "graph overlap")


def _notes(ms: Sequence[Measurement], device: str, hows: tuple[str, ...]) -> tuple[str, ...]:
    notes = ["overlap = (gru1 alone + gru2 alone − the pair) ÷ the shorter alone; 'none' "
             f"at {NO_OVERLAP:.0%} or less. Makespan: the pair's median"]
    notes += [f"along {axis}, {PAYS:.2g}× over sequential: "
              + "; ".join(_pays_from(ms, device, axis, how) for how in hows)
              for axis in SWEEP]
    overlaps = [o for m in ms if m.case.device == device and m.case.param("how") in
                ("streams", "graph") and (o := _overlap(ms, m)) is not None]
    if overlaps and max(overlaps) <= NO_OVERLAP:
        notes.append("no overlap happened at any size measured here")
    if device != "cpu":
        notes.append("cuDNN runs float32 GRUs on TF32 units where torch.backends.cudnn."
                     "allow_tf32 is on (torch's default), whatever the matmul precision; "
                     f"the checks admit it (float32 tolerance {TOLERANCE['float32']:.0e})")
    return tuple(notes)
