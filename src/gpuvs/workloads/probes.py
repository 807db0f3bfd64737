"""Probes of what the hardware can do: measured ceilings, not datasheet numbers.

Each probe is an ordinary workload, so it runs in the same isolated workers, by the same
protocol, and lands in the same store: a matrix product that fills the chip (peak
FLOP/s per dtype, float32 with and without TF32), a device-to-device copy (bandwidth,
bytes read + written), host↔device copies (pageable and pinned), a one-element op
(dispatch cost per op, and launch-plus-sync latency; on a GPU, also an array creation,
a small product and a fused call), and a STREAM-like triad for the
CPU's memory bandwidth. `gpuvs ceilings` runs them; `gpuvs.analysis.ceilings` reads them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from gpuvs.backends.base import Backend
from gpuvs.measuring.protocol import Prepared
from gpuvs.model import OP_FAMILIES, Case, Params
from gpuvs.workloads import get, register
from gpuvs.workloads.base import ITEMSIZE, Workload, place, random_inputs
from gpuvs.workloads.elementwise import FUSERS, fused_chain

PRODUCT_N = 16  # the `product` family's matrices: the BLAS's fixed cost, not its FLOPs


class Probe(Workload):
    """A ceiling probe: run by `gpuvs ceilings`, not by the default suite, data resident."""

    in_default_suite = False

    def data_modes(self, params: Params) -> tuple[str, ...]:
        return ("resident",)


@register
class PeakMatmul(Probe):
    name = "peak_matmul"
    description = "ceiling: a square matrix product large enough to fill the chip"
    dtypes = ("float32",)
    matrix_units = True

    def param_sets(self) -> tuple[Params, ...]:
        return ((("threads", "all"), ("tf32", "off")), (("threads", "all"), ("tf32", "on")),
                (("threads", "1"), ("tf32", "off")))

    def default_sizes(self, params: Params) -> tuple[int, ...]:
        return (2048,)

    def flops(self, size: int, params: Params) -> float:
        return 2.0 * size**3

    def bytes_moved(self, size: int, params: Params, dtype: str) -> float:
        return 3.0 * size * size * ITEMSIZE[dtype]

    def memory_needed(self, size: int, params: Params, dtype: str) -> int:
        return int(self.bytes_moved(size, params, dtype))

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        a = random_inputs((case.size, case.size), case.dtype, seed=1)
        b = random_inputs((case.size, case.size), case.dtype, seed=2)
        return place(backend, case, (a, b), _tf32_matmul(backend, case),
                     lambda: a.astype(np.float64) @ b.astype(np.float64))


def _tf32_matmul(backend: Backend, case: Case) -> Any:
    """`a @ b`, with torch's TF32 switch set for this call only and restored after."""
    if backend.name != "torch" or case.dtype != "float32":
        return lambda a, b: a @ b
    import torch

    want = case.param("tf32") == "on"

    def product(a: Any, b: Any) -> Any:
        before = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = want
        try:
            return a @ b
        finally:
            torch.backends.cuda.matmul.allow_tf32 = before

    return product


@register
class Copy(Probe):
    name = "copy"
    description = "ceiling: memory bandwidth of a device-to-device copy (read + write)"

    def default_sizes(self, params: Params) -> tuple[int, ...]:
        return (1 << 26,)

    def bytes_moved(self, size: int, params: Params, dtype: str) -> float:
        return 2.0 * size * ITEMSIZE[dtype]

    def memory_needed(self, size: int, params: Params, dtype: str) -> int:
        return 2 * size * ITEMSIZE[dtype]

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        src = backend.from_numpy(random_inputs((case.size,), case.dtype, seed=3), case.device,
                                 case.dtype)
        dst = backend.ones((case.size,), case.dtype, case.device)
        expected = backend.to_numpy(src)

        def copy() -> Any:
            dst[...] = src
            return dst

        def check(out: object) -> None:
            from gpuvs.workloads.base import reference_check
            reference_check(expected.astype(np.float64), case.dtype, backend.to_numpy)(out)

        return Prepared(call=copy, check=check)


@register
class Dispatch(Probe):
    """The fixed cost of one op: dispatch + launch in a loop, and launch + sync alone.

    The loop's op is a one-element `x * 1`; with `op` (on a GPU, for `gpuvs predict`) it
    is one of `model.OP_FAMILIES` instead, as small as the family allows:
    `ones(1)`, a 16 × 16 product, or the elementwise workload's own fused chain on one
    element (its function, compiled or jitted as that workload runs it)."""

    name = "dispatch"
    description = "ceiling: cost of a one-element op (per op in a loop; latency with sync)"

    def param_sets(self) -> tuple[Params, ...]:
        return ((("mode", "loop"),), (("mode", "latency"),),
                *((("mode", "loop"), ("op", family)) for family in OP_FAMILIES))

    def default_sizes(self, params: Params) -> tuple[int, ...]:
        return (1,)

    def applies(self, case: Case) -> bool:
        return case.param("op") != "fused" or (case.backend in FUSERS
                                                and case.device != "cpu")

    def memory_needed(self, size: int, params: Params, dtype: str) -> int:
        return PRODUCT_N * PRODUCT_N * ITEMSIZE[dtype] * 2

    def preload(self, backend: Backend, case: Case) -> None:
        if case.param("op") == "fused":
            get("elementwise").preload(backend, replace(case, workload="elementwise",
                                                        variant="tuned"))

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        family = case.param("op")
        if family == "create":
            call, value = (lambda: backend.ones((1,), case.dtype, case.device)), 1.0
        elif family == "product":
            a = backend.from_numpy(np.ones((PRODUCT_N, PRODUCT_N), dtype=case.dtype),
                                   case.device, case.dtype)
            call, value = (lambda: a @ a), float(PRODUCT_N)
        elif family == "fused":  # on zeros: the in-place chain keeps them zero, call after call
            x = backend.from_numpy(np.zeros(1, dtype=case.dtype), case.device, case.dtype)
            fused = fused_chain(backend.name)
            call, value = (lambda: fused(x)), 0.0
        else:
            x = backend.from_numpy(np.ones(1, dtype=case.dtype), case.device, case.dtype)
            call, value = (lambda: x * 1), 1.0

        def check(out: object) -> None:
            if not np.all(backend.to_numpy(out) == value):
                from gpuvs.errors import WrongResult
                raise WrongResult(f"the dispatch probe's {family or 'x * 1'} gave "
                                  f"{backend.to_numpy(out).ravel()[:3]}, not {value:g}")

        return Prepared(call=call, check=check, single_call=case.param("mode") == "latency")


@register
class Triad(Probe):
    name = "triad"
    description = "ceiling: STREAM-like triad a = b + s·c (memory bandwidth)"

    def default_sizes(self, params: Params) -> tuple[int, ...]:
        return (1 << 25,)

    def flops(self, size: int, params: Params) -> float:
        return 2.0 * size

    def bytes_moved(self, size: int, params: Params, dtype: str) -> float:
        # Two passes, as array libraries run it: a = s·c (read c, write a), then
        # a += b (read a and b, write a): five array transfers, not STREAM's three.
        return 5.0 * size * ITEMSIZE[dtype]

    def memory_needed(self, size: int, params: Params, dtype: str) -> int:
        return 3 * size * ITEMSIZE[dtype]

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        b = random_inputs((case.size,), case.dtype, seed=4)
        c = random_inputs((case.size,), case.dtype, seed=5)
        a = backend.ones((case.size,), case.dtype, case.device)

        def triad(b_: Any, c_: Any) -> Any:
            a[...] = c_
            a[...] *= 3.0
            a[...] += b_
            return a

        return place(backend, case, (b, c), triad,
                     lambda: b.astype(np.float64) + 3.0 * c.astype(np.float64))


@register
class Transfer(Probe):
    """Host↔device copies: torch's `copy_` between buffers made before, pageable and
    pinned (the link's rates); and, with `path=backend`, each backend's own copy path —
    `from_numpy` in, `to_numpy` out — as an end-to-end call copies (its d2h on a fresh
    device array each call, so that no backend hands back a host copy it kept)."""

    name = "transfer"
    description = ("ceiling: host↔device copy bandwidth (torch, pageable and pinned; each "
                   "backend's own from_numpy/to_numpy)")

    def param_sets(self) -> tuple[Params, ...]:
        return (*((("direction", d), ("memory", m))
                  for d in ("h2d", "d2h") for m in ("pageable", "pinned")),
                *((("direction", d), ("path", "backend")) for d in ("h2d", "d2h")))

    def default_sizes(self, params: Params) -> tuple[int, ...]:
        return (1 << 26,)

    def applies(self, case: Case) -> bool:
        return case.device != "cpu" and (case.backend == "torch"
                                         or case.param("path") == "backend")

    def bytes_moved(self, size: int, params: Params, dtype: str) -> float:
        return float(size * ITEMSIZE[dtype])

    def memory_needed(self, size: int, params: Params, dtype: str) -> int:
        return 2 * size * ITEMSIZE[dtype]

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        if case.param("path") == "backend":
            return _backend_path(backend, case)
        import torch

        if backend.name != "torch" or case.device == "cpu":
            raise ValueError("transfer ceilings are measured with torch on a CUDA device")
        host = torch.from_numpy(random_inputs((case.size,), case.dtype, seed=6))
        if case.param("memory") == "pinned":
            host = host.pin_memory()
        dev = host.to(case.device)
        src, dst = (host, torch.empty_like(dev)) if case.param("direction") == "h2d" else (
            dev, torch.empty_like(host, pin_memory=case.param("memory") == "pinned"))

        def transfer() -> Any:
            dst.copy_(src)
            return dst

        expected = host.numpy().astype(np.float64)
        return Prepared(call=transfer, check=lambda out: _same(out, expected))


def _backend_path(backend: Backend, case: Case) -> Prepared:
    host = random_inputs((case.size,), case.dtype, seed=6)
    expected = host.astype(np.float64)
    if case.param("direction") == "h2d":
        return Prepared(call=lambda: backend.from_numpy(host, case.device, case.dtype),
                        check=lambda out: _same(backend.to_numpy(out), expected))
    dev = backend.from_numpy(host, case.device, case.dtype)
    return Prepared(call=lambda: backend.to_numpy(dev * 1),
                    check=lambda out: _same(out, expected))


def _same(out: Any, expected: np.ndarray) -> None:
    from gpuvs.errors import WrongResult
    host = out if isinstance(out, np.ndarray) else out.cpu().numpy()
    if not np.array_equal(host.astype(np.float64), expected):
        raise WrongResult("the copy differs from its source")
