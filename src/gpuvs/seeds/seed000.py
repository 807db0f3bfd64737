"""Seed 000 — NumPy vs PyTorch CPU vs PyTorch GPU, one matrix product (Korean blog).

`torch.manual_seed(1004); x = torch.rand(1, 25600); y = torch.rand(25600, 100)` and
`%timeit z = x @ y` on CUDA, on the CPU, then `np.matmul` on `np.random.random` data —
which is float64 while torch's is float32. The post printed "7 runs, 1 loop each" for
CUDA: %timeit's first trial call initialised cuBLAS, which took it past 0.2 s, so each
of its runs timed one unsynchronised launch.
"""

from __future__ import annotations

from gpuvs.analysis.roofline import BUSY_SHARE, busy_seconds
from gpuvs.measuring.caveats import doubts
from gpuvs.model import Case
from gpuvs.seeds import register
from gpuvs.seeds.base import Found, Headline, Pick, Ratio, Row, Seed, SeedOptions
from gpuvs.units import seconds
from gpuvs.workloads.matmul import SEED000_K

SHAPE = (("shape", "seed000"),)
GPU = "cuda:0"


def _pick(variant: str, backend: str, device: str, dtype: str, *extra: tuple[str, str]
          ) -> Pick:
    return Pick("matmul", variant, backend, device, dtype, tuple(sorted((*SHAPE, *extra))),
                SEED000_K)


NUMPY_WRITTEN = _pick("as_written", "numpy", "cpu", "float64")
TORCH_CPU_WRITTEN = _pick("as_written", "torch", "cpu", "float32")
TORCH_GPU_WRITTEN = _pick("as_written", "torch", GPU, "float32")
NUMPY64 = _pick("correct", "numpy", "cpu", "float64")
NUMPY32 = _pick("correct", "numpy", "cpu", "float32")
TORCH_CPU = _pick("correct", "torch", "cpu", "float32")
TORCH_CPU_1T = _pick("correct", "torch", "cpu", "float32", ("threads", "1"))
TORCH_GPU = _pick("correct", "torch", GPU, "float32")
TORCH_GPU_E2E = _pick("correct", "torch", GPU, "float32", ("data", "end_to_end"))

# As-written below this share of the correct time: the replay timed something else.
MISSED = 0.8
# Two timings of the same synchronous CPU calls agree within this factor.
AGREE = 1.25


def _s(v: float | None) -> str:
    return seconds(v) if v is not None else "—"


def _gpu_why(f: Found) -> str:
    if f.written is None or f.correct is None:
        return "needs a CUDA device: the post's point is about GPU timing"
    measured = TORCH_GPU.find(f.ms)
    busy = busy_seconds(measured) if measured is not None else None
    per_call = f"a call in a loop takes {_s(f.correct)}" + (
        f", the GPU busy {_s(busy)} of it" if busy is not None else "")
    if f.written < MISSED * f.correct:
        return (f"%timeit without a sync timed the launch ({_s(f.written)}), not the "
                f"product: {per_call}")
    launch_bound = busy is not None and busy < BUSY_SHARE * f.correct
    return (f"here one launch ({_s(f.written)}) costs about what {per_call}"
            + (": launch-bound, so" if launch_bound else ", so")
            + " the missing sync hid little on this GPU")


def _cpu_why(f: Found) -> str:
    one = f.of(TORCH_CPU_1T)
    threads = f" (1 thread: {_s(one)})" if one else ""
    if f.written and f.correct and not 1 / AGREE <= f.written / f.correct <= AGREE:
        measured = TORCH_CPU.find(f.ms)
        flagged = doubts(measured.caveats).strip(" ()") if measured is not None else ""
        return (f"%timeit ({_s(f.written)}) and gpuvs ({_s(f.correct)}"
                f"{', ' + flagged if flagged else ''}) time the "
                "same synchronous calls yet disagree: the machine changed pace between "
                f"them (busy cores, clock steps); rerun it on a quiet machine{threads}")
    return f"CPU calls are synchronous, so %timeit is right on the CPU{threads}"


def _numpy_why(f: Found) -> str:
    return (f"np.random.random makes float64: twice the bytes of torch's float32; at "
            f"float32 NumPy takes {_s(f.of(NUMPY32))}")


def _speedup_why(f: Found) -> str:
    return ("as written: a launch time against float64 NumPy; correct: the time per call in "
            "a loop (CUDA events) against NumPy at the same dtype (float32)")


def _headline_why(f: Found) -> str:
    """What moved the post's 46× here, in a phrase: the launch timed for the work, or
    float64 NumPy; else neither, and the post's own timing agrees with the correct one."""
    if f.correct is None:
        return "needs a CUDA device: the post's point is about GPU timing"
    launch, work = f.of(TORCH_GPU_WRITTEN), f.of(TORCH_GPU)
    n64, n32 = f.of(NUMPY64), f.of(NUMPY32)
    moved = []
    if launch and work and launch < MISSED * work:
        moved.append(f"%timeit timed the launch ({_s(launch)}), not the product ({_s(work)})")
    if n64 and n32 and not 1 / AGREE <= n64 / n32 <= AGREE:
        moved.append(f"float64 NumPy took {n64 / n32:.2g}× float32's time")
    if moved:
        return "; ".join(moved)
    return ("the post's timing gives about the same here (the launch costs what the product "
            f"does, float64 what float32 does): its {HEADLINE.claim} was its hardware's")


def _e2e_why(f: Found) -> str:
    return (f"a program whose data starts on the CPU also copies y (10 MB) to the GPU: "
            f"{_s(f.correct)} instead of {_s(f.of(TORCH_GPU))}")


HEADLINE = Row("GPU vs NumPy", "46×", Ratio(NUMPY_WRITTEN, TORCH_GPU_WRITTEN),
               Ratio(NUMPY32, TORCH_GPU), _speedup_why)


@register
class Seed000(Seed):
    name = "000"
    title = "NumPy vs PyTorch CPU vs PyTorch GPU: (1×25600) @ (25600×100)"
    hardware = "Google Colab GPU"
    mistake = ("%timeit on CUDA times the launch; NumPy ran float64 against torch's float32; "
               "the host→device copy was left out; one shape only")

    def cases(self, options: SeedOptions) -> tuple[Case, ...]:
        # The replays first, in fresh workers' order, as the post ran them.
        picks = (NUMPY_WRITTEN, TORCH_CPU_WRITTEN, TORCH_GPU_WRITTEN, NUMPY64, NUMPY32,
                 TORCH_CPU, TORCH_CPU_1T, TORCH_GPU, TORCH_GPU_E2E)
        return tuple(Case(p.workload, p.variant, p.backend, p.device, p.dtype, SEED000_K,
                          p.params) for p in picks)

    def headline(self) -> Headline:
        return Headline(HEADLINE, _headline_why)

    def rows(self) -> tuple[Row, ...]:
        return (
            Row("torch CUDA: x @ y", "25.4 µs", TORCH_GPU_WRITTEN, TORCH_GPU, _gpu_why),
            Row("torch CPU: x @ y", "932 µs", TORCH_CPU_WRITTEN, TORCH_CPU, _cpu_why),
            Row("NumPy: np.matmul (float64)", "1.17 ms", NUMPY_WRITTEN, NUMPY64, _numpy_why),
            HEADLINE,
            Row("torch CPU vs NumPy", "1.25×", Ratio(NUMPY_WRITTEN, TORCH_CPU_WRITTEN),
                Ratio(NUMPY32, TORCH_CPU),
                lambda f: "as written, float64 NumPy against float32 torch; correct: both "
                          "float32"),
            Row("torch CUDA end-to-end (copies in and out)", "—", None, TORCH_GPU_E2E,
                _e2e_why),
            Row("GPU end-to-end vs NumPy float32", "—", None, Ratio(NUMPY32, TORCH_GPU_E2E),
                lambda f: "the speedup a user with data on the CPU gets"),
        )
