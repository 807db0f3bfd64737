"""Elementwise work — seed 002: `ones`, `x *= 5`, and the chain `x *= 5; x *= x; x += x`.

`size` is the number of elements. The ops run in place as the post wrote them, on
random data in [0.5, 1.5) rather than ones (constant data can hide unwritten outputs).
Repeated in-place calls grow the values to infinity after a few dozen calls; IEEE
hardware multiplies infinities at full speed, and only the first call is checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gpuvs.backends.base import Backend
from gpuvs.model import Case, Params
from gpuvs.protocol import Prepared
from gpuvs.workloads import register
from gpuvs.workloads.base import (
    ITEMSIZE,
    Workload,
    as_device_sees,
    place,
    random_inputs,
    reference_check,
)

# Passes over the array per call (each reads and writes it once), and FLOPs per element.
PASSES = {"ones": 0.5, "scale": 1, "chain": 3}
FLOPS_PER_ELEMENT = {"ones": 0, "scale": 1, "chain": 3}


def _scale(x: Any) -> Any:
    x *= 5
    return x


def _chain(x: Any) -> Any:
    x *= 5
    x *= x
    x += x
    return x


OPS: dict[str, Callable[[Any], Any]] = {"scale": _scale, "chain": _chain}


@register
class Elementwise(Workload):
    name = "elementwise"
    description = "seed 002: ones, x *= 5, and x *= 5; x *= x; x += x over array sizes"

    def param_sets(self) -> tuple[Params, ...]:
        return tuple((("op", op),) for op in PASSES)

    def default_sizes(self, params: Params) -> tuple[int, ...]:
        return tuple(10**e for e in range(3, 9))

    def data_modes(self, params: Params) -> tuple[str, ...]:
        # `ones` has no input to copy in; its output stays on the device, as in the post.
        return ("resident",) if dict(params)["op"] == "ones" else super().data_modes(params)

    def launches(self, params: Params) -> int:
        return 3 if dict(params)["op"] == "chain" else 1

    def flops(self, size: int, params: Params) -> float:
        return float(FLOPS_PER_ELEMENT[dict(params)["op"]] * size)

    def bytes_moved(self, size: int, params: Params, dtype: str) -> float:
        # Each pass reads and writes every element; `ones` only writes.
        return 2.0 * PASSES[dict(params)["op"]] * size * ITEMSIZE[dtype]

    def memory_needed(self, size: int, params: Params, dtype: str) -> int:
        return size * ITEMSIZE[dtype]

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        op = case.param("op")
        if op == "ones":
            shape = (case.size,)
            return Prepared(
                call=lambda: backend.ones(shape, case.dtype, case.device),
                check=reference_check(np.ones(shape), case.dtype, backend.to_numpy),
            )
        x = random_inputs((case.size,), case.dtype, seed=case.size, low=0.5)
        ref = OPS[op](as_device_sees(x, case.dtype))
        return place(backend, case, (x,), OPS[op], ref)

