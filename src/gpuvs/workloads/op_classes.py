"""The op-class probe: one op of each class of `model.OP_CLASSES`, timed over sizes.

`gpuvs predict` prices each op of the user's code by what it is: a sort costs several
passes over its memory and a launch of its own, a matrix product its FLOPs at the chip's
rate for that size. A class's cost is measured, not assumed: `gpuvs ceilings` times one
representative op of each class, in a loop, at a handful of sizes, on a GPU
(`analysis.ceilings.op_class_probes`), and the prediction fits the class's launch and its
cost per byte (or per FLOP) to those points (`predicting.pricing`).

`size` is the elements of the op's input for the memory classes (float32), the side of
the square for a matrix product, the batch of a 64-channel 3 × 3 convolution on 32 × 32
images, and the sequence length of an attention (4 × 8 heads of 64). The bytes a probe
declares (`bytes_moved`) are those of its op's tensors, inputs and outputs, as the
counting of the user's code counts them (`predicting.counting`; a test holds the two
equal). `to_device` and `to_host` are the copies `gpuvs.compare`'s end-to-end call
makes: a tensor copied in with `.to(device)`, and an output brought back with `.cpu()`
into new host memory on every call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuvs.backends.base import Backend
from gpuvs.errors import WrongResult
from gpuvs.measuring.protocol import Prepared
from gpuvs.model import FLOP_CLASSES, OP_CLASSES, Case, Params
from gpuvs.workloads import register
from gpuvs.workloads.base import Workload, reference_wanted

ROW = 1024      # the row of the row-wise probes (reduction, top-k, normalisation, FFT)
GATHER_ROW = 64  # elements of the rows a gather or a scatter moves
TOPK = 8
DISTINCT = 16   # a unique's input holds size / DISTINCT distinct values
# One size each for `gpuvs run -w op_class`; `gpuvs ceilings` times each class over
# several (`analysis.ceilings.OP_CLASS_SIZES`).
DEFAULT_SIZE = {"matmul": 1024, "conv": 32, "attention": 1024}
CONV_CHANNELS, CONV_SIDE, CONV_KERNEL = 64, 32, 3
HEADS, HEAD_DIM, BATCH = 8, 64, 4
# Bytes of the op's tensors per input element (float32), as counted for the user's code.
PER_ELEMENT = {
    "elementwise": 8.0, "scan": 8.0, "norm": 8.0, "copy": 8.0, "create": 4.0,
    "reduction": 4.0 + 4.0 / ROW, "sort": 16.0, "topk": 4.0 + TOPK * 12.0 / ROW,
    "unique": 4.0 + 4.0 / DISTINCT, "select": 7.0,
    "gather": 8.0 + 8.0 / GATHER_ROW, "scatter": 8.0 + 8.0 / GATHER_ROW,
    "fft": 4.0 + 8.0 * (ROW // 2 + 1) / ROW, "to_device": 4.0, "to_host": 4.0,
}


@register
class OpClass(Workload):
    """One op of a class, in a loop, with torch on a GPU: what `gpuvs predict` prices
    each op of the user's code by."""

    name = "op_class"
    description = "ceiling: one op of each class (sort, scan, gather, …) timed over sizes"
    in_default_suite = False

    def param_sets(self) -> tuple[Params, ...]:
        return tuple((("op", c),) for c in OP_CLASSES)

    def data_modes(self, params: Params) -> tuple[str, ...]:
        return ("resident",)

    def applies(self, case: Case) -> bool:
        return case.backend == "torch" and case.device != "cpu"

    def default_sizes(self, params: Params) -> tuple[int, ...]:
        return (DEFAULT_SIZE.get(dict(params)["op"], 1 << 20),)

    def flops(self, size: int, params: Params) -> float | None:
        op = dict(params)["op"]
        if op == "matmul":
            return 2.0 * size**3
        if op == "conv":
            return (2.0 * size * CONV_CHANNELS * CONV_CHANNELS * CONV_KERNEL**2
                    * CONV_SIDE**2)
        if op == "attention":  # QKᵀ and its product with V
            return 4.0 * BATCH * HEADS * size * size * HEAD_DIM
        return None

    def bytes_moved(self, size: int, params: Params, dtype: str) -> float | None:
        op = dict(params)["op"]
        if op == "matmul":
            return 3.0 * 4 * size * size
        if op == "conv":
            return 4.0 * (2 * size * CONV_CHANNELS * CONV_SIDE**2
                          + CONV_CHANNELS**2 * CONV_KERNEL**2 + CONV_CHANNELS)
        if op == "attention":
            return 4.0 * 4 * BATCH * HEADS * size * HEAD_DIM
        return PER_ELEMENT[op] * size

    def memory_needed(self, size: int, params: Params, dtype: str) -> int:
        return int(4 * (self.bytes_moved(size, params, dtype) or 0.0))

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        op = case.param("op")
        call, inputs = _probe(op, case.size)
        placed = [t.to(case.device, copy=True) for t in inputs]  # before a scatter adds

        def check(out: object) -> None:  # torch's answer on the CPU, once the call ran
            if reference_wanted():  # a later pass checked the same call in the first
                _same(out, inputs[0] if op in ("to_device", "to_host") else call(*inputs), op)

        if op == "to_device":  # from the host's tensor, as an end-to-end call copies in
            return Prepared(call=lambda: inputs[0].to(case.device, copy=True), check=check)
        if op == "to_host":  # into new host memory on every call, as it brings one back
            return Prepared(call=lambda: placed[0].cpu(), check=check)
        return Prepared(call=lambda: call(*placed), check=check)


def _probe(op: str, n: int) -> tuple[Callable[..., Any], list[Any]]:
    """The class's op and its CPU inputs at size `n` (seeded: every run the same; a copy's
    op is the identity: `prepare` makes the copy the call)."""
    import torch

    g = torch.Generator().manual_seed(7)
    if op in FLOP_CLASSES:
        return _flop_probe(op, n, g)
    x = torch.rand(n, generator=g)
    rows = n // GATHER_ROW
    if op in ("gather", "scatter"):
        idx = torch.randint(0, rows, (rows,), generator=g)
        if op == "gather":
            return (lambda a, i: torch.index_select(a.view(-1, GATHER_ROW), 0, i)), [x, idx]
        return (lambda acc, i, s: acc.index_add_(0, i, s)), [
            torch.zeros(rows, GATHER_ROW), idx, x.view(-1, GATHER_ROW)]
    if op == "unique":
        return torch.unique, [(torch.randperm(n, generator=g) % (n // DISTINCT)).float()]
    if op == "select":
        return torch.masked_select, [x, torch.arange(n) % 2 == 0]
    one: dict[str, Callable[[Any], Any]] = {
        "elementwise": lambda a: a * 2.0,
        "reduction": lambda a: a.view(-1, ROW).sum(-1),
        "scan": lambda a: torch.cumsum(a, 0),
        "sort": torch.sort,
        "topk": lambda a: torch.topk(a.view(-1, ROW), TOPK),
        "norm": lambda a: torch.softmax(a.view(-1, ROW), -1),
        "fft": lambda a: torch.fft.rfft(a.view(-1, ROW)),
        "create": lambda a: torch.zeros(n, device=a.device),
        "copy": lambda a: a.clone(),
    }
    return one.get(op, lambda a: a), [x[:1] if op == "create" else x]


def _flop_probe(op: str, n: int, g: Any) -> tuple[Callable[..., Any], list[Any]]:
    import torch
    import torch.nn.functional as F

    if op == "matmul":
        return (lambda a, b: a @ b), [torch.rand(n, n, generator=g) for _ in range(2)]
    if op == "conv":
        return (lambda a, w, b: F.conv2d(a, w, b, padding=1)), [
            torch.rand(n, CONV_CHANNELS, CONV_SIDE, CONV_SIDE, generator=g),
            torch.rand(CONV_CHANNELS, CONV_CHANNELS, CONV_KERNEL, CONV_KERNEL, generator=g),
            torch.rand(CONV_CHANNELS, generator=g)]
    return F.scaled_dot_product_attention, [
        torch.rand(BATCH, HEADS, n, HEAD_DIM, generator=g) for _ in range(3)]


def _same(out: Any, expected: Any, op: str) -> None:
    """The device's answer against torch's on the CPU (sums and products in another
    order: within float32's rounding, relative to the answer's scale)."""
    import torch

    got = out if isinstance(out, (tuple, list)) else (out,)
    want = expected if isinstance(expected, (tuple, list)) else (expected,)
    if op in ("sort", "topk"):  # ties among the values may take their indices in any order
        got, want = got[:1], want[:1]
    for a, b in zip(got, want, strict=True):
        a = a.cpu()
        if a.shape != b.shape or not torch.allclose(
                a.to(b.dtype), b, rtol=1e-3, atol=1e-3 * float(b.abs().max().clamp(min=1))
                if b.numel() and b.is_floating_point() else 0):
            raise WrongResult(f"the {op} probe's output differs from torch's on the CPU")
