"""The work of the user's torch code, counted on the CPU: no GPU needed.

One call runs under torch's `FlopCounterMode` (FLOPs of the products and convolutions,
by torch's own formulas) and a dispatch mode that sees every aten op: each one that is
not a view would launch a kernel on a GPU, and moves its tensor inputs and outputs
through memory once. The arguments' tensors are what an end-to-end call copies to the
device, the output's tensors what it brings back. A call in which no torch op ran is
refused: nothing of it would run on a GPU.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from gpuvs.errors import UsageError
from gpuvs.predicting.work import Work, tf32

# A call in which no torch op ran (NumPy code, `time.sleep`, plain Python) runs on the
# CPU whatever the machine: it was once priced as one GPU launch, a 13,100× "speedup"
# for `np.linalg.inv` and 817× for `time.sleep`.
NOTHING_ON_A_GPU = ("nothing in this call runs on a GPU as written: no torch op ran in it "
                    "(NumPy, time.sleep and plain Python stay on the CPU on any machine), "
                    "so no GPU time or speedup is predicted; write its work with torch "
                    "tensors to predict it")


def count(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any],
          backend: str = "torch") -> tuple[Work, Any]:
    """`fn(*args, **kwargs)` run once on the CPU, counted: (its work, its output)."""
    from torch.utils.flop_counter import FlopCounterMode

    if any(t.device.type != "cpu" for t in tensors((args, kwargs))):
        raise UsageError("gpuvs.predict counts the work on the CPU: pass CPU tensors "
                         "(the GPU it predicts for is named by target=)")
    ops = _op_counter()
    with FlopCounterMode(display=False) as flops, ops:
        out = fn(*args, **kwargs)
    if not ops.seen:
        raise UsageError(NOTHING_ON_A_GPU)
    dtypes: Counter[str] = Counter()
    for t in tensors((args, kwargs, out)):
        if t.is_floating_point():
            dtypes[str(t.dtype).removeprefix("torch.")] += t.numel()
    dtype = dtypes.most_common(1)[0][0] if dtypes else "float32"
    total = float(flops.get_total_flops())
    on, why = tf32(backend)  # the user's setting, now: said with the answer
    work = Work(total, float(ops.bytes), float(max(ops.launches, 1)),
                tuple(float(_nbytes(t)) for t in tensors((args, kwargs))),
                tuple(float(_nbytes(t)) for t in tensors(out)), dtype, backend,
                tf32=on and bool(total) and dtype == "float32", tf32_why=why)
    return work, out


def tensors(tree: Any) -> list[Any]:
    """The torch tensors in nested tuples, lists and dicts, each storage once."""
    import torch
    from torch.utils._pytree import tree_leaves

    seen: set[int] = set()
    found = []
    for leaf in tree_leaves(tree):
        if isinstance(leaf, torch.nn.Module):
            leaves: Iterable[Any] = [*leaf.parameters(), *leaf.buffers()]
        else:
            leaves = [leaf]
        for t in leaves:
            if isinstance(t, torch.Tensor) and id(t.untyped_storage()) not in seen:
                seen.add(id(t.untyped_storage()))
                found.append(t)
    return found


def _nbytes(t: Any) -> int:
    return int(t.numel() * t.element_size())


def _op_counter() -> Any:
    """A TorchDispatchMode counting the ops that would launch kernels and their bytes."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class OpCounter(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()  # type: ignore[no-untyped-call]
            self.seen = 0  # every torch op, views included
            self.launches = 0
            self.bytes = 0

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            self.seen += 1
            if not getattr(func, "is_view", False):
                self.launches += 1
                self.bytes += sum(_nbytes(t) for t in tensors((args, kwargs, out)))
            return out

    return OpCounter()
