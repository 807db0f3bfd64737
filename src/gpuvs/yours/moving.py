"""A user's arguments, copied to a device; outputs brought back and compared.

What moves: torch tensors, `torch.nn.Module`s (parameters and buffers with them), NumPy
and CuPy arrays, and lists, tuples and dicts of them, nested. Everything else (numbers,
strings, dtypes, functions, None) is passed as it is. Nothing is modified in place: a
tensor or array is always copied, even to the device it is on, and a module is deep-copied
first, so a function that writes into its inputs never touches the caller's.

Where the data goes on a GPU depends on what it is: torch objects go with `.to(device)`;
NumPy arrays become CuPy arrays when the arguments hold no torch object (a NumPy function
runs on CuPy arrays through NumPy's dispatch protocols), and stay NumPy arrays beside torch
objects, where the function decides what to do with them.

Frameworks are looked up in `sys.modules`, never imported here: an argument can only be a
torch tensor if torch is already loaded.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from gpuvs import backends
from gpuvs.errors import BackendUnavailable, UsageError
from gpuvs.measuring.protocol import Clock, HostClock
from gpuvs.workloads.base import TOLERANCE

MOVABLE = ("torch tensors, torch.nn.Modules, NumPy and CuPy arrays, and lists, tuples and "
           "dicts of them")
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


def leaves(obj: object) -> list[object]:
    """The tensors, modules and arrays inside `obj`, in order."""
    if isinstance(obj, (list, tuple)):
        return [leaf for item in obj for leaf in leaves(item)]
    if isinstance(obj, dict):
        return [leaf for item in obj.values() for leaf in leaves(item)]
    if is_tensor(obj) or is_module(obj) or is_cupy(obj) or isinstance(obj, np.ndarray):
        return [obj]
    return []


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
    if isinstance(obj, (list, tuple)):
        items = [to_device(v, device, f"{path}[{i}]", numpy_to_cupy, modules)
                 for i, v in enumerate(obj)]
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    if isinstance(obj, dict):
        return type(obj)((k, to_device(v, device, f"{path}[{k!r}]", numpy_to_cupy, modules))
                         for k, v in obj.items())
    if is_module(obj):
        return modules(obj) if modules else copy.deepcopy(obj).to(device)  # type: ignore[attr-defined]
    if is_tensor(obj):
        t = obj.detach().to(device, copy=True)  # type: ignore[attr-defined]
        # A fresh leaf: gradients computed inside never reach the caller's tensor.
        return t.requires_grad_(obj.requires_grad) if t.is_floating_point() else t  # type: ignore[attr-defined]
    if is_cupy(obj) or isinstance(obj, np.ndarray):
        return _array_to(obj, device, numpy_to_cupy)
    _refuse_unknown_arrays(obj, device, path)
    return obj


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


def _refuse_unknown_arrays(obj: object, device: str, path: str) -> None:
    """Array-likes of other libraries (JAX, pandas, TensorFlow…) cannot be moved: say so,
    rather than run the function on data that silently stays where it was."""
    if any(hasattr(obj, attr) for attr in ("__array__", "__dlpack__",
                                           "__cuda_array_interface__")):
        kind = f"{type(obj).__module__}.{type(obj).__qualname__}"
        raise UsageError(f"cannot move {path} ({kind}) to {device}: gpuvs moves {MOVABLE}; "
                         "convert it to one of those first")


def to_host(obj: object) -> Any:
    """Outputs brought back to the host: what a caller starting from CPU data waits for."""
    if isinstance(obj, (list, tuple)):
        items = [to_host(v) for v in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    if isinstance(obj, dict):
        return type(obj)((k, to_host(v)) for k, v in obj.items())
    if is_tensor(obj):
        return obj.detach().cpu()  # type: ignore[attr-defined]
    if is_cupy(obj):
        return obj.get()  # type: ignore[attr-defined]
    return obj


def resized(obj: object, n: int) -> Any:
    """Each tensor and array with a first axis gets `n` rows, its own repeated cyclically
    (the first axis is the batch axis); modules and everything else stay as they are."""
    if isinstance(obj, (list, tuple)):
        items = [resized(v, n) for v in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    if isinstance(obj, dict):
        return type(obj)((k, resized(v, n)) for k, v in obj.items())
    if (is_tensor(obj) or is_cupy(obj) or isinstance(obj, np.ndarray)) \
            and getattr(obj, "ndim", 0) >= 1 and len(obj) > 0:  # type: ignore[arg-type]
        index = np.arange(n) % len(obj)  # type: ignore[arg-type]
        if is_tensor(obj):
            return obj[_torch().as_tensor(index, device=obj.device)]  # type: ignore[index,attr-defined]
        if is_cupy(obj):
            return obj[_cupy().asarray(index)]  # type: ignore[index]
        return obj[index]  # type: ignore[index]
    return obj


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
    if isinstance(obj, (list, tuple)):
        items = [snapshot(v) for v in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    if isinstance(obj, dict):
        return type(obj)((k, snapshot(v)) for k, v in obj.items())
    if is_tensor(obj):
        return obj.detach().cpu().clone()  # type: ignore[attr-defined]
    if is_cupy(obj):
        return obj.get()  # type: ignore[attr-defined]
    if isinstance(obj, np.ndarray):
        return obj.copy()
    return obj


def clock_for(device: str, objs: Sequence[object]) -> tuple[str, Clock]:
    """The backend name and clock for work on `device` over these tensors and arrays:
    the host clock on the CPU; CUDA events through torch (tensors, modules) or CuPy."""
    if device == "cpu":
        return (backend_for(objs, "cpu") if leaves(objs) else "python"), HostClock()
    if not device.startswith("cuda"):
        raise UsageError(f"unknown device {device!r}; accepted: cpu, cuda, cuda:N")
    name = "torch" if any(is_tensor(x) or is_module(x) for x in objs) else "cupy"
    backend = backends.get(name)
    reason = backend.unavailable_reason(device)
    if reason is not None:
        raise BackendUnavailable(reason)
    return name, backend.clock(device)
