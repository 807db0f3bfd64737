"""Tables say what makes their rows comparable."""

from __future__ import annotations

from gpuvs.model import Case, Caveat, Measurement, Status
from gpuvs.report.layout import fairness


def _m(backend: str, device: str, dtype: str = "float32", **kw) -> Measurement:
    return Measurement(Case("matmul", "correct", backend, device, dtype, 64), Status.OK,
                       samples=(1e-3,) * 3, **kw)


def test_the_fairness_line_names_dtype_threads_tf32_and_cache_state() -> None:
    line = fairness([_m("numpy", "cpu", counters={"threads": 16}),
                     _m("torch", "cpu", counters={"threads": 8}),
                     _m("jax", "cuda:0", caveats=(Caveat.TF32_ON,))])
    assert line == ("fair comparison: dtype float32 on every backend; CPU threads numpy 16, "
                    "torch 8; TF32 on for jax cuda:0; JAX with 64-bit types enabled (its "
                    "default is 32-bit); caches warm (--cold flushes them)")


def test_a_dtype_mismatch_is_said() -> None:
    assert "dtype mismatch: float32, float64" in fairness(
        [_m("numpy", "cpu", "float64"), _m("torch", "cuda:0")])
