"""Tables say what they are about, in words, what size means, and what makes their rows
comparable."""

from __future__ import annotations

from gpuvs.model import Case, Caveat, Measurement, Status
from gpuvs.report.layout import fairness, result_tables, sweep_title


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


def test_a_sweep_is_titled_by_its_work_and_dtype_the_default_variant_unsaid() -> None:
    assert sweep_title(("matmul", "correct", "float32", (("shape", "square"),))) == (
        "Square matrix product, float32")
    assert sweep_title(("elementwise", "as_written", "float64", (("op", "scale"),))) == (
        "Elementwise x·5 in place, float64 · as written")
    assert sweep_title(("matmul", "correct", "float32", (("cache", "cold"),
                                                         ("shape", "square")))) == (
        "Square matrix product, float32 · caches flushed")


def test_a_sweep_no_workload_names_keeps_its_workload_variant_and_parameters() -> None:
    assert sweep_title(("yours:tanh", "correct", "float32", ())) == (
        "yours:tanh · correct · float32")
    assert sweep_title(("triad", "correct", "float64", (("cache", "L1"),))) == (
        "triad · correct · float64 · cache=L1")


def test_the_case_table_says_what_size_counts() -> None:
    ms = [Measurement(Case("elementwise", "correct", "numpy", "cpu", "float32", n,
                           (("op", "scale"),)), Status.OK, samples=(1e-3,) * 3)
          for n in (10, 100)]
    (table,) = result_tables(ms)
    assert table.title == "Elementwise x·5 in place, float32"
    assert table.notes[0] == "size: elements"
