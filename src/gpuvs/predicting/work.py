"""What one call does, counted without running it where it will be predicted.

A workload counts its own work (`Workload.counters`: FLOPs, bytes moved, the kernels a
call launches; `Workload.copies`: the arrays an end-to-end call copies in and out), for
any case, on a machine without the case's device. The user's torch code is counted by
`gpuvs.predicting.counting` on the CPU. Either way the model reads the same `Work`.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from gpuvs import workloads
from gpuvs.model import Case

# Precisions of JAX's matrix products that use TF32 units for float32 (its default,
# since Ampere, is one of them).
JAX_TF32 = ("default", "tensorfloat32", "bfloat16", "fastest")


def tf32(backend: str) -> tuple[bool, str]:
    """Whether `backend`'s float32 matrix products would run on TF32 units (a 10-bit
    mantissa) on a GPU under this process's settings, and the setting that decides it,
    in words: what `Backend.uses_tf32` reads from the live framework on a GPU, known here
    without one. A prediction says which it assumed: the same product is 8× apart on an
    H100's peaks, so JAX (TF32 by default) was once predicted 767× faster than the CPU
    where torch (full float32 by default) got 113×, with no word of why.

    torch follows its float32 matmul precision (`torch.set_float32_matmul_precision`,
    `torch.backends.cuda.matmul.allow_tf32`) where torch is imported — the user's own
    process — and TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1; JAX its default matmul precision
    (`jax.config`, JAX_DEFAULT_MATMUL_PRECISION); CuPy CUPY_TF32=1; and
    NVIDIA_TF32_OVERRIDE=0 turns TF32 off for all of them."""
    env = os.environ
    if env.get("NVIDIA_TF32_OVERRIDE") == "0":
        return False, "NVIDIA_TF32_OVERRIDE=0"
    if backend == "torch":
        if env.get("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE") == "1":
            return True, "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1"
        torch = sys.modules.get("torch")
        precision = torch.get_float32_matmul_precision() if torch is not None else "highest"
        return precision != "highest", f"torch's float32 matmul precision {precision!r}"
    if backend == "jax":
        jax = sys.modules.get("jax")
        chosen = (jax.config.jax_default_matmul_precision if jax is not None
                  else env.get("JAX_DEFAULT_MATMUL_PRECISION")) or "default"
        return (str(chosen).lower() in JAX_TF32,
                f"JAX's default matmul precision {str(chosen)!r}")
    if backend == "cupy":
        on = env.get("CUPY_TF32", "0") == "1"
        return on, f"CUPY_TF32={env.get('CUPY_TF32', '0')}"
    return False, f"{backend} has no TF32"


def tf32_words(backend: str, on: bool, why: str) -> str:
    """`tf32`'s answer in words: 'torch's float32 products predicted at full float32
    (TF32 off: torch's float32 matmul precision 'highest')'."""
    return (f"{backend}'s float32 products predicted as TF32, a 10-bit mantissa ({why})"
            if on else f"{backend}'s float32 products predicted at full float32 (TF32 off: "
                       f"{why})")


@dataclass(frozen=True)
class Tally:
    """The ops of one class (`model.OP_CLASSES`) in a call: how many, the bytes of their
    tensors, their FLOPs, and whether they wait for the device (`opclasses.SYNCING_CLASSES`)."""

    op_class: str
    ops: int
    bytes: float
    flops: float = 0.0
    syncs: bool = False


@dataclass(frozen=True)
class Work:
    """One call's counted work: device arithmetic and memory traffic, the kernels (ops)
    the host launches for it, and the host↔device copies of an end-to-end call. The
    user's code is also counted op by op (`tallies`, priced by class where a profile
    measured them), with the host's own cost beyond its ops (`host_s`: Python, module
    hooks) and the ops it priced by a nearest class, in words (`named`)."""

    flops: float = 0.0
    bytes: float = 0.0           # device memory traffic, each input read and output written
    launches: float = 1.0        # kernels (ops) the host issues per call
    copied_in: tuple[float, ...] = ()   # bytes of each array copied to the device
    copied_out: tuple[float, ...] = ()  # bytes of each array brought back
    dtype: str = "float32"
    backend: str = "torch"
    tf32: bool = False           # float32 products on TF32 matrix units
    tf32_why: str = ""           # the setting that decided it, when it was counted
    workload: str = ""           # whose calibration applies; "" for the user's code
    op_family: str = ""          # what each launch costs the host (`model.OP_FAMILIES`)
    tallies: tuple[Tally, ...] = ()  # the user's ops by class; () for a workload's case
    host_s: float = 0.0          # the host's own seconds per call beyond its ops
    named: tuple[str, ...] = ()  # ops priced as the nearest class, in words

    @property
    def end_to_end(self) -> bool:
        return bool(self.copied_in or self.copied_out)


def of_case(case: Case) -> Work:
    """The work of `case` as its workload counts it (the same counts on any machine)."""
    workload = workloads.get(case.workload)
    counted = workload.counters(case)
    copied_in: tuple[float, ...] = ()
    copied_out: tuple[float, ...] = ()
    if case.param("data") == "end_to_end":
        copied_in, copied_out = workload.copies(case.size, case.params, case.dtype)
    on, why = tf32(case.backend)
    return Work(counted.get("flops", 0.0), counted.get("bytes_moved", 0.0),
                max(1.0, counted.get("launches", 1.0)), copied_in, copied_out, case.dtype,
                case.backend, on and workload.matrix_units and case.dtype == "float32", why,
                case.workload, workload.op_family(case))
