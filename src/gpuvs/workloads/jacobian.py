"""Jacobians of a small MLP — seed 004, "why is the GPU slower than the CPU?".

The post's net is `Linear(1, 20) → tanh → Linear(20, 20) → tanh → Linear(20, 400)`
(here as an `nn.Sequential`: same layers, same initialisation order, same forward),
applied to a batch t of shape (val, 1); `size` is val. `method` says how the
derivatives are taken:

- `naive`: `torch.autograd.functional.jacobian(lambda t_: nx(t_), t)`, as the post
  wrote it: one backward pass per output element, 400·val passes of a few tiny ops
  each — launch-bound on any device. Its output is the full cross-batch Jacobian
  (val, 400, val, 1), zero except the per-sample blocks on its diagonal.
- `vectorize`: the same call with `vectorize=True`: one batched backward pass over an
  identity of (400·val)² elements (6.4 GB at val = 100 in float32; 640 GB at 1000).
- `vmap`: `torch.func.vmap(torch.func.jacrev(f))`, the per-sample Jacobian
  (val, 400, 1): no cross-batch zeros, though reverse mode still pushes a 400×400
  one-hot basis through every sample.
- `vmap_jacfwd`: `torch.func.vmap(torch.func.jacfwd(f))`: forward mode, one tangent
  per sample because the input is one number; memory O(val·400).

Variants: `as_written` replays the post's `%%time` cell (model built and moved, input
drawn, one jacobian call; wall time, no synchronisation, first call included);
`correct` times `naive` and `vectorize` by the protocol; `tuned` the two per-sample
methods. Every output is checked against a float64 NumPy reference of the per-sample
blocks, derived by hand from the same weights.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from gpuvs.backends.base import Backend, host_memory_free
from gpuvs.errors import BackendUnavailable, WrongResult
from gpuvs.measuring.as_written import wall_once
from gpuvs.measuring.protocol import Prepared
from gpuvs.model import Case, Params
from gpuvs.units import nbytes
from gpuvs.workloads import register
from gpuvs.workloads.base import (
    CHECK_CHUNK,
    ITEMSIZE,
    TOLERANCE,
    SizeAxis,
    Workload,
    relative_error,
    with_others,
)

IN, HIDDEN, OUT = 1, 20, 400
SEED = 4  # the post drew unseeded weights; a seed makes the reference reproducible
CORRECT = ("naive", "vectorize")
TUNED = ("vmap", "vmap_jacfwd")
METHODS = CORRECT + TUNED
TITLES = {"naive": "autograd's loop, one backward pass per output",
          "vectorize": "jacobian(vectorize=True)", "vmap": "vmap(jacrev) per sample",
          "vmap_jacfwd": "vmap(jacfwd) per sample"}
SIZES = {"naive": (10, 30, 100), "vectorize": (10, 30, 100),
         "vmap": (10, 100, 1000, 10_000), "vmap_jacfwd": (10, 100, 1000, 10_000, 100_000)}
PERCENT_TIME = ("%%time cell (model built and moved, one jacobian call): wall time once, "
                "no sync, first call included")

# Memory model, an upper bound of peaks measured on an H100 (torch.cuda.max_memory_allocated)
# and on the CPU (RSS growth) for val = 10 … 10⁵: see tests/workloads/test_jacobian.py.
WORKSPACE = 128 * 1024**2  # cuBLAS workspace, the model, allocator rounding
CUDA_BLOCK = 512           # the CUDA caching allocator's smallest block
VMAP_BASIS_FACTOR = 2.5    # jacrev under vmap holds its one-hot basis ~2.4 times per sample
FRAGMENT_MARGIN = 1.25     # over the largest RSS growth seen, relative to the identity
# Share of free memory a case may take, as the worker's guard leaves.
MEMORY_HEADROOM = 0.9
# With these, glibc's heap does not keep each naive backward pass's temporary (below).
ALLOCATOR_FIXES = ("MALLOC_MMAP_THRESHOLD_",)
PRELOADED_ALLOCATORS = ("tcmalloc", "jemalloc", "mimalloc")


def post_net() -> Any:
    """The post's MLP, built from torch's global generator like `net_x()`."""
    from torch import nn

    return nn.Sequential(nn.Linear(IN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, HIDDEN),
                         nn.Tanh(), nn.Linear(HIDDEN, OUT))


def post_model_and_input(val: int) -> tuple[Any, Any]:
    """The post's `nx = net_x()` then `t = torch.rand(val)`, drawn under SEED without
    touching the caller's random state: the same weights and input every time."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        net = post_net()
        t = torch.rand(val)
    return net, t


def method_fn(method: str, net: Any) -> Callable[[Any], Any]:
    """`t → derivatives` by `method`, for `t` of shape (val, 1)."""
    import torch

    if method == "naive":
        return lambda t: torch.autograd.functional.jacobian(lambda t_: net(t_), t)
    if method == "vectorize":
        return lambda t: torch.autograd.functional.jacobian(lambda t_: net(t_), t,
                                                            vectorize=True)
    if method not in TUNED:
        raise ValueError(f"unknown jacobian method {method!r}; known: {', '.join(METHODS)}")
    net.requires_grad_(False)  # nothing calls backward on the Jacobian: record no graph
    transform = torch.func.jacrev if method == "vmap" else torch.func.jacfwd
    return torch.func.vmap(transform(net))


def per_sample_reference(net: Any, t: np.ndarray) -> np.ndarray:
    """dy/dt for each sample, (val, 400), in float64: the chain rule written out,
    W3 · diag(1 − h2²) · W2 · diag(1 − h1²) · W1, from the net's own weights."""
    (w1, b1), (w2, b2), (w3, _) = (
        (layer.weight.detach().cpu().double().numpy(), layer.bias.detach().cpu().double().numpy())
        for layer in net if hasattr(layer, "weight"))
    t = np.asarray(t, dtype=np.float64).reshape(-1, 1)
    h1 = np.tanh(t @ w1.T + b1)
    d1 = (1 - h1 * h1) * w1[:, 0]
    h2 = np.tanh(h1 @ w2.T + b2)
    d2 = (1 - h2 * h2) * (d1 @ w2.T)
    return d2 @ w3.T  # type: ignore[no-any-return]


def block_diagonal_error(out: np.ndarray, blocks: np.ndarray) -> float:
    """‖out − ref‖ / ‖ref‖ for the full Jacobian (val, 400, val, 1), whose reference holds
    `blocks[n]` at [n, :, n, 0] and zeros elsewhere — compared in chunks of rows, so the
    float64 reference is never built whole (at val = 1000 it would be 3.2 GB)."""
    val = blocks.shape[0]
    if out.shape != (val, OUT, val, 1):
        raise WrongResult(f"output shape {out.shape} differs from the full Jacobian's "
                          f"{(val, OUT, val, 1)}")
    rows = max(1, CHECK_CHUNK // (OUT * val))
    err2 = 0.0
    for n0 in range(0, val, rows):
        chunk = out[n0:n0 + rows, :, :, 0].astype(np.float64)
        if not np.all(np.isfinite(chunk)):
            raise WrongResult("output holds NaN or infinity where the reference is finite")
        i = np.arange(chunk.shape[0])
        diff = chunk[i, :, n0 + i] - blocks[n0:n0 + len(i)]
        err2 += float(np.sum(diff * diff))
        chunk[i, :, n0 + i] = 0.0  # what is left must be the cross-batch zeros
        err2 += float(np.sum(chunk * chunk))
    return math.sqrt(err2) / math.sqrt(float(np.sum(blocks * blocks)))


def jacobian_check(blocks: np.ndarray, method: str, dtype: str,
                   to_numpy: Callable[[Any], np.ndarray]) -> Callable[[object], None]:
    """WrongResult when a method's output is off the reference by more than TOLERANCE."""

    def check(out: object) -> None:
        got = to_numpy(out)
        if method in CORRECT:
            err = block_diagonal_error(got, blocks)
        else:
            err = relative_error(got, blocks.reshape(-1, OUT, 1))
        if err > TOLERANCE[dtype]:
            raise WrongResult(f"relative error {err:.2e} against the float64 reference "
                              f"exceeds the {dtype} tolerance {TOLERANCE[dtype]:.0e}")

    return check


def device_bytes(method: str, val: int, itemsize: int) -> int:
    """Peak bytes one call holds where it runs (see the memory model above)."""
    n = OUT * val  # output elements: the naive method's backward passes
    if method == "naive":  # each pass's (val, 1) gradient, kept until stacked; the stack
        grad = -(-val * itemsize // CUDA_BLOCK) * CUDA_BLOCK
        return n * grad + n * val * itemsize + 3 * n * itemsize + WORKSPACE
    if method == "vectorize":  # the identity, the batched pass's (n, val, 20) activations
        return (n * n + 4 * n * val * HIDDEN + 2 * n * val) * itemsize + WORKSPACE
    if method == "vmap":  # a 400×400 one-hot basis per sample, and (val, 400, 20) activations
        return int(VMAP_BASIS_FACTOR * val * OUT * OUT * itemsize
                   + 4 * n * HIDDEN * itemsize) + WORKSPACE
    return (8 * n + 8 * val * HIDDEN) * itemsize + WORKSPACE


def fragmented_host_bytes(val: int, itemsize: int) -> int:
    """RSS the naive method reaches on the CPU under glibc's malloc: each backward pass
    frees a (val × 400) one-hot temporary that the next pass's small allocations split,
    so the heap grows by up to one per pass — like the vectorized identity, (400·val)²
    elements (RSS grew by 0.5 to 1.0 times that at val = 20 … 150)."""
    return int(FRAGMENT_MARGIN * (OUT * val) ** 2 * itemsize) + WORKSPACE


def allocator_keeps_fragments() -> bool:
    """glibc's malloc with its adaptive mmap threshold, the default on Linux."""
    preload = os.environ.get("LD_PRELOAD", "")
    return not (any(v in os.environ for v in ALLOCATOR_FIXES)
                or any(a in preload for a in PRELOADED_ALLOCATORS))


def _refuse_if_it_would_swamp_the_host(case: Case) -> None:
    """The naive method's host-memory guard, which `memory_needed` cannot carry: the
    fragmentation is the CPU's alone, and a GPU case at the same size needs none of it."""
    if case.device != "cpu" or not allocator_keeps_fragments():
        return
    need, free = fragmented_host_bytes(case.size, ITEMSIZE[case.dtype]), host_memory_free()
    if need > MEMORY_HEADROOM * free:
        raise BackendUnavailable(
            f"needs {nbytes(need)}, {nbytes(free)} free on cpu (glibc's heap keeps each "
            "backward pass's one-hot temporary; MALLOC_MMAP_THRESHOLD_=65536 avoids it)")


def post_cell(val: int, device: str) -> Callable[[], Any]:
    """The body of the post's `%%time` cell, less its imports and class definition."""

    def cell() -> Any:
        import torch

        nx, t = post_model_and_input(val)
        nx.to(device)
        t.requires_grad_(True)
        t = torch.reshape(t, (val, 1)).to(device)
        return torch.autograd.functional.jacobian(lambda t_: nx(t_), t)

    return cell


@functools.cache
def _ops_line(method: str) -> tuple[int, int]:
    """(fixed, per unit of val) aten ops of one call, from exact counts at val = 2 and 3:
    the naive method's ops grow by one backward pass per output element, the others'
    not at all (val = 1 takes other paths, so it is not used)."""
    two, three = count_ops(method, 2), count_ops(method, 3)
    per_val = three - two
    return two - 2 * per_val, per_val


def ops_per_call(method: str, val: int) -> float:
    fixed, per_val = _ops_line(method)
    return float(fixed + per_val * val)


def count_ops(method: str, val: int) -> int:
    """Aten operator calls of one call (after a first one), counted at the dispatcher."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Counter(TorchDispatchMode):
        calls = 0

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            self.calls += 1
            return func(*args, **(kwargs or {}))

    net, t = post_model_and_input(val)
    fn, x = method_fn(method, net), t.reshape(val, 1)
    fn(x)
    counter = Counter()  # type: ignore[no-untyped-call]
    with counter:
        fn(x)
    return int(counter.calls)


def placed(net: Any, t: Any, case: Case) -> tuple[Any, Any]:
    """The net and its (val, 1) input on the case's device, in its dtype."""
    import torch

    dtype = getattr(torch, case.dtype)
    return (net.to(device=case.device, dtype=dtype),
            t.reshape(-1, 1).to(device=case.device, dtype=dtype))


@register
class Jacobian(Workload):
    name = "jacobian"
    counts_kernels = True
    description = ("seed 004: Jacobian of a 1→20→20→400 tanh MLP over a batch of val inputs: "
                   "autograd's naive loop, vectorize=True, per-sample vmap(jacrev/jacfwd)")
    variants = ("as_written", "correct", "tuned")
    dtypes = ("float32",)

    def param_sets(self) -> tuple[Params, ...]:
        return tuple((("method", m),) for m in METHODS)

    def default_sizes(self, params: Params) -> tuple[int, ...]:
        return SIZES[dict(params)["method"]]

    def data_modes(self, params: Params) -> tuple[str, ...]:
        return ("resident",)  # the post moved 8 KB of weights and input in 2 ms

    def applies(self, case: Case) -> bool:
        method = case.param("method")
        if case.backend != "torch" or case.dtype not in ("float32", "float64"):
            return False
        if case.variant == "as_written":  # the post's float32 cell, caches warm
            return method == "naive" and case.dtype == "float32" and case.param("cache") != "cold"
        return method in (TUNED if case.variant == "tuned" else CORRECT)

    def memory_needed(self, size: int, params: Params, dtype: str) -> int:
        return device_bytes(dict(params)["method"], size, ITEMSIZE[dtype])

    def host_memory_needed(self, size: int, params: Params, dtype: str) -> int:
        """The float64 reference and the net's float64 pass, the output brought back
        (the full Jacobian for naive and vectorize), and the check's float64 chunks."""
        method = dict(params)["method"]
        out = OUT * size * (size if method in CORRECT else 1) * ITEMSIZE[dtype]
        return 4 * size * (OUT + HIDDEN) * 8 + out + 3 * CHECK_CHUNK * 8

    def counters(self, case: Case) -> dict[str, float]:
        """`ops`: aten ops per call (exact, from counts at val 2 and 3); `launches`
        takes it too, until a profiler counts a GPU's kernels. A replay's process counts
        nothing (seconds of counting in each): its measured twin has the counts."""
        method = case.param("method")
        full = method in CORRECT
        out = {"backward_passes": float(OUT * case.size if method == "naive" else 1),
               "output_bytes": float(OUT * case.size * (case.size if full else 1)
                                     * ITEMSIZE[case.dtype])}
        if case.variant == "as_written":
            return out
        ops = ops_per_call(method, case.size)
        return {"ops": ops, "launches": ops, **out}

    def title(self, params: Params) -> str:
        method = dict(params).get("method", "")
        return with_others(f"Jacobian of seed 004's MLP, {TITLES.get(method, method)}",
                           params, ("method",))

    def size_axis(self, params: Params) -> SizeAxis:
        return SizeAxis("batch size val (inputs)", "val = {}")

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        method, val = case.param("method"), case.size
        if method == "naive":
            _refuse_if_it_would_swamp_the_host(case)
        net, t = post_model_and_input(val)
        check = jacobian_check(per_sample_reference(net, t.numpy()), method, case.dtype,
                               backend.to_numpy)
        net, x = placed(net, t, case)
        fn = method_fn(method, net)
        # Naive calls take seconds: each sample is one call, never a loop of them.
        prepared = Prepared(call=lambda: fn(x), check=check, single_call=method == "naive")
        if case.variant == "as_written":
            return replace(prepared, self_timed=replace(wall_once(post_cell(val, case.device)),
                                                        method=PERCENT_TIME))
        return prepared
