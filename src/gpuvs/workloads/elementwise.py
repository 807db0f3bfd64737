"""Elementwise work — seed 002: `ones`, `x *= 5`, and the chain `x *= 5; x *= x; x += x`.

`size` is the number of elements. The ops run in place as the post wrote them, on
random data in [0.5, 1.5) by default (constant data can hide a kernel that writes the
right constant everywhere). `input=ones` is the post's own `x = ones(...)`, built where
the case runs: at 10⁹ float64 elements it spares drawing 8 GB, copying them in and a
float64 reference of them; an in-place op that wrote nothing would still leave 1.0
where the reference says 5.0. Repeated in-place calls grow the values to infinity
after a few dozen calls; IEEE hardware multiplies infinities at full speed, and only
the first call is checked.

Variants: `as_written` is the post's `time.time()` around one unsynchronised call, the
first (CuPy compiles the op's kernel there); `tuned` fuses the chain into one pass over
memory instead of three — a CuPy elementwise kernel, `torch.compile`, `jax.jit` — with
the same operations in the same order, so the same rounding.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from gpuvs.backends.base import Backend
from gpuvs.measuring.as_written import wall_once
from gpuvs.measuring.protocol import Prepared
from gpuvs.model import Case, Params
from gpuvs.workloads import register
from gpuvs.workloads.base import (
    ITEMSIZE,
    SizeAxis,
    Workload,
    as_device_sees,
    in_chunks,
    place,
    random_inputs,
    reference_check,
    with_others,
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
TITLES = {"ones": "New array ones(n)", "scale": "Elementwise x·5 in place",
          "chain": "Elementwise x·5, x·x, x+x in place"}
FUSERS = ("cupy", "torch", "jax")


def fused_chain(backend: str) -> Callable[[Any], Any]:
    """The chain in one pass: each element read once, written once."""
    if backend == "cupy":
        import cupy as cp

        kernel = cp.ElementwiseKernel("T a", "T x", "T t = a * (T)5; t = t * t; x = t + t",
                                      "gpuvs_fused_chain")

        def in_place(x: Any) -> Any:
            kernel(x, x)  # same index in and out: safe in place
            return x

        return in_place
    if backend == "torch":
        import torch

        return torch.compile(_chain, fullgraph=True, dynamic=False)
    if backend == "jax":
        import jax

        return jax.jit(_chain)  # type: ignore[no-any-return]
    raise ValueError(f"no fused chain for {backend}; fused on {', '.join(FUSERS)}")


@register
class Elementwise(Workload):
    name = "elementwise"
    description = "seed 002: ones, x *= 5, and x *= 5; x *= x; x += x over array sizes"
    variants = ("as_written", "correct", "tuned")

    def param_sets(self) -> tuple[Params, ...]:
        return tuple((("op", op),) for op in PASSES)

    def preload(self, backend: Backend, case: Case) -> None:
        if case.variant == "tuned" and case.backend in FUSERS:
            fused_chain(case.backend)  # torch.compile imports TorchDynamo: about 2 s
            if case.backend == "torch":
                importlib.import_module("torch._inductor.compile_fx")  # the first call's compiler

    def default_sizes(self, params: Params) -> tuple[int, ...]:
        return tuple(10**e for e in range(3, 9))

    def first_answer_sizes(self, params: Params) -> tuple[int, ...]:
        # One op, `x *= 5`, up to 10^7 elements (40 MB): past the caches, and quick.
        return tuple(10**e for e in range(3, 8)) if dict(params)["op"] == "scale" else ()

    def data_modes(self, params: Params) -> tuple[str, ...]:
        # `ones` has no input to copy in; its output stays on the device, as in the post.
        return ("resident",) if dict(params)["op"] == "ones" else super().data_modes(params)

    def applies(self, case: Case) -> bool:
        resident = case.param("data", "resident") == "resident" and case.param("cache") != "cold"
        if case.param("input", "random") == "ones" and (not resident or case.param("op") == "ones"):
            return False  # the post's ones(...) input is built in place, for the two ops
        if case.variant == "as_written":  # the post timed data already in place
            return resident
        if case.variant == "tuned":  # only the chain has passes to fuse
            return (resident and case.param("op") == "chain" and case.backend in FUSERS
                    and case.device != "cpu")
        return True

    def launches(self, params: Params) -> int:
        return 3 if dict(params)["op"] == "chain" else 1

    def counters(self, case: Case) -> dict[str, float]:
        c = super().counters(case)
        if case.variant == "tuned":  # one kernel, one pass over memory
            c |= {"launches": 1.0, "bytes_moved": 2.0 * case.size * ITEMSIZE[case.dtype]}
        return c

    def op_family(self, case: Case) -> str:
        if case.variant == "tuned":
            return "fused"
        return "create" if case.param("op") == "ones" else ""

    def flops(self, size: int, params: Params) -> float:
        return float(FLOPS_PER_ELEMENT[dict(params)["op"]] * size)

    def bytes_moved(self, size: int, params: Params, dtype: str) -> float:
        # Each pass reads and writes every element; `ones` only writes.
        return 2.0 * PASSES[dict(params)["op"]] * size * ITEMSIZE[dtype]

    def memory_needed(self, size: int, params: Params, dtype: str) -> int:
        return size * ITEMSIZE[dtype]

    def copies(self, size: int, params: Params, dtype: str
               ) -> tuple[tuple[float, ...], tuple[float, ...]]:
        if dict(params).get("op") == "ones":  # made on the device, left there
            return (), ()
        array = float(size * ITEMSIZE[dtype])
        return (array,), (array,)

    def title(self, params: Params) -> str:
        p = dict(params)
        name = TITLES.get(p.get("op", ""), "Elementwise op")
        if p.get("input") == "ones":
            name += " on ones(n)"
        return with_others(name, params, ("op", "input"))

    def size_axis(self, params: Params) -> SizeAxis:
        return SizeAxis("elements", "{} elements")

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        op = case.param("op")
        if op == "ones":
            shape = (case.size,)
            prepared = Prepared(
                call=lambda: backend.ones(shape, case.dtype, case.device),
                # A broadcast one: 8 GB of float64 ones at 10⁹ elements would cost seconds.
                check=reference_check(np.broadcast_to(np.float64(1.0), shape), case.dtype,
                                      backend.to_numpy),
            )
        elif case.param("input", "random") == "ones":
            prepared = _on_ones(backend, case, op)
        else:
            x = random_inputs((case.size,), case.dtype, seed=case.size, low=0.5)

            def reference() -> np.ndarray:
                ref = as_device_sees(x, case.dtype)
                in_chunks(lambda i, j: OPS[op](ref[i:j]), case.size)  # in place, all cores
                return ref

            prepared = place(backend, case, (x,), _op(backend, case, op), reference)
        if case.variant == "as_written":
            return replace(prepared, self_timed=wall_once(prepared.call))
        return prepared


def _op(backend: Backend, case: Case, op: str) -> Callable[[Any], Any]:
    """The op as the case runs it: fused into one pass for `tuned`, else as written."""
    return fused_chain(backend.name) if case.variant == "tuned" else OPS[op]


def _on_ones(backend: Backend, case: Case, op: str) -> Prepared:
    """`x = ones(...)` on the case's device, then `op` in place, as the post wrote it; the
    reference is the op applied to one 1.0, broadcast (no 8 GB float64 copy)."""
    shape = (case.size,)
    x = backend.ones(shape, case.dtype, case.device)
    fn = _op(backend, case, op)
    value = OPS[op](np.ones(1))[0]
    return Prepared(call=lambda: fn(x),
                    check=reference_check(np.broadcast_to(value, shape), case.dtype,
                                          backend.to_numpy))
