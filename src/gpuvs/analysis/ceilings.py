"""Measured ceilings: which probe cases to run, and what their measurements mean.

A ceiling is a rate (FLOP/s, bytes/s) or a fixed cost (seconds) read off a probe
measurement (see `gpuvs.workloads.probes`). They are cached per environment
fingerprint — a ceilings run is an ordinary run whose config says `kind = ceilings` — and
every analysis of the same machine reuses them (`store.runs.find_ceilings_run`, which
prefers a run measured on a quiet machine). A probe measured under contention marks its
ceiling `contended`, and the tables that use it say so (`contended_note`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from gpuvs.model import (
    FLOP_CLASSES,
    OP_CLASSES,
    OP_FAMILIES,
    Case,
    Caveat,
    Ceiling,
    Measurement,
    OpCost,
    Status,
)

GPU_DTYPES = ("float64", "float32", "bfloat16", "float16")
CPU_DTYPES = ("float32", "float64")
GPU_MATMUL_N = 8192
CPU_MATMUL_N = 2048
GPU_COPY_ELEMENTS = 1 << 28   # 1 GiB of float32: far beyond any L2
CPU_STREAM_ELEMENTS = 1 << 25  # 3 arrays of float64: 805 MB, far beyond any CPU cache
CACHE_TRIAD_BYTES_PER_ELEMENT = 3 * 8
TRANSFER_ELEMENTS = 1 << 26
# An array brought back past this lands in freshly mapped host memory on every call
# (glibc's largest mmap threshold: allocators hand such sizes to the kernel with mmap and
# give them back on free), and the copy faults it in page by page. Each backend's own
# copy path is probed on both sides of it: 28 MiB (memory used before), and 256 MiB.
FRESH_BYTES = 32 << 20
PATH_ELEMENTS = 7 << 20
# The ceiling a one-element op's time per call is: what launching or dispatching one op
# costs, which decides launch-bound work.
DISPATCH = "per-op dispatch cost"
# The sizes each op class is timed at on a GPU (`workloads.op_classes` says what a size
# counts): from one op's launch (the smallest) to work that keeps the device busy far
# longer than a launch (the two largest), so that a class's launch and its cost per byte
# (or FLOP) can each be read off. The copies run past FRESH_BYTES.
OP_CLASS_SIZES = {"matmul": (64, 256, 1024, 4096), "conv": (1, 4, 32, 128),
                  "attention": (64, 256, 1024, 4096),
                  "to_device": (1 << 14, 1 << 18, 1 << 22, 1 << 24),
                  "to_host": (1 << 14, 1 << 18, 1 << 22, 7 << 20, 1 << 26)}
OP_CLASS_ELEMENTS = (1 << 10, 1 << 21, 1 << 24)


def copy_name(direction: str, fresh: bool = False) -> str:
    """The ceiling of a backend's own copy path (`Backend.from_numpy`, `.to_numpy`), as
    an end-to-end call copies: "h2d", "d2h", or "d2h" into freshly mapped pages."""
    if direction == "h2d":
        return "h2d (from NumPy)"
    return "d2h (to NumPy, fresh pages)" if fresh else "d2h (to NumPy)"


def dispatch_name(family: str) -> str:
    """The ceiling that prices one op of `family` ("" for an elementwise op)."""
    return f"{DISPATCH} ({family})" if family else DISPATCH


def dispatch_probes(pairs: Iterable[tuple[str, str]]) -> list[Case]:
    """The `dispatch` probe (ops queued back to back) for each (backend, device)."""
    return [Case("dispatch", "correct", backend, device, "float32", 1, (("mode", "loop"),))
            for backend, device in sorted(set(pairs))]


def probe_cases(backends: Iterable[str]) -> list[Case]:
    """The probes to run for the given backends."""
    names = set(backends)
    cases = _cpu_probes() if "numpy" in names else []
    if "torch" in names:
        # NumPy runs elementwise work on one thread; torch's CPU triad uses them all. Its
        # GEMM may also beat NumPy's BLAS: the CPU's peak is the larger of the two.
        cases += [Case("triad", "correct", "torch", "cpu", "float64", CPU_STREAM_ELEMENTS,
                       (("threads", threads),)) for threads in ("all", "1")]
        cases += [Case("peak_matmul", "correct", "torch", "cpu", dtype, CPU_MATMUL_N,
                       (("threads", "all"), ("tf32", "off"))) for dtype in CPU_DTYPES]
        cases += _gpu_probes()
        cases += op_class_probes()
    for backend in sorted(names):
        for device in _devices(backend):
            cases += [Case("dispatch", "correct", backend, device, "float32", 1, (("mode", m),))
                      for m in ("loop", "latency")]
            if device != "cpu":  # what a prediction for this GPU prices launches and copies by
                cases += [Case("dispatch", "correct", backend, device, "float32", 1,
                               (("mode", "loop"), ("op", family))) for family in OP_FAMILIES]
                cases += [Case("transfer", "correct", backend, device, "float32", n,
                               (("direction", d), ("path", "backend")))
                          for d, n in (("h2d", PATH_ELEMENTS), ("d2h", PATH_ELEMENTS),
                                       ("d2h", TRANSFER_ELEMENTS))]
    return cases


def op_class_probes() -> list[Case]:
    """One op of each class (`model.OP_CLASSES`) at each of its sizes, with torch on the
    GPU: what `gpuvs predict` prices each op of the user's code by."""
    return [Case("op_class", "correct", "torch", "cuda:0", "float32", n, (("op", c),))
            for c in OP_CLASSES for n in OP_CLASS_SIZES.get(c, OP_CLASS_ELEMENTS)]


def _cpu_probes() -> list[Case]:
    cases = [Case("peak_matmul", "correct", "numpy", "cpu", dtype, CPU_MATMUL_N,
                  (("threads", threads), ("tf32", "off")))
             for dtype in CPU_DTYPES for threads in ("all", "1")]
    return [*cases, Case("triad", "correct", "numpy", "cpu", "float64", CPU_STREAM_ELEMENTS,
                         (("threads", "1"),)), *cache_probes()]


def cache_probes(caches: Iterable[Mapping[str, Any]] | None = None) -> list[Case]:
    """A one-thread triad whose three float64 arrays fill half of each cache from L2 up
    (an L1-sized triad is a few µs of dispatch, not a bandwidth)."""
    if caches is None:
        from gpuvs.machine.env import cpu_caches
        caches = cpu_caches()
    return [Case("triad", "correct", "numpy", "cpu", "float64",
                 int(c["size"]) // 2 // CACHE_TRIAD_BYTES_PER_ELEMENT,
                 (("cache", f"L{c['level']}"), ("cache_bytes", str(c["size"])),
                  ("threads", "1")))
            for c in caches if int(c["level"]) >= 2]


def _gpu_probes() -> list[Case]:
    cases = [Case("peak_matmul", "correct", "torch", "cuda:0", dtype, GPU_MATMUL_N,
                  (("threads", "all"), ("tf32", tf32)))
             for dtype in GPU_DTYPES
             for tf32 in (("off", "on") if dtype == "float32" else ("off",))]
    cases.append(Case("copy", "correct", "torch", "cuda:0", "float32", GPU_COPY_ELEMENTS))
    cases += [Case("transfer", "correct", "torch", "cuda:0", "float32", TRANSFER_ELEMENTS,
                   (("direction", d), ("memory", m)))
              for d in ("h2d", "d2h") for m in ("pageable", "pinned")]
    return cases


def _devices(backend: str) -> tuple[str, ...]:
    return {"numpy": ("cpu",), "cupy": ("cuda:0",)}.get(backend, ("cpu", "cuda:0"))


def read(measurements: Iterable[Measurement]) -> list[Ceiling]:
    """Ceilings from the probe measurements that finished, each marked `contended` where
    other processes took its probe's CPU or GPU: such a figure reads low, and every share
    of it high."""
    out = []
    for m in measurements:
        if m.status is not Status.OK or m.summary is None:
            continue
        ceiling = _ceiling(m)
        if ceiling is not None:
            out.append(replace(ceiling, contended=Caveat.CONTENDED in m.caveats))
    return out


def op_costs(measurements: Iterable[Measurement]) -> list[OpCost]:
    """Each finished op-class probe as one op's cost at its size: its FLOPs for a class
    of `model.FLOP_CLASSES`, else the bytes of its tensors; marked `contended` as a
    ceiling is."""
    out = []
    for m in measurements:
        c = m.case
        if c.workload != "op_class" or m.status is not Status.OK or m.summary is None:
            continue
        op = c.param("op")
        amount = m.counters.get("flops" if op in FLOP_CLASSES else "bytes_moved")
        if amount:
            out.append(OpCost(op, c.device, c.backend, amount, m.summary.median, c.key,
                              Caveat.CONTENDED in m.caveats))
    return out


def contended_note(ceilings: Iterable[Ceiling]) -> str | None:
    """The line a table that places cases against these ceilings adds when some were
    measured on a busy machine; None when all were measured on a quiet one."""
    names = sorted({f"{c.name} ({c.device})" for c in ceilings if c.contended})
    if not names:
        return None
    return (f"{len(names)} ceiling(s) were measured while other processes held the machine "
            f"(contended: {', '.join(names)}): they read low, so every share of them (of "
            "peak) reads high — `gpuvs ceilings --refresh` on a quiet machine measures them "
            "again")


def _ceiling(m: Measurement) -> Ceiling | None:
    c, median = m.case, m.summary.median  # type: ignore[union-attr]
    key = c.key
    if c.workload == "peak_matmul":
        label = f"matmul {c.dtype}" + (f" tf32={c.param('tf32')}" if c.dtype == "float32"
                                       and c.device != "cpu" else "")
        if c.device == "cpu":
            label += f" threads={c.param('threads')}"
        return Ceiling(label, c.device, c.backend, m.counters["flops"] / median, "FLOP/s", key)
    if c.workload == "triad" and c.param("cache"):
        return Ceiling(f"{c.param('cache')} cache bandwidth ({c.param('cache_bytes')} B)",
                       c.device, c.backend, m.counters["bytes_moved"] / median, "B/s", key)
    if c.workload in ("copy", "triad"):
        threads = f" threads={c.param('threads')}" if c.param("threads") else ""
        return Ceiling(f"memory bandwidth ({c.workload}){threads}", c.device, c.backend,
                       m.counters["bytes_moved"] / median, "B/s", key)
    if c.workload == "transfer":
        moved = m.counters["bytes_moved"]
        name = (copy_name(c.param("direction"), fresh=moved > FRESH_BYTES)
                if c.param("path") == "backend" else f"{c.param('direction')} {c.param('memory')}")
        return Ceiling(name, c.device, c.backend, moved / median, "B/s", key)
    if c.workload == "dispatch":
        if c.param("mode") == "latency":  # what a caller waits: launch + synchronise
            wall = m.wall_summary.median if m.wall_summary else median
            return Ceiling("launch + sync latency", c.device, c.backend, wall, "s", key)
        return Ceiling(dispatch_name(c.param("op", "")), c.device, c.backend, median, "s", key)
    return None


def peak_for(case: Case, ceilings: Iterable[Ceiling], tf32: bool,
             working_set: float | None = None) -> Mapping[str, float]:
    """The ceilings that bound `case`: its device's matmul peak at its dtype (`flops`)
    and its memory roof (`bytes`): on the CPU, the bandwidth of the smallest cache its
    working set fits in (`cache_level` says which), else the memory's at every core
    (empty where none was measured)."""
    kind = "cpu" if case.device == "cpu" else "gpu"
    found: dict[str, float] = {}
    ceilings = list(ceilings)
    cache = _fitting_cache(ceilings, working_set) if kind == "cpu" else None
    if cache is not None:
        found["bytes"], found["cache_level"] = cache
    if kind == "cpu" and any(_CACHE.match(c.name) for c in ceilings):
        found["caches_known"] = 1.0  # a working set beyond them all is in memory
    for c in ceilings:
        if ("cpu" if c.device == "cpu" else "gpu") != kind:
            continue
        if c.name.startswith(f"matmul {case.dtype}") and (
                kind == "cpu" and c.name.endswith("threads=all")
                or kind == "gpu" and (case.dtype != "float32"
                                      or c.name.endswith(f"tf32={'on' if tf32 else 'off'}"))):
            found["flops"] = max(found.get("flops", 0.0), c.value)
        elif c.name.startswith("memory bandwidth") and cache is None:
            found["bytes"] = max(found.get("bytes", 0.0), c.value)
    return found


_CACHE = re.compile(r"^L(\d) cache bandwidth \((\d+) B\)$")


def _fitting_cache(ceilings: Iterable[Ceiling], working_set: float | None
                   ) -> tuple[float, float] | None:
    """(bandwidth, level) of the smallest measured CPU cache that holds `working_set`."""
    if not working_set:
        return None
    fits = [(int(found.group(2)), c.value, float(found.group(1))) for c in ceilings
            if c.device == "cpu" and (found := _CACHE.match(c.name))
            and working_set <= int(found.group(2))]
    return min(fits)[1:] if fits else None
