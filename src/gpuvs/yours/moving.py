"""A user's arguments, copied to a device; outputs brought back and compared.

What moves: torch tensors, `torch.nn.Module`s (parameters and buffers with them), NumPy
and CuPy arrays, and lists, tuples (named ones too), mappings (a dict subclass such as
Hugging Face's `ModelOutput` keeps its type) and dataclasses of them, nested. Everything
else (numbers, strings, dtypes, functions, None) is passed as it is. Nothing is modified
in place: a tensor or array is always copied, even to the device it is on, and a module
is deep-copied first, so a function that writes into its inputs never touches the
caller's.

One walk (`children`, `tree_map`) decides what a container is, for every use here. It is
ours, not torch's `_pytree` or optree: both treat a dataclass or a dict subclass they
were not told about as one opaque leaf (so its tensors would stay where they were), torch's
is private and needs torch loaded, and optree orders a dict's leaves by key, not as the
caller wrote them (benchmarks/library_swaps.py measures the three).

Where the data goes on a GPU depends on what it is: torch objects go with `.to(device)`;
NumPy arrays become CuPy arrays when the arguments hold no torch object (a NumPy function
runs on CuPy arrays through NumPy's dispatch protocols), and stay NumPy arrays beside torch
objects, where the function decides what to do with them.

Frameworks are looked up in `sys.modules`, never imported here: an argument can only be a
torch tensor if torch is already loaded.
"""

from __future__ import annotations

import copy
import dataclasses
import sys
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any

import numpy as np

from gpuvs import backends
from gpuvs.errors import UsageError
from gpuvs.measuring.protocol import Clock, HostClock
from gpuvs.model import on_gpu
from gpuvs.workloads.base import TOLERANCE

MOVABLE = ("torch tensors, torch.nn.Modules, NumPy and CuPy arrays, and lists, tuples, "
           "mappings and dataclasses of them")
# Output dtypes whose tolerance is another's (complex numbers: per real component).
SAME_TOLERANCE = {"complex64": "float32", "complex128": "float64", "float128": "float64"}


def _torch() -> Any:
    return sys.modules.get("torch")


def _cupy() -> Any:
    return sys.modules.get("cupy")


def is_tensor(x: object) -> bool:
    torch = _torch()
    return torch is not None and isinstance(x, torch.Tensor)


def is_module(x: object) -> bool:
    torch = _torch()
    return torch is not None and isinstance(x, torch.nn.Module)


def is_cupy(x: object) -> bool:
    cupy = _cupy()
    return cupy is not None and isinstance(x, cupy.ndarray)


SEQUENCE, MAPPING, DATACLASS = "sequence", "mapping", "dataclass"
_KINDS: dict[type, str | None] = {}  # what each type met so far is: the walk's one test


def _kind(t: type) -> str | None:
    """SEQUENCE (a list or tuple), MAPPING, DATACLASS or None (a leaf; strings and bytes
    are leaves), decided once per type: the end-to-end call walks its arguments inside
    the timed region, where an isinstance test against an ABC per object would show."""
    try:
        return _KINDS[t]
    except KeyError:
        kind = (SEQUENCE if issubclass(t, (list, tuple)) else MAPPING if issubclass(t, Mapping)
                else DATACLASS if dataclasses.is_dataclass(t) else None)
        return _KINDS.setdefault(t, kind)


def children(obj: Any) -> list[tuple[str, object]] | None:
    """A container's parts with the path each adds ("[0]", "['x']", ".logits"), in the
    caller's order; None for a leaf. For messages and comparisons: the walks that run
    inside the timed region (`tree_map`, `leaves`) build no paths."""
    kind = _kind(type(obj))
    if kind is SEQUENCE:
        return [(f"[{i}]", v) for i, v in enumerate(obj)]
    if kind is MAPPING:
        return [(f"[{k!r}]", v) for k, v in obj.items()]
    if kind is DATACLASS:
        return [(f".{name}", getattr(obj, name)) for name in _fields(obj)]
    return None


def _fields(obj: object) -> list[str]:
    """A dataclass instance's fields that hold a value (an `init=False` field may not)."""
    return [f.name for f in dataclasses.fields(obj)  # type: ignore[arg-type]
            if hasattr(obj, f.name)]


def tree_map(leaf: Callable[[Any], Any], obj: Any) -> Any:
    """`obj` rebuilt with `leaf(x)` in place of each leaf x, containers of the same types
    around them: a named tuple by its fields, a mapping by a shallow copy given the new
    values (so a `ModelOutput`'s attributes follow its keys, and a defaultdict keeps its
    factory), a dataclass by a shallow copy given the new fields (its `__init__` and
    `__post_init__` do not run again; a frozen one is set all the same)."""
    kind = _kind(type(obj))
    if kind is None:
        return leaf(obj)
    if kind is SEQUENCE:
        items = [tree_map(leaf, v) for v in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    if kind is MAPPING:
        mapped = {k: tree_map(leaf, v) for k, v in obj.items()}
        if type(obj) is dict:
            return mapped
        if not isinstance(obj, MutableMapping):
            return type(obj)(mapped)
        new = copy.copy(obj)
        new.update(mapped)
        return new
    new = copy.copy(obj)
    for name in _fields(obj):
        object.__setattr__(new, name, tree_map(leaf, getattr(obj, name)))
    return new


def leaves(obj: Any) -> list[object]:
    """The tensors, modules and arrays inside `obj`, in order."""
    kind = _kind(type(obj))
    if kind is None:
        return [obj] if is_tensor(obj) or is_module(obj) or is_cupy(obj) or isinstance(
            obj, np.ndarray) else []
    values = (obj if kind is SEQUENCE else obj.values() if kind is MAPPING
              else [getattr(obj, name) for name in _fields(obj)])
    return [x for v in values for x in leaves(v)]


def copied_bytes(obj: object) -> float:
    """The bytes of the tensors and arrays inside `obj`: what an end-to-end call copies of
    it (modules stay on the device, so they are not counted)."""
    return float(sum(getattr(x, "nbytes", 0) for x in leaves(obj) if not is_module(x)))


def backend_for(obj: object, device: str) -> str:
    """The gpuvs backend that runs work on these arguments on `device`."""
    found = leaves(obj)
    if any(is_tensor(x) or is_module(x) for x in found):
        return "torch"
    if device == "cpu":
        return "numpy"
    return "cupy"


def device_of(x: object) -> str | None:
    """'cpu', 'cuda:N' or None for something that is not a tensor, module or array."""
    if is_tensor(x):
        return str(x.device)  # type: ignore[attr-defined]
    if is_module(x):
        first = next(iter(x.parameters()), None)  # type: ignore[attr-defined]
        return str(first.device) if first is not None else None
    if is_cupy(x):
        return f"cuda:{x.device.id}"  # type: ignore[attr-defined]
    if isinstance(x, np.ndarray):
        return "cpu"
    return None


def data_devices(obj: object) -> list[str]:
    """The devices the tensors, modules and arrays in `obj` live on, in order of first use."""
    return list(dict.fromkeys(d for x in leaves(obj) if (d := device_of(x)) is not None))


def to_device(obj: object, device: str, path: str = "args", numpy_to_cupy: bool = True,
              modules: Callable[[Any], Any] | None = None) -> Any:
    """A copy of `obj` on `device`. `modules`, when given, places modules instead (the
    end-to-end call keeps the copy already on the device: a model is loaded once)."""
    def moved(x: Any) -> Any:
        if is_module(x):
            return modules(x) if modules else copy.deepcopy(x).to(device)
        if is_tensor(x):
            t = x.detach().to(device, copy=True)
            # A fresh leaf: gradients computed inside never reach the caller's tensor.
            return t.requires_grad_(x.requires_grad) if t.is_floating_point() else t
        if is_cupy(x) or isinstance(x, np.ndarray):
            return _array_to(x, device, numpy_to_cupy)
        if _foreign_array(x):
            kind = f"{type(x).__module__}.{type(x).__qualname__}"
            raise UsageError(f"cannot move {_path_to(x, obj, path)} ({kind}) to {device}: "
                             f"gpuvs moves {MOVABLE}; convert it to one of those first")
        return x

    return tree_map(moved, obj)


def call_to_device(args: tuple[Any, ...], kwargs: dict[str, Any], device: str,
                   numpy_to_cupy: bool = True, modules: Callable[[Any], Any] | None = None
                   ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A function's arguments on `device`; errors name them as `args[0]`, `kwargs['x']`."""
    return (tuple(to_device(v, device, f"args[{i}]", numpy_to_cupy, modules)
                  for i, v in enumerate(args)),
            {k: to_device(v, device, f"kwargs[{k!r}]", numpy_to_cupy, modules)
             for k, v in kwargs.items()})


def _array_to(a: Any, device: str, numpy_to_cupy: bool) -> Any:
    if device == "cpu":
        return _cupy().asnumpy(a) if is_cupy(a) else a.copy()
    if isinstance(a, np.ndarray) and not numpy_to_cupy:
        return a.copy()
    import cupy  # the caller checked that CuPy can run on this device

    _, _, index = device.partition(":")
    with cupy.cuda.Device(int(index or 0)):
        return cupy.array(a, copy=True)


def _foreign_array(x: object) -> bool:
    """An array-like of another library (JAX, pandas, TensorFlow…): it cannot be moved,
    and is refused rather than left where it was while the function runs elsewhere."""
    return any(hasattr(x, attr) for attr in ("__array__", "__dlpack__",
                                             "__cuda_array_interface__"))


def _path_to(target: object, obj: object, path: str) -> str:
    """Where `target` sits inside `obj` ("args[0].labels"): found only for a message, so
    that the walk that moves data builds no paths."""
    if target is obj:
        return path
    for step, value in children(obj) or ():
        found = _path_to(target, value, path + step)
        if found:
            return found
    return ""


def to_host(obj: object) -> Any:
    """Outputs brought back to the host: what a caller starting from CPU data waits for."""
    def brought(x: Any) -> Any:
        if is_tensor(x):
            return x.detach().cpu()
        return x.get() if is_cupy(x) else x

    return tree_map(brought, obj)


def resized(obj: object, n: int) -> Any:
    """Each tensor and array with a first axis gets `n` rows, its own repeated cyclically
    (the first axis is the batch axis); modules and everything else stay as they are."""
    def rows(x: Any) -> Any:
        if not (is_tensor(x) or is_cupy(x) or isinstance(x, np.ndarray)) \
                or getattr(x, "ndim", 0) < 1 or len(x) == 0:
            return x
        index = np.arange(n) % len(x)
        if is_tensor(x):
            return x[_torch().as_tensor(index, device=x.device)]
        return x[_cupy().asarray(index)] if is_cupy(x) else x[index]

    return tree_map(rows, obj)


def batch_size(obj: object) -> int:
    """The first axis of the first tensor or array with one; 1 when there is none."""
    for x in leaves(obj):
        if not is_module(x) and getattr(x, "ndim", 0) >= 1:
            return len(x)  # type: ignore[arg-type]
    return 1


def dtype_name(x: object) -> str:
    """'float32' for torch.float32, numpy and CuPy dtypes alike."""
    return str(getattr(x, "dtype", "")).removeprefix("torch.")


def floating_dtype(obj: object) -> str:
    """The dtype of the first floating-point tensor or array (the case's dtype), or ''."""
    for x in leaves(obj):
        params = list(x.parameters()) if is_module(x) else [x]  # type: ignore[attr-defined]
        for p in params:
            name = dtype_name(p)
            if name.startswith(("float", "bfloat", "complex")):
                return name
    return ""


def as_numpy(x: object) -> np.ndarray:
    if is_tensor(x):
        t = x.detach().cpu()  # type: ignore[attr-defined]
        return np.asarray((t.float() if t.dtype == _torch().bfloat16 else t).numpy())
    if is_cupy(x):
        return np.asarray(x.get())  # type: ignore[attr-defined]
    return np.asarray(x)


def tolerance_for(dtype: str) -> float:
    return TOLERANCE.get(SAME_TOLERANCE.get(dtype, dtype), 0.0)


def snapshot(obj: object) -> Any:
    """A host copy of an output that later calls cannot change (a function may return a
    buffer it writes into again)."""
    def copied(x: Any) -> Any:
        if is_tensor(x):
            return x.detach().cpu().clone()
        if is_cupy(x):
            return x.get()
        return x.copy() if isinstance(x, np.ndarray) else x

    return tree_map(copied, obj)


def clock_for(device: str, objs: Sequence[object]) -> tuple[str, Clock]:
    """The backend name and clock for work on `device` over these tensors and arrays:
    the host clock on the CPU; CUDA events through torch (tensors, modules) or CuPy."""
    backends.check_device(device)
    if not on_gpu(device):
        return (backend_for(objs, "cpu") if leaves(objs) else "python"), HostClock()
    name = "torch" if any(is_tensor(x) or is_module(x) for x in objs) else "cupy"
    return name, backends.clock_for(device, name)
