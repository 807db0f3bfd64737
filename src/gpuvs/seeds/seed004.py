"""Seed 004 — "why is the GPU slower than the CPU?" (a Chinese Q&A page).

A `%%time` cell builds the MLP 1→20→20→400 (tanh), draws t of shape (100, 1) and calls
`torch.autograd.functional.jacobian(lambda t_: nx(t_), t)`: 11.1 s on the CPU, 19.5 s
on the GPU; at val = 1000, 8 min 44 s against 3 min 12 s. The accepted answer blamed
small work and transfers. What it missed: the default `jacobian` runs one backward
pass per output element (40 000 of them at val = 100, each a few tiny kernels), so
both devices spend the call launching ops; and it builds the full cross-batch Jacobian,
which is almost all zeros. Here the cell is replayed, the naive call and
`vectorize=True` are timed by the protocol, and the per-sample Jacobian by
`vmap(jacrev)` and `vmap(jacfwd)` is swept until the GPU wins.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from gpuvs import units
from gpuvs.analysis.crossover import crossovers
from gpuvs.model import Case, Measurement, Status
from gpuvs.seeds import register
from gpuvs.seeds.base import (
    SIZE,
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
from gpuvs.workloads.jacobian import CORRECT, METHODS, OUT

GPU = "cuda:0"
DEVICES = ("cpu", GPU)
DTYPE = "float32"
POST_VAL = 100
# Per method: (--quick sizes, full sizes). The naive method costs 400·val backward passes
# a call (7 s on an H100 host's CPU at val = 100, 16 s on its GPU; the protocol takes
# three calls and a profiled one, the replay one), so a full run measures it at the
# post's val alone: the run must stay under 8 minutes. vectorize=True at 1000 and
# vmap(jacrev) at 10⁵ are there for the memory guard to refuse; vmap(jacrev) skips 10⁴,
# where its 16 GB basis costs the CPU seconds a call and the table learns nothing
# jacfwd does not show.
SIZES = {"naive": ((10,), (POST_VAL,)),
         "vectorize": ((10, 30), (10, 30, POST_VAL, 1000)),
         "vmap": ((10, 100), (10, 100, 1000, 100_000)),
         "vmap_jacfwd": ((10, 100, 1000), (10, 100, 1000, 10_000, 100_000))}
LABEL = {"naive": "naive jacobian", "vectorize": "jacobian(vectorize=True)",
         "vmap": "per-sample vmap(jacrev)", "vmap_jacfwd": "per-sample vmap(jacfwd)"}
DEVICE_NAME = {"cpu": "CPU", GPU: "GPU"}
VAL_1000 = ("`gpuvs run -w jacobian --variant correct -d cpu -d cuda --sizes 1000 "
            "--timeout 3000`")
# As written above this multiple of the protocol's time: the cell paid for first calls.
SET_UP = 1.2


def _variant(method: str) -> str:
    return "correct" if method in CORRECT else "tuned"


def _pick(method: str, device: str, variant: str | None = None,
          size: int | None = POST_VAL) -> Pick:
    return Pick("jacobian", variant or _variant(method), "torch", device, DTYPE,
                (("method", method),), size)


@dataclass(frozen=True)
class AtSizeOf(Pick):
    """A pick at whichever val its `anchor` was found at: a --quick run's ratios then
    compare two series at one val, never naive at 10 against vmap at 100."""

    anchor: Pick | None = None

    def find(self, ms: Sequence[Measurement], exact: bool = False) -> Measurement | None:
        if self.anchor is None:
            return super().find(ms, exact)
        found = self.anchor.find(ms)
        if found is None:
            return None
        return replace(self, size=found.case.size, anchor=None).find(ms, exact=True)


def _at_size_of(anchor: Pick, method: str, device: str) -> AtSizeOf:
    p = _pick(method, device, size=anchor.size)
    return AtSizeOf(p.workload, p.variant, p.backend, p.device, p.dtype, p.params, p.size,
                    anchor=anchor)


WRITTEN = {d: _pick("naive", d, "as_written") for d in DEVICES}
NAIVE = {d: _pick("naive", d) for d in DEVICES}
JACFWD_CPU = _pick("vmap_jacfwd", "cpu", size=None)  # the largest val measured


def _count(m: Measurement | None) -> float | None:
    """Launches one call makes: a GPU's counted kernels, else its aten ops."""
    if m is None or m.status is not Status.OK:
        return None
    return m.counters.get("kernels") or m.counters.get("ops")


def _per_launch(m: Measurement | None) -> str:
    n, s = _count(m), seconds_of(m)
    return units.seconds(s / n) if n and s else "—"


def _absent(device: str, ms: Sequence[Measurement]) -> str:
    """Why a row is empty: no GPU here, or this run never reached its cases."""
    ran_here = any(m.case.device == device and m.status is Status.OK for m in ms)
    return "did not run" if device == "cpu" or ran_here else "needs a CUDA device"


def _naive_why(device: str) -> Callable[[Found], str]:
    def why(f: Found) -> str:
        m = NAIVE[device].find(f.ms)
        n = _count(m)
        if m is None or n is None or f.correct is None:
            return _absent(device, f.ms)
        passes = OUT * m.case.size
        what = "kernels" if "kernels" in m.counters else "aten ops"
        text = (f"naive makes {n:,.0f} {what} a call, {n / passes:.3g} for each of its "
                f"{passes:,} backward passes (one per output element): launch-bound, "
                f"{_per_launch(m)} a launch")
        if f.written and f.written > SET_UP * f.correct:
            text += (f"; the cell's first call and model build add "
                     f"{units.seconds(f.written - f.correct)}")
        return text
    return why


def _gpu_vs_cpu_why(f: Found) -> str:
    if f.correct is None:
        return "needs a CUDA device"
    cpu, gpu = NAIVE["cpu"].find(f.ms), NAIVE[GPU].find(f.ms)
    verdict = "slower" if f.correct < 1 else "faster"
    return (f"the GPU is {verdict} because both devices only launch ops here: one costs "
            f"{_per_launch(gpu)} on the GPU, {_per_launch(cpu)} on the CPU, and no op is "
            "big enough to fill either")


def _headline_why(f: Found) -> str:
    """The post's 0.57×, in a phrase: what both devices spend the naive call on."""
    if f.correct is None:
        return "needs a CUDA device"
    cpu, gpu = NAIVE["cpu"].find(f.ms), NAIVE[GPU].find(f.ms)
    return (f"one backward pass per output element: both devices only launch ops "
            f"({_per_launch(gpu)} a launch on the GPU, {_per_launch(cpu)} on the CPU)")


HEADLINE = Row(f"GPU vs CPU, naive, val = {SIZE}", "0.57× (GPU slower)",
               Ratio(WRITTEN["cpu"], WRITTEN[GPU]), Ratio(NAIVE["cpu"], NAIVE[GPU]),
               _gpu_vs_cpu_why)


def _val_1000_why(f: Found) -> str:
    cpu, gpu = (_pick("naive", d, size=1000).find(f.ms, exact=True) for d in DEVICES)
    c, g = seconds_of(cpu), seconds_of(gpu)
    if c and g:
        return (f"measured here: CPU {units.seconds(c)}, GPU {units.seconds(g)}, "
                f"{c / g:.2f}×")
    return f"not run: each call takes minutes; {VAL_1000}"


def _fix_why(method: str, device: str) -> Callable[[Found], str]:
    def why(f: Found) -> str:
        naive = NAIVE[device].find(f.ms)
        fixed = _at_size_of(NAIVE[device], method, device).find(f.ms)
        before, after = _count(naive), _count(fixed)
        if f.correct is None or before is None or after is None or fixed is None:
            return _absent(device, f.ms)
        counts = f"{before:,.0f} → {after:,.0f} launches a call"
        return f"{counts}; {_fix_reason(method, fixed)}"
    return why


def _fix_reason(method: str, m: Measurement) -> str:
    val = m.case.size
    if method == "vectorize":
        eye = units.nbytes((OUT * val) ** 2 * 4)
        loop = (" — tanh_backward has no batching rule there, so it still loops over "
                "slices") if (_count(m) or 0) > OUT * val else ""
        return f"one batched backward pass over a (400·val)² identity, {eye}{loop}"
    zeros = 1 - 1 / val
    if method == "vmap":
        return (f"the per-sample Jacobian leaves out the full one's zeros ({zeros:.0%} of "
                "it); reverse mode still pushes a 400×400 one-hot basis through each sample")
    return ("forward mode: one tangent per sample, since each sample's input is one "
            "number, and a fixed number of ops whatever val")


def _jacfwd_gpu_why(f: Found) -> str:
    cpu = JACFWD_CPU.find(f.ms)
    if f.correct is None or cpu is None:
        return "needs a CUDA device"
    val = units.size(cpu.case.size)
    if f.correct > 1:
        return (f"at val = {val} the GPU wins: a fixed number of launches, each over "
                "val × 400 elements, fills it")
    return f"at val = {val} the CPU still wins: too little work per launch for the GPU"


@register
class Seed004(Seed):
    name = "004"
    title = "Jacobian of a 1→20→20→400 MLP: why is the GPU slower than the CPU?"
    hardware = "not stated (a Colab-class GPU)"
    mistake = ("the default jacobian runs one backward pass per output element (40 000 "
               "launch-bound passes at val = 100) and builds the full cross-batch "
               "Jacobian, almost all zeros; %%time of one cell, first call included")

    def cases(self, options: SeedOptions) -> tuple[Case, ...]:
        mode = 0 if options.quick else 1
        written = SIZES["naive"][mode][-1]
        out = [Case("jacobian", "as_written", "torch", d, DTYPE, written,
                    (("method", "naive"),)) for d in DEVICES]
        sizes = sorted({s for m in METHODS for s in SIZES[m][mode]})
        for size in sizes:
            for method in METHODS:
                if size in SIZES[method][mode]:
                    out += [Case("jacobian", _variant(method), "torch", d, DTYPE, size,
                                 (("method", method),)) for d in DEVICES]
        return tuple(out)

    def headline(self) -> Headline:
        return Headline(HEADLINE, _headline_why)

    def rows(self) -> tuple[Row, ...]:
        rows = [
            Row(f"CPU: naive jacobian, val = {SIZE}", "11.1 s", WRITTEN["cpu"], NAIVE["cpu"],
                _naive_why("cpu")),
            Row(f"GPU: naive jacobian, val = {SIZE}", "19.5 s", WRITTEN[GPU], NAIVE[GPU],
                _naive_why(GPU)),
            HEADLINE,
            Row("GPU vs CPU, naive, val = 1000", "2.7× (CPU 8 min 44 s, GPU 3 min 12 s)",
                None, None, _val_1000_why),
        ]
        for method in METHODS[1:]:
            for device in DEVICES:
                rows.append(Row(f"{DEVICE_NAME[device]}: {LABEL[method]} vs naive", "—",
                                None, Ratio(NAIVE[device],
                                            _at_size_of(NAIVE[device], method, device)),
                                _fix_why(method, device)))
        rows.append(Row("GPU vs CPU, per-sample vmap(jacfwd), largest val", "—", None,
                        Ratio(JACFWD_CPU, _at_size_of(JACFWD_CPU, "vmap_jacfwd", GPU)),
                        _jacfwd_gpu_why))
        return tuple(rows)

    def extra_tables(self, ms: Sequence[Measurement]) -> list[Table]:
        return [by_val(ms)]


BY_VAL_COLUMNS = ("method", "val", "CPU", "GPU", "GPU vs CPU", "CPU ops a call",
                  "GPU kernels a call")


def by_val(ms: Sequence[Measurement]) -> Table:
    """Per method and val: time on each device, the speedup, launches a call — and in
    the notes, the crossover of each method (the smallest val from which the GPU wins)."""
    mine = [m for m in ms if m.case.workload == "jacobian" and m.case.variant != "as_written"]
    rows = []
    for method in METHODS:
        for val in sorted({m.case.size for m in mine if m.case.param("method") == method}):
            cpu, gpu = (_pick(method, d, size=val).find(mine, exact=True) for d in DEVICES)
            c, g = seconds_of(cpu), seconds_of(gpu)
            rows.append((LABEL[method], units.size(val), _time_cell(cpu), _time_cell(gpu),
                         units.ratio(c / g) if c and g else "—", _launch_cell(cpu, "ops"),
                         _launch_cell(gpu, "kernels")))
    return Table(title="seed 004 · time a call by val, CPU and GPU, per method (float32)",
                 columns=BY_VAL_COLUMNS, rows=tuple(rows), notes=tuple(_crossover_notes(mine)),
                 wrapping=frozenset({"CPU", "GPU"}))


def _time_cell(m: Measurement | None) -> str:
    if m is None:
        return "not run"
    if m.status is Status.OK:
        return units.seconds(seconds_of(m))
    status = "skipped" if m.status is Status.UNAVAILABLE else m.status.value
    return f"{status}: {m.reason.split(' (')[0]}"[:48]


def _launch_cell(m: Measurement | None, counter: str) -> str:
    if m is None or m.status is not Status.OK or counter not in m.counters:
        return "—"
    return f"{m.counters[counter]:,.0f}"


def _crossover_notes(ms: Sequence[Measurement]) -> list[str]:
    """One line per method with a GPU series: from which val the GPU is faster (95 % CI)."""
    notes = []
    for c in sorted(crossovers(ms), key=lambda c: METHODS.index(c.gpu.param("method"))):
        label = LABEL[c.gpu.param("method")]
        if c.size is not None:
            notes.append(f"{label}: the GPU is faster from val = {units.size(c.size)}")
        elif c.points and all(p.verdict == "cpu" for p in c.points):
            notes.append(f"{label}: the CPU is faster at every val measured")
        else:
            notes.append(f"{label}: no val measured from which the GPU is always faster")
    notes.append("ops: aten operator calls a call, counted on the CPU; kernels: CUDA kernels "
                 "a call, counted by torch.profiler")
    return notes
