"""Seed 002: the post's three ops replayed and swept, and its speedup-by-size table."""

from __future__ import annotations

from gpuvs import seeds
from gpuvs.model import Case, Measurement, Status
from gpuvs.seeds.base import SeedOptions
from gpuvs.seeds.seed002 import speedup_by_size


def test_the_full_run_replays_the_posts_billion_float64_elements() -> None:
    cases = seeds.get("002").cases(SeedOptions())
    written = [c for c in cases if c.variant == "as_written"]
    assert {(c.backend, c.param("op")) for c in written} == {
        (b, op) for b in ("numpy", "cupy") for op in ("ones", "scale", "chain")}
    assert {c.size for c in written} == {1000**3} and {c.dtype for c in cases} == {"float64"}
    assert {c.backend for c in cases if c.variant == "tuned"} == {"cupy", "torch"}


def test_the_sweep_measures_what_the_speedup_table_shows_and_no_more() -> None:
    from gpuvs.seeds.seed002 import COLUMNS

    cases = seeds.get("002").cases(SeedOptions())
    swept = {(c.variant, c.backend, c.param("op"), c.param("data"))
             for c in cases if c.size == 10**8}
    shown = {(variant, backend, op, dict(extra).get("data", ""))
             for _, variant, backend, op, extra in COLUMNS}
    numpy = {("correct", "numpy", op, "") for op in ("ones", "scale", "chain")}
    assert swept == shown | numpy


def test_a_quick_run_stays_small() -> None:
    cases = seeds.get("002").cases(SeedOptions(quick=True))
    assert max(c.size for c in cases) == 10**7


def _m(backend: str, variant: str, op: str, size: int, seconds: float) -> Measurement:
    device = "cpu" if backend == "numpy" else "cuda:0"
    case = Case("elementwise", variant, backend, device, "float64", size, (("op", op),))
    return Measurement(case, Status.OK, samples=(seconds,) * 5)


def test_speedup_by_size_divides_numpy_by_each_gpu_series_at_the_same_size() -> None:
    ms = [_m("numpy", "correct", "scale", 10**3, 1e-6), _m("cupy", "correct", "scale", 10**3, 1e-5),
          _m("numpy", "correct", "scale", 10**8, 0.05), _m("cupy", "correct", "scale", 10**8, 5e-4),
          _m("numpy", "correct", "chain", 10**8, 0.15), _m("cupy", "tuned", "chain", 10**8, 5e-4)]
    table = speedup_by_size(ms)
    rows = {row[0]: dict(zip(table.columns, row, strict=True)) for row in table.rows}
    assert rows["1000"]["x *= 5 CuPy"] == "0.1×"        # NumPy wins small arrays
    assert rows["1e8"]["x *= 5 CuPy"] == "100×"
    assert rows["1e8"]["3 ops fused CuPy"] == "300×"
    assert rows["1000"]["3 ops fused CuPy"] == "—"      # not measured there


def _at_post_size(backend: str, variant: str, op: str, seconds: float) -> Measurement:
    device = "cpu" if backend == "numpy" else "cuda:0"
    case = Case("elementwise", variant, backend, device, "float64", 1000**3,
                tuple(sorted((("op", op), ("input", "ones")))))
    return Measurement(case, Status.OK, samples=(seconds,) * 5)


def test_the_why_says_what_the_unsynchronised_replay_saw() -> None:
    from gpuvs.report.seed_tables import claims_table
    def why(cupy_written: float) -> str:
        ms = [_at_post_size("numpy", v, "scale", 0.8) for v in ("as_written", "correct")]
        ms += [_at_post_size("cupy", "as_written", "scale", cupy_written),
               _at_post_size("cupy", "correct", "scale", 5.4e-3)]
        table = claims_table(seeds.get("002"), ms)
        row = next(r for r in table.rows if r[0] == "x *= 5")
        return dict(zip(table.columns, row, strict=True))["why"]

    assert why(1e-5).startswith("without a sync time.time() saw CuPy's launch (10 µs)")
    assert why(4.6e-3) == ("without a sync time.time() still saw about the work's time here "
                           "(4.6 ms against 5.4 ms): the call did not return at its launch "
                           "on this machine")


def test_every_rows_cases_are_run_in_a_quick_run_and_a_full_one() -> None:
    """A row whose pick matches no case reads 'not run' even on a GPU machine."""
    from gpuvs.seeds.base import Pick, Ratio
    def picks(figure: object) -> list[Pick]:
        if isinstance(figure, Ratio):
            return [figure.slow, figure.fast]
        return [figure] if isinstance(figure, Pick) else []

    seed = seeds.get("002")
    for quick in (True, False):
        cells = {(c.variant, c.backend, c.device, c.params) for c in seed.cases(
            SeedOptions(quick=quick))}
        for row in seed.rows():
            for p in picks(row.written) + picks(row.correct):
                assert (p.variant, p.backend, p.device, p.params) in cells, (quick, row.label)
