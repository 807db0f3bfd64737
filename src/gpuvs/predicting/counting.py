"""The work of the user's torch code, counted on the CPU: no GPU needed.

One call runs under a dispatch mode that sees every aten op: each is sorted into its
class (`opclasses`: a sort, a gather, a matrix product, a view that launches nothing),
with the bytes of its tensors (inputs and outputs; a gather's, only the rows it picks:
`tensors.gathered`) and its FLOPs by torch's own formulas (`torch.utils.flop_counter`;
an attention's by its two products whatever kernel runs it). The arguments' tensors
are what an end-to-end call copies to the device (a module's weights stay there, as
`gpuvs.compare` keeps them), the output's tensors what it brings back. A call in which
no torch op ran is refused: nothing of it would run on a GPU.

The host's own cost beyond the ops' launches (Python, module hooks) is measured on the
same CPU run (`hostcost`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from typing import Any

from gpuvs.errors import UsageError
from gpuvs.predicting.hostcost import host_cost
from gpuvs.predicting.opclasses import VIEW, classify, flops
from gpuvs.predicting.tensors import gathered, moved, nbytes, tensors
from gpuvs.predicting.work import Tally, Work, tf32

# A call in which no torch op ran (NumPy code, `time.sleep`, plain Python) runs on the
# CPU whatever the machine: it was once priced as one GPU launch, a 13,100× "speedup"
# for `np.linalg.inv` and 817× for `time.sleep`.
NOTHING_ON_A_GPU = ("nothing in this call runs on a GPU as written: no torch op ran in it "
                    "(NumPy, time.sleep and plain Python stay on the CPU on any machine), "
                    "so no GPU time or speedup is predicted; write its work with torch "
                    "tensors to predict it")


def count(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any],
          backend: str = "torch") -> tuple[Work, Any]:
    """`fn(*args, **kwargs)` run once on the CPU, counted, then a few more times for the
    host's own cost: (its work, the first call's output)."""
    if any(t.device.type != "cpu" for t in tensors((args, kwargs))):
        raise UsageError("gpuvs.predict counts the work on the CPU: pass CPU tensors "
                         "(the GPU it predicts for is named by target=)")
    ops = _op_counter()
    with ops, _fused_on_gpu(ops):
        out = fn(*args, **kwargs)
    if not ops.seen:
        raise UsageError(NOTHING_ON_A_GPU)
    dtypes: Counter[str] = Counter()
    for t in tensors((args, kwargs, out)):
        if t.is_floating_point():
            dtypes[str(t.dtype).removeprefix("torch.")] += t.numel()
    dtype = dtypes.most_common(1)[0][0] if dtypes else "float32"
    tallies = ops.tallies()
    total = sum(t.flops for t in tallies)
    on, why = tf32(backend)  # the user's setting, now: said with the answer
    work = Work(total, float(ops.bytes), float(max(ops.launches, 1)),
                tuple(float(nbytes(t)) for t in tensors((args, kwargs), modules=False)),
                tuple(float(nbytes(t)) for t in tensors(out)), dtype, backend,
                tf32=on and bool(total) and dtype == "float32", tf32_why=why,
                tallies=tallies, host_s=host_cost(fn, args, kwargs, ops.names),
                named=tuple(dict.fromkeys(ops.named)))
    return work, out


def _op_counter() -> Any:
    """A TorchDispatchMode sorting each op into its class, with its bytes and FLOPs."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class OpCounter(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()  # type: ignore[no-untyped-call]
            self.seen = 0  # every torch op, views included
            self.launches = 0
            self.bytes = 0
            self.by: dict[tuple[str, bool], list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
            self.named: list[str] = []
            self.names: list[str] = []  # every op, in order
            self.fusing = False  # inside an op the GPU runs as one (`_fused_on_gpu`)

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            self.seen += 1
            self.names.append(str(func))  # as the CPU runs them: the host cost's ops
            if not self.fusing:
                self.record(func, args, kwargs, out)
            return out

        def record(self, func: Any, args: Any, kwargs: Any, out: Any) -> None:
            """One op, sorted into its class, with its bytes and FLOPs."""
            found = classify(func, args, out)
            touched = (gathered if found.op_class == "gather" else moved)(args, kwargs, out)
            if not getattr(func, "is_view", False):
                self.launches += 1
                self.bytes += touched
            if found.op_class != VIEW:
                tally = self.by[(found.op_class, found.syncs)]
                tally[0] += 1
                tally[1] += touched
                tally[2] += flops(func, args, kwargs, out, found.op_class)
            if found.said:
                self.named.append(found.said)

        def tallies(self) -> tuple[Tally, ...]:
            return tuple(Tally(c, int(n), b, f, syncs)
                         for (c, syncs), (n, b, f) in sorted(self.by.items()))

    return OpCounter()


def _fused_on_gpu(ops: Any) -> Any:
    """A TorchFunctionMode that counts, as the one op a GPU launches, a function torch
    runs as one kernel on CUDA but as its decomposition on the CPU, where the counting
    runs (the ops inside are still timed for the host's cost, as the CPU runs them).
    `F.rms_norm` (and `nn.RMSNorm`) is six ops on the CPU — pow, mean, add, rsqrt, mul,
    mul — and one fused kernel on CUDA: the corpus's `rms_norm` at 16 × 1024 took 16.8 µs
    on an H100, priced as six launches at 125 µs, and the sixth set's gated RMS norm
    24.5 µs on an H200, priced at 88.7 µs."""
    import torch
    from torch.overrides import TorchFunctionMode

    fused = {torch.nn.functional.rms_norm: torch.ops.aten.rms_norm.default}

    class FusedOnGpu(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            one = fused.get(func)
            if one is None or ops.fusing:
                return func(*args, **kwargs)
            ops.fusing = True
            try:
                out = func(*args, **kwargs)
            finally:
                ops.fusing = False
            ops.record(one, args, kwargs, out)
            return out

    return FusedOnGpu()
