"""Seed 002 — "CuPy makes NumPy 700x faster" (Chinese translation of a TDS post).

`np.ones((1000,1000,1000))` against `cp.ones(...)`, then `x *= 5`, then
`x *= 5; x *= x; x += x`, each between two `time.time()` calls with no synchronisation,
on an i7-8700k and a GTX 1080 Ti, float64 (NumPy's and CuPy's default). Its table of
speedup by array size (an image) said NumPy wins below about 10 million elements and
the GPU clearly above 100 million; here that table is measured again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gpuvs import units
from gpuvs.model import Case, Measurement
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

POST_SIZE = 1000**3
DTYPE = "float64"
GPU = "cuda:0"
SWEEP = tuple(10**e for e in range(3, 9))        # every backend, resident
QUICK_SWEEP = tuple(10**e for e in range(3, 8))
GPU_BACKENDS = ("cupy", "torch", "jax")
TUNED_BACKENDS = ("cupy", "torch")  # CuPy's fused kernel, torch.compile
OPS = ("ones", "scale", "chain")
LABEL = {"ones": "ones((1000,1000,1000))", "scale": "x *= 5",
         "chain": "x *= 5; x *= x; x += x"}
CLAIM = {"ones": "1.68 s ÷ 0.16 s = 10.5×", "scale": "0.507 s ÷ 0.000710 s = 714×",
         "chain": "1.49 s ÷ 0.0922 s = 16.2×"}
# Below this share of the correct time, the replay timed something other than the work.
MISSED = 0.5


def _pick(variant: str, backend: str, op: str, size: int | None = None,
          *extra: tuple[str, str], stat: str = "time") -> Pick:
    """Without a size, the post's case: its input `x = ones(...)` where the op runs, at
    the post's size where it was measured (a --quick run measures it smaller)."""
    device = "cpu" if backend == "numpy" else GPU
    if size in (None, POST_SIZE) and op != "ones":
        extra += (("input", "ones"),)
    return Pick("elementwise", variant, backend, device, DTYPE,
                tuple(sorted((("op", op), *extra))), size, stat)


def _why_speedup(op: str) -> Callable[[Found], str]:
    def why(f: Found) -> str:
        cupy_w = f.of(_pick("as_written", "cupy", op))
        cupy_c = f.of(_pick("correct", "cupy", op))
        if f.written is None or f.correct is None or not (cupy_w and cupy_c):
            return "needs a CUDA device and CuPy"
        if cupy_w < MISSED * cupy_c:
            return (f"without a sync time.time() saw CuPy's launch ({units.seconds(cupy_w)}) "
                    f"and not the pass over memory ({units.seconds(cupy_c)})")
        if cupy_w > 2 * cupy_c:
            return (f"the first call paid for compiling and allocating "
                    f"({units.seconds(cupy_w)}), the work itself takes {units.seconds(cupy_c)}")
        return (f"without a sync time.time() still saw about the work's time here "
                f"({units.seconds(cupy_w)} against {units.seconds(cupy_c)}): the call "
                "did not return at its launch on this machine")
    return why


def _speedup_row(op: str) -> Row:
    return Row(LABEL[op], CLAIM[op], Ratio(_pick("as_written", "numpy", op),
                                           _pick("as_written", "cupy", op)),
               Ratio(_pick("correct", "numpy", op), _pick("correct", "cupy", op)),
               _why_speedup(op))


def _first_call_why(f: Found) -> str:
    if f.correct is None:
        return "needs a CUDA device and CuPy"
    steady = f.of(_pick("correct", "cupy", "scale", SWEEP[0]))
    return (f"the first call of an op compiles its kernel: {units.seconds(f.correct)} "
            f"against {units.seconds(steady)} for every call after (1000 elements)")


@register
class Seed002(Seed):
    name = "002"
    title = "CuPy vs NumPy: ones, x *= 5, and three ops on 10⁹ float64 elements"
    hardware = "i7-8700k, GTX 1080 Ti, CUDA 9.0"
    mistake = ("no synchronisation (the 714× is a launch time); each op's first CuPy call "
               "compiles its kernel and was counted; nothing checked GPU memory")

    def cases(self, options: SeedOptions) -> tuple[Case, ...]:
        """The sweep first — the first call of each op at 1000 elements compiles CuPy's
        kernel and is reported as first_call_s — then the post's own size, correct and
        replayed (the post's kernels were compiled by earlier runs: CuPy caches them)."""
        top = QUICK_SWEEP[-1] if options.quick else POST_SIZE
        picks = []
        for size in (QUICK_SWEEP if options.quick else SWEEP):  # what the tables show
            picks += [_pick("correct", b, op, size) for op in OPS for b in ("numpy", "cupy")]
            picks += [_pick("correct", b, "scale", size) for b in GPU_BACKENDS[1:]]
            picks.append(_pick("correct", "cupy", "scale", size, ("data", "end_to_end")))
            picks += [_pick("tuned", b, "chain", size) for b in TUNED_BACKENDS]
        # The post's case, on what the post ran, correct and replayed.
        picks += [_pick(v, b, op) for v in ("correct", "as_written") for op in OPS
                  for b in ("numpy", "cupy")]
        cases = (Case(p.workload, p.variant, p.backend, p.device, p.dtype, p.size or top,
                      p.params) for p in picks)
        return tuple(dict.fromkeys(cases))  # a quick run's top is a sweep size too

    def headline(self) -> Headline:
        """The post's 714× for `x *= 5`, and what its replay timed here."""
        return Headline(_speedup_row("scale"), _why_speedup("scale"))

    def rows(self) -> tuple[Row, ...]:
        rows = [_speedup_row(op) for op in OPS]
        rows += [
            Row("CuPy x *= 5, one call", "0.000710 s", _pick("as_written", "cupy", "scale"),
                _pick("correct", "cupy", "scale"), _why_speedup("scale")),
            Row("CuPy x *= 5, first call (compiles the kernel)", "counted in the above",
                None, _pick("correct", "cupy", "scale", SWEEP[0], stat="first_call"),
                _first_call_why),
            Row("three ops fused in one pass (tuned CuPy) vs NumPy", "—", None,
                Ratio(_pick("correct", "numpy", "chain", SWEEP[-1]),
                      _pick("tuned", "cupy", "chain", SWEEP[-1])),
                lambda f: "one read and one write of memory instead of three of each"),
            Row("x *= 5 with the copies in and out vs NumPy", "—", None,
                Ratio(_pick("correct", "numpy", "scale", SWEEP[-1]),
                      _pick("correct", "cupy", "scale", SWEEP[-1], ("data", "end_to_end"))),
                lambda f: "what a program whose array starts on the CPU gets"),
        ]
        return tuple(rows)

    def extra_tables(self, ms: Sequence[Measurement]) -> list[Table]:
        return [speedup_by_size(ms)]


COLUMNS = (("x *= 5 CuPy", "correct", "cupy", "scale", ()),
           ("x *= 5 torch", "correct", "torch", "scale", ()),
           ("x *= 5 JAX", "correct", "jax", "scale", ()),
           ("x *= 5 CuPy end-to-end", "correct", "cupy", "scale", (("data", "end_to_end"),)),
           ("3 ops CuPy", "correct", "cupy", "chain", ()),
           ("3 ops fused CuPy", "tuned", "cupy", "chain", ()),
           ("3 ops fused torch", "tuned", "torch", "chain", ()),
           ("ones CuPy", "correct", "cupy", "ones", ()))


def speedup_by_size(ms: Sequence[Measurement]) -> Table:
    """The post's table, measured here: speedup over NumPy (same op, same size)."""
    sizes = sorted({m.case.size for m in ms if m.case.variant != "as_written"})
    rows = []
    for size in sizes:
        cells = [units.size(size)]
        for _, variant, backend, op, extra in COLUMNS:
            numpy = seconds_of(_pick("correct", "numpy", op, size).find(ms, exact=True))
            other = seconds_of(_pick(variant, backend, op, size, *extra).find(ms, exact=True))
            cells.append(units.ratio(numpy / other) if numpy and other else "—")
        rows.append(tuple(cells))
    return Table(title="seed 002 · speedup over NumPy by array size (float64, data on the "
                       "device unless end-to-end)",
                 columns=("elements", *(c[0] for c in COLUMNS)), rows=tuple(rows),
                 notes=("the post: NumPy faster below about 10 million elements, the GPU "
                        "clearly ahead above 100 million",),
                 wrapping=frozenset(c[0] for c in COLUMNS))
