"""What one call does, counted without running it where it will be predicted.

A workload counts its own work (`Workload.counters`: FLOPs, bytes moved, the kernels a
call launches; `Workload.copies`: the arrays an end-to-end call copies in and out), for
any case, on a machine without the case's device. The user's torch code is counted by
`gpuvs.predicting.counting` on the CPU. Either way the model reads the same `Work`.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuvs import workloads
from gpuvs.model import Case

# Backends whose float32 matrix products run on TF32 units on a GPU unless told not to:
# JAX's default precision does (since Ampere); torch and CuPy keep full float32. It is
# what `Backend.uses_tf32` reads from the live framework, known here without a GPU.
TF32_BY_DEFAULT = frozenset({"jax"})


@dataclass(frozen=True)
class Work:
    """One call's counted work: device arithmetic and memory traffic, the kernels (ops)
    the host launches for it, and the host↔device copies of an end-to-end call."""

    flops: float = 0.0
    bytes: float = 0.0           # device memory traffic, each input read and output written
    launches: float = 1.0        # kernels (ops) the host issues per call
    copied_in: tuple[float, ...] = ()   # bytes of each array copied to the device
    copied_out: tuple[float, ...] = ()  # bytes of each array brought back
    dtype: str = "float32"
    backend: str = "torch"
    tf32: bool = False           # float32 products on TF32 matrix units
    workload: str = ""           # whose calibration applies; "" for the user's code
    op_family: str = ""          # what each launch costs the host (`model.OP_FAMILIES`)

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
    tf32 = (workload.matrix_units and case.dtype == "float32"
            and case.backend in TF32_BY_DEFAULT)
    return Work(counted.get("flops", 0.0), counted.get("bytes_moved", 0.0),
                max(1.0, counted.get("launches", 1.0)), copied_in, copied_out, case.dtype,
                case.backend, tf32, case.workload, workload.op_family(case))
