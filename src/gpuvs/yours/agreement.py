"""Do two devices' outputs agree? Leaf by leaf, with a dtype-aware tolerance.

Floating-point leaves agree when ‖out − ref‖ / ‖ref‖ is within the tolerance of the
reference's dtype (`gpuvs.workloads.base.TOLERANCE`: float32 admits TF32 and a different
summation order, half precisions their short mantissas), with NaN and infinity in the same
places; integer and boolean leaves must be equal. Lists, tuples and dicts must have the
same shape, dataclasses the same type, and the message names the first leaf that differs
(`output[1]['loss']`, `output.logits`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from gpuvs.workloads.base import relative_error
from gpuvs.yours.moving import (
    as_numpy,
    children,
    dtype_name,
    is_cupy,
    is_tensor,
    tolerance_for,
)


@dataclass(frozen=True)
class Agreement:
    error: float             # largest relative error over the floating-point leaves
    reason: str | None = None  # None when the outputs agree

    @property
    def agrees(self) -> bool:
        return self.reason is None


def agreement(out: object, ref: object, where: str, reference: str,
              tolerance: float | None = None) -> Agreement:
    """Whether `out` (computed on `where`) matches `ref` (computed on `reference`)."""
    return _Comparer(where, reference, tolerance).leaf_or_tree(out, ref, "output")


def _keys(m: Mapping[object, object]) -> str:
    return "[" + ", ".join(sorted(map(repr, m))) + "]"


def _is_array(x: object) -> bool:
    return is_tensor(x) or is_cupy(x) or isinstance(x, (np.ndarray, np.generic, int, float,
                                                        complex, bool))


class _Comparer:
    def __init__(self, where: str, reference: str, tolerance: float | None) -> None:
        self.where, self.reference, self.tolerance = where, reference, tolerance

    def leaf_or_tree(self, out: object, ref: object, path: str) -> Agreement:
        if isinstance(ref, (list, tuple)):
            return self._sequence(out, ref, path)
        if isinstance(ref, Mapping):
            return self._mapping(out, ref, path)
        fields = children(ref)
        if fields is not None:  # a dataclass: field by field
            if type(out) is not type(ref):
                return self._differs(path, f"is a {type(out).__name__}, not a "
                                           f"{type(ref).__name__}")
            theirs = dict(children(out) or ())
            return self._worst(self.leaf_or_tree(theirs.get(step), r, path + step)
                               for step, r in fields)
        if _is_array(ref):
            if not _is_array(out):
                return self._differs(path, f"is a {type(out).__name__}, not an array")
            return self._arrays(out, ref, path)
        try:
            same = bool(out == ref)
        except Exception:  # objects without a usable ==: nothing to compare them by
            same = True
        return Agreement(0.0) if same else self._differs(path, f"is {out!r}, not {ref!r}")

    def _differs(self, path: str, what: str) -> Agreement:
        return Agreement(np.inf, f"{path} on {self.where} {what} as on {self.reference}")

    def _sequence(self, out: object, ref: list[object] | tuple[object, ...],
                  path: str) -> Agreement:
        if not isinstance(out, (list, tuple)) or len(out) != len(ref):
            n = len(out) if isinstance(out, (list, tuple)) else type(out).__name__
            return Agreement(np.inf, f"{path} on {self.where} has {n} items; on "
                             f"{self.reference} it has {len(ref)}")
        return self._worst(self.leaf_or_tree(o, r, f"{path}[{i}]")
                           for i, (o, r) in enumerate(zip(out, ref, strict=True)))

    def _mapping(self, out: object, ref: Mapping[object, object], path: str) -> Agreement:
        if not isinstance(out, Mapping) or set(out) != set(ref):
            keys = _keys(out) if isinstance(out, Mapping) else type(out).__name__
            return Agreement(np.inf, f"{path} on {self.where} has keys {keys}; on "
                             f"{self.reference} {_keys(ref)}")
        return self._worst(self.leaf_or_tree(out[k], ref[k], f"{path}[{k!r}]") for k in ref)

    @staticmethod
    def _worst(found: object) -> Agreement:
        worst = Agreement(0.0)
        for a in found:  # type: ignore[attr-defined]
            if not a.agrees:
                return a  # type: ignore[no-any-return]
            worst = a if a.error > worst.error else worst
        return worst

    def _arrays(self, out: object, ref: object, path: str) -> Agreement:
        dtype = dtype_name(ref) or np.asarray(ref).dtype.name
        o, r = as_numpy(out), as_numpy(ref)
        if o.shape != r.shape:
            return Agreement(np.inf, f"{path} on {self.where} has shape {o.shape}; on "
                             f"{self.reference} {r.shape}")
        if r.dtype.kind not in "fc":
            wrong = int(np.count_nonzero(o != r))
            return Agreement(0.0) if wrong == 0 else Agreement(np.inf, (
                f"{path} on {self.where} differs from {self.reference} in {wrong} of "
                f"{r.size} elements ({dtype} values must be equal)"))
        return self._floating(o, r, dtype, path)

    def _floating(self, o: np.ndarray, r: np.ndarray, dtype: str, path: str) -> Agreement:
        if r.dtype.kind == "c":
            o, r = np.stack([o.real, o.imag]), np.stack([r.real, r.imag])
        o, r = o.astype(np.float64), r.astype(np.float64)
        finite = np.isfinite(r)
        if not np.array_equal(finite, np.isfinite(o)) or not np.array_equal(
                r[~finite], o[~finite], equal_nan=True):
            return Agreement(np.inf, f"{path} on {self.where} has NaN or infinity in other "
                             f"places than on {self.reference}")
        err = relative_error(o[finite], r[finite]) if finite.any() else 0.0
        tol = self.tolerance if self.tolerance is not None else tolerance_for(dtype)
        if err > tol:
            return Agreement(err, (
                f"{path} on {self.where} differs from {self.reference}: relative error "
                f"{err:.2e} exceeds the {dtype} tolerance {tol:.0e}"))
        return Agreement(err)
