"""Seed 001: its cases, its claims table from real CPU measurements (GPU rows skipped
here), and the overlap table's arithmetic and sentences."""

from __future__ import annotations

import re

import pytest

from gpuvs import backends, seeds, workloads
from gpuvs.backends.base import machine_has_gpu
from gpuvs.execute.wire import Sampling, Take
from gpuvs.model import Case, Measurement, Status
from gpuvs.report.seed_tables import claims_table, seed_tables
from gpuvs.seeds.base import SeedOptions
from gpuvs.seeds.seed001 import QUICK, SWEEP, concurrency_table
from gpuvs.workloads.gru import POST, SWEEPS

GPU = "cuda:0"


def _params(case: Case) -> tuple[str, str, int]:
    return case.param("axis"), case.param("how"), case.size


def test_the_replays_come_first_and_the_posts_cell_is_measured_once() -> None:
    cases = seeds.get("001").cases(SeedOptions(quick=True))
    assert [(c.param("how"), c.device) for c in cases[:4]] == [
        ("post_sequential", GPU), ("post_parallel", GPU),
        ("post_sequential", "cpu"), ("post_parallel", "cpu")]
    assert all(workloads.get("gru").applies(c) for c in cases)
    assert len({c.key for c in cases}) == len(cases)
    post_cells = [c for c in cases if (c.param("axis"), c.size) in POST.items()]
    assert {c.param("axis") for c in post_cells} == {"hidden"}  # not again as batch 32 …
    assert {c.param("how") for c in cases if c.device == "cpu"} == {
        "post_sequential", "post_parallel", "autograd", "sequential", "streams", "batched"}
    assert {c.param("how") for c in cases if c.device == GPU} >= {"graph", "streams"}
    assert {(c.param("axis"), c.size) for c in cases} == {("hidden", 20), *QUICK.items()}


def test_the_full_run_sweeps_every_axis_at_the_workloads_sizes() -> None:
    cases = seeds.get("001").cases(SeedOptions())
    for axis, sizes in SWEEP.items():
        assert set(sizes) <= set(SWEEPS[axis])  # what `gpuvs run -w gru` measures too
        post = {POST[axis]} if axis == "hidden" else set()
        assert {c.size for c in cases if c.param("axis") == axis} == set(sizes) | post
    assert {c.dtype for c in cases} == {"float32"} and {c.backend for c in cases} == {"torch"}


def test_two_threads_run_last_in_each_cpu_cell() -> None:
    cases = [c for c in seeds.get("001").cases(SeedOptions()) if c.device == "cpu"
             and c.variant == "correct"]
    for i, c in enumerate(cases):
        if c.param("how") == "streams" and i + 1 < len(cases):
            assert (cases[i + 1].param("axis"), cases[i + 1].size) != (c.param("axis"), c.size)


def _measured_here() -> list[Measurement]:
    """The post's cell, run by real workers' code on this machine (the GPU half comes out
    unavailable where there is no GPU)."""
    from gpuvs.execute.worker import run_case
    picks = [c for c in seeds.get("001").cases(SeedOptions(quick=True))
             if c.size == POST["hidden"] and c.param("axis") == "hidden"]
    sampling = Sampling(0.02, "fixed:n=3")
    torch = backends.get("torch")
    return [run_case(torch, Take(c, sampling))[0] for c in picks]


def _column(table, row_start: str, column: str) -> str:
    row = next(r for r in table.rows if r[0].startswith(row_start))
    return row[table.columns.index(column)]


@pytest.mark.skipif(machine_has_gpu(), reason="checks the rows a machine without a GPU shows")
def test_the_claims_table_from_real_cpu_measurements_marks_gpu_rows_skipped() -> None:
    pytest.importorskip("torch")
    ms = _measured_here()
    assert {m.status for m in ms if m.case.device == "cpu"} == {Status.OK}
    table = claims_table(seeds.get("001"), ms)
    gpu_ratio = "'sequential' ÷ 'parallel', the post's two timings (GPU)"
    assert _column(table, gpu_ratio, "post claims") == "about 2×"
    assert _column(table, gpu_ratio, "as written here") == "skipped: no CUDA device"
    cpu_ratio = _column(table, "'sequential' ÷ 'parallel', the post's two timings (CPU)",
                        "correct here")
    # A ratio, and on a busy machine the doubts beside it: "1.87×" or "1.87× (unstable)".
    assert re.fullmatch(r"[\d.]+×( \([a-z, ]+\))?", cpu_ratio), cpu_ratio
    first = _column(table, "gru1(x1); gru2(x2), autograd on, the first call (CPU)", "why")
    assert "first" in first and ("after it" in first or "every later pair" in first)
    written = _column(table, "the same pair under torch.no_grad() (CPU)", "as written here")
    assert re.fullmatch(r"[\d.]+ (ns|µs|ms|s)", written), written
    threads = _column(table, "two threads vs one after the other (CPU)", "why")
    assert "overlap" in threads and "alone" in threads
    titles = [t.title for t in seed_tables(ms)]
    assert titles[0].startswith("seed 001") and any(t.startswith("seed 001 · cpu") for t in titles)
    assert not any("cuda" in t for t in titles)  # no GPU case ran: no GPU overlap table


def _m(how: str, device: str, pair_s: float, alone_s: tuple[float, float] = (0.0, 0.0),
       axis: str = "hidden", size: int = 20) -> Measurement:
    case = Case("gru", "correct", "torch", device, "float32", size,
                (("axis", axis), ("how", how)))
    counters = {"gru1_s": alone_s[0], "gru2_s": alone_s[1]} if alone_s[0] else {}
    return Measurement(case, Status.OK, samples=(pair_s,) * 5, counters=counters)


def _gpu_sweep(streams_at_256: float) -> list[Measurement]:
    """Hidden 20 and 256 on the GPU: sequential, streams, batched and graph."""
    ms = []
    for size, seq, alone in ((20, 2e-4, (1e-4, 1e-4)), (256, 2e-3, (1e-3, 1e-3))):
        streams = 2.02e-4 if size == 20 else streams_at_256
        ms += [_m("sequential", GPU, seq, alone, size=size),  # streams: sequential's parts
               _m("streams", GPU, streams, size=size),
               _m("batched", GPU, seq / 1.5, size=size),
               _m("graph", GPU, seq / 3, (seq / 4, seq / 4), size=size)]
    return ms


def test_the_overlap_table_says_where_concurrency_starts_to_pay() -> None:
    table = concurrency_table(_gpu_sweep(streams_at_256=1.4e-3), GPU)
    assert table is not None
    assert _column(table, "post", "overlap") == "none"          # 2.02e-4 against 2e-4
    assert _column(table, "hidden", "overlap") == "60%"          # (2 − 1.4) ÷ 1
    assert _column(table, "hidden", "two streams") == "1.4 ms (1.4×)"
    assert _column(table, "hidden", "each alone") == "1 ms + 1 ms"
    assert _column(table, "post", "graph overlap") == "67%"      # (2 × 50 − 66.7) ÷ 50
    notes = " ".join(table.notes)
    assert "along hidden, 1.1× over sequential: streams from 256; batched from 20; graph from 20" \
        in notes
    assert "no overlap happened at any size" not in notes


def test_the_overlap_table_says_when_no_overlap_happened() -> None:
    ms = [m for m in _gpu_sweep(streams_at_256=2e-3) if m.case.param("how") != "graph"]
    table = concurrency_table(ms, GPU)
    assert table is not None
    assert "streams never (to 256)" in " ".join(table.notes)
    assert "no overlap happened at any size measured here" in table.notes
    assert concurrency_table(ms, "cpu") is None  # nothing ran on the CPU


def test_the_streams_row_explains_no_overlap_from_the_numbers() -> None:
    ms = _gpu_sweep(streams_at_256=1.4e-3)
    table = claims_table(seeds.get("001"), ms)
    why = _column(table, "two CUDA streams vs one after the other (GPU)", "why")
    assert why.startswith("no overlap happened (alone 100 µs and 100 µs, together 202 µs)")
    assert "launch-bound" in why
    graph = _column(table, "a CUDA graph of both", "why")
    assert graph.startswith("the graph's two branches overlapped")


def test_the_no_grad_row_calls_a_pair_launch_bound_when_its_graph_is_much_faster() -> None:
    written = Case("gru", "as_written", "torch", GPU, "float32", 20,
                   (("axis", "hidden"), ("how", "post_parallel")))
    ms = [*_gpu_sweep(streams_at_256=1.4e-3), Measurement(written, Status.OK, samples=(1.5e-4,))]
    why = _column(claims_table(seeds.get("001"), ms), "the same pair under torch.no_grad() (GPU)",
                  "why")
    assert why.startswith("launch-bound: the GPU runs both GRUs in 66.7 µs (as a CUDA graph)")
    assert "(150 µs) is noise next to the median of many" in why
