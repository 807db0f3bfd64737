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


def test_a_case_timed_in_one_process_says_how_far_a_repeat_may_land() -> None:
    """A 10⁹-element NumPy pass timed in one process read ±1 % on an H100 while the next
    run's process landed 31 % away; its run's NumPy cases in five processes spread ±29 %.
    Its note says so; a case in five processes, and a post's replay, say nothing of it."""
    import numpy as np

    def sampled(size: int, medians: tuple[float, ...], variant: str = "correct"
                ) -> Measurement:
        samples = np.concatenate([np.full(10, 1e-3 * f) for f in medians])
        return Measurement(Case("matmul", variant, "numpy", "cpu", "float32", size),
                           Status.OK, samples=tuple(samples), passes=(10,) * len(medians))

    spread = (0.75, 0.9, 1.0, 1.1, 1.3)
    ms = [sampled(64, spread), sampled(128, (1.0,)), sampled(64, (1.0,), "as_written")]
    notes = {(t.title, r[0]): r[-1] for t in result_tables(ms) for r in t.rows}
    one, = (n for (title, size), n in notes.items() if size == "128")
    assert one.startswith("one process's interval: a repeat may land ±")
    assert one.endswith("% away, as this run's numpy cpu cases fell across processes")
    assert all("one process" not in n for (title, size), n in notes.items() if size == "64")


def test_your_function_timed_in_its_own_process_says_its_interval_is_that_process_s() -> None:
    """`gpuvs.compare` times a closure in the caller's process: nothing of its kind ran in
    several, so there is no spread to lend; the note says whose interval it is."""
    m = Measurement(Case("yours:f", "correct", "torch", "cpu", "float32", 10), Status.OK,
                    samples=(1e-3,) * 5)
    (row,) = result_tables([m])[0].rows
    assert row[-1] == "one process's interval"
