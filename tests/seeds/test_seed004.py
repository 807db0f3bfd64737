"""Seed 004: the post's cell replayed, the four Jacobian methods swept on both devices,
the claims table (GPU rows skipped here without CUDA) and the by-val table."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from gpuvs import seeds
from gpuvs.backends.base import machine_has_gpu
from gpuvs.cli import app
from gpuvs.model import Case, Measurement, Status
from gpuvs.report.seed_tables import claims_table
from gpuvs.seeds.base import Found, SeedOptions, value_of
from gpuvs.seeds.seed004 import GPU, NAIVE, AtSizeOf, _pick, by_val

NO_GPU = not machine_has_gpu()


def _sizes(cases: tuple[Case, ...], variant: str, method: str) -> set[int]:
    return {c.size for c in cases if c.variant == variant and c.param("method") == method}


def test_the_full_run_replays_the_posts_cell_and_lets_the_guard_refuse_vectorize_at_1000(
        ) -> None:
    cases = seeds.get("004").cases(SeedOptions())
    written = [c for c in cases if c.variant == "as_written"]
    assert {(c.device, c.size, c.param("method")) for c in written} == {
        ("cpu", 100, "naive"), (GPU, 100, "naive")}
    assert cases[:2] == tuple(written)  # replays first, on fresh workers
    assert _sizes(cases, "correct", "naive") == {100}  # the post's val: seconds a call
    assert 1000 in _sizes(cases, "correct", "vectorize")
    assert max(_sizes(cases, "tuned", "vmap_jacfwd")) == 100_000
    assert {c.device for c in cases} == {"cpu", GPU} and {c.dtype for c in cases} == {"float32"}
    for c in cases:  # every case is a cell that exists, on both devices
        assert seeds.get("004").workloads() == {"jacobian"}
        assert Case(c.workload, c.variant, c.backend, "cpu" if c.device == GPU else GPU,
                    c.dtype, c.size, c.params) in cases


def test_a_quick_run_keeps_the_naive_method_small() -> None:
    cases = seeds.get("004").cases(SeedOptions(quick=True))
    assert {c.size for c in cases if c.param("method") == "naive"} == {10}
    assert max(c.size for c in cases) == 1000


def _m(method: str, device: str, val: int, seconds: float, variant: str | None = None,
       **counters: float) -> Measurement:
    p = _pick(method, device, variant, size=val)
    case = Case(p.workload, p.variant, p.backend, p.device, p.dtype, val, p.params)
    return Measurement(case, Status.OK, samples=(seconds,) * 5, counters=counters)


def test_ratios_compare_two_methods_at_one_val_in_a_quick_run() -> None:
    ms = [_m("naive", "cpu", 10, 0.2, ops=60_014), _m("vmap", "cpu", 10, 0.002, ops=67),
          _m("vmap", "cpu", 100, 0.02, ops=67)]
    at = AtSizeOf(*[getattr(_pick("vmap", "cpu"), f) for f in
                    ("workload", "variant", "backend", "device", "dtype", "params", "size")],
                  anchor=NAIVE["cpu"])
    assert at.find(ms).case.size == 10  # naive ran at 10 only: vmap at 10, not 100
    rows = {r.label: r for r in seeds.get("004").rows()}
    row = rows["CPU: per-sample vmap(jacrev) vs naive"]
    assert value_of(row.correct, ms) == pytest.approx(100)
    why = row.why(Found(None, value_of(row.correct, ms), ms))
    assert why.startswith("60,014 → 67 launches a call")


def test_the_naive_rows_say_how_many_launches_a_call_makes() -> None:
    ms = [_m("naive", "cpu", 100, 6.0, ops=600_014),
          _m("naive", GPU, 100, 12.0, kernels=320_000, ops=600_014),
          _m("naive", "cpu", 100, 6.5, "as_written"), _m("naive", GPU, 100, 12.5, "as_written")]
    table = claims_table(seeds.get("004"), ms)
    rows = {row[0]: dict(zip(table.columns, row, strict=True)) for row in table.rows}
    gpu = rows["GPU: naive jacobian, val = 100"]
    assert gpu["correct here"] == "12 s" and gpu["as written here"] == "12.5 s"
    assert gpu["why"].startswith("naive makes 320,000 kernels a call, 8 for each of its "
                                  "40,000 backward passes")
    versus = rows["GPU vs CPU, naive, val = 100"]
    assert versus["correct here"] == "0.5×" and "the GPU is slower" in versus["why"]
    assert "not run" in rows["GPU vs CPU, naive, val = 1000"]["why"]
    # A GPU that ran the naive cases but not vectorize: the row says so, not "no GPU".
    assert rows["GPU: jacobian(vectorize=True) vs naive"]["why"] == "did not run"


def test_a_row_names_the_val_its_figures_were_measured_at() -> None:
    """Issue 42: a --quick run labelled a row "val = 100" that was measured at 10."""
    quick = [_m("naive", d, 10, t) for d, t in (("cpu", 0.2), (GPU, 0.4))]
    quick += [_m("naive", d, 10, t, "as_written") for d, t in (("cpu", 0.3), (GPU, 0.5))]
    labels = [row[0] for row in claims_table(seeds.get("004"), quick).rows]
    assert labels[:3] == ["CPU: naive jacobian, val = 10", "GPU: naive jacobian, val = 10",
                          "GPU vs CPU, naive, val = 10"]
    assert labels[3] == "GPU vs CPU, naive, val = 1000"  # a row of one val: not run here
    full = [_m("naive", "cpu", 100, 6.0)]
    assert claims_table(seeds.get("004"), full).rows[0][0] == "CPU: naive jacobian, val = 100"
    nothing = claims_table(seeds.get("004"), [_m("vmap", "cpu", 10, 1e-3)])
    assert nothing.rows[1][0] == "GPU: naive jacobian, val = 100"  # none measured: the post's


def test_by_val_shows_each_methods_speedup_and_crossover() -> None:
    ms = [_m("vmap_jacfwd", "cpu", v, t, ops=108) for v, t in ((10, 1e-3), (10**4, 8e-3),
                                                                (10**5, 0.1))]
    ms += [_m("vmap_jacfwd", GPU, v, 2.3e-3, kernels=100) for v in (10, 10**4, 10**5)]
    ms += [_m("naive", "cpu", 10, 0.4, ops=60_014), _m("naive", GPU, 10, 1.4, kernels=32_000)]
    ms.append(Measurement(Case("jacobian", "correct", "torch", "cpu", "float32", 1000,
                               (("method", "vectorize"),)), Status.SKIPPED,
                          reason="needs 720 GiB, 22.8 GiB free on cpu"))
    table = by_val(ms)
    rows = {(r[0], r[1]): dict(zip(table.columns, r, strict=True)) for r in table.rows}
    assert rows[("per-sample vmap(jacfwd)", "1e5")]["GPU vs CPU"] == "43.5×"
    assert rows[("naive jacobian", "10")]["GPU kernels a call"] == "32,000"
    assert rows[("jacobian(vectorize=True)", "1000")]["CPU"].startswith("skipped: needs 720 GiB")
    assert "per-sample vmap(jacfwd): the GPU is faster from val = 1e4" in table.notes
    assert "naive jacobian: the CPU is faster at every val measured" in table.notes


TIME = re.compile(r"\d[\d.]* (ns|µs|ms|s)\b")


@pytest.mark.usefixtures("worker_env")
def test_gpuvs_seeds_runs_seed_004_quick(tmp_path) -> None:
    result = CliRunner().invoke(app, ["seeds", "--seed", "4", "--quick", "--budget", "0.02",
                                      "--db", str(tmp_path / "r.sqlite")],
                                env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    out = result.output
    assert "seed 004" in out and "11.1 s" in out and "time a call by val" in out
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines)
              if line.startswith("CPU: naive jacobian, val = 10 "))  # measured at 10
    cpu_row, why = lines[at], lines[at + 1]  # in a file the why goes under its row
    # Two times (as written, correct), in whatever unit this machine's load gives them.
    assert why.strip().startswith("why:") and "aten ops a call" in why
    assert len(TIME.findall(cpu_row)) >= 2
    if NO_GPU:
        gpu_row = next(line for line in out.splitlines()
                       if line.startswith("GPU: naive jacobian, val = 10 "))
        assert gpu_row.count("skipped: no CUDA device") == 2
