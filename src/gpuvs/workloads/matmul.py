"""Matrix product — seed 000 and a square sweep.

`shape=seed000` is the post's product: `(1 × k) @ (k × 100)` with k = 25600 by default,
on `torch.manual_seed(1004); x = torch.rand(1, k); y = torch.rand(k, 100)` — the exact
tensors when torch is installed. `shape=square` is `(n × n) @ (n × n)`. In both, `size`
is the inner dimension.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gpuvs.backends.base import Backend
from gpuvs.measuring.as_written import timeit_loops
from gpuvs.measuring.protocol import Prepared
from gpuvs.model import Case, Params
from gpuvs.workloads import register
from gpuvs.workloads.base import (
    ITEMSIZE,
    SizeAxis,
    Workload,
    as_device_sees,
    host_dtype,
    place,
    random_inputs,
    with_others,
)

SEED000_K = 25600
SEED000_N = 100
SEED000_TORCH_SEED = 1004


def _shape(size: int, params: Params) -> tuple[int, int, int]:
    """(m, k, n) of the product."""
    if dict(params).get("shape") == "seed000":
        return 1, size, SEED000_N
    return size, size, size


def seed000_inputs(k: int) -> tuple[np.ndarray, np.ndarray]:
    """The post's tensors: torch's CPU generator seeded with 1004, then NumPy copies."""
    try:
        import torch
    except ImportError:  # a NumPy-only install: same shapes and distribution, other values
        rng = np.random.default_rng(SEED000_TORCH_SEED)
        return (rng.random((1, k), dtype=np.float32),
                rng.random((k, SEED000_N), dtype=np.float32))
    g = torch.Generator().manual_seed(SEED000_TORCH_SEED)
    x = torch.rand(1, k, generator=g)
    y = torch.rand(k, SEED000_N, generator=g)
    return x.numpy(), y.numpy()


@register
class Matmul(Workload):
    name = "matmul"
    description = "matrix product: seed 000's (1×25600)@(25600×100) and square n×n×n"
    variants = ("as_written", "correct")
    matrix_units = True

    def param_sets(self) -> tuple[Params, ...]:
        return ((("shape", "seed000"),), (("shape", "square"),))

    def default_sizes(self, params: Params) -> tuple[int, ...]:
        if dict(params).get("shape") == "seed000":
            return (SEED000_K,)
        return (64, 128, 256, 512, 1024, 2048)

    def first_answer_sizes(self, params: Params) -> tuple[int, ...]:
        # Square products only: the sizes where a GPU overtakes a CPU.
        return self.default_sizes(params) if dict(params).get("shape") == "square" else ()

    def op_family(self, case: Case) -> str:
        return "product"

    def flops(self, size: int, params: Params) -> float:
        m, k, n = _shape(size, params)
        return 2.0 * m * k * n

    def bytes_moved(self, size: int, params: Params, dtype: str) -> float:
        m, k, n = _shape(size, params)
        return float((m * k + k * n + m * n) * ITEMSIZE[dtype])

    def memory_needed(self, size: int, params: Params, dtype: str) -> int:
        return int(self.bytes_moved(size, params, dtype))

    def copies(self, size: int, params: Params, dtype: str
               ) -> tuple[tuple[float, ...], tuple[float, ...]]:
        m, k, n = _shape(size, params)
        item = ITEMSIZE[dtype]
        return (float(m * k * item), float(k * n * item)), (float(m * n * item),)

    def preload(self, backend: Backend, case: Case) -> None:
        if case.param("shape") == "seed000":
            seed000_inputs(1)  # torch, for its generator: 3–4 s in a NumPy worker

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        m, k, n = _shape(case.size, case.params)
        if case.param("shape") == "seed000":
            a, b = seed000_inputs(k)
        else:
            a = random_inputs((m, k), case.dtype, seed=case.size)
            b = random_inputs((k, n), case.dtype, seed=case.size + 1)
        a, b = a.astype(host_dtype(case.dtype)), b.astype(host_dtype(case.dtype))
        prepared = place(backend, case, (a, b), _matmul,
                         lambda: as_device_sees(a, case.dtype) @ as_device_sees(b, case.dtype))
        if case.variant != "as_written":
            return prepared
        # Seed 000's %timeit. On a fresh CUDA process its first trial call initialises
        # cuBLAS, takes over 0.2 s, and so sets "7 runs, 1 loop each", as the post printed.
        return replace(prepared, self_timed=timeit_loops(prepared.call))

    def applies(self, case: Case) -> bool:
        # The post timed data already on the device, with warm caches.
        return case.variant != "as_written" or (
            case.param("data", "resident") == "resident" and case.param("cache") != "cold")

    def title(self, params: Params) -> str:
        p = dict(params)
        name = (f"Seed 000's product (1×n)@(n×{SEED000_N})" if p.get("shape") == "seed000"
                else "Square matrix product")
        if "threads" in p:
            name += f" on {p['threads']} CPU thread{'s' if p['threads'] != '1' else ''}"
        return with_others(name, params, ("shape", "threads"))

    def size_axis(self, params: Params) -> SizeAxis:
        if dict(params).get("shape") == "seed000":
            return SizeAxis(f"inner dimension n of (1×n)@(n×{SEED000_N})", "n = {}")
        return SizeAxis("matrix size n (n×n×n)", "n = {}")


def _matmul(a: object, b: object) -> object:
    return a @ b  # type: ignore[operator]

