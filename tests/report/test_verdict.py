"""The verdict answers first: one row per sweep, in words — which GPU series, from what
size, by how much with its CI, and the answer with copies each call where it differs —
then the details, one row per GPU series."""

from __future__ import annotations

import re
from collections.abc import Callable

from tests.report.samples import SIZES, gpu_sweep

from gpuvs.model import Case, Caveat, Measurement, Status
from gpuvs.report.verdict import answer_table, nothing_table, series_table, verdict_table

GPU = "cuda:0"
Cost = Callable[[int], float]


def sweep(costs: dict[tuple[str, str, str], Cost], workload: str = "matmul",
          params: tuple[tuple[str, str], ...] = (("shape", "square"),),
          **kw: object) -> list[Measurement]:
    """Every series of `costs` at every size: (backend, device, data) → seconds at size n."""
    ms = []
    for n in SIZES:
        for (backend, device, data), cost in costs.items():
            extra = (("data", data),) if data != "resident" else ()
            t = cost(n)
            ms.append(Measurement(
                Case(workload, "correct", backend, device, "float32", n,
                     tuple(sorted((*params, *extra)))),
                Status.OK, samples=tuple(t * (1 + 0.001 * k) for k in range(-5, 6)),
                loops=10, **kw))  # type: ignore[arg-type]
    return ms


def answers(ms: list[Measurement]) -> dict[str, str]:
    return dict(verdict_table(ms).rows)  # type: ignore[arg-type]


def test_a_gpu_sweep_is_one_row_that_says_from_what_size_the_gpu_is_faster() -> None:
    (answer,) = answers(gpu_sweep()).values()
    resident, copies = answer.split("; with copies each call: ")
    assert re.fullmatch(r"GPU \(torch, data on the GPU\) faster from n = 1e5; "
                        r"33\.4× \[33\.\d, 33\.\d\] at n = 1e6", resident), resident
    assert re.fullmatch(r"GPU faster from n = 1e6; 1\.2\d?× \[1\.2\d?, 1\.2\d?\] at n = 1e6",
                        copies), copies


def test_many_gpu_series_still_make_one_row_per_sweep_and_the_details_one_per_series() -> None:
    costs = {("numpy", "cpu", "resident"): lambda n: 1e-6 + n * 1e-9,
             **{(b, GPU, data): (lambda n, f=f: f * (2e-5 + n * 1e-11))
                for f, b in ((1.0, "torch"), (2.0, "cupy"), (3.0, "jax"))
                for data in ("resident", "end_to_end")}}
    ms = sweep(costs) + sweep(costs, "elementwise", (("op", "scale"),))
    rows = answers(ms)
    assert list(rows) == ["Square matrix product, float32", "Elementwise x·5 in place, float32"]
    assert all(a.startswith("GPU (torch, data on the GPU) faster from ") for a in rows.values())
    assert "faster from 1e5 elements" in rows["Elementwise x·5 in place, float32"]
    details = series_table(ms)
    assert len(details.rows) == 12 and details.columns[1] == "who wins"


def test_with_copies_each_call_the_cpu_may_win_at_every_size_and_the_row_says_so() -> None:
    (answer,) = answers(sweep({
        ("numpy", "cpu", "resident"): lambda n: 1e-6 + n * 1e-9,
        ("torch", GPU, "resident"): lambda n: 2e-5 + n * 1e-11,
        ("torch", GPU, "end_to_end"): lambda n: 3e-5 + n * 4e-9})).values()
    assert "; with copies each call: CPU faster than the GPU at every size; 4.03× [" in answer


def test_an_answer_the_copies_do_not_change_is_said_once() -> None:
    (answer,) = answers(sweep({
        ("numpy", "cpu", "resident"): lambda n: 1e-3,
        ("torch", GPU, "resident"): lambda n: 1e-5,
        ("torch", GPU, "end_to_end"): lambda n: 2e-5})).values()
    assert answer.startswith("GPU (torch, data on the GPU) faster at every size; 100× [")
    assert "; with copies each call too: 50× [" in answer


def test_the_answer_names_the_fastest_gpu_series() -> None:
    (answer,) = answers(sweep({
        ("numpy", "cpu", "resident"): lambda n: 1e-3,
        ("torch", GPU, "resident"): lambda n: 1e-4,
        ("cupy", GPU, "resident"): lambda n: 1e-5})).values()
    assert answer.startswith("GPU (cupy, data on the GPU) faster at every size; 100× [")


def test_a_cpu_only_sweep_says_which_backend_is_fastest_and_by_how_much() -> None:
    (answer,) = answers(sweep({("numpy", "cpu", "resident"): lambda n: 5e-6 + n * 1e-9,
                               ("torch", "cpu", "resident"): lambda n: 1e-7 + n * 2e-9})
                        ).values()
    assert re.fullmatch(r"numpy fastest on the CPU from n = 1e4; 1\.99× \[1\.9\d, 2(\.0\d?)?\] "
                        r"over torch at n = 1e6", answer), answer
    assert series_table(sweep({("numpy", "cpu", "resident"): lambda n: 1e-6})).rows == ()


def test_a_sweep_with_nothing_to_compare_folds_away_under_the_answers() -> None:
    compared = sweep({("numpy", "cpu", "resident"): lambda n: 1e-6,
                      ("torch", "cpu", "resident"): lambda n: 2e-6}, "elementwise",
                     (("op", "scale"),))
    only = sweep({("numpy", "cpu", "resident"): lambda n: 1e-6})
    failed = [Measurement(Case("matmul", "correct", "numpy", "cpu", "float64", 64),
                          Status.CRASHED, reason="killed")]
    ms = compared + only + failed
    assert list(answers(ms)) == ["Elementwise x·5 in place, float32"]
    assert nothing_table(ms).rows == (
        ("Square matrix product, float32", "only numpy cpu finished"),
        ("Square matrix product, float64", "no case finished"))
    assert answer_table(ms).notes[-1] == (
        "nothing to compare with in 2 sweep(s): Square matrix product, float32 (only numpy "
        "cpu finished); Square matrix product, float64 (no case finished)")


def test_a_single_timing_on_each_side_answers_without_a_zero_width_interval() -> None:
    """A post's `time.time()` replay is one timing: the ratio of two is a number, and a
    bootstrap of one value on each side an interval of no width, which is not shown."""
    ms = [Measurement(Case("matmul", "as_written", b, d, "float32", 64,
                           (("shape", "square"),)), Status.OK, samples=(t,), loops=1)
          for b, d, t in (("torch", "cpu", 7.2e-3), ("torch", GPU, 1e-3))]
    (answer,) = answers(ms).values()
    assert answer == ("GPU (torch, data on the GPU) faster at n = 64, the only size; 7.2× "
                      "(single timings: no CI) at n = 64")


def test_a_contended_sweep_keeps_its_caveat_in_its_row() -> None:
    ms = sweep({("numpy", "cpu", "resident"): lambda n: 1e-3,
                ("torch", GPU, "resident"): lambda n: 1e-5}, caveats=(Caveat.CONTENDED,))
    (answer,) = answers(ms).values()
    assert answer.endswith("; 8 case(s) of this sweep contended: measured on a busy machine")
    assert series_table(ms).rows[0][3].endswith("contended: measured on a busy machine")


def test_a_winner_that_ran_float32_as_tf32_is_named_so_in_its_row() -> None:
    """JAX runs float32 products on TF32 matrix units by default: its 297× on the H100 was
    less precise work than the CPU's, and the answer says so where it names JAX."""
    cpu = sweep({("numpy", "cpu", "resident"): lambda n: 1e-3})
    jax = sweep({("jax", GPU, "resident"): lambda n: 1e-5}, caveats=(Caveat.TF32_ON,))
    torch = sweep({("torch", GPU, "resident"): lambda n: 1e-4})
    (answer,) = answers(cpu + jax + torch).values()
    assert answer.startswith("GPU (jax, data on the GPU)")
    assert answer.endswith("; jax ran its float32 products as TF32 (a 10-bit mantissa), not "
                           "full float32")
    (plain,) = answers(cpu + torch).values()
    assert "TF32" not in plain
